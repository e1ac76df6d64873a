// NumPy .npy files (format version 1.0), so that every array bnn writes can be
// read with numpy.load. Supported dtypes: float16, float32, float64, int64, uint8
// (little-endian, C order). Writes are atomic (Note [Atomic writes]).
#pragma once

#include <filesystem>
#include <string>

#include <torch/torch.h>

namespace bnn::io {

// The complete .npy file contents for `tensor` (copied to CPU, contiguous).
std::string npy_bytes(const torch::Tensor& tensor);

void write_npy(const std::filesystem::path& path, const torch::Tensor& tensor);

// Reads a .npy written by write_npy or numpy (the dtypes above, C order).
// Throws std::runtime_error naming the file on a malformed or unsupported file.
torch::Tensor read_npy(const std::filesystem::path& path);

}  // namespace bnn::io
