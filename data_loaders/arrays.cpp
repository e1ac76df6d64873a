#include "data_loaders/arrays.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "data_loaders/npy.h"

namespace bnn::data_loaders {
namespace {

namespace fs = std::filesystem;

std::string shape_text(const torch::Tensor& t) { return fmt::format("({})", fmt::join(t.sizes(), ", ")); }

std::runtime_error error(const fs::path& path, const std::string& what) {
  return std::runtime_error(fmt::format("{}: {}", path.string(), what));
}

torch::Tensor read_array(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw error(path, "missing; data.dataset arrays reads train_x.npy, train_y.npy, test_x.npy and test_y.npy "
                      "from data.dir");
  }
  return read_npy(path);
}

// One split's examples and labels, checked.
struct Arrays {
  torch::Tensor x, y;
  fs::path x_path, y_path;
  int64_t rows_in_file = 0;  // before the limit
};

Arrays read_split(const fs::path& dir, const std::string& split, int64_t limit, const std::string& limit_option) {
  Arrays a{read_array(dir / (split + "_x.npy")), read_array(dir / (split + "_y.npy")), dir / (split + "_x.npy"),
           dir / (split + "_y.npy")};
  const bool images = a.x.scalar_type() == torch::kByte && (a.x.dim() == 3 || a.x.dim() == 4);
  const bool features = a.x.scalar_type() == torch::kFloat && a.x.dim() == 2;
  if (!images && !features) {
    throw error(a.x_path, fmt::format("{} array of shape {}; expected uint8 images (N x H x W or N x C x H x W) or "
                                      "float32 features (N x D)",
                                      c10::toString(a.x.scalar_type()), shape_text(a.x)));
  }
  if (a.x.size(0) == 0) throw error(a.x_path, fmt::format("holds no examples (shape {})", shape_text(a.x)));
  for (int64_t k = 1; k < a.x.dim(); ++k) {
    if (a.x.size(k) == 0) throw error(a.x_path, fmt::format("examples of shape {} hold no values", shape_text(a.x)));
  }
  // NumPy's and PIL's layout is channels last; bnn reads channels first. At
  // most 4 trailing "columns" of images over 4 high with more than 4
  // "channels" is that mix-up (N x D x 1 x 1 features are not).
  if (images && a.x.dim() == 4 && a.x.size(3) <= 4 && a.x.size(1) > 4 && a.x.size(2) > 4) {
    throw error(a.x_path, fmt::format("uint8 images of shape {} look channels-last (N x H x W x C); bnn reads N x C "
                                      "x H x W: save np.transpose(x, (0, 3, 1, 2)) instead",
                                      shape_text(a.x)));
  }
  if (a.y.dim() != 1 || (a.y.scalar_type() != torch::kLong && a.y.scalar_type() != torch::kInt)) {
    throw error(a.y_path, fmt::format("{} array of shape {}; expected int64 or int32 labels, one per example",
                                      c10::toString(a.y.scalar_type()), shape_text(a.y)));
  }
  if (a.y.size(0) != a.x.size(0)) {
    throw error(a.y_path, fmt::format("holds {} labels, but {} holds {} examples", a.y.size(0),
                                      a.x_path.filename().string(), a.x.size(0)));
  }
  a.y = a.y.to(torch::kLong);
  a.rows_in_file = a.x.size(0);
  if (limit > 0) {
    if (limit > a.x.size(0)) {
      throw error(a.x_path, fmt::format("{} = {} exceeds its {} examples", limit_option, limit, a.x.size(0)));
    }
    a.x = a.x.narrow(0, 0, limit);
    a.y = a.y.narrow(0, 0, limit);
  }
  const torch::Tensor negative = a.y.lt(0).nonzero();
  if (negative.size(0) > 0) {
    const int64_t i = negative[0][0].item<int64_t>();
    throw error(a.y_path,
                fmt::format("label {} at index {} is negative; labels are 0 .. K-1", a.y[i].item<int64_t>(), i));
  }
  if (features) {
    const torch::Tensor bad = torch::isfinite(a.x).logical_not().nonzero();
    if (bad.size(0) > 0) {
      const int64_t i = bad[0][0].item<int64_t>(), j = bad[0][1].item<int64_t>();
      throw error(a.x_path, fmt::format("{} at row {}, column {}: features must be finite",
                                        a.x[i][j].item<float>(), i, j));
    }
  }
  if (images && a.x.dim() == 3) a.x = a.x.unsqueeze(1);
  return a;
}

std::vector<std::string> read_class_names(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw error(path, "cannot be read");
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      throw error(path, fmt::format("line {} is empty; give one class name per line", names.size() + 1));
    }
    if (!is_utf8(line)) {
      throw error(path, fmt::format("line {} ('{}') is not UTF-8 text; save class_names.txt as UTF-8",
                                    names.size() + 1, escape_non_utf8(line)));
    }
    // Reports and bnn predict name classes by these: two alike would be read as one.
    if (const auto same = std::find(names.begin(), names.end(), line); same != names.end()) {
      throw error(path, fmt::format("line {} names '{}' again (line {}); give each class its own name",
                                    names.size() + 1, line, same - names.begin() + 1));
    }
    names.push_back(line);
  }
  if (names.size() < 2) throw error(path, fmt::format("names {} classes; a classifier needs at least 2", names.size()));
  return names;
}

