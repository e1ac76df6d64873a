#include "src/io/zip_check.h"

#include <array>
#include <limits>

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

// Little-endian fields of `bytes`; `ok` turns false where one runs past the end.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  uint64_t field(uint64_t at, int width) {
    if (at > bytes_.size() || bytes_.size() - at < static_cast<uint64_t>(width)) {
      ok = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = width - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes_[at + static_cast<uint64_t>(i)]);
    return v;
  }
  uint16_t u16(uint64_t at) { return static_cast<uint16_t>(field(at, 2)); }
  uint32_t u32(uint64_t at) { return static_cast<uint32_t>(field(at, 4)); }
  uint64_t u64(uint64_t at) { return field(at, 8); }
  bool ok = true;

 private:
  std::string_view bytes_;
};

}  // namespace

uint32_t crc32(std::string_view bytes, uint32_t crc) {
  const auto& table = crc_table();
  crc = ~crc;
  for (const char b : bytes) crc = table[(crc ^ static_cast<uint8_t>(b)) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

std::string zip_damage(std::string_view bytes) {
  Reader r(bytes);
  // The end-of-central-directory record: the last one, before a comment of at most 64 KiB.
  if (bytes.size() < 22) return fmt::format("{} bytes: too short for a zip archive", bytes.size());
  uint64_t end = bytes.size() - 22;
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
    const std::string name(bytes.substr(at + 46, name_length));
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
    if (!r.ok || data > bytes.size() || bytes.size() - data < size) {
      return fmt::format("entry {} runs past the end of the file (the file is cut)", name);
    }
    if (crc32(bytes.substr(data, size)) != crc) {
      return fmt::format("the data of entry {} does not match its CRC-32 (damaged bytes)", name);
    }
  }
  if (!r.ok) return "the central directory runs past the end of the file";
  return "";
}

}  // namespace bnn::io
