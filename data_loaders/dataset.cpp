#include "data_loaders/dataset.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

namespace bnn::data_loaders {

int64_t Split::size() const { return labels.defined() ? labels.size(0) : 0; }

torch::Tensor Split::inputs() const {
  if (images.scalar_type() != torch::kByte) return images;
  TORCH_INTERNAL_ASSERT(scale.defined() && shift.defined(), "uint8 images need a pixel map (Note [Pixel storage])");
  return images.to(torch::kFloat32).mul_(scale).add_(shift);
}

Split Split::slice(int64_t start, int64_t length) const {
  return Split{images.narrow(0, start, length), labels.narrow(0, start, length), scale, shift};
}

Split Split::rows(const torch::Tensor& index) const {
  return Split{images.index_select(0, index), labels.index_select(0, index), scale, shift};
}

ChannelStats channel_stats(const torch::Tensor& images) {
  TORCH_CHECK(images.dim() == 4 && images.scalar_type() == torch::kByte && images.device().is_cpu(),
              "channel_stats needs N x C x H x W uint8 CPU images, got ", images.sizes(), " ",
              images.scalar_type());
  const torch::Tensor pixels = images.contiguous();
  const int64_t n = pixels.size(0);
  const int64_t channels = pixels.size(1);
  const int64_t plane = pixels.size(2) * pixels.size(3);
  const uint8_t* data = pixels.data_ptr<uint8_t>();
  // Integer histograms summed over threads, then moments in double: exact
  // and independent of the thread count.
  std::vector<int64_t> histogram(static_cast<size_t>(channels) * 256, 0);
  std::mutex mutex;
  at::parallel_for(0, n, /*grain_size=*/64, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> local(histogram.size(), 0);
    for (int64_t i = begin; i < end; ++i) {
      for (int64_t c = 0; c < channels; ++c) {
        const uint8_t* p = data + (i * channels + c) * plane;
        int64_t* h = local.data() + c * 256;
        for (int64_t j = 0; j < plane; ++j) ++h[p[j]];
      }
    }
    std::lock_guard<std::mutex> lock(mutex);
    for (size_t k = 0; k < local.size(); ++k) histogram[k] += local[k];
  });
  ChannelStats stats;
  for (int64_t c = 0; c < channels; ++c) {
    const int64_t* h = histogram.data() + c * 256;
    double total = 0, sum = 0, sum_sq = 0;
    int values = 0;  // distinct pixel values: a constant channel gets std 1 exactly, not a rounding residue
    for (int p = 0; p < 256; ++p) {
      const double x = p / 255.0;
      values += h[p] > 0 ? 1 : 0;
      total += static_cast<double>(h[p]);
      sum += static_cast<double>(h[p]) * x;
      sum_sq += static_cast<double>(h[p]) * x * x;
    }
    const double mean = total > 0 ? sum / total : 0.0;
    const double var = total > 0 ? std::max(sum_sq / total - mean * mean, 0.0) : 0.0;
    stats.mean.push_back(mean);
    stats.std.push_back(var > 0 && values > 1 ? std::sqrt(var) : 1.0);
  }
  return stats;
}

Split uint8_split(torch::Tensor images, torch::Tensor labels, const ChannelStats& stats, torch::Device device) {
  TORCH_CHECK(images.dim() == 4 && images.scalar_type() == torch::kByte,
              "uint8_split needs N x C x H x W uint8 images");
  const auto channels = static_cast<size_t>(images.size(1));
  TORCH_CHECK(stats.mean.size() == channels && stats.std.size() == channels, "images of ", channels,
              " channel(s), but standardization statistics for ", stats.mean.size());
  torch::Tensor scale = torch::empty({images.size(1), 1, 1}, torch::kFloat32);
  torch::Tensor shift = torch::empty({images.size(1), 1, 1}, torch::kFloat32);
  for (size_t c = 0; c < channels; ++c) {
    scale[static_cast<int64_t>(c)] = 1.0 / (255.0 * stats.std[c]);
    shift[static_cast<int64_t>(c)] = -stats.mean[c] / stats.std[c];
  }
  return Split{images.to(device), labels.to(device), scale.to(device), shift.to(device)};
}

ChannelStats unit_pixel_stats(int64_t channels) {
  return ChannelStats{std::vector<double>(static_cast<size_t>(channels), 0.0),
                      std::vector<double>(static_cast<size_t>(channels), 1.0)};
}

