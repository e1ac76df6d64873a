#include "samplers/fused_step.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <ATen/Parallel.h>

namespace bnn::samplers {

namespace {

// Pieces smaller than this are not worth a thread.
constexpr int64_t kMinPiece = 8192;

const detail::FusedKernels& pick_kernels() {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(_M_X64))
  if (const detail::FusedKernels* avx2 = detail::fused_kernels_avx2();
      avx2 != nullptr && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return *avx2;
  }
#endif
  return detail::fused_kernels_baseline();
}

std::optional<detail::Rounding> probe_rounding() {
  torch::NoGradGuard no_grad;
  // a + alpha b with a = -1, b = alpha = 1 + 2^-12: the exact value is
  // 2^-11 + 2^-24, which fma keeps; the rounded product 1 + 2^-11 + 2^-24
  // ties to 1 + 2^-11, so the separate rounding gives 2^-11.
  constexpr int64_t kLength = 1000;  // vectorised loop and scalar tail alike
  const float b = 1.0f + 0x1p-12f;
  torch::Tensor a = torch::full({kLength}, -1.0f);
  a.add_(torch::full({kLength}, b), static_cast<double>(b));
  const float* r = a.data_ptr<float>();
  int64_t fma = 0, separate = 0;
  const float fused = 0x1p-11f + 0x1p-24f, rounded = 0x1p-11f;
  for (int64_t i = 0; i < kLength; ++i) {
    fma += r[i] == fused;
    separate += r[i] == rounded;
  }
  if (fma == kLength) return detail::Rounding::kFma;
  if (separate == kLength) return detail::Rounding::kSeparate;
  return std::nullopt;
}

}  // namespace

std::optional<detail::Rounding> aten_add_rounding() {
  static const std::optional<detail::Rounding> rounding = probe_rounding();
  return rounding;
}

bool FusedPasses::enabled_by_default() {
  const char* value = std::getenv("BNN_FUSED_STEPS");
  return value == nullptr || std::strcmp(value, "0") != 0;
}

std::string fused_step_description() {
  const auto rounding = aten_add_rounding();
  std::string text = &pick_kernels() == &detail::fused_kernels_baseline() ? "baseline" : "avx2+fma";
  text += !rounding ? ", off (ATen's float rounding of add is mixed)"
          : *rounding == detail::Rounding::kFma ? ", rounding like ATen: fma"
                                                 : ", rounding like ATen: separate";
  if (!FusedPasses::enabled_by_default()) text += ", off (BNN_FUSED_STEPS=0)";
  return text;
}

bool FusedPasses::supported(const torch::Tensor& x, const torch::Tensor& noise) {
  auto cpu_float = [](const torch::Tensor& t) {
    return t.defined() && t.device().is_cpu() && t.scalar_type() == torch::kFloat && t.is_contiguous();
  };
  return cpu_float(x) && cpu_float(noise) && aten_add_rounding().has_value();
}

FusedPasses::FusedPasses(ChunkedNormal& normal, int64_t dim)
    : normal_(normal),
      dim_(dim),
      kernels_(pick_kernels()),
      rounding_(aten_add_rounding().value_or(detail::Rounding::kFma)),
      next_(normal.chunk_generators().size()),
      jumps_(detail::kBlocksPerChunk),
      jump_table_(detail::kBlocksPerChunk, nullptr) {
  TORCH_CHECK(!normal.chunk_generators().empty() && dim > 0 &&
                  (normal.numel() == dim || normal.numel() == 2 * dim),
              "fused sampler passes need bnn's float32 CPU generator over 1 or 2 times ", dim, " elements");
}

void FusedPasses::prepare_jump(int64_t position) {
  const int64_t blocks = position % detail::kNoiseChunk / (2 * detail::kNormalLanes);
  if (blocks == 0 || jump_table_[static_cast<size_t>(blocks)] != nullptr) return;
  auto jump = std::make_unique<detail::LaneJump>();
  detail::make_lane_jump(blocks, *jump);
  jump_table_[static_cast<size_t>(blocks)] = jump.get();
  jumps_[static_cast<size_t>(blocks)] = std::move(jump);
}

bool FusedPasses::run(const detail::PassSpan& span, bool draws, const Pass& pass) {
  const int64_t pieces =
      std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), dim_ / kMinPiece));
  bounds_.resize(static_cast<size_t>(pieces + 1));
  for (int64_t p = 0; p <= pieces; ++p) {
    // Piece starts on whole blocks of the first stream (any start would do).
    bounds_[static_cast<size_t>(p)] = p == pieces ? dim_ : dim_ * p / pieces / 16 * 16;
  }
  std::vector<detail::NormalLanes>& chunks = normal_.chunk_generators();
  if (draws) {
    for (int64_t p = 0; p < pieces; ++p) {
      for (int64_t start = bounds_[static_cast<size_t>(p)]; start < normal_.numel(); start += dim_) {
        prepare_jump(start);
      }
    }
  }
  const detail::NoiseBuffer buffer{chunks.data(), next_.data(), normal_.numel(), jump_table_.data()};
  flags_.assign(static_cast<size_t>(pieces), 0);
  at::parallel_for(0, pieces, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      detail::PassSpan piece = span;
      piece.dim = dim_;
      piece.begin = bounds_[static_cast<size_t>(p)];
      piece.end = bounds_[static_cast<size_t>(p + 1)];
      flags_[static_cast<size_t>(p)] = pass(piece, buffer) ? 1 : 0;
    }
  });
  if (draws) chunks.swap(next_);
  for (const char f : flags_) {
    if (f != 0) return true;
  }
  return false;
}

float box_width(double w) {
  if (!std::isfinite(w)) return std::numeric_limits<float>::infinity();
  float f = static_cast<float>(w);
  if (static_cast<double>(f) > w) f = std::nextafter(f, 0.0f);
  return f;
}

}  // namespace bnn::samplers
