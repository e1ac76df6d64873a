#include "samplers/fused_step.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>

#include <stdexcept>

#include <ATen/Parallel.h>

#include "samplers/buffered_passes.h"

#if defined(BNN_CUDA_KERNELS) && defined(BNN_HAVE_C10_CUDA)
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

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

std::optional<detail::Rounding> probe_rounding(torch::Device device) {
  torch::NoGradGuard no_grad;
  // a + alpha b with a = -1, b = alpha = 1 + 2^-12: the exact value is
  // 2^-11 + 2^-24, which fma keeps; the rounded product 1 + 2^-11 + 2^-24
  // ties to 1 + 2^-11, so the separate rounding gives 2^-11.
  constexpr int64_t kLength = 1000;  // vectorised loop and scalar tail alike
  const float b = 1.0f + 0x1p-12f;
  const auto on = torch::TensorOptions().dtype(torch::kFloat).device(device);
  torch::Tensor a = torch::full({kLength}, -1.0f, on);
  a.add_(torch::full({kLength}, b, on), static_cast<double>(b));
  a = a.cpu();
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
  static const std::optional<detail::Rounding> rounding = probe_rounding(torch::kCPU);
  return rounding;
}

std::optional<detail::Rounding> aten_add_rounding(torch::Device device) {
  if (device.is_cpu()) return aten_add_rounding();
  static std::mutex mutex;
  static std::map<torch::DeviceType, std::optional<detail::Rounding>> known;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = known.find(device.type());
  if (found != known.end()) return found->second;
  return known[device.type()] = probe_rounding(device);
}

FusedChoice fused_choice_from_environment() {
  const char* value = std::getenv("BNN_FUSED_STEPS");
  if (value == nullptr || std::strcmp(value, "1") == 0) return FusedChoice::kAuto;
  if (std::strcmp(value, "0") == 0) return FusedChoice::kOff;
  if (std::strcmp(value, "buffered") == 0) return FusedChoice::kBuffered;
  throw std::invalid_argument(std::string("BNN_FUSED_STEPS: '") + value +
                              "' is not 0 (tensor operations), 1 (fused passes, the default) or buffered");
}

bool cuda_kernels_built() {
#if defined(BNN_CUDA_KERNELS) && defined(BNN_HAVE_C10_CUDA)
  return true;
#else
  return false;
#endif
}

std::string fused_step_description() {
  const auto rounding = aten_add_rounding();
  std::string text = &pick_kernels() == &detail::fused_kernels_baseline() ? "baseline" : "avx2+fma";
  text += !rounding ? ", off (ATen's float rounding of add is mixed)"
          : *rounding == detail::Rounding::kFma ? ", rounding like ATen: fma"
                                                 : ", rounding like ATen: separate";
  const FusedChoice choice = fused_choice_from_environment();
  if (choice == FusedChoice::kOff) text += ", off (BNN_FUSED_STEPS=0)";
  if (choice == FusedChoice::kBuffered) text += ", buffered passes (BNN_FUSED_STEPS=buffered)";
  text += cuda_kernels_built() ? "; CUDA: buffered passes built" : "; CUDA: tensor operations (no CUDA kernels built)";
  return text;
}

namespace {

// Note [Fused steps]: the CPU passes, split between threads.
class CpuPasses final : public FusedPasses {
 public:
  CpuPasses(ChunkedNormal& normal, int64_t dim, detail::Rounding rounding);

