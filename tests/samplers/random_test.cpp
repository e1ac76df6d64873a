#include "samplers/random.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "samplers/sampler.h"
#include "tests/support/error_text.h"
#include "tests/support/normal_kernel_digest.h"

namespace bnn::samplers {
namespace {

torch::Tensor draws(torch::ScalarType dtype, uint64_t seed, int64_t n, int fills = 1) {
  torch::Tensor out = torch::empty({n}, dtype);
  ChunkedNormal normal(out, seed);
  for (int f = 0; f < fills; ++f) normal.fill(out);
  return out;
}

TEST(ChunkedNormal, DrawsDoNotDependOnTheThreadCount) {
  const int64_t n = 5 * ChunkedNormal::kChunk + 123;
  const int threads = torch::get_num_threads();
  for (const auto dtype : {torch::kFloat, torch::kDouble}) {
    torch::set_num_threads(1);
    const torch::Tensor one = draws(dtype, 17, n, 2);  // second fill: the generators advance
    torch::set_num_threads(2);
    const torch::Tensor two = draws(dtype, 17, n, 2);
    EXPECT_TRUE(one.equal(two)) << dtype;
    EXPECT_FALSE(one.equal(draws(dtype, 17, n, 1))) << dtype;
  }
  torch::set_num_threads(threads);
}

// Independent of the kernel's code: xoshiro256** and SplitMix64 from their
// published definitions, and the transform of Note [CPU normal kernel] in
// double with the C library's log, sqrt, cos and sin. Only u is rounded to
// float as the kernel does, since near u = 1 its rounding moves small radii.
class ReferenceNormal {
 public:
  explicit ReferenceNormal(uint64_t seed) {
    uint64_t state = seed;
    for (auto& lane : lanes_) {
      for (auto& word : lane) {
        state += 0x9e3779b97f4a7c15ULL;
        uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        word = z ^ (z >> 31);
      }
    }
  }
  std::vector<double> block() {
    std::vector<double> out(2 * detail::kNormalLanes);
    for (int l = 0; l < detail::kNormalLanes; ++l) {
      const uint64_t w = next(lanes_[l]);
      const auto hi = static_cast<uint32_t>(w >> 32), lo = static_cast<uint32_t>(w);
      const float u = (static_cast<float>(hi >> 1) + 0.5f) * 0x1p-31f;
      const double r = std::sqrt(-2.0 * std::log(static_cast<double>(u)));
      const double theta = static_cast<double>(lo >> 30) * M_PI / 2 +
                           ((static_cast<double>(lo & 0x3fffffffu) + 0.5) * 0x1p-30 - 0.5) * M_PI / 2;
      out[l] = r * std::cos(theta);
      out[detail::kNormalLanes + l] = r * std::sin(theta);
    }
    return out;
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t next(uint64_t (&s)[4]) {
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }
  uint64_t lanes_[detail::kNormalLanes][4];
};

TEST(ChunkedNormal, FloatDrawsMatchAReferenceInDouble) {
  // Chunk 0 in full blocks, then chunk 1 (its own seed) ending in a partial block.
  const int64_t k = ChunkedNormal::kChunk, tail = 2 * 16 + 5;
  torch::Tensor out = torch::empty({k + tail});
  ChunkedNormal normal(out, 99);
  normal.fill(out);
  double worst = 0;
  for (const int64_t chunk : {int64_t{0}, int64_t{1}}) {
    ReferenceNormal ref(derive_seed(99, chunk));
    const int64_t count = chunk == 0 ? 1024 : tail;
    for (int64_t i = 0; i < count; i += 16) {
      const std::vector<double> expected = ref.block();
      for (int64_t j = 0; j < std::min<int64_t>(16, count - i); ++j) {
        const double got = out[chunk * k + i + j].item<double>();
        worst = std::max(worst, std::abs(got - expected[j]) / std::max(1.0, std::abs(expected[j])));
      }
    }
  }
  // Float rounding and the polynomials: a few 1e-7. A wrong lane, block
  // layout, quadrant or seed gives errors of order 1.
  EXPECT_LT(worst, 1e-6);
}

TEST(ChunkedNormal, FloatDrawsAreIndependentStandardNormals) {
  const int64_t n = 64 * ChunkedNormal::kChunk;  // 4,194,304 draws
  const torch::Tensor z = draws(torch::kFloat, 5, n).to(torch::kDouble);
  const double sn = std::sqrt(static_cast<double>(n));
  // Moments with 5 standard errors: E z = 0 (sd 1), E z^2 = 1 (sd sqrt 2),
  // E z^3 = 0 (sd sqrt 15), E z^4 = 3 (sd sqrt 96).
  EXPECT_NEAR(z.mean().item<double>(), 0.0, 5 / sn);
  EXPECT_NEAR(z.pow(2).mean().item<double>(), 1.0, 5 * std::sqrt(2.0) / sn);
  EXPECT_NEAR(z.pow(3).mean().item<double>(), 0.0, 5 * std::sqrt(15.0) / sn);
  EXPECT_NEAR(z.pow(4).mean().item<double>(), 3.0, 5 * std::sqrt(96.0) / sn);
  // Tails: P(|z| > 3) = 2.6998e-3, P(|z| > 4) = 6.3342e-5; counts within 5 sd.
  for (const auto& [cut, p] : {std::pair{3.0, 2.6998e-3}, std::pair{4.0, 6.3342e-5}}) {
    const double count = (z.abs() > cut).sum().item<double>();
    EXPECT_NEAR(count, p * n, 5 * std::sqrt(p * n)) << "|z| > " << cut;
  }
  EXPECT_LE(z.abs().max().item<double>(), std::sqrt(64 * std::log(2.0)) + 1e-4);  // u >= 2^-32
  // Kolmogorov-Smirnov on the first 2^20 draws: sqrt(m) D < 1.95 at level 0.001.
  const int64_t m = int64_t{1} << 20;
  const torch::Tensor sorted = std::get<0>(z.narrow(0, 0, m).sort());
  const torch::Tensor cdf = 0.5 * torch::erfc(-sorted / std::sqrt(2.0));
  const torch::Tensor i = torch::arange(m, torch::kDouble);
  const double d = std::max((cdf - i / m).abs().max().item<double>(), (cdf - (i + 1) / m).abs().max().item<double>());
  EXPECT_LT(std::sqrt(static_cast<double>(m)) * d, 1.95);
  // Independence where the kernel could couple draws: the two of one word
  // (z1 of lane l, z2 of lane l), neighbouring lanes, consecutive blocks and
  // neighbouring chunks. Products have sd 1/sqrt(count); squares test more
  // than correlation (E z1^2 z2^2 = 1, sd sqrt 8 / sqrt(count)).
  const torch::Tensor blocks = z.view({-1, 2, detail::kNormalLanes});
  const torch::Tensor z1 = blocks.select(1, 0), z2 = blocks.select(1, 1);
  const double pairs = static_cast<double>(z1.numel());
  EXPECT_NEAR((z1 * z2).mean().item<double>(), 0.0, 5 / std::sqrt(pairs));
  EXPECT_NEAR((z1.pow(2) * z2.pow(2)).mean().item<double>(), 1.0, 5 * std::sqrt(8.0 / pairs));
  const double lanes = static_cast<double>(z1.size(0) * (detail::kNormalLanes - 1));
  EXPECT_NEAR((z1.narrow(1, 0, 7) * z1.narrow(1, 1, 7)).mean().item<double>(), 0.0, 5 / std::sqrt(lanes));
  const double steps = static_cast<double>((z1.size(0) - 1) * detail::kNormalLanes);
  const int64_t b = z1.size(0) - 1;
  EXPECT_NEAR((z1.narrow(0, 0, b) * z1.narrow(0, 1, b)).mean().item<double>(), 0.0, 5 / std::sqrt(steps));
  const int64_t k = ChunkedNormal::kChunk;
  EXPECT_NEAR((z.narrow(0, 0, k) * z.narrow(0, k, k)).mean().item<double>(), 0.0, 5 / std::sqrt(double(k)));
}

TEST(ChunkedNormal, DoubleBuffersUseLibTorchsGenerator) {
  const int64_t n = 4 * ChunkedNormal::kChunk;
  const torch::Tensor z = draws(torch::kDouble, 5, n);
  const double sn = std::sqrt(static_cast<double>(n));
  EXPECT_NEAR(z.mean().item<double>(), 0.0, 5 / sn);
  EXPECT_NEAR(z.var().item<double>(), 1.0, 5 * std::sqrt(2.0) / sn);
  // Not the float kernel's numbers rounded up: doubles have their own stream.
  EXPECT_GT((z.narrow(0, 0, 16) - draws(torch::kFloat, 5, 16).to(torch::kDouble)).abs().max().item<double>(), 0.1);
}

// Saves `from`'s state under "sampler.noise", as a checkpoint does, and loads
// it into `into`.
void copy_state_through_archive(const ChunkedNormal& from, ChunkedNormal& into) {
  std::stringstream stream;
  {
    torch::serialize::OutputArchive archive;
    from.save(archive, "sampler.noise");
    archive.save_to(stream);
  }
  torch::serialize::InputArchive archive;
  archive.load_from(stream);
  into.load(archive, "sampler.noise");
}

TEST(ChunkedNormal, SaveAndLoadContinueTheSameDraws) {
  for (const auto dtype : {torch::kFloat, torch::kDouble}) {
    const int64_t n = 2 * ChunkedNormal::kChunk + 7;
    torch::Tensor a = torch::empty({n}, dtype), b = torch::empty({n}, dtype);
    ChunkedNormal first(a, 3), second(b, 4);  // another seed: the loaded state decides
    first.fill(a);
    copy_state_through_archive(first, second);
    first.fill(a);
    second.fill(b);
    EXPECT_TRUE(a.equal(b)) << dtype;
  }
}

// The other kind of generator's state (a chain sampled on a GPU and resumed on
// the CPU, or the other way; float64 stands for the GPU here) is refused by
// what it is and what to do, not as a missing entry.
TEST(ChunkedNormal, LoadingAnotherGeneratorsStateSaysWhatItIs) {
  torch::Tensor d = torch::empty({10}, torch::kDouble), f = torch::empty({10});
  const ChunkedNormal libtorch(d, 1);  // LibTorch generator states, as on a GPU or before the float kernel
  ChunkedNormal normal(f, 1);
  std::string error = testing::error_of([&] { copy_state_through_archive(libtorch, normal); });
  EXPECT_NE(error.find("sampler checkpoint: its noise state is LibTorch's generators' (a chain sampled on a GPU, in "
                       "float64, or by a bnn older than its own float32 generator), and this chain goes on on cpu in "
                       "Float, whose noise comes from the other kind, so it cannot continue; resume it where it was "
                       "sampled (--device), or delete its checkpoint.pt to train the member again"),
            std::string::npos)
      << error;
  ChunkedNormal in_double(d, 1);
  error = testing::error_of([&] { copy_state_through_archive(normal, in_double); });
  EXPECT_NE(error.find("its noise state is bnn's float32 generator's (a chain sampled on the CPU in float32), and "
                       "this chain goes on on cpu in Double"),
            std::string::npos)
      << error;
  // An archive with neither is the missing entry it always was.
  torch::serialize::InputArchive empty;
  error = testing::error_of([&] { normal.load(empty, "sampler.noise"); });
  EXPECT_NE(error.find("sampler checkpoint has no entry 'sampler.noise.xoshiro256'"), std::string::npos) << error;
}

TEST(ChunkedNormal, LoadingAStateOfAnotherSizeNamesBothShapes) {
  torch::Tensor big = torch::empty({ChunkedNormal::kChunk + 1}), small = torch::empty({10});
  const ChunkedNormal two_chunks(big, 1);
  ChunkedNormal one_chunk(small, 1);
  const std::string error = testing::error_of([&] { copy_state_through_archive(two_chunks, one_chunk); });
  EXPECT_NE(error.find("sampler checkpoint: noise generator state 'sampler.noise.xoshiro256' has shape [2, 4, 8] but "
                       "this sampler's noise needs [1, 4, 8]"),
            std::string::npos)
      << error;
}

TEST(ChunkedNormal, RejectsABufferUnlikeItsOwn) {
  torch::Tensor f = torch::empty({10});
  ChunkedNormal normal(f, 1);
  torch::Tensor d = torch::empty({10}, torch::kDouble), longer = torch::empty({11});
  const std::string wrong_dtype = testing::error_of([&] { normal.fill(d); });
  EXPECT_NE(wrong_dtype.find("ChunkedNormal: expected a contiguous Float buffer of 10 elements on cpu, got Double [10] "
                             "on cpu"),
            std::string::npos)
      << wrong_dtype;
  const std::string wrong_size = testing::error_of([&] { normal.fill(longer); });
  EXPECT_NE(wrong_size.find("ChunkedNormal: expected a contiguous Float buffer of 10 elements on cpu, got Float [11] "
                            "on cpu"),
            std::string::npos)
      << wrong_size;
}

std::string output_of(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  ::pclose(pipe);
  return out;
}

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "%016llx\n", static_cast<unsigned long long>(value));
  return text;
}

// Note [CPU normal kernel]: the same bits from every build, so a chain's
// noise does not depend on which CPU runs it (the library picks the AVX2
// clone where the CPU has AVX2, the baseline build elsewhere).
TEST(NormalKernel, EveryBuildGivesTheSameBits) {
  const std::string library = hex(testing::normal_kernel_digest());
  EXPECT_EQ(output_of(BNN_NORMAL_DIGEST_SCALAR), library) << "unoptimised scalar build (-O0)";
  EXPECT_EQ(output_of(BNN_NORMAL_DIGEST_BASELINE), library) << "vectorised build for the baseline ISA (-O3)";
#if defined(BNN_NORMAL_DIGEST_AVX2_FMA)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_EQ(output_of(BNN_NORMAL_DIGEST_AVX2_FMA), library) << "AVX2 and FMA build (-O3 -mavx2 -mfma)";
  } else {
    std::printf("NormalKernel: this CPU lacks AVX2 or FMA; the AVX2 and FMA build was not compared\n");
  }
#endif
  // The digest sees the draws: another seed's differ.
  EXPECT_NE(testing::normal_kernel_digest(2027), testing::normal_kernel_digest(2026));
}

TEST(DeriveSeed, StreamsDiffer) {
  EXPECT_NE(derive_seed(1, 0), derive_seed(1, 1));
  EXPECT_NE(derive_seed(1, 0), derive_seed(2, 0));
  EXPECT_EQ(derive_seed(3, 4), derive_seed(3, 4));
}

}  // namespace
}  // namespace bnn::samplers
