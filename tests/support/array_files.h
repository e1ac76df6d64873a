// Test helper: a small, separable arrays data set (data.dataset arrays) for
// end-to-end runs.
#pragma once

#include <cstdint>
#include <filesystem>

#include <torch/torch.h>

#include "src/io/npy.h"

namespace bnn::testing {

// 400 uint8 images of channels x height x width (1 x 6 x 6 unless said) in two
// classes, dark (pixels 0-99) and bright (150-249), alternating; the first 300
// train, the last 100 test. `seed` draws the pixels.
inline void write_dark_and_bright(const std::filesystem::path& dir, uint64_t seed, int64_t channels = 1,
                                  int64_t height = 6, int64_t width = 6) {
  std::filesystem::create_directories(dir);
  torch::manual_seed(seed);
  const torch::Tensor y = torch::arange(400, torch::kLong).remainder(2);
  const torch::Tensor x =
      (y.view({400, 1, 1, 1}) * 150 + torch::randint(0, 100, {400, channels, height, width})).to(torch::kByte);
  io::write_npy(dir / "train_x.npy", x.narrow(0, 0, 300));
  io::write_npy(dir / "train_y.npy", y.narrow(0, 0, 300));
  io::write_npy(dir / "test_x.npy", x.narrow(0, 300, 100));
  io::write_npy(dir / "test_y.npy", y.narrow(0, 300, 100));
}

}  // namespace bnn::testing
