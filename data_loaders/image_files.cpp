#include "data_loaders/image_files.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#ifdef BNN_WITH_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

#include "samplers/splitmix64.h"

namespace bnn::data_loaders {
namespace {

namespace fs = std::filesystem;

constexpr double kPi = 3.14159265358979323846;

// Uniform in [lo, hi) from 53 random bits.
double uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

#ifdef BNN_WITH_OPENCV  // without OpenCV decode_images only throws (below)
using samplers::splitmix64;
// The largest image file read (1 GiB): a 30000 x 30000 PNG is far smaller.
constexpr uintmax_t kMaxImageFileBytes = uintmax_t{1} << 30;

[[noreturn]] void bad_image(const fs::path& path, const std::string& why) {
  throw std::runtime_error(fmt::format("{}: {}", path.string(), why));
}

std::vector<uint8_t> read_file_bytes(const fs::path& path) {
  // Only a regular file is read: a FIFO would block forever, a directory or a
  // device has no size to read. The size is capped before it is allocated.
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec && status.type() != fs::file_type::not_found) {
    bad_image(path, fmt::format("cannot read the file: {}", ec.message()));
  }
  if (status.type() == fs::file_type::not_found) bad_image(path, "cannot read the file: it does not exist");
  if (status.type() != fs::file_type::regular) {
    bad_image(path, fmt::format("cannot read the file: it is {}, not an image file",
                                status.type() == fs::file_type::directory ? "a directory"
                                : status.type() == fs::file_type::fifo    ? "a FIFO"
                                                                          : "not a regular file"));
  }
  const auto size_on_disk = fs::file_size(path, ec);
  if (!ec && size_on_disk > kMaxImageFileBytes) {
    bad_image(path, fmt::format("cannot read the file: it holds {} bytes, more than the {} bytes bnn reads as one "
                                "image",
                                size_on_disk, kMaxImageFileBytes));
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    bad_image(path, fmt::format("cannot read the file: {}", errno != 0 ? std::strerror(errno) : "it cannot be opened"));
  }
  const std::streamsize size = in.tellg();
  std::vector<uint8_t> bytes(static_cast<size_t>(std::max<std::streamsize>(size, 0)));
  in.seekg(0);
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), size)) {
    bad_image(path, "cannot read the file: read failed");
  }
  return bytes;
}

// libjpeg decodes a truncated JPEG without an error (it pads the missing
// rows with grey and prints a warning), so the end-of-image marker (FF D9) is
// required after the last start-of-scan marker (FF DA). Entropy-coded data
// stuffs every FF byte, so neither marker occurs inside it by accident.
bool jpeg_is_complete(const std::vector<uint8_t>& bytes) {
  size_t last_sos = 0, last_eoi = 0;
  bool sos = false, eoi = false;
  for (size_t i = 0; i + 1 < bytes.size(); ++i) {
    if (bytes[i] != 0xFF) continue;
    if (bytes[i + 1] == 0xDA) last_sos = i, sos = true;
    if (bytes[i + 1] == 0xD9) last_eoi = i, eoi = true;
  }
  return sos && eoi && last_eoi > last_sos;
}

// A PNG is its 8-byte signature and chunks (4-byte big-endian length, 4-byte
// type, data, 4-byte CRC) up to the IEND chunk. libpng reports a truncated
// one on stderr by itself before OpenCV fails, so the chunks are walked
// first, to name the fault; false where the file ends before IEND.
bool png_is_complete(const std::vector<uint8_t>& bytes) {
  size_t i = 8;
  while (i + 8 <= bytes.size()) {
    const size_t length = (static_cast<size_t>(bytes[i]) << 24) | (static_cast<size_t>(bytes[i + 1]) << 16) |
                          (static_cast<size_t>(bytes[i + 2]) << 8) | bytes[i + 3];
    const bool end = bytes[i + 4] == 'I' && bytes[i + 5] == 'E' && bytes[i + 6] == 'N' && bytes[i + 7] == 'D';
    if (length > bytes.size() || i + 12 + length > bytes.size()) return false;
    if (end) return true;
    i += 12 + length;
  }
  return false;
}