void check_label_range(const Arrays& a, int64_t classes, const std::string& source) {
  const torch::Tensor over = a.y.ge(classes).nonzero();
  if (over.size(0) == 0) return;
  const int64_t i = over[0][0].item<int64_t>();
  throw error(a.y_path, fmt::format("label {} at index {} is out of range for the {} classes {}",
                                    a.y[i].item<int64_t>(), i, classes, source));
}

// Per-column mean and standard deviation of N x D features, in double.
ChannelStats feature_stats(const torch::Tensor& x, bool standardize) {
  const auto d = static_cast<size_t>(x.size(1));
  ChannelStats s{std::vector<double>(d, 0.0), std::vector<double>(d, 1.0)};
  if (!standardize) return s;
  const torch::Tensor xd = x.to(torch::kDouble);
  const torch::Tensor mean = xd.mean(0);
  const torch::Tensor std = xd.std(0, /*unbiased=*/false);
  for (size_t j = 0; j < d; ++j) {
    s.mean[j] = mean[static_cast<int64_t>(j)].item<double>();
    const double sd = std[static_cast<int64_t>(j)].item<double>();
    s.std[j] = sd > 0 && std::isfinite(sd) ? sd : 1.0;
  }
  return s;
}

// At most the first ten numbers of `values`, then how many there are.
std::string listed(const std::vector<int64_t>& values) {
  constexpr size_t kShown = 10;
  if (values.size() <= kShown) return fmt::format("{}", fmt::join(values, ", "));
  return fmt::format("{}, ... ({} labels in all)", fmt::join(values.begin(), values.begin() + kShown, ", "),
                     values.size());
}

}  // namespace

torch::Tensor standardize_features(const torch::Tensor& x, const ChannelStats& s) {
  TORCH_CHECK(x.dim() == 2 && x.size(1) == static_cast<int64_t>(s.mean.size()) && s.std.size() == s.mean.size(),
              "features of shape ", x.sizes(), ", but the training data's standardization has ", s.mean.size(),
              " mean(s) and standard deviation(s), one per channel or feature");
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  const torch::Tensor mean = torch::tensor(s.mean, opts), std = torch::tensor(s.std, opts);
  return ((x.to(torch::kDouble) - mean) / std).to(torch::kFloat).reshape({x.size(0), x.size(1), 1, 1}).contiguous();
}

