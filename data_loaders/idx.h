// Reader for the IDX file format used by MNIST and Fashion-MNIST, plain or
// gzip-compressed.
//
// An IDX file is a big-endian header followed by raw data:
//
//   bytes 0-1   zero
//   byte  2     element type (0x08 = unsigned byte, the only type supported here)
//   byte  3     rank r
//   then r      big-endian int32 dimensions
//   then        prod(dims) elements, row-major
//
// so uint8 images are magic 0x00000803 and uint8 labels 0x00000801. Files are
// read through zlib's gzopen/gzread, which decompresses gzip and passes plain
// files through unchanged, so callers never care which one they were given.
//
// Everything a damaged download can do is an error (std::runtime_error) that
// names the file and what is wrong: a missing file, a wrong magic number, wrong
// or non-positive dimensions, fewer data bytes than the header promises (also a
// gzip stream cut short), a corrupt gzip stream, and bytes after the data.
// Reading never falls back to a partial tensor.
//
// Thread-safety: the functions share no state and may run concurrently.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace bnn::data_loaders {

// The IDX element type code for unsigned bytes (byte 2 of the magic number).
inline constexpr int kIdxTypeUInt8 = 0x08;

// Marks an axis of IdxSpec::dims that may take any positive size (the number
// of examples, typically).
inline constexpr int64_t kIdxAnyDim = -1;

// What the caller expects to find in a file.
struct IdxSpec {
  // Expected dimensions; the rank of the file must equal dims.size(). An entry
  // of kIdxAnyDim accepts any positive size, any other entry must match.
  std::vector<int64_t> dims;
  // What one element is, for error messages ("image", "label").
  std::string element_name = "data";
};

// Reads a uint8 IDX file whose header matches `spec` into a CPU uint8 tensor
// with the file's dimensions.
torch::Tensor read_idx_uint8(const std::filesystem::path& path, const IdxSpec& spec);

// Reads N x rows x cols uint8 images (magic 0x00000803).
torch::Tensor read_idx_images(const std::filesystem::path& path, int64_t rows, int64_t cols);

// Reads N uint8 labels (magic 0x00000801).
torch::Tensor read_idx_labels(const std::filesystem::path& path);

}  // namespace bnn::data_loaders