// The width and height in a JPEG's frame header (SOF0-SOF15 but DHT, JPG,
// DAC), found by walking the marker segments from the start, so that markers
// inside an Exif thumbnail (an APP1 segment) are skipped; nullopt if absent.
std::optional<std::pair<int, int>> jpeg_size(const std::vector<uint8_t>& bytes) {
  size_t i = 2;
  while (i + 9 < bytes.size() && bytes[i] == 0xFF) {
    const uint8_t marker = bytes[i + 1];
    if (marker == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    if (marker == 0xDA || marker == 0xD9) return std::nullopt;  // scan data before any frame header
    if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) {
      return std::pair<int, int>((bytes[i + 7] << 8) | bytes[i + 8], (bytes[i + 5] << 8) | bytes[i + 6]);
    }
    i += 2 + ((static_cast<size_t>(bytes[i + 2]) << 8) | bytes[i + 3]);
  }
  return std::nullopt;
}

// OpenCV's read mode: for a JPEG at least twice the output side in both
// dimensions, libjpeg's scaled decoding (1/2, 1/4 or 1/8, the largest that
// keeps both dimensions >= side, so a centred square crop is >= side too). A
// 1000 x 1000 X-ray resized to 180 is decoded at 250 x 250: the Huffman
// decoding costs the same, but the INTER_AREA resize from full size, about as
// expensive as the decoding, is gone (docs/performance.md), and the scaled
// IDCT is itself a proper low-pass filter.
int read_mode(const std::vector<uint8_t>& bytes, bool jpeg, const ImageDecodeOptions& options) {
  const bool gray = options.channels == 1;
  const int full = gray ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR;
  const auto size = jpeg && !options.exact_size ? jpeg_size(bytes) : std::nullopt;
  if (!size) return full;
  const auto [width, height] = *size;
  const int64_t smaller = std::min(width, height);
  const int64_t side = std::max(options.height, options.width);
  if (smaller >= 8 * side) return gray ? cv::IMREAD_REDUCED_GRAYSCALE_8 : cv::IMREAD_REDUCED_COLOR_8;
  if (smaller >= 4 * side) return gray ? cv::IMREAD_REDUCED_GRAYSCALE_4 : cv::IMREAD_REDUCED_COLOR_4;
  if (smaller >= 2 * side) return gray ? cv::IMREAD_REDUCED_GRAYSCALE_2 : cv::IMREAD_REDUCED_COLOR_2;
  return full;
}

cv::Mat decode(const fs::path& path, const ImageDecodeOptions& options) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  if (bytes.empty()) bad_image(path, "cannot decode the image: the file is empty");
  const bool jpeg = bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF;
  if (jpeg && !jpeg_is_complete(bytes)) {
    bad_image(path, "cannot decode the image: truncated JPEG (no end-of-image marker after the image data)");
  }
  static constexpr uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  const bool png = bytes.size() >= 8 && std::equal(kPngSignature, kPngSignature + 8, bytes.begin());
  if (png && !png_is_complete(bytes)) {
    bad_image(path, fmt::format("cannot decode the image: truncated PNG (the file's {} bytes end before its IEND "
                                "chunk)",
                                bytes.size()));
  }
  cv::Mat image;
  try {
    image = cv::imdecode(bytes, read_mode(bytes, jpeg, options));
  } catch (const cv::Exception&) {
    image.release();
  }
  if (image.empty()) bad_image(path, "cannot decode the image: not a valid JPEG, PNG or BMP file");
  if (options.exact_size && (image.cols != options.width || image.rows != options.height)) {
    bad_image(path, fmt::format("the image is {} x {} pixels (width x height), expected {} x {}", image.cols,
                                image.rows, options.width, options.height));
  }
  if (options.channels == 3) cv::cvtColor(image, image, cv::COLOR_BGR2RGB);
  return image;
}

cv::Mat resized(const cv::Mat& image, const ImageDecodeOptions& options) {
  cv::Mat source = image;
  if (options.center_square) {
    const int side = std::min(image.cols, image.rows);
    source = image(cv::Rect((image.cols - side) / 2, (image.rows - side) / 2, side, side));
  }
  const int width = static_cast<int>(options.width), height = static_cast<int>(options.height);
  if (source.cols == width && source.rows == height) return source.clone();
  cv::Mat out;
  const bool shrinking = source.cols >= width && source.rows >= height;
  cv::resize(source, out, cv::Size(width, height), /*fx=*/0, /*fy=*/0,
             shrinking ? cv::INTER_AREA : cv::INTER_LINEAR);
  return out;
}

