#include "data_loaders/npy.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <fstream>
#include <iterator>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace bnn::data_loaders {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

torch::ScalarType dtype_of(const std::string& descr, const std::filesystem::path& path) {
  if (descr == "<f2") return torch::kHalf;
  if (descr == "<f4") return torch::kFloat;
  if (descr == "<f8") return torch::kDouble;
  if (descr == "<i4") return torch::kInt;
  if (descr == "<i8") return torch::kLong;
  if (descr == "|u1") return torch::kByte;
  throw std::runtime_error(fmt::format(
      "{}: unsupported npy dtype '{}' (bnn reads float16, float32, float64, int32, int64 and uint8, little-endian)",
      path.string(), descr));
}

}  // namespace

torch::Tensor read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open (missing or unreadable)", path.string()));
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto fail = [&](const std::string& why) {
    return std::runtime_error(fmt::format("{}: not a valid .npy file: {}", path.string(), why));
  };
  if (bytes.empty()) throw fail("the file is empty");
  if (bytes.size() < 10 || bytes.compare(0, 6, std::string(kMagic, 6)) != 0) throw fail("bad magic");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, offset;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw fail("truncated header");
    uint32_t l;
    std::memcpy(&l, bytes.data() + 8, 4);
    header_len = l;
    offset = 12;
  } else {
    throw fail(fmt::format("unsupported version {}", major));
  }
  if (bytes.size() < offset + header_len) throw fail("truncated header");
  const std::string header = bytes.substr(offset, header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']+)'"))) throw fail("no descr");
  const torch::ScalarType dtype = dtype_of(m[1], path);
  const bool fortran = std::regex_search(header, std::regex("'fortran_order':\\s*True"));
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)"))) throw fail("no shape");
  std::vector<int64_t> shape;
  const std::string dims = m[1];
  std::regex num("\\d+");
  // The byte count the shape asks for, checked against the file before
  // anything is allocated (a header may promise terabytes).
  const size_t element = c10::elementSize(dtype);
  size_t data_bytes = element;
  bool too_large = false;
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator(); ++it) {
    const std::string d = it->str();
    if (d.size() > 18) {
      too_large = true;
      break;
    }
    shape.push_back(std::stoll(d));
    const auto n = static_cast<size_t>(shape.back());
    if (n != 0 && data_bytes > std::numeric_limits<size_t>::max() / n) {
      too_large = true;
      break;
    }
    data_bytes *= n;
  }
  const size_t start = offset + header_len;
  if (too_large) {
    throw fail(fmt::format("shape ({}) needs more bytes than any file holds; the file has {} data bytes", dims,
                           bytes.size() - start));
  }
  if (bytes.size() != start + data_bytes) {
    throw fail(fmt::format("shape ({}) needs {} data bytes, the file has {}{}", dims, data_bytes, bytes.size() - start,
                           bytes.size() - start < data_bytes ? " (cut short?)" : ""));
  }
  // Fortran order (column-major, as numpy saves a transposed array): the
  // bytes are the C-order array of the reversed shape, transposed back.
  std::vector<int64_t> stored = shape;
  if (fortran) std::reverse(stored.begin(), stored.end());
  torch::Tensor t = torch::empty(stored, torch::TensorOptions().dtype(dtype));
  std::memcpy(t.data_ptr(), bytes.data() + start, data_bytes);
  if (fortran && t.dim() > 1) {
    std::vector<int64_t> reverse(static_cast<size_t>(t.dim()));
    for (int64_t i = 0; i < t.dim(); ++i) reverse[static_cast<size_t>(i)] = t.dim() - 1 - i;
    t = t.permute(reverse).contiguous();
  }
  return t;
}

}  // namespace bnn::data_loaders