Dataset load_arrays(const LoadOptions& options, torch::Device device) {
  check_limits(options.train_limit, options.test_limit);
  require_directory(options.dir, "arrays");
  std::optional<Arrays> train;
  if (!options.test_only) train = read_split(options.dir, "train", options.train_limit, "data.train_limit");
  Arrays test = read_split(options.dir, "test", options.test_limit, options.test_limit_key);
  const Arrays& shape_of = train ? *train : test;
  if (test.x.scalar_type() != shape_of.x.scalar_type() ||
      !test.x.sizes().slice(1).equals(shape_of.x.sizes().slice(1))) {
    throw error(test.x_path, fmt::format("{} examples of shape {}, but {} holds {} examples of shape {}",
                                         c10::toString(test.x.scalar_type()),
                                         shape_text(test.x.select(0, 0)), shape_of.x_path.filename().string(),
                                         c10::toString(shape_of.x.scalar_type()), shape_text(shape_of.x.select(0, 0))));
  }

  Dataset data;
  data.name = "arrays";
  const fs::path names_path = options.dir / "class_names.txt";
  std::error_code ec;
  if (fs::exists(names_path, ec)) {
    data.class_names = read_class_names(names_path);
    data.num_classes = static_cast<int64_t>(data.class_names.size());
    if (train) check_label_range(*train, data.num_classes, "named in class_names.txt");
    check_label_range(test, data.num_classes, "named in class_names.txt");
  } else {
    data.num_classes = test.y.max().item<int64_t>() + 1;
    if (train) data.num_classes = std::max(data.num_classes, train->y.max().item<int64_t>() + 1);
    if (data.num_classes < 2 && !options.test_only) {
      throw error(train->y_path, "every label is 0; a classifier needs at least 2 classes");
    }
    // K is the largest label + 1: a class no training example has is most
    // likely a stray label, which would make K too large (class_names.txt
    // states K, empty classes included, where that is meant).
    if (train && data.num_classes > train->rows_in_file) {  // more classes than examples: said before counting
      const bool in_test = test.y.max().item<int64_t>() + 1 == data.num_classes;
      const Arrays& holder = in_test ? test : *train;
      throw error(holder.y_path,
                  fmt::format("label {} (row {}) implies {} classes, more than the {} training examples; fix the "
                              "labels, or list every class in class_names.txt",
                              data.num_classes - 1, holder.y.argmax().item<int64_t>(), data.num_classes,
                              train->rows_in_file));
    }
    if (train) {
      const torch::Tensor counts = torch::bincount(train->y, {}, data.num_classes);
      std::vector<int64_t> empty;
      for (int64_t k = 0; k < data.num_classes; ++k) {
        if (counts[k].item<int64_t>() == 0) empty.push_back(k);
      }
      if (!empty.empty()) {
        const bool in_test = test.y.max().item<int64_t>() + 1 == data.num_classes;
        const bool limited = train->rows_in_file > train->y.size(0);
        const std::string what = fmt::format(
            "no training example{} has label {} of the {} classes that the largest label, {} (in {}), implies",
            limited ? fmt::format(" of the first {} (data.train_limit)", options.train_limit) : "",
            listed(empty), data.num_classes, data.num_classes - 1,
            (in_test ? test.y_path : train->y_path).filename().string());
        // Under a limit the file's other rows may hold them: said, not refused.
        if (limited) {
          spdlog::warn("{}: {}: those classes are trained without examples", train->y_path.string(), what);
        } else {
          throw error(train->y_path, what + "; fix the labels, or list every class in class_names.txt");
        }
      }
    }
    // An OOD set's labels are not read (a stray 2^40 would make 2^40 names).
    if (!options.test_only) {
      for (int64_t k = 0; k < data.num_classes; ++k) data.class_names.push_back(std::to_string(k));
    }
  }

  const auto stats_of = [&](const torch::Tensor& x, bool images) {
    if (options.stats) return *options.stats;
    if (images) return options.standardize ? channel_stats(x) : unit_pixel_stats(x.size(1));
    return feature_stats(x, options.standardize);
  };
  if (test.x.scalar_type() == torch::kByte) {
    data.pixel_stats = stats_of(shape_of.x, true);
    if (train) data.train = uint8_split(train->x.contiguous(), train->y, data.pixel_stats, device);
    data.test = uint8_split(test.x.contiguous(), test.y, data.pixel_stats, device);
  } else {
    data.features = true;
    data.pixel_stats = stats_of(shape_of.x, false);
    if (train) {
      data.train = Split{standardize_features(train->x, data.pixel_stats).to(device), train->y.to(device), {}, {}};
    }
    data.test = Split{standardize_features(test.x, data.pixel_stats).to(device), test.y.to(device), {}, {}};
  }
  data.input_shape = data.test.images.sizes().slice(1).vec();
  return data;
}

}  // namespace bnn::data_loaders