// Note [Augmentation]: one affine warp (destination -> source map) and a
// brightness factor, drawn in a fixed order from `rng`.
cv::Mat augmented(const cv::Mat& base, const Augmentation& a, std::mt19937_64& rng) {
  const AugmentationWarp w = draw_augmentation(base.cols, a, rng);
  const cv::Matx23d m(w.matrix[0], w.matrix[1], w.matrix[2], w.matrix[3], w.matrix[4], w.matrix[5]);
  cv::Mat out;
  cv::warpAffine(base, out, m, base.size(), cv::INTER_LINEAR | cv::WARP_INVERSE_MAP, cv::BORDER_REPLICATE);
  out.convertTo(out, /*rtype=*/-1, /*alpha=*/w.gain, /*beta=*/0.0);
  return out;
}

// Writes an H x W x C Mat as C x H x W planes.
void store(const cv::Mat& image, uint8_t* out) {
  const int64_t plane = static_cast<int64_t>(image.rows) * image.cols;
  if (image.channels() == 1) {
    const cv::Mat dense = image.isContinuous() ? image : image.clone();
    std::copy(dense.data, dense.data + plane, out);
    return;
  }
  std::vector<cv::Mat> planes;
  cv::split(image, planes);
  for (size_t c = 0; c < planes.size(); ++c) {
    std::copy(planes[c].data, planes[c].data + plane, out + static_cast<int64_t>(c) * plane);
  }
}

// A progress line on stderr, drawn by the waiting thread: redrawn every half
// second on a terminal, a plain line every 30 seconds otherwise.
class ProgressLine {
 public:
  ProgressLine(std::string label, int64_t total)
      : label_(std::move(label)), total_(total), tty_(::isatty(STDERR_FILENO) == 1), start_(Clock::now()),
        last_(start_) {}
  ~ProgressLine() {
    if (tty_ && drawn_) std::fputs("\r\033[K", stderr);
  }
  void update(int64_t done) {
    const auto now = Clock::now();
    if (done <= 0 || std::chrono::duration<double>(now - last_).count() < (tty_ ? 0.5 : 30.0)) return;
    last_ = now;
    const double rate = done / std::chrono::duration<double>(now - start_).count();
    const std::string line = fmt::format("{}: {}/{} images ({:.0f}/s, ETA {:.0f}s)", label_, done, total_, rate,
                                         (total_ - done) / rate);
    if (tty_) {
      fmt::print(stderr, "\r\033[K{}", line);
    } else {
      fmt::print(stderr, "{}\n", line);
    }
    std::fflush(stderr);
    drawn_ = tty_;
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::string label_;
  int64_t total_;
  bool tty_;
  bool drawn_ = false;
  Clock::time_point start_, last_;
};

#endif  // BNN_WITH_OPENCV
}  // namespace

AugmentationWarp draw_augmentation(double side, const Augmentation& a, std::mt19937_64& rng) {
  const double area = uniform(rng, a.min_area, 1.0);
  const double log_ratio = uniform(rng, std::log(3.0 / 4.0), std::log(4.0 / 3.0));
  const double crop_w = std::min(side, side * std::sqrt(area * std::exp(log_ratio)));
  const double crop_h = std::min(side, side * std::sqrt(area / std::exp(log_ratio)));
  const double x0 = uniform(rng, 0.0, side - crop_w);
  const double y0 = uniform(rng, 0.0, side - crop_h);
  const double angle = uniform(rng, -a.max_rotation_degrees, a.max_rotation_degrees) * kPi / 180.0;
  const bool flip = (rng() >> 63) != 0;
  const double gain = uniform(rng, 1.0 - a.brightness, 1.0 + a.brightness);

  // Destination pixel d -> flipped f -> rotated about the centre c -> crop box.
  const double c = (side - 1) / 2;
  const double fx = flip ? -1.0 : 1.0;            // f = (fx * (d.x - c) + c, d.y)
  const double cs = std::cos(angle), sn = std::sin(angle);
  const double sx = crop_w / side, sy = crop_h / side;
  // rotated r = R (f - c) + c; source s = (x0, y0) + (r + 0.5) * scale - 0.5.
  AugmentationWarp w;
  w.matrix = {sx * cs * fx, -sx * sn, 0.0, sy * sn * fx, sy * cs, 0.0};
  w.matrix[2] = x0 + (c + 0.5) * sx - 0.5 - (w.matrix[0] * c + w.matrix[1] * c);
  w.matrix[5] = y0 + (c + 0.5) * sy - 0.5 - (w.matrix[3] * c + w.matrix[4] * c);
  w.gain = gain;
  return w;
}

