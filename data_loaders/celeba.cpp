#include "data_loaders/celeba.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "data_loaders/image_files.h"

namespace bnn::data_loaders {
namespace {

namespace fs = std::filesystem;

constexpr const char* kImageFolder = "img_align_celeba";
constexpr const char* kAttributeFile = "list_attr_celeba.txt";
constexpr const char* kPartitionFile = "list_eval_partition.txt";
constexpr int kTrainPartition = 0;
constexpr int kTestPartition = 2;

void check_present(const fs::path& dir) {
  std::error_code ec;
  const bool images = fs::is_directory(dir / kImageFolder, ec);
  for (const std::string& name :
       {std::string(kImageFolder) + "/", std::string(kAttributeFile), std::string(kPartitionFile)}) {
    const bool present = name.back() == '/' ? images : fs::is_regular_file(dir / name, ec);
    if (present) continue;
    throw std::runtime_error(fmt::format("{}: missing CelebA file {}; the directory needs {}/, {} and {}", dir.string(),
                                         name, kImageFolder, kAttributeFile, kPartitionFile));
  }
}

std::vector<std::string> fields_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string field; in >> field;) out.push_back(field);
  return out;
}

[[noreturn]] void bad_line(const fs::path& file, int64_t line, const std::string& why) {
  throw std::runtime_error(fmt::format("{}:{}: {}", file.string(), line, why));
}

std::ifstream open_list(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open: {}", file.string(), std::strerror(errno)));
  return in;
}

struct Labelled {
  std::string image;
  int64_t label;  // blond 0, brown 1
};

// The images of list_attr_celeba.txt with exactly one of Blond_Hair and
// Brown_Hair, in file order. Every line is checked.
std::vector<Labelled> read_attributes(const fs::path& file) {
  std::ifstream in = open_list(file);
  std::string line;
  int64_t line_no = 1;
  if (!std::getline(in, line)) bad_line(file, 1, "expected the number of images, got an empty file");
  int64_t declared = -1;
  {
    const auto f = fields_of(line);
    size_t used = 0;
    try {
      if (f.size() == 1) declared = std::stoll(f[0], &used);
    } catch (const std::exception&) {
      declared = -1;
    }
    if (f.size() != 1 || used != f[0].size() || declared < 0) {
      bad_line(file, 1, fmt::format("expected the number of images, got '{}'", line));
    }
  }
  ++line_no;
  if (!std::getline(in, line)) bad_line(file, 2, "expected the attribute names, got the end of the file");
  const std::vector<std::string> names = fields_of(line);
  auto column = [&](const char* name) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) bad_line(file, 2, fmt::format("the attribute names lack {}", name));
    return static_cast<size_t>(it - names.begin());
  };
  const size_t blond = column("Blond_Hair");
  const size_t brown = column("Brown_Hair");

  std::vector<Labelled> kept;
  int64_t listed = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const auto f = fields_of(line);
    if (f.empty()) continue;
    if (f.size() != names.size() + 1) {
      bad_line(file, line_no, fmt::format("expected {} fields (an image name and {} attribute values), got {}",
                                          names.size() + 1, names.size(), f.size()));
    }
    // An image is a file of img_align_celeba/ itself: no path reaches elsewhere.
    if (f[0].find('/') != std::string::npos || f[0] == "." || f[0] == "..") {
      bad_line(file, line_no, fmt::format("image '{}' is not a file name of {}/", f[0], kImageFolder));
    }
    for (size_t a = 0; a < names.size(); ++a) {
      if (f[a + 1] == "1" || f[a + 1] == "-1") continue;
      bad_line(file, line_no,
               fmt::format("attribute {} of {} is '{}', expected 1 or -1", names[a], f[0], f[a + 1]));
    }
    ++listed;
    const bool is_blond = f[blond + 1] == "1";
    const bool is_brown = f[brown + 1] == "1";
    if (is_blond != is_brown) kept.push_back({f[0], is_blond ? 0 : 1});
  }
  if (listed != declared) {
    throw std::runtime_error(
        fmt::format("{}: the first line says {} images but {} are listed", file.string(), declared, listed));
  }
  return kept;
}

std::unordered_map<std::string, int> read_partitions(const fs::path& file) {
  std::ifstream in = open_list(file);
  std::unordered_map<std::string, int> partition;
  std::unordered_map<std::string, int64_t> listed_at;
  std::string line;
  for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
    const auto f = fields_of(line);
    if (f.empty()) continue;
    if (f.size() != 2 || (f[1] != "0" && f[1] != "1" && f[1] != "2")) {
      bad_line(file, line_no, fmt::format("expected '<image> <0|1|2>', got '{}'", line));
    }
    // Listed twice, an image's split would be whichever line came last.
    if (const auto [at, fresh] = listed_at.emplace(f[0], line_no); !fresh) {
      bad_line(file, line_no, fmt::format("lists {} again (line {})", f[0], at->second));
    }
    partition[f[0]] = f[1][0] - '0';
  }
  return partition;
}

}  // namespace

Dataset load_celeba(const LoadOptions& options, torch::Device device) {
  check_limits(options.train_limit, options.test_limit);
  const int64_t side = options.side == 0 ? kCelebaDefaultSide : options.side;
  TORCH_CHECK(side >= 1, "CelebA image side must be positive, got ", side);
  const fs::path dir = options.dir.empty() ? fs::path(kCelebaDefaultDir) : options.dir;
  require_directory(dir, "CelebA");
  check_present(dir);
  const auto labelled = read_attributes(dir / kAttributeFile);
  const auto partitions = read_partitions(dir / kPartitionFile);

  std::vector<ImageFile> train_files, test_files;
  for (const auto& item : labelled) {
    const auto it = partitions.find(item.image);
    if (it == partitions.end()) {
      throw std::runtime_error(
          fmt::format("{}: no partition listed for {}", (dir / kPartitionFile).string(), item.image));
    }
    const ImageFile file{dir / kImageFolder / item.image, item.label, 1};
    if (it->second == kTrainPartition) train_files.push_back(file);
    if (it->second == kTestPartition) test_files.push_back(file);
  }
  for (const auto& [files, p] : {std::pair{&train_files, kTrainPartition}, std::pair{&test_files, kTestPartition}}) {
    if (!files->empty() || (options.test_only && p == kTrainPartition)) continue;
    throw std::runtime_error(fmt::format("{}: empty split: no blond or brown-haired images in partition {}",
                                         dir.string(), p));
  }

  ImageDecodeOptions decode;
  decode.channels = 3;
  decode.height = decode.width = side;
  decode.center_square = true;
  decode.skip_bad_images = options.skip_bad_images;
  decode.threads = options.threads;
  DecodedImages train;
  if (!options.test_only) {
    decode.label = "celeba train";
    train = decode_split(train_files, options.train_limit, "data.train_limit", "the CelebA training partition", decode);
  }
  decode.label = "celeba test";
  DecodedImages test = decode_split(test_files, options.test_limit, options.test_limit_key, "the CelebA test partition",
                                    decode);

  return uint8_dataset("celeba", train, test, {"blond", "brown"}, options.stats, options.standardize, device);
}

}  // namespace bnn::data_loaders
