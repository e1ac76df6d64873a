#include "src/io/npy.h"

#include <cstring>
#include <regex>
#include <stdexcept>

#include <fmt/format.h>

#include "src/io/atomic_file.h"

namespace bnn::io {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

std::string descr_of(torch::ScalarType t) {
  switch (t) {
    case torch::kHalf: return "<f2";
    case torch::kFloat: return "<f4";
    case torch::kDouble: return "<f8";
    case torch::kLong: return "<i8";
    case torch::kByte: return "|u1";
    default: TORCH_CHECK(false, "write_npy: unsupported dtype ", t);
  }
}

torch::ScalarType dtype_of(const std::string& descr, const std::filesystem::path& path) {
  if (descr == "<f2") return torch::kHalf;
  if (descr == "<f4") return torch::kFloat;
  if (descr == "<f8") return torch::kDouble;
  if (descr == "<i8") return torch::kLong;
  if (descr == "|u1") return torch::kByte;
  throw std::runtime_error(fmt::format("{}: unsupported npy dtype '{}'", path.string(), descr));
}

}  // namespace

std::string npy_bytes(const torch::Tensor& tensor) {
  const torch::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
  std::string shape;  // "3, 4" for 2-D, "3," for 1-D (a Python tuple), "" for 0-D
  for (int64_t i = 0; i < t.dim(); ++i) shape += (i > 0 ? ", " : "") + std::to_string(t.size(i));
  if (t.dim() == 1) shape += ",";
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr_of(t.scalar_type()), shape);
  // Pad with spaces so that magic + version + length + header is a multiple of 64, ending in '\n'.
  const size_t prefix = 6 + 2 + 2;
  const size_t total = ((prefix + header.size() + 1 + 63) / 64) * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header.push_back('\n');
  std::string out(kMagic, 6);
  out.push_back('\x01');
  out.push_back('\x00');
  const uint16_t len = static_cast<uint16_t>(header.size());
  out.push_back(static_cast<char>(len & 0xff));
  out.push_back(static_cast<char>(len >> 8));
  out += header;
  out.append(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
  return out;
}

void write_npy(const std::filesystem::path& path, const torch::Tensor& tensor) {
  write_file_atomically(path, npy_bytes(tensor));
}

torch::Tensor read_npy(const std::filesystem::path& path) {
  const std::string bytes = read_file(path);
  auto fail = [&](const std::string& why) {
    return std::runtime_error(fmt::format("{}: not a valid .npy file: {}", path.string(), why));
  };
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
  if (std::regex_search(header, std::regex("'fortran_order':\\s*True"))) throw fail("Fortran order not supported");
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)"))) throw fail("no shape");
  std::vector<int64_t> shape;
  const std::string dims = m[1];
  std::regex num("\\d+");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator(); ++it) {
    shape.push_back(std::stoll(it->str()));
  }
  torch::Tensor t = torch::empty(shape, torch::TensorOptions().dtype(dtype));
  const size_t data_bytes = static_cast<size_t>(t.numel()) * t.element_size();
  const size_t start = offset + header_len;
  if (bytes.size() != start + data_bytes) {
    throw fail(fmt::format("expected {} data bytes, found {}", data_bytes, bytes.size() - start));
  }
  std::memcpy(t.data_ptr(), bytes.data() + start, data_bytes);
  return t;
}

}  // namespace bnn::io