std::vector<fs::path> list_image_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::string ext = entry.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (ext == ".jpeg" || ext == ".jpg" || ext == ".png" || ext == ".bmp") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

#ifdef BNN_WITH_OPENCV
DecodedImages decode_images(const std::vector<ImageFile>& files, const ImageDecodeOptions& options) {
  TORCH_CHECK(options.channels == 1 || options.channels == 3, "channels must be 1 or 3, got ", options.channels);
  TORCH_CHECK(options.height >= 1 && options.width >= 1, "image sizes must be positive, got ", options.height, " x ",
              options.width);
  const auto n = static_cast<int64_t>(files.size());
  std::vector<int64_t> offset(files.size() + 1, 0);
  for (int64_t i = 0; i < n; ++i) {
    TORCH_CHECK(files[i].copies >= 1, files[i].path.string(), ": copies must be >= 1, got ", files[i].copies);
    offset[i + 1] = offset[i] + files[i].copies;
  }
  const int64_t image_bytes = options.channels * options.height * options.width;
  torch::Tensor images = torch::empty({offset[n], options.channels, options.height, options.width}, torch::kByte);
  torch::Tensor labels = torch::empty({offset[n]}, torch::kLong);
  uint8_t* image_out = images.data_ptr<uint8_t>();
  int64_t* label_out = labels.data_ptr<int64_t>();

  // Workers take files in turn; every result has a fixed place, so the
  // output does not depend on which thread did what.
  std::vector<std::string> errors(files.size());
  std::atomic<int64_t> next{0}, done{0};
  auto work = [&] {
    for (int64_t i = next++; i < n; i = next++) {
      try {
        const cv::Mat base = resized(decode(files[i].path, options), options);
        for (int64_t r = 0; r < files[i].copies; ++r) {
          std::mt19937_64 rng(splitmix64(splitmix64(options.seed ^ splitmix64(static_cast<uint64_t>(i))) +
                                         static_cast<uint64_t>(r)));
          store(r == 0 ? base : augmented(base, options.augmentation, rng), image_out + (offset[i] + r) * image_bytes);
          label_out[offset[i] + r] = files[i].label;
        }
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
      ++done;
    }
  };
  const int64_t threads = std::min<int64_t>(
      std::max<int64_t>(n, 1),
      options.threads > 0 ? options.threads : std::max<int64_t>(std::thread::hardware_concurrency(), 1));
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t) pool.emplace_back(work);
  {
    ProgressLine progress(options.label, n);
    while (done.load() < n) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      progress.update(done.load());
    }
  }
  for (auto& t : pool) t.join();

  DecodedImages out;
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < n; ++i) {
    if (errors[i].empty()) {
      for (int64_t r = offset[i]; r < offset[i + 1]; ++r) kept.push_back(r);
      continue;
    }
    if (!options.skip_bad_images) throw std::runtime_error(errors[i]);
    if (out.skipped++ == 0) out.first_skipped = files[i].path;
  }
  if (out.skipped == 0) {
    out.images = images;
    out.labels = labels;
    return out;
  }
  const torch::Tensor index = torch::tensor(kept, torch::kLong);
  out.images = images.index_select(0, index);
  out.labels = labels.index_select(0, index);
  return out;
}
#else

DecodedImages decode_images(const std::vector<ImageFile>&, const ImageDecodeOptions&) {
  throw std::runtime_error(
      "bnn was built without OpenCV: chest_xray, celeba, image_folder and image files in bnn predict are "
      "unavailable; install OpenCV's core, imgproc and imgcodecs development files and rebuild");
}

#endif  // BNN_WITH_OPENCV

