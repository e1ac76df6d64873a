#include "src/io/zip_check.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace bnn::io {
namespace {

constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kZip64EndLocator = 0x07064b50;
constexpr uint32_t kZip64End = 0x06064b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint16_t kZip64Extra = 0x0001;
constexpr uint32_t kUnset32 = 0xFFFFFFFF;

const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  return table;
}

// Where the archive's bytes come from: a string in memory, or a file read
// piece by piece (a checkpoint may be larger than the memory to spare).
class Source {
 public:
  virtual ~Source() = default;
  virtual uint64_t size() const = 0;
  // Up to `n` bytes from `at` (fewer at the end).
  virtual std::string read(uint64_t at, uint64_t n) = 0;
};

class MemorySource : public Source {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  std::string read(uint64_t at, uint64_t n) override {
    return at >= bytes_.size() ? std::string() : std::string(bytes_.substr(at, n));
  }

 private:
  std::string_view bytes_;
};

class FileSource : public Source {
 public:
  explicit FileSource(const std::filesystem::path& path) : in_(path, std::ios::binary) {
    if (!in_) throw std::runtime_error(fmt::format("cannot read {}", path.string()));
    in_.seekg(0, std::ios::end);
    size_ = static_cast<uint64_t>(in_.tellg());
  }
  uint64_t size() const override { return size_; }
  std::string read(uint64_t at, uint64_t n) override {
    if (at >= size_) return {};
    std::string out(std::min(n, size_ - at), '\0');
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(at));
    in_.read(out.data(), static_cast<std::streamsize>(out.size()));
    out.resize(static_cast<size_t>(in_.gcount()));
    return out;
  }

 private:
  std::ifstream in_;
  uint64_t size_ = 0;
};

// Little-endian fields of a source; `ok` turns false where one runs past the end.
class Reader {
 public:
  explicit Reader(Source& source) : source_(source) {}
  uint64_t field(uint64_t at, int width) {
    const std::string b = source_.read(at, static_cast<uint64_t>(width));
    if (b.size() != static_cast<size_t>(width)) {
      ok = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = width - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b[static_cast<size_t>(i)]);
    return v;
  }
  uint16_t u16(uint64_t at) { return static_cast<uint16_t>(field(at, 2)); }
  uint32_t u32(uint64_t at) { return static_cast<uint32_t>(field(at, 4)); }
  uint64_t u64(uint64_t at) { return field(at, 8); }
  bool ok = true;

 private:
  Source& source_;
};

}  // namespace

uint32_t crc32(std::string_view bytes, uint32_t crc) {
  const auto& table = crc_table();
  crc = ~crc;
  for (const char b : bytes) crc = table[(crc ^ static_cast<uint8_t>(b)) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

namespace {

std::string damage_of(Source& source) {
  Reader r(source);
  const uint64_t file_size = source.size();
  // The end-of-central-directory record: the last one, before a comment of at most 64 KiB.
  if (file_size < 22) return fmt::format("{} bytes: too short for a zip archive", file_size);
  uint64_t end = file_size - 22;
  const uint64_t lowest = end > 0xFFFF ? end - 0xFFFF : 0;
  while (r.u32(end) != kEndOfCentralDirectory) {
    if (end == lowest) return "no zip end-of-central-directory record (the file is cut or not a zip archive)";
    --end;
  }
  uint64_t entries = r.u16(end + 10);
  uint64_t directory = r.u32(end + 16);
  if (entries == 0xFFFF || directory == kUnset32) {  // zip64: the locator just before
    if (end < 20 || r.u32(end - 20) != kZip64EndLocator) return "a zip64 archive without its zip64 locator";
    const uint64_t end64 = r.u64(end - 20 + 8);
    if (r.u32(end64) != kZip64End) return "a zip64 locator that points to no zip64 end record";
    entries = r.u64(end64 + 32);
    directory = r.u64(end64 + 48);
  }
  uint64_t at = directory;
  for (uint64_t i = 0; i < entries; ++i) {
    if (r.u32(at) != kCentralHeader) return fmt::format("central directory entry {} of {} is damaged", i, entries);
    const uint16_t method = r.u16(at + 10);
    const uint32_t crc = r.u32(at + 16);
    uint64_t size = r.u32(at + 20);
    const uint64_t uncompressed = r.u32(at + 24);
    const uint16_t name_length = r.u16(at + 28), extra_length = r.u16(at + 30), comment_length = r.u16(at + 32);
    uint64_t local = r.u32(at + 42);
    if (!r.ok) break;
    const std::string name = source.read(at + 46, name_length);
    // The zip64 extra field holds, in this order, whichever of the
    // uncompressed size, compressed size and local offset are unset above.
    for (uint64_t e = at + 46 + name_length; e + 4 <= at + 46 + name_length + extra_length;) {
      const uint16_t id = r.u16(e), length = r.u16(e + 2);
      if (id == kZip64Extra) {
        uint64_t f = e + 4;
        if (uncompressed == kUnset32) f += 8;
        if (size == kUnset32) size = r.u64(f), f += 8;
        if (local == kUnset32) local = r.u64(f);
      }
      e += 4 + length;
    }
    at += 46 + name_length + extra_length + comment_length;
    if (method != 0) continue;  // compressed: not checked
    if (r.u32(local) != kLocalHeader) return fmt::format("the local header of entry {} is damaged", name);
    const uint64_t data = local + 30 + r.u16(local + 26) + r.u16(local + 28);
    if (!r.ok || data > file_size || file_size - data < size) {
      return fmt::format("entry {} runs past the end of the file (the file is cut)", name);
    }
    uint32_t sum = 0;
    constexpr uint64_t kPiece = 1 << 20;
    for (uint64_t done = 0; done < size;) {
      const std::string piece = source.read(data + done, std::min(kPiece, size - done));
      if (piece.empty()) return fmt::format("entry {} runs past the end of the file (the file is cut)", name);
      sum = crc32(piece, sum);
      done += piece.size();
    }
    if (sum != crc) return fmt::format("the data of entry {} does not match its CRC-32 (damaged bytes)", name);
  }
  if (!r.ok) return "the central directory runs past the end of the file";
  return "";
}

}  // namespace

std::string zip_damage(std::string_view bytes) {
  MemorySource source(bytes);
  return damage_of(source);
}

std::string zip_file_damage(const std::filesystem::path& path) {
  FileSource source(path);
  return damage_of(source);
}

}  // namespace bnn::io
