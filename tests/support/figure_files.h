// Test helpers: check that figure files are real images. A PNG is decoded as
// far as its pixels (signature, chunk CRCs, IHDR, the IDAT stream inflated by
// zlib to exactly the size IHDR implies); an SVG is parsed as XML by Python's
// standard library and must have an <svg> root.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/io/atomic_file.h"

namespace bnn::testing {

struct PngSize {
  uint32_t width = 0, height = 0;
};

inline uint32_t big_endian32(const std::string& b, size_t at) {
  return (static_cast<uint32_t>(static_cast<unsigned char>(b[at])) << 24) |
         (static_cast<uint32_t>(static_cast<unsigned char>(b[at + 1])) << 16) |
         (static_cast<uint32_t>(static_cast<unsigned char>(b[at + 2])) << 8) |
         static_cast<uint32_t>(static_cast<unsigned char>(b[at + 3]));
}

// Throws std::runtime_error naming the file and the defect.
inline PngSize decode_png(const std::filesystem::path& path) {
  const std::string bytes = io::read_file(path);
  const auto fail = [&](const std::string& why) { throw std::runtime_error(path.string() + ": " + why); };
  if (bytes.size() < 8 || bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) fail("no PNG signature");
  PngSize size;
  uint32_t channels = 0, depth = 0;
  std::string idat;
  bool ended = false;
  for (size_t at = 8; at < bytes.size() && !ended;) {
    if (at + 12 > bytes.size()) fail("truncated chunk header");
    const uint32_t length = big_endian32(bytes, at);
    const std::string type = bytes.substr(at + 4, 4);
    if (at + 12 + length > bytes.size()) fail("truncated " + type + " chunk");
    const auto* typed = reinterpret_cast<const Bytef*>(bytes.data() + at + 4);
    if (crc32(0L, typed, 4 + length) != big_endian32(bytes, at + 8 + length)) fail("bad CRC in " + type);
    const std::string data = bytes.substr(at + 8, length);
    if (type == "IHDR") {
      size.width = big_endian32(data, 0);
      size.height = big_endian32(data, 4);
      depth = static_cast<unsigned char>(data[8]);
      const int color = static_cast<unsigned char>(data[9]);
      channels = color == 0 ? 1 : color == 2 ? 3 : color == 3 ? 1 : color == 4 ? 2 : color == 6 ? 4 : 0;
      if (channels == 0) fail("unknown colour type");
      if (data[12] != 0) fail("interlaced PNG not supported by this check");
    } else if (type == "IDAT") {
      idat += data;
    } else if (type == "IEND") {
      ended = true;
    }
    at += 12 + length;
  }
  if (!ended) fail("no IEND chunk");
  if (size.width == 0 || size.height == 0) fail("no IHDR or empty image");
  const uLongf row = (static_cast<uLongf>(size.width) * channels * depth + 7) / 8 + 1;  // + filter byte
  uLongf expected = row * size.height;
  std::vector<Bytef> pixels(expected + 1);
  uLongf produced = pixels.size();
  if (uncompress(pixels.data(), &produced, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK) {
    fail("IDAT does not inflate");
  }
  if (produced != expected) fail("IDAT inflates to the wrong size");
  return size;
}

// Figures are drawn by gnuplot, an optional dependency (scripts/install-deps.sh
// installs gnuplot-nox): tests skip their figure checks, visibly, without it.
inline bool has_gnuplot() { return std::system("gnuplot --version > /dev/null 2>&1") == 0; }
inline constexpr const char* kNoGnuplot = "gnuplot not installed (scripts/install-deps.sh installs gnuplot-nox)";

// True if `path` parses as XML whose root element is <svg>.
inline bool is_svg(const std::filesystem::path& path) {
  const std::string cmd =
      "python3 -c \"import sys, xml.etree.ElementTree as E; "
      "sys.exit(0 if E.parse(sys.argv[1]).getroot().tag.split('}')[-1] == 'svg' else 1)\" '" +
      path.string() + "' > /dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

}  // namespace bnn::testing
