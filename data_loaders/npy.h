// Reader for NumPy .npy files (format versions 1, 2 and 3; C order;
// little-endian float16, float32, float64, int32, int64 and uint8), the
// arrays of `data.dataset: arrays` and everything bnn writes with
// io::write_npy (src/io/npy.h).
//
// A damaged or foreign file is a std::runtime_error naming the file and what
// is wrong: a bad magic string, a truncated header, an unsupported dtype or
// Fortran order, or a data size that differs from the shape's (a file cut
// short, or bytes after the data). Reading never returns a partial tensor.
#pragma once

#include <filesystem>

#include <torch/torch.h>

namespace bnn::data_loaders {

torch::Tensor read_npy(const std::filesystem::path& path);

}  // namespace bnn::data_loaders