  bool ubu(const detail::PassSpan& s, const detail::UbuHalf& c, const detail::ForceTerms* kick,
           float minus_h) override {
    return run(s, true, [&](const detail::PassSpan& p, const detail::NoiseBuffer& n) {
      return kernels_.ubu(p, rounding_, c, kick, minus_h, n);
    });
  }
  bool kick_drift(const detail::PassSpan& s, const float* force, float minus_half_h, float half_h) override {
    return run(s, false, [&](const detail::PassSpan& p, const detail::NoiseBuffer&) {
      return kernels_.kick_drift(p, rounding_, force, minus_half_h, half_h);
    });
  }
  bool ou_drift(const detail::PassSpan& s, float eta, float sigma, float half_h) override {
    return run(s, true, [&](const detail::PassSpan& p, const detail::NoiseBuffer& n) {
      return kernels_.ou_drift(p, rounding_, eta, sigma, half_h, n);
    });
  }
  void kick(const detail::PassSpan& s, const detail::ForceTerms& terms, float* force_out,
            float minus_half_h) override {
    run(s, false, [&](const detail::PassSpan& p, const detail::NoiseBuffer&) {
      kernels_.kick(p, rounding_, terms, force_out, minus_half_h);
      return false;
    });
  }
  bool euler(const detail::PassSpan& s, const detail::ForceTerms& terms, float h, float friction, float minus_h,
             float sigma) override {
    return run(s, true, [&](const detail::PassSpan& p, const detail::NoiseBuffer& n) {
      return kernels_.euler(p, rounding_, terms, h, friction, minus_h, sigma, n);
    });
  }
  bool sgld(const detail::PassSpan& s, const detail::ForceTerms& terms, float minus_h, float sigma) override {
    return run(s, true, [&](const detail::PassSpan& p, const detail::NoiseBuffer& n) {
      return kernels_.sgld(p, rounding_, terms, minus_h, sigma, n);
    });
  }
  bool sgnht(const detail::PassSpan& s, const detail::ForceTerms& terms, const torch::Tensor& thermostat,
             float minus_h, float sigma, float h) override {
    const float factor = thermostat.item<float>();
    return run(s, true, [&](const detail::PassSpan& p, const detail::NoiseBuffer& n) {
      return kernels_.sgnht(p, rounding_, terms, factor, minus_h, sigma, h, n);
    });
  }
  std::string name() const override { return "cpu passes"; }

 private:
  using Pass = std::function<bool(const detail::PassSpan&, const detail::NoiseBuffer&)>;
  // Runs `pass` on every piece of [0, dim) in parallel; with `draws`, the
  // pass draws from the generator, which then moves on as one fill of the
  // buffer would have moved it. Returns whether some piece reported a
  // coordinate outside the box.
  bool run(const detail::PassSpan& span, bool draws, const Pass& pass);
  void prepare_jump(int64_t position);

