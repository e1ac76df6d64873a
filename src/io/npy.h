// Writing NumPy .npy files (format version 1.0), so that every array bnn
// writes can be read with numpy.load (and with data_loaders::read_npy,
// data_loaders/npy.h). Supported dtypes: float16, float32, float64, int32,
// int64, uint8 (little-endian, C order). Writes are atomic (Note [Atomic writes]).
#pragma once

#include <filesystem>
#include <string>

#include <torch/torch.h>

namespace bnn::io {

// The complete .npy file contents for `tensor` (copied to CPU, contiguous).
std::string npy_bytes(const torch::Tensor& tensor);

void write_npy(const std::filesystem::path& path, const torch::Tensor& tensor);

}  // namespace bnn::io