std::vector<std::vector<fs::path>> class_folder_files(const fs::path& split_dir,
                                                     const std::vector<std::string>& class_names,
                                                     const std::string& dataset_name) {
  const std::string split = split_dir.filename().string();
  std::error_code ec;
  if (!fs::is_directory(split_dir, ec)) {
    throw std::runtime_error(fmt::format("{}: missing {} split folder of the {} data set", split_dir.string(), split,
                                         dataset_name));
  }
  std::vector<std::vector<fs::path>> files;
  for (const auto& name : class_names) {
    if (!fs::is_directory(split_dir / name, ec)) {
      throw std::runtime_error(fmt::format("{}: missing class folder {} of the {} split",
                                           (split_dir / name).string(), name, split));
    }
    files.push_back(list_image_files(split_dir / name));
  }
  const bool empty = std::all_of(files.begin(), files.end(), [](const auto& f) { return f.empty(); });
  if (empty) {
    throw std::runtime_error(fmt::format(
        "{}: empty split: no image files (.jpeg, .jpg, .png, .bmp) in its class folders {}", split_dir.string(),
        fmt::join(class_names, ", ")));
  }
  for (size_t k = 0; k < files.size(); ++k) {
    if (!files[k].empty()) continue;
    throw std::runtime_error(fmt::format("{}: no image files (.jpeg, .jpg, .png, .bmp) in class folder {}",
                                         (split_dir / class_names[k]).string(), class_names[k]));
  }
  return files;
}

std::vector<ImageFile> interleave_classes(const std::vector<std::vector<ImageFile>>& per_class) {
  std::vector<ImageFile> out;
  for (size_t i = 0;; ++i) {
    bool any = false;
    for (const auto& files : per_class) {
      if (i >= files.size()) continue;
      out.push_back(files[i]);
      any = true;
    }
    if (!any) return out;
  }
}

DecodedImages decode_split(const std::vector<ImageFile>& files, int64_t limit, const std::string& limit_option,
                           const std::string& where, const ImageDecodeOptions& options) {
  const auto available = static_cast<int64_t>(files.size());
  if (limit > available) {
    throw std::runtime_error(
        fmt::format("{} = {} exceeds the {} image files of {}", limit_option, limit, available, where));
  }
  const int64_t used = limit == 0 ? available : limit;
  DecodedImages out =
      decode_images(std::vector<ImageFile>(files.begin(), files.begin() + static_cast<std::ptrdiff_t>(used)), options);
  if (out.skipped > 0) {
    spdlog::warn("{}: skipped {} unreadable image file{} (data.skip_bad_images), the first {}", options.label,
                 out.skipped, out.skipped == 1 ? "" : "s", out.first_skipped.string());
  }
  if (out.labels.size(0) == 0) {
    throw std::runtime_error(fmt::format("{}: empty split: all {} image files are unreadable (the first {})", where,
                                         out.skipped, out.first_skipped.string()));
  }
  return out;
}

Dataset uint8_dataset(const std::string& name, const DecodedImages& train, const DecodedImages& test,
                      const std::vector<std::string>& class_names, const std::optional<ChannelStats>& stats,
                      bool standardize, torch::Device device) {
  const ChannelStats s = stats         ? *stats
                         : standardize ? channel_stats(train.images)
                                       : unit_pixel_stats(test.images.size(1));
  // data.skip_bad_images may have left a class without training images: a
  // class the model would be asked to predict with nothing to learn from.
  if (train.images.defined() && train.skipped > 0) {
    const torch::Tensor counts = torch::bincount(train.labels, {}, static_cast<int64_t>(class_names.size()));
    for (size_t k = 0; k < class_names.size(); ++k) {
      if (counts[static_cast<int64_t>(k)].item<int64_t>() > 0) continue;
      throw std::runtime_error(fmt::format("{}: no training image of class {} is left after data.skip_bad_images "
                                           "skipped {} unreadable file(s) (the first: {}): the class has no training "
                                           "example",
                                           name, class_names[k], train.skipped, train.first_skipped.string()));
    }
  }
  Dataset dataset;
  dataset.name = name;
  if (train.images.defined()) dataset.train = uint8_split(train.images, train.labels, s, device);
  dataset.test = uint8_split(test.images, test.labels, s, device);
  dataset.num_classes = static_cast<int64_t>(class_names.size());
  dataset.class_names = class_names;
  dataset.pixel_stats = s;
  const auto shape = test.images.sizes();
  dataset.input_shape = {shape[1], shape[2], shape[3]};
  return dataset;
}

}  // namespace bnn::data_loaders
