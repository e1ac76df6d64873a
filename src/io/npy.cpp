#include "src/io/npy.h"

#include <cstdint>
#include <string>

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
    case torch::kInt: return "<i4";
    case torch::kLong: return "<i8";
    case torch::kByte: return "|u1";
    default: TORCH_CHECK(false, "write_npy: unsupported dtype ", t);
  }
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

}  // namespace bnn::io
