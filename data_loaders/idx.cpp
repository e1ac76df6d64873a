#include "data_loaders/idx.h"

#include <fmt/format.h>
#include <zlib.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <system_error>

namespace bnn::data_loaders {
namespace {

namespace fs = std::filesystem;

// zlib's default 8 KiB buffer makes decompressing the 26 MB training images
// noticeably slower; 256 KiB is where larger buffers stop helping.
constexpr unsigned kGzBufferBytes = 256 * 1024;
// gzread takes an unsigned length and returns an int, so one call reads at most
// this many bytes.
constexpr int64_t kMaxReadChunk = int64_t{1} << 30;

[[noreturn]] void fail(const fs::path& path, const std::string& what) {
  throw std::runtime_error(path.string() + ": " + what);
}

std::string join_dims(const std::vector<int64_t>& dims) {
  std::string text;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) text += " x ";
    text += dims[i] == kIdxAnyDim ? std::string("N") : std::to_string(dims[i]);
  }
  return text;
}

// "60000 label bytes", or "47040000 image bytes (60000 x 28 x 28)" when the
// shape says more than the count.
std::string describe_bytes(int64_t total, const std::string& element_name,
                           const std::vector<int64_t>& dims) {
  std::string text = fmt::format("{} {} bytes", total, element_name);
  if (dims.size() > 1) text += " (" + join_dims(dims) + ")";
  return text;
}

uint32_t big_endian_u32(const unsigned char* bytes) {
  return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) |
         uint32_t{bytes[3]};
}

// Owns a gzFile and turns zlib's error reporting into exceptions naming the
// file. gzread silently passes plain files through, so this reads both.
class GzReader {
 public:
  explicit GzReader(const fs::path& path) : path_(path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) fail(path, "file does not exist");
    if (!fs::is_regular_file(path, ec)) fail(path, "not a regular file");
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr) fail(path, fmt::format("cannot open: {}", std::strerror(errno)));
    gzbuffer(file_, kGzBufferBytes);
  }
  ~GzReader() { gzclose(file_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads up to n bytes into dst and returns how many arrived; fewer than n
  // means the data ended, and truncated_gzip() says whether it ended because
  // the compressed stream was cut short. A corrupt stream throws.
  int64_t read(void* dst, int64_t n) {
    // On a cut-short stream gzread returns 0 even for the bytes it delivered
    // in that call, so count progress with gztell, which does include them.
    const int64_t start = gztell(file_);
    auto* out = static_cast<unsigned char*>(dst);
    for (int64_t remaining = n; remaining > 0;) {
      const auto chunk = static_cast<unsigned>(std::min(remaining, kMaxReadChunk));
      const int got = gzread(file_, out, chunk);
      if (got <= 0) break;
      out += got;
      remaining -= got;
    }
    check_stream();
    return gztell(file_) - start;
  }

  bool truncated_gzip() const { return truncated_gzip_; }
  // Whether the file is read as it is, not gunzipped (known after a read).
  bool plain() const { return gzdirect(file_) == 1; }

 private:
  void check_stream() {
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    // zlib reports a gzip stream that ends before its end-of-stream marker
    // and checksum as Z_BUF_ERROR ("unexpected end of file").
    if (code == Z_BUF_ERROR) {
      truncated_gzip_ = true;
      return;
    }
    if (code == Z_ERRNO) fail(path_, fmt::format("read error: {}", std::strerror(errno)));
    if (code != Z_OK) fail(path_, fmt::format("corrupt gzip stream: {}", message));
  }

  fs::path path_;
  gzFile file_ = nullptr;
  bool truncated_gzip_ = false;
};

void read_header_field(GzReader& reader, const fs::path& path, unsigned char* dst, int64_t n,
                       const std::string& field, int64_t offset) {
  const int64_t got = reader.read(dst, n);
  if (got == n) return;
  fail(path, fmt::format("truncated{}: the file ends at byte {}, inside the {} (bytes {}-{})",
                         reader.truncated_gzip() ? " gzip stream" : "", offset + got, field,
                         offset, offset + n - 1));
}

void check_spec(const IdxSpec& spec) {
  TORCH_CHECK(!spec.dims.empty() && spec.dims.size() <= 255,
              "IdxSpec must have between 1 and 255 dims, got ", spec.dims.size());
  for (int64_t d : spec.dims) {
    TORCH_CHECK(d == kIdxAnyDim || d > 0, "IdxSpec dims must be positive or kIdxAnyDim, got ",
                join_dims(spec.dims));
  }
}

}  // namespace