  ChunkedNormal& normal_;
  int64_t dim_;
  const detail::FusedKernels& kernels_;
  detail::Rounding rounding_;
  std::vector<detail::NormalLanes> next_;
  std::vector<std::unique_ptr<detail::LaneJump>> jumps_;
  std::vector<const detail::LaneJump*> jump_table_;
  std::vector<int64_t> bounds_;
  std::vector<char> flags_;
};

CpuPasses::CpuPasses(ChunkedNormal& normal, int64_t dim, detail::Rounding rounding)
    : normal_(normal),
      dim_(dim),
      kernels_(pick_kernels()),
      rounding_(rounding),
      next_(normal.chunk_generators().size()),
      jumps_(detail::kBlocksPerChunk),
      jump_table_(detail::kBlocksPerChunk, nullptr) {
  TORCH_CHECK(!normal.chunk_generators().empty() && dim > 0 &&
                  (normal.numel() == dim || normal.numel() == 2 * dim),
              "fused sampler passes need bnn's float32 CPU generator over 1 or 2 times ", dim, " elements");
}

void CpuPasses::prepare_jump(int64_t position) {
  const int64_t blocks = position % detail::kNoiseChunk / (2 * detail::kNormalLanes);
  if (blocks == 0 || jump_table_[static_cast<size_t>(blocks)] != nullptr) return;
  auto jump = std::make_unique<detail::LaneJump>();
  detail::make_lane_jump(blocks, *jump);
  jump_table_[static_cast<size_t>(blocks)] = jump.get();
  jumps_[static_cast<size_t>(blocks)] = std::move(jump);
}

bool CpuPasses::run(const detail::PassSpan& span, bool draws, const Pass& pass) {
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

// Note [Buffered passes]: the normals into the sampler's buffer, then one
// pass over every coordinate, on the host or as a CUDA kernel.
class BufferedPasses final : public FusedPasses {
 public:
  BufferedPasses(ChunkedNormal& normal, torch::Tensor noise, int64_t dim, detail::Rounding rounding, double rho_max)
      : normal_(normal), noise_(std::move(noise)), device_(noise_.device()), dim_(dim) {
    base_.rounding = rounding;
    base_.bounded = std::isfinite(rho_max);
    if (base_.bounded) {  // as ATen rounds reflect_into_box's double scalars for a float tensor
      base_.w = static_cast<float>(rho_max);
      base_.two_w = static_cast<float>(2.0 * rho_max);
      base_.four_w = static_cast<float>(4.0 * rho_max);
      base_.inv_two_w = 1.0f / base_.two_w;
    }
  }

  bool ubu(const detail::PassSpan& s, const detail::UbuHalf& c, const detail::ForceTerms* kick,
           float minus_h) override {
    detail::BufferedArgs a = args(s, kick != nullptr ? detail::BufferedPass::kUbuKick : detail::BufferedPass::kUbu);
    if (kick != nullptr) a.terms = *kick;
    a.ubu = c;
    a.minus_h = minus_h;
    return draw_and_run(a);
  }
  bool kick_drift(const detail::PassSpan& s, const float* force, float minus_half_h, float half_h) override {
    detail::BufferedArgs a = args(s, detail::BufferedPass::kKickDrift);
    a.force = force;
    a.minus_h = minus_half_h;
    a.h = half_h;
    return run(a);
  }
  bool ou_drift(const detail::PassSpan& s, float eta, float sigma, float half_h) override {
    detail::BufferedArgs a = args(s, detail::BufferedPass::kOuDrift);
    a.friction = eta;
    a.sigma = sigma;
    a.h = half_h;
    return draw_and_run(a);
  }
  void kick(const detail::PassSpan& s, const detail::ForceTerms& terms, float* force_out,
            float minus_half_h) override {
    detail::BufferedArgs a = args(s, detail::BufferedPass::kKick);
    a.terms = terms;
    a.force_out = force_out;
    a.minus_h = minus_half_h;
    run(a);
  }
  bool euler(const detail::PassSpan& s, const detail::ForceTerms& terms, float h, float friction, float minus_h,
             float sigma) override {
    detail::BufferedArgs a = args(s, detail::BufferedPass::kEuler);
    a.terms = terms;
    a.h = h;
    a.friction = friction;
    a.minus_h = minus_h;
    a.sigma = sigma;
    return draw_and_run(a);
  }
  bool sgld(const detail::PassSpan& s, const detail::ForceTerms& terms, float minus_h, float sigma) override {
    detail::BufferedArgs a = args(s, detail::BufferedPass::kSgld);
    a.terms = terms;
    a.minus_h = minus_h;
    a.sigma = sigma;
    return draw_and_run(a);
  }
  bool sgnht(const detail::PassSpan& s, const detail::ForceTerms& terms, const torch::Tensor& thermostat,
             float minus_h, float sigma, float h) override {
    detail::BufferedArgs a = args(s, detail::BufferedPass::kSgnht);
    a.terms = terms;
    a.friction_from = thermostat.data_ptr<float>();  // read on the device: no wait for it here
    a.minus_h = minus_h;
    a.sigma = sigma;
    a.h = h;
    return draw_and_run(a);
  }
  std::string name() const override { return "buffered passes on " + device_.str(); }

 private:
  detail::BufferedArgs args(const detail::PassSpan& s, detail::BufferedPass pass) const {
    detail::BufferedArgs a = base_;
    a.pass = pass;
    a.x = s.x;
    a.v = s.v;
    a.anchor = s.anchor;
    // A pass covers the chain's coordinates (a kernel over more would write
    // past x and v). A pass that draws fills the whole buffer, which must
    // hold one normal per coordinate, two for UBU; the kicks draw none.
    const bool draws = pass != detail::BufferedPass::kKickDrift && pass != detail::BufferedPass::kKick;
    const bool two_draws = pass == detail::BufferedPass::kUbu || pass == detail::BufferedPass::kUbuKick;
    TORCH_CHECK(!draws || noise_.numel() == (two_draws ? 2 : 1) * dim_, "buffered sampler pass: a noise buffer of ",
                noise_.numel(), " normals for ", dim_, " coordinates");
    a.n = dim_;
    a.noise = noise_.data_ptr<float>();
    return a;
  }
  bool draw_and_run(const detail::BufferedArgs& a) {
    normal_.fill(noise_);
    return run(a);
  }
  bool run(const detail::BufferedArgs& a) {
    if (device_.is_cpu()) {
      detail::run_buffered_pass_host(a);
      return false;
    }
#if defined(BNN_CUDA_KERNELS) && defined(BNN_HAVE_C10_CUDA)
    // A kernel launch goes to the current device (ATen's operations switch to
    // their tensors' device themselves; a launch does not).
    const c10::cuda::CUDAGuard on_device(device_);
    const char* error = detail::launch_buffered_pass_cuda(a, c10::cuda::getCurrentCUDAStream(device_.index()).stream());
    TORCH_CHECK(error == nullptr, "sampler step on ", device_.str(), ": CUDA kernel launch failed: ", error);
#endif
    return false;
  }

  ChunkedNormal& normal_;
  torch::Tensor noise_;
  torch::Device device_;
  int64_t dim_;
  detail::BufferedArgs base_;
};

bool float_vector_on(const torch::Tensor& t, torch::Device device) {
  return t.defined() && t.device() == device && t.scalar_type() == torch::kFloat && t.is_contiguous();
}

}  // namespace

std::unique_ptr<FusedPasses> make_fused_passes(FusedChoice choice, ChunkedNormal& normal, const torch::Tensor& noise,
                                               const torch::Tensor& x, const torch::Tensor& v,
                                               const torch::Tensor& anchor, const torch::Tensor& gradient,
                                               const torch::Tensor& force, double rho_max) {
  if (choice == FusedChoice::kOff || !x.defined()) return nullptr;
  const torch::Device device = x.device();
  for (const torch::Tensor* t : {&x, &v, &anchor, &gradient, &force, &noise}) {
    if (!float_vector_on(*t, device)) return nullptr;
  }
  const int64_t dim = x.numel();
  if (dim == 0 || (noise.numel() != dim && noise.numel() != 2 * dim)) return nullptr;
  // The passes index every vector up to x's length (on a GPU, a shorter one
  // would be written past its end, and the error would fail every member).
  for (const torch::Tensor* t : {&v, &anchor, &gradient, &force}) {
    TORCH_CHECK(t->numel() == dim, "fused sampler passes: a vector of ", t->numel(), " elements beside x's ", dim);
  }
  if (device.is_cpu()) {
    const auto rounding = aten_add_rounding();
    if (!rounding) return nullptr;
    if (choice == FusedChoice::kBuffered) {
      return std::make_unique<BufferedPasses>(normal, noise, dim, *rounding, rho_max);
    }
    if (normal.chunk_generators().empty()) return nullptr;
    return std::make_unique<CpuPasses>(normal, dim, *rounding);
  }
  if (!device.is_cuda() || !cuda_kernels_built()) return nullptr;
  const auto rounding = aten_add_rounding(device);
  if (!rounding) return nullptr;
  return std::make_unique<BufferedPasses>(normal, noise, dim, *rounding, rho_max);
}

float box_width(double w) {
  if (!std::isfinite(w)) return std::numeric_limits<float>::infinity();
  float f = static_cast<float>(w);
  if (static_cast<double>(f) > w) f = std::nextafter(f, 0.0f);
  return f;
}

}  // namespace bnn::samplers