torch::Tensor standardize_pixels(const torch::Tensor& pixels, const ChannelStats& stats) {
  TORCH_CHECK(pixels.dim() == 4 && pixels.scalar_type() == torch::kByte && pixels.device().is_cpu(),
              "standardize_pixels needs N x C x H x W uint8 CPU pixels, got ", pixels.sizes(), " ",
              pixels.scalar_type());
  const int64_t channels = pixels.size(1);
  TORCH_CHECK(stats.mean.size() == static_cast<size_t>(channels) && stats.std.size() == static_cast<size_t>(channels),
              "images of ", channels, " channel(s), but standardization statistics for ", stats.mean.size());
  std::vector<std::array<float, 256>> tables(static_cast<size_t>(channels));
  for (size_t c = 0; c < tables.size(); ++c) {
    for (int p = 0; p < 256; ++p) tables[c][p] = static_cast<float>((p / 255.0 - stats.mean[c]) / stats.std[c]);
  }
  const torch::Tensor source = pixels.contiguous();
  torch::Tensor result = torch::empty(source.sizes(), torch::kFloat32);
  const uint8_t* in = source.data_ptr<uint8_t>();
  float* out = result.data_ptr<float>();
  const int64_t plane = source.size(2) * source.size(3);
  for (int64_t i = 0, n = source.numel(); i < n; ++i) out[i] = tables[(i / plane) % channels][in[i]];
  return result;
}

Partition::Partition(const Split& train, int64_t batch_size, uint64_t seed)
    : batch_size_(batch_size), num_batches_(0) {
  TORCH_CHECK(train.images.defined() && train.labels.defined(),
              "Partition needs a training split with images and labels");
  const int64_t n = train.size();
  TORCH_CHECK(train.images.dim() >= 1 && train.images.size(0) == n,
              "Partition: the training split has ", train.images.size(0), " images but ", n,
              " labels");
  TORCH_CHECK(batch_size >= 1 && batch_size <= n, "batch size ", batch_size,
              " must be between 1 and the number of training examples, ", n);
  num_batches_ = batches_in(n, batch_size);

  // The permutation comes from its own CPU generator so that it depends on
  // the seed alone, not on the device or on anyone else's use of the global
  // generator. Only the examples that land in a batch are copied.
  auto generator = at::detail::createCPUGenerator(seed);
  const torch::Tensor order = torch::randperm(n, generator, torch::kLong)
                                  .narrow(0, 0, num_examples())
                                  .to(train.labels.device());
  examples_.images = train.images.index_select(0, order);
  examples_.labels = train.labels.index_select(0, order);
  examples_.scale = train.scale;
  examples_.shift = train.shift;
}

namespace {

void check_batch_index(int64_t b, int64_t num_batches) {
  TORCH_CHECK(b >= 0 && b < num_batches, "batch index ", b, " out of range [0, ", num_batches, ")");
}

}  // namespace

Split Partition::batch(int64_t b) const {
  check_batch_index(b, num_batches_);
  return examples_.slice(b * batch_size_, batch_size_);
}

torch::Tensor Partition::redrawn_order(uint64_t seed) const {
  auto generator = at::detail::createCPUGenerator(seed);
  return torch::randperm(num_examples(), generator, torch::kLong).to(examples_.labels.device());
}

Split Partition::batch(int64_t b, const torch::Tensor& order) const {
  if (!order.defined()) return batch(b);
  check_batch_index(b, num_batches_);
  TORCH_CHECK(order.dim() == 1 && order.size(0) == num_examples(), "a batch order must list the ",
              num_examples(), " used examples, got ", order.sizes());
  return examples_.rows(order.narrow(0, b * batch_size_, batch_size_));
}

Split Partition::first_batches(int64_t k) const {
  TORCH_CHECK(k >= 1, "first_batches needs at least one batch, got k = ", k);
  const int64_t count = std::min(k, num_batches_) * batch_size_;
  return examples_.slice(0, count);
}

void check_limits(int64_t train_limit, int64_t test_limit) {
  TORCH_CHECK(train_limit >= 0, "data.train_limit must be >= 0 (0 keeps every example), got ", train_limit);
  TORCH_CHECK(test_limit >= 0, "data.test_limit must be >= 0 (0 keeps every example), got ", test_limit);
}

namespace {

// The length of the valid UTF-8 sequence at text[i], or 0 if none starts
// there: overlong forms, UTF-16 surrogates and code points beyond U+10FFFF
// are not UTF-8.
size_t utf8_sequence_at(const std::string& text, size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  if (c < 0x80) return 1;
  size_t more = 0;
  uint32_t code = 0, least = 0;
  if ((c & 0xE0) == 0xC0) {
    more = 1, code = c & 0x1F, least = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    more = 2, code = c & 0x0F, least = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    more = 3, code = c & 0x07, least = 0x10000;
  } else {
    return 0;
  }
  for (size_t k = 1; k <= more; ++k) {
    if (i + k >= text.size()) return 0;
    const auto t = static_cast<unsigned char>(text[i + k]);
    if ((t & 0xC0) != 0x80) return 0;
    code = (code << 6) | (t & 0x3F);
  }
  if (code < least || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return 0;
  return more + 1;
}

}  // namespace

bool is_utf8(const std::string& text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence_at(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string escape_non_utf8(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (const size_t n = utf8_sequence_at(text, i); n > 0) {
      out += text.substr(i, n);
      i += n;
    } else {
      out += fmt::format("\\x{:02X}", static_cast<unsigned char>(text[i]));
      ++i;
    }
  }
  return out;
}

void require_directory(const std::filesystem::path& dir, const std::string& dataset_name) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw std::runtime_error(fmt::format("{}: {} directory does not exist", dir.string(), dataset_name));
  }
}

}  // namespace bnn::data_loaders