torch::Tensor read_idx_uint8(const fs::path& path, const IdxSpec& spec) {
  check_spec(spec);
  const auto rank = static_cast<int64_t>(spec.dims.size());
  const uint32_t expected_magic = (uint32_t{kIdxTypeUInt8} << 8) | static_cast<uint32_t>(rank);

  GzReader reader(path);
  std::array<unsigned char, 4> magic_bytes{};
  read_header_field(reader, path, magic_bytes.data(), 4, "magic number", /*offset=*/0);
  const uint32_t magic = big_endian_u32(magic_bytes.data());
  if (magic != expected_magic) {
    fail(path, fmt::format("bad magic number 0x{:08x}, expected 0x{:08x} ({}-dimensional uint8 "
                           "IDX for {}s); is this the right file, or a corrupt download?",
                           magic, expected_magic, rank, spec.element_name));
  }

  std::vector<unsigned char> dim_bytes(4 * rank);
  read_header_field(reader, path, dim_bytes.data(), 4 * rank, "dimensions", /*offset=*/4);
  std::vector<int64_t> dims(rank);
  for (int64_t i = 0; i < rank; ++i) {
    dims[i] = static_cast<int32_t>(big_endian_u32(&dim_bytes[4 * i]));
  }
  for (int64_t i = 0; i < rank; ++i) {
    if (dims[i] <= 0) {
      fail(path, fmt::format("dimension {} is {}, must be positive (dims {})", i, dims[i],
                             join_dims(dims)));
    }
    if (spec.dims[i] != kIdxAnyDim && dims[i] != spec.dims[i]) {
      fail(path, fmt::format("wrong dimensions {}, expected {}", join_dims(dims),
                             join_dims(spec.dims)));
    }
  }

  int64_t total = 1;
  for (int64_t d : dims) {
    if (total > std::numeric_limits<int64_t>::max() / d) {
      fail(path, fmt::format("dimensions {} are too large", join_dims(dims)));
    }
    total *= d;
  }

  // A plain file's size says at once whether the data are all there: a
  // header that promises more is not allocated for.
  std::error_code size_error;
  const auto file_bytes = static_cast<int64_t>(fs::file_size(path, size_error));
  const int64_t header_bytes = 4 + 4 * rank;
  if (reader.plain() && !size_error && file_bytes - header_bytes < total) {
    fail(path, fmt::format("truncated: expected {}, got {}", describe_bytes(total, spec.element_name, dims),
                           file_bytes - header_bytes));
  }
  torch::Tensor data;
  try {
    data = torch::empty(dims, torch::kUInt8);
  } catch (const c10::Error& e) {
    fail(path, fmt::format("cannot allocate the {} the header promises: {}",
                           describe_bytes(total, spec.element_name, dims), e.what_without_backtrace()));
  } catch (const std::exception& e) {
    fail(path, fmt::format("cannot allocate the {} the header promises: {}",
                           describe_bytes(total, spec.element_name, dims), e.what()));
  }
  const int64_t got = reader.read(data.data_ptr<uint8_t>(), total);
  if (got < total) {
    fail(path, fmt::format("truncated{}: expected {}, got {}",
                           reader.truncated_gzip() ? " gzip stream" : "",
                           describe_bytes(total, spec.element_name, dims), got));
  }

  // Reading past the data also makes zlib verify the gzip checksum and
  // length trailer, so a damaged trailer is caught here too.
  unsigned char extra = 0;
  if (reader.read(&extra, 1) != 0) {
    fail(path, fmt::format("trailing garbage: more bytes follow the {} the header promises",
                           describe_bytes(total, spec.element_name, dims)));
  }
  if (reader.truncated_gzip()) {
    fail(path, fmt::format("truncated gzip stream: all {} arrived but the gzip checksum "
                           "trailer is missing",
                           describe_bytes(total, spec.element_name, dims)));
  }
  return data;
}

torch::Tensor read_idx_images(const fs::path& path, int64_t rows, int64_t cols) {
  return read_idx_uint8(path, IdxSpec{{kIdxAnyDim, rows, cols}, "image"});
}

torch::Tensor read_idx_labels(const fs::path& path) {
  return read_idx_uint8(path, IdxSpec{{kIdxAnyDim}, "label"});
}

}  // namespace bnn::data_loaders
