#include "data_loaders/cifar10.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace bnn::data_loaders {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string>& train_files() {
  static const std::vector<std::string> names = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                                 "data_batch_4.bin", "data_batch_5.bin"};
  return names;
}
const std::vector<std::string>& test_files() {
  static const std::vector<std::string> names = {"test_batch.bin"};
  return names;
}

void check_batches_present(const fs::path& dir, const std::vector<std::string>& names) {
  for (const auto& name : names) {
    std::error_code ec;
    if (fs::is_regular_file(dir / name, ec)) continue;
    throw std::runtime_error(fmt::format(
        "{}: missing CIFAR-10 file {}; the directory needs data_batch_1.bin ... data_batch_5.bin and "
        "test_batch.bin (the CIFAR-10 binary version)",
        dir.string(), name));
  }
}

// The number of records in `path`, after checking that its size is a whole,
// positive number of records.
int64_t count_records(const fs::path& path) {
  std::error_code ec;
  const auto size = static_cast<int64_t>(fs::file_size(path, ec));
  if (ec) throw std::runtime_error(fmt::format("{}: cannot read its size: {}", path.string(), ec.message()));
  if (size % kCifar10RecordBytes != 0) {
    throw std::runtime_error(fmt::format(
        "{}: truncated: {} bytes is not a multiple of the {}-byte record (1 label byte + {} pixel bytes)",
        path.string(), size, kCifar10RecordBytes, kCifar10ImageBytes));
  }
  if (size == 0) throw std::runtime_error(fmt::format("{}: empty: no records", path.string()));
  // The published batches hold 10000 records each; a larger one is not one of
  // them (and is not read into memory).
  if (size / kCifar10RecordBytes > kCifar10RecordsPerBatch) {
    throw std::runtime_error(fmt::format("{}: holds {} records, more than the {} of a CIFAR-10 batch file (the binary "
                                         "version)",
                                         path.string(), size / kCifar10RecordBytes, kCifar10RecordsPerBatch));
  }
  return size / kCifar10RecordBytes;
}

std::vector<uint8_t> read_bytes(const fs::path& path, int64_t size) {
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  if (!in || in.gcount() != size) {
    throw std::runtime_error(fmt::format("{}: could not read its {} bytes: {}", path.string(), size,
                                         errno != 0 ? std::strerror(errno) : "the file ended early"));
  }
  return bytes;
}

void check_record_labels(const std::vector<uint8_t>& records, const fs::path& path) {
  const auto n = static_cast<int64_t>(records.size()) / kCifar10RecordBytes;
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t label = records[i * kCifar10RecordBytes];
    if (label >= kCifar10NumClasses) {
      throw std::runtime_error(fmt::format("{}: label {} at record {} is out of range [0, {}]", path.string(),
                                           int{label}, i, kCifar10NumClasses - 1));
    }
  }
}

const ChannelStats& cifar_pixel_stats() {
  static const ChannelStats stats{{kCifar10Mean.begin(), kCifar10Mean.end()}, {kCifar10Std.begin(), kCifar10Std.end()}};
  return stats;
}

// Reads the split stored in `names` (in order), checking every file in full,
// and keeps its first `limit` records (all when limit is 0).
Split load_batches(const fs::path& dir, const std::vector<std::string>& names, int64_t limit,
                 const std::string& limit_option, const ChannelStats& stats, torch::Device device) {
  std::vector<int64_t> counts;
  int64_t total = 0;
  for (const auto& name : names) {
    counts.push_back(count_records(dir / name));
    total += counts.back();
  }
  if (limit > total) {
    throw std::runtime_error(fmt::format("{} = {} exceeds the {} examples in {} ({})", limit_option, limit, total,
                                         dir.string(), fmt::join(names, ", ")));
  }
  const int64_t kept = limit == 0 ? total : limit;
  torch::Tensor pixels = torch::empty({kept, kCifar10Channels, kCifar10Side, kCifar10Side}, torch::kByte);
  torch::Tensor labels = torch::empty({kept}, torch::kInt64);
  uint8_t* pixel_out = pixels.data_ptr<uint8_t>();
  int64_t* label_out = labels.data_ptr<int64_t>();

  int64_t next = 0;  // the next record of the split to fill
  for (size_t f = 0; f < names.size(); ++f) {
    const fs::path path = dir / names[f];
    const std::vector<uint8_t> records = read_bytes(path, counts[f] * kCifar10RecordBytes);
    check_record_labels(records, path);
    for (int64_t i = 0; i < counts[f] && next < kept; ++i, ++next) {
      const uint8_t* record = records.data() + i * kCifar10RecordBytes;
      label_out[next] = record[0];
      std::copy(record + 1, record + kCifar10RecordBytes, pixel_out + next * kCifar10ImageBytes);
    }
  }
  return Split{standardize_pixels(pixels, stats).to(device), labels.to(device), {}, {}};
}

}  // namespace

Dataset load_cifar10(const LoadOptions& options, torch::Device device) {
  check_limits(options.train_limit, options.test_limit);
  const fs::path dir = options.dir.empty() ? fs::path(kCifar10DefaultDir) : options.dir;
  require_directory(dir, "CIFAR-10");
  if (!options.test_only) check_batches_present(dir, train_files());
  check_batches_present(dir, test_files());
  const ChannelStats stats =
      options.stats.value_or(options.standardize ? cifar_pixel_stats() : unit_pixel_stats(kCifar10Channels));
  Dataset dataset;
  dataset.name = "cifar10";
  if (!options.test_only) {
    dataset.train = load_batches(dir, train_files(), options.train_limit, "data.train_limit", stats, device);
  }
  dataset.test = load_batches(dir, test_files(), options.test_limit, options.test_limit_key, stats, device);
  dataset.num_classes = kCifar10NumClasses;
  dataset.input_shape = {kCifar10Channels, kCifar10Side, kCifar10Side};
  dataset.class_names = {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
  dataset.pixel_stats = stats;
  return dataset;
}

}  // namespace bnn::data_loaders
