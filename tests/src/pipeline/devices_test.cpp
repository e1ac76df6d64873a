// `bnn run --devices`: members spread over several workers (one per device)
// write the same results as one worker; bad device lists are clear errors.
#include <cmath>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "data_loaders/npy.h"
#include "src/config/config.h"
#include "src/io/atomic_file.h"
#include "src/io/npy.h"
#include "src/pipeline/member_checkpoint.h"
#include "src/pipeline/run.h"
#include "src/runtime/device_streams.h"
#include "src/runtime/linkage.h"
#include "tests/support/data_paths.h"
#include "tests/support/error_text.h"
#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace {
using bnn::testing::kTinyConfig;

// The platform part of this machine's CPU arithmetic entries (Note
// [Arithmetic platform]).
std::string cpu_platform() { return " [" + bnn::runtime::arithmetic_platform(torch::kCPU) + "]"; }


// `bnn run` of configs/tiny.yaml into work/name with `flags`, logged to
// work/name.txt.
bnn::testing::CommandResult run_tiny(const std::filesystem::path& work, const std::string& name,
                                     const std::string& flags, const std::string& env = "") {
  return bnn::testing::run_bnn(
      "run --config " + kTinyConfig + " --out " + (work / name).string() + " --threads 1 " + flags,
      work / (name + ".txt"), env);
}

// cuBLAS repeats its bits on several streams only with a workspace of its
// own per stream (NVIDIA's cuBLAS documentation, "Results reproducibility"):
// the GPU tests that compare runs set it, so that what they see is bnn's.
const std::string kCublasReproducible = "CUBLAS_WORKSPACE_CONFIG=:4096:8";

// A run of tiny.yaml with `flags` on one thread into work/cut, killed by
// SIGKILL at sampler step 25, then `bnn run --resume` of it with
// `resume_flags`: the resume's result.
bnn::testing::CommandResult killed_and_resumed(const std::filesystem::path& work, const std::string& flags,
                                               const std::string& resume_flags, const std::string& env = "") {
  const auto killed = bnn::testing::run_bnn("run --config " + kTinyConfig + " --out " + (work / "cut").string() +
                                                " --threads 1 " + flags,
                                            work / "cut.txt", env + (env.empty() ? "" : " ") +
                                                                  "BNN_KILL_AT_SAMPLER_STEP=25");
  EXPECT_EQ(killed.code, 128 + 9) << "expected death by SIGKILL\n" << killed.output;
  return bnn::testing::run_bnn("run --resume " + (work / "cut").string() + " " + resume_flags, work / "resume.txt",
                               env);
}

// The members' outputs of runs `a` and `b`, byte for byte.
void expect_same_member_files(const std::filesystem::path& a, const std::filesystem::path& b,
                              const std::vector<std::string>& members, const std::vector<std::string>& files) {
  for (const std::string& m : members) {
    for (const std::string& f : files) {
      EXPECT_EQ(bnn::io::read_file(a / m / f), bnn::io::read_file(b / m / f)) << m << "/" << f;
    }
  }
  EXPECT_EQ(bnn::io::read_file(a / "metrics.json"), bnn::io::read_file(b / "metrics.json"));
}

// Two CPU workers stand in for two GPUs: the member queue, the per-device data
// copies and the shared run directory are the same code paths. Both runs are
// on the CPU (run_bnn's default), so they must agree bit for bit.
TEST(Devices, TwoWorkersWriteWhatOneWorkerWrites) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto work = bnn::testing::unique_temp_dir("bnn_devices_test");
  const auto one = work / "one", two = work / "two";
  auto r = run_tiny(work, "one", "");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_tiny(work, "two", "--devices cpu,cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 workers on cpu, cpu"), std::string::npos) << r.output;
  expect_same_member_files(one, two, {"member_000", "member_001"},
                           {"adam_probs.npy", "swa_probs.npy", "bayes_probs.npy"});
  std::filesystem::remove_all(work);
}

// Note [Members per device]: three members, two at a time on one device,
// against the same members one after the other. On the CPU the members share
// nothing that makes a result, so every output agrees bit for bit.
TEST(Devices, MembersTrainedTogetherWriteWhatTheyWriteOneByOne) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto work = bnn::testing::unique_temp_dir("bnn_members_per_device_test");
  const auto one = work / "one", two = work / "two";
  auto r = run_tiny(work, "one", "--set run.members=3 --members-per-device 1");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_tiny(work, "two", "--set run.members=3 --members-per-device 2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 workers on cpu: 2 members at a time per device"), std::string::npos) << r.output;
  expect_same_member_files(one, two, {"member_000", "member_001", "member_002"},
                           {"adam_probs.npy", "swa_probs.npy", "bayes_probs.npy", "swa_weights.npy"});
  if (!HasFailure()) std::filesystem::remove_all(work);
}

// The same on one GPU, each member on its own CUDA stream: the members'
// kernels now interleave on the device, so agreement is to float tolerance
// (cuDNN and atomics do not promise the last bits anyway).
// The largest difference between the probabilities runs `a` and `b` wrote.
double largest_difference(const std::filesystem::path& a, const std::filesystem::path& b) {
  const torch::Tensor x = bnn::data_loaders::read_npy(a).to(torch::kDouble);
  const torch::Tensor y = bnn::data_loaders::read_npy(b).to(torch::kDouble);
  if (x.sizes() != y.sizes()) return INFINITY;
  return (x - y).abs().max().item<double>();
}

// tiny.yaml with `flags`, three members one by one and `k` at a time
// stacked: the stacked run says so, and every probability file of each
// member is within `bound` of its one-by-one twin.
void expect_stacked_as_one_by_one(const std::string& name, const std::string& flags, int64_t k, double bound) {
  const auto work = bnn::testing::unique_temp_dir(name);
  const std::string common = "--set run.members=3 " + flags + " ";
  auto r = run_tiny(work, "one", common + "--members-per-device 1");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_tiny(work, "stacked", common + fmt::format("--members-per-device {} --member-design stacked", k));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find(fmt::format("{} members at a time per device, their gradients evaluated as one stacked "
                                      "model", k)),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(" stacked passes, "), std::string::npos) << r.output;
  for (const std::string m : {"member_000", "member_001", "member_002"}) {
    for (const std::string f : {"adam_probs.npy", "swa_probs.npy", "bayes_probs.npy"}) {
      EXPECT_LT(largest_difference(work / "one" / m / f, work / "stacked" / m / f), bound) << m << "/" << f;
    }
    // status.json says how the member was trained.
    const auto one = nlohmann::json::parse(bnn::io::read_file(work / "one" / m / "status.json"));
    const auto stacked = nlohmann::json::parse(bnn::io::read_file(work / "stacked" / m / "status.json"));
    EXPECT_FALSE(one.contains("stacked_slots")) << one;
    EXPECT_EQ(stacked.value("stacked_slots", 0), k) << stacked;
    EXPECT_EQ(stacked.value("device", ""), one.value("device", "-")) << stacked;
  }
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(work);
}

// Note [Stacked members in a run]: members whose gradients one stacked
// model evaluates compute what they compute one by one, to float rounding
// (the grouped products sum in another order), BatchNorm included.
TEST(Devices, StackedMembersAgreeWithOneByOneToFloatRounding) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  expect_stacked_as_one_by_one("bnn_stacked_members_test", "--set model.batch_norm=true", 2, 1e-4);
}

// Note [Redrawn batches]: a stacked member takes the batches it takes alone.
TEST(Devices, StackedMembersRedrawTheirBatchesAsAlone) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  expect_stacked_as_one_by_one("bnn_stacked_redrawn_test", "--set sampler.repartition=true", 2, 1e-4);
}

// Note [Stacked members in a run]: on the CPU a CNN member's bits in a
// stacked pass are the same whatever the slots beside it, from two up, but
// a group of one slot is its own model's arithmetic. So one member trained
// alone, stacked (as the last member of a stacked run resumed alone is),
// runs in a group of two slots, one free, and writes the bits it writes
// among three. (The mlp's stacked products give its own model's bits, so
// it could not tell.) A K above the members to train is cut to them.
TEST(Devices, AStackedMemberAloneWritesTheBitsItWritesBesideAnother) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto work = bnn::testing::unique_temp_dir("bnn_stacked_alone_test");
  // One batch an epoch: its own model's bits differ already (checked by hand).
  const std::string cnn = "--set model.name=fmnist_cnn --set data.train_limit=100 --set data.test_limit=20 "
                          "--set adam.epochs=1 --set sampler.epochs=1 --set sampler.burn_in=0 "
                          "--set evaluation.bn_batches=1 --member-design stacked ";
  auto r = run_tiny(work, "three", cnn + "--set run.members=3 --members-per-device 5");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("--members-per-device 5: 3 member(s) to train, so 3 at a time"), std::string::npos)
      << r.output;
  // One at a time stays one at a time: one worker, its group's other slot free.
  r = run_tiny(work, "alone", cnn + "--set run.members=3 --members 1-2 --members-per-device 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("--member-design stacked: one member at a time, in a group of 2 slots, one of them free"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find(" workers on cpu"), std::string::npos) << r.output;
  for (const std::string f : {"adam_weights.npy", "swa_weights.npy", "bayes_probs.npy"}) {
    const auto member = std::filesystem::path("member_001") / f;
    EXPECT_EQ(bnn::io::read_file(work / "three" / member), bnn::io::read_file(work / "alone" / member)) << f;
  }
  const auto status = nlohmann::json::parse(bnn::io::read_file(work / "alone" / "member_001" / "status.json"));
  EXPECT_EQ(status.value("stacked_slots", 0), 2) << status;
  if (!HasFailure()) std::filesystem::remove_all(work);
}

// A stacked run killed in the middle of sampling and resumed stacked writes
// the bits of the run that was never interrupted: a member's arithmetic in
// the group depends on its own inputs alone.
TEST(Devices, StackedRunKilledAndResumedIsBitIdentical) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto work = bnn::testing::unique_temp_dir("bnn_stacked_resume_test");
  const std::string flags = "--set run.members=3 --set model.batch_norm=true --members-per-device 2 "
                            "--member-design stacked";
  auto r = run_tiny(work, "full", flags);
  ASSERT_EQ(r.code, 0) << r.output;
  r = killed_and_resumed(work, flags, "--threads 1 --members-per-device 2 --member-design stacked");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("resuming from"), std::string::npos) << r.output;
  expect_same_member_files(work / "full", work / "cut", {"member_000", "member_001", "member_002"},
                           {"adam_probs.npy", "swa_probs.npy", "bayes_probs.npy", "swa_weights.npy"});
  EXPECT_EQ(r.output.find("not bit for bit"), std::string::npos) << r.output;
  const std::string stacked = "cpu, 1 thread, stacked in 2 slots" + cpu_platform();
  const auto status = nlohmann::json::parse(bnn::io::read_file(work / "cut" / "member_000" / "status.json"));
  EXPECT_EQ(status["arithmetic"], nlohmann::json::array({stacked})) << status;
  const std::string report = bnn::io::read_file(work / "cut" / "report.md");
  EXPECT_NE(report.find("\n- Arithmetic: " + stacked + " (3 members)\n"), std::string::npos) << report;
  if (!HasFailure()) std::filesystem::remove_all(work);
}

// Note [Member checkpoints]: a member resumed under other arithmetic (here
// one thread, then two; one model per member, then stacked) goes on, says
// so, and lists in status.json every arithmetic it ran under.
TEST(Devices, AResumeUnderOtherArithmeticSaysSo) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto work = bnn::testing::unique_temp_dir("bnn_arithmetic_test");
  const auto r = killed_and_resumed(work, "--set run.members=2 --members-per-device 1",
                                    "--threads 2 --members-per-device 2 --member-design stacked");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string before = "cpu, 1 thread, own model" + cpu_platform();
  const std::string after = "cpu, 2 threads, stacked in 2 slots" + cpu_platform();
  EXPECT_NE(r.output.find("member 0: resumed under other arithmetic (checkpoint: " + before + "; now: " + after +
                          "): it goes on, but agrees with an uninterrupted run to float rounding, not bit for bit"),
            std::string::npos)
      << r.output;
  const auto first = nlohmann::json::parse(bnn::io::read_file(work / "cut" / "member_000" / "status.json"));
  EXPECT_EQ(first["arithmetic"], nlohmann::json::array({before, after})) << first;
  // Member 1 had not started when the first process died: one arithmetic.
  const auto second = nlohmann::json::parse(bnn::io::read_file(work / "cut" / "member_001" / "status.json"));
  EXPECT_EQ(second["arithmetic"], nlohmann::json::array({after})) << second;
  // The report says it too.
  const std::string report = bnn::io::read_file(work / "cut" / "report.md");
  EXPECT_NE(report.find("\n- Arithmetic: " + before + " (1 member); " + after +
                        " (2 members); 1 member changed arithmetic on a resume, and agrees with an uninterrupted run "
                        "to float rounding only\n"),
            std::string::npos)
      << report;
  if (!HasFailure()) std::filesystem::remove_all(work);
}

// Note [Arithmetic platform]: the platform is part of the arithmetic, and
// an entry of an older bnn, without one, is compared by what it names.
TEST(Devices, ArithmeticComparesThePlatformWhereTheEntryHasOne) {
  using bnn::pipeline::same_arithmetic;
  const std::string here = "cpu, 2 threads, own model [LibTorch 1.13.1, x86-64 AVX2, OpenBLAS Haswell]";
  EXPECT_TRUE(same_arithmetic(here, here));
  EXPECT_FALSE(same_arithmetic("cpu, 2 threads, own model [LibTorch 1.13.1, x86-64 AVX-512, OpenBLAS SkylakeX]",
                               here));
  EXPECT_FALSE(same_arithmetic("cpu, 2 threads, own model [LibTorch 2.11.0, x86-64 AVX2, OpenBLAS Haswell]", here));
  EXPECT_FALSE(same_arithmetic("cpu, 1 thread, own model [LibTorch 1.13.1, x86-64 AVX2, OpenBLAS Haswell]", here));
  EXPECT_TRUE(same_arithmetic("cpu, 2 threads, own model", here));
  EXPECT_FALSE(same_arithmetic("cpu, 1 thread, own model", here));
  EXPECT_FALSE(same_arithmetic("cpu, 2 threads, stacked in 2 slots", here));
  // A stacked group's slots are not part of a member's arithmetic.
  EXPECT_TRUE(same_arithmetic("cpu, 2 threads, stacked in 3 slots [LibTorch 1.13.1, x86-64 AVX2, OpenBLAS Haswell]",
                              "cpu, 2 threads, stacked in 2 slots [LibTorch 1.13.1, x86-64 AVX2, OpenBLAS Haswell]"));
  EXPECT_TRUE(same_arithmetic("cpu, 2 threads, stacked in 3 slots", "cpu, 2 threads, stacked in 2 slots [x]"));
  EXPECT_FALSE(same_arithmetic("cuda:0, stacked in 3 slots [H200]", "cuda:0, stacked in 2 slots [H200]"));
  EXPECT_FALSE(same_arithmetic("cpu, 2 threads, own model", "cpu, 2 threads, data-parallel over 2 ranks, own model"));
}

TEST(Devices, MemberDesignIsStreamsOrStacked) {
  EXPECT_EQ(bnn::pipeline::parse_member_design("streams"), bnn::pipeline::MemberDesign::kStreams);
  EXPECT_EQ(bnn::pipeline::parse_member_design("stacked"), bnn::pipeline::MemberDesign::kStacked);
  EXPECT_EQ(bnn::testing::error_of([] { bnn::pipeline::parse_member_design("grouped"); }),
            "--member-design: 'grouped' is not streams or stacked");
}

TEST(CudaRun, MembersTrainedTogetherOnOneGpuAgreeWithOneByOne) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible: the members-per-device test did not run";
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto work = bnn::testing::unique_temp_dir("bnn_cuda_members_per_device_test");
  const auto one = work / "one", three = work / "three";
  auto r = run_tiny(work, "one", "--device cuda --set run.members=3 --members-per-device 1", kCublasReproducible);
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_tiny(work, "three", "--device cuda --set run.members=3 --members-per-device 3", kCublasReproducible);
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string expected = bnn::runtime::has_worker_streams()
                                   ? "3 members at a time per device, each on its own CUDA stream"
                                   : "3 members at a time per device";
  EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
  for (const std::string m : {"member_000", "member_001", "member_002"}) {
    for (const std::string f : {"adam_probs.npy", "swa_probs.npy", "bayes_probs.npy"}) {
      const torch::Tensor a = bnn::data_loaders::read_npy(one / m / f).to(torch::kDouble);
      const torch::Tensor b = bnn::data_loaders::read_npy(three / m / f).to(torch::kDouble);
      ASSERT_EQ(a.sizes(), b.sizes()) << m << "/" << f;
      EXPECT_LT((a - b).abs().max().item<double>(), 1e-3) << m << "/" << f;
    }
  }
  if (!HasFailure()) std::filesystem::remove_all(work);
}

// Note [Stacked members in a run] on a GPU: three fmnist_cnn members whose
// gradients one stacked model evaluates (grouped convolutions in cuDNN, on
// the device's default stream), against the same members one by one. Adam's
// first steps move every coordinate by about lr whatever the gradient's
// size, so rounding differences in small gradients grow to about 1e-2 in the
// probabilities within an epoch: on the CPU, this config one by one with 1
// thread against 2 threads differs by up to 0.015, stacked against one by
// one by up to 0.03, while two different members differ by 0.9. The bound
// of 0.1 lets rounding through and catches a member given another's slice,
// batch or statistics.
TEST(CudaRun, StackedMembersOnOneGpuAgreeWithOneByOne) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible: the stacked members test did not run";
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  expect_stacked_as_one_by_one("bnn_cuda_stacked_members_test", "--device cuda --set model.name=fmnist_cnn", 3, 0.1);
}

// Note [Member locks]: two `bnn run` processes started together into one run
// directory train every member exactly once between them, and both end with
// the whole run's table.
TEST(Devices, TwoProcessesOnOneRunDirectoryTrainEachMemberOnce) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto work = bnn::testing::unique_temp_dir("bnn_two_processes_test");
  const int members = 6;
  const std::string flags = "--set run.members=" + std::to_string(members);
  bnn::testing::CommandResult a, b;
  std::thread first([&] { a = run_tiny(work, "shared", flags); });
  std::thread second([&] {
    b = bnn::testing::run_bnn("run --config " + kTinyConfig + " --out " + (work / "shared").string() + " --threads 1 " +
                                  flags,
                              work / "second.txt");
  });
  first.join();
  second.join();
  ASSERT_EQ(a.code, 0) << a.output;
  ASSERT_EQ(b.code, 0) << b.output;
  for (int m = 0; m < members; ++m) {
    const std::string started = "member " + std::to_string(m) + ": seed ";
    size_t count = 0;
    for (const std::string* log : {&a.output, &b.output}) {
      for (size_t at = log->find(started); at != std::string::npos; at = log->find(started, at + 1)) ++count;
    }
    EXPECT_EQ(count, 1u) << "member " << m << " trained " << count << " times\n" << a.output << b.output;
    EXPECT_TRUE(std::filesystem::exists(work / "shared" / fmt::format("member_{:03d}", m) / "status.json"));
  }
  if (!HasFailure()) std::filesystem::remove_all(work);
}

TEST(Devices, MembersPerDeviceIsAPositiveNumberOrAuto) {
  using bnn::pipeline::parse_members_per_device;
  EXPECT_EQ(parse_members_per_device("auto"), 0);
  EXPECT_EQ(parse_members_per_device("4"), 4);
  EXPECT_EQ(parse_members_per_device("999999"), 999999);
  for (const std::string bad : {"0", "-2", "two", "1.5", "", "9999999"}) {
    EXPECT_EQ(bnn::testing::error_of([&] { parse_members_per_device(bad); }),
              "--members-per-device: '" + bad + "' is not a whole number from 1 to 999999, or auto");
  }
  auto r = bnn::testing::run_bnn("run --config " + kTinyConfig + " --members-per-device 0",
                                 bnn::testing::unique_temp_dir("bnn_members_per_device_cli") / "log.txt");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("--members-per-device: '0' is not a whole number from 1 to 999999, or auto"),
            std::string::npos)
      << r.output;
}

// auto: as many members as fit in 90% of the free memory, within [1, 8] and
// no more than there are members to run; 1 where the memory is unknown.
TEST(Devices, AutoMembersPerDeviceFitsTheFreeMemory) {
  using bnn::pipeline::auto_members_per_device;
  bnn::pipeline::MemberMemory member;
  member.total_bytes = int64_t{1} << 30;
  const auto gib = [](double g) { return bnn::runtime::DeviceMemory{static_cast<int64_t>(g * (1 << 30)), 0}; };
  EXPECT_EQ(auto_members_per_device(member, gib(4.0), 64), 3);   // 0.9 * 4 = 3.6
  EXPECT_EQ(auto_members_per_device(member, gib(5.0), 64), 4);   // 4.5
  EXPECT_EQ(auto_members_per_device(member, gib(80.0), 64), bnn::pipeline::kMaxAutoMembersPerDevice);
  EXPECT_EQ(auto_members_per_device(member, gib(80.0), 3), 3);
  EXPECT_EQ(auto_members_per_device(member, gib(0.5), 64), 1);  // too little: still one, which may then fail
  EXPECT_EQ(auto_members_per_device(member, std::nullopt, 64), 1);
}

// auto on the CPU: two members with two threads or more, if both fit in 90%
// of the host's available memory; one otherwise, also where it is unknown.
TEST(Devices, AutoMembersPerCpuIsTwoAsMemoryAllows) {
  using bnn::pipeline::auto_members_per_cpu;
  bnn::pipeline::MemberMemory member;
  member.total_bytes = int64_t{1} << 30;
  const std::optional<int64_t> plenty = int64_t{64} << 30;
  EXPECT_EQ(auto_members_per_cpu(member, 2, plenty, 4), 2);
  EXPECT_EQ(auto_members_per_cpu(member, 16, plenty, 64), bnn::pipeline::kMaxAutoMembersPerCpu);
  EXPECT_EQ(bnn::pipeline::kMaxAutoMembersPerCpu, 2);
  EXPECT_EQ(auto_members_per_cpu(member, 1, plenty, 4), 1);                   // one thread
  EXPECT_EQ(auto_members_per_cpu(member, 16, plenty, 1), 1);                  // one member to run
  EXPECT_EQ(auto_members_per_cpu(member, 16, int64_t{2} << 30, 64), 1);       // 0.9 * 2 = 1.8
  EXPECT_EQ(auto_members_per_cpu(member, 16, int64_t{23} << 29, 64), 2);      // 0.9 * 11.5 / 5 > 2
  EXPECT_EQ(auto_members_per_cpu(member, 4, std::nullopt, 64), 1);            // memory unknown
}

// What auto does in a run: two at a time with --threads 2 (the members'
// files as one by one), one with --devices cpu,cpu.
TEST(Devices, AutoOnTheCpuTrainsTwoAtATimeWithTheSameFiles) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto work = bnn::testing::unique_temp_dir("bnn_auto_members_per_cpu_test");
  auto r = run_tiny(work, "one", "--set run.members=3 --threads 2 --members-per-device 1");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_tiny(work, "auto", "--set run.members=3 --threads 2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("cpu: 2 threads, "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("2 workers on cpu: 2 members at a time per device"), std::string::npos) << r.output;
  expect_same_member_files(work / "one", work / "auto", {"member_000", "member_001", "member_002"},
                           {"adam_probs.npy", "swa_probs.npy", "bayes_probs.npy", "swa_weights.npy"});
  r = run_tiny(work, "list", "--set run.members=2 --threads 2 --devices cpu,cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 workers on cpu, cpu\n"), std::string::npos) << r.output;
  if (!HasFailure()) std::filesystem::remove_all(work);
}

TEST(Devices, HostAvailableMemoryIsMemAvailable) {
  EXPECT_EQ(bnn::runtime::parse_mem_available("MemTotal:       24624112 kB\nMemFree:         1000 kB\n"
                                              "MemAvailable:   20000000 kB\nBuffers: 1 kB\n"),
            int64_t{20000000} * 1024);
  EXPECT_EQ(bnn::runtime::parse_mem_available("MemTotal: 1 kB\n"), std::nullopt);
  // This machine's: positive and at most its MemTotal.
  const auto available = bnn::runtime::host_available_memory();
  ASSERT_TRUE(available.has_value());
  EXPECT_GE(*available, 0);
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t total_kib = 0;
  meminfo >> key >> total_kib;
  ASSERT_EQ(key, "MemTotal:");
  EXPECT_LE(*available, total_kib * 1024);
}

// The estimate behind auto: the paper network's 1,265,258 parameters, nine
// float and one double vector of that size, and the 300 stored anchor
// gradients of the control variate unless they are recomputed.
TEST(Devices, MemberMemoryCountsStateAndStoredAnchors) {
  bnn::config::Config config =
      bnn::config::load_config(std::string(BNN_SOURCE_DIR) + "/configs/fashion_mnist_paper.yaml", {});
  bnn::data_loaders::Dataset data;
  data.input_shape = {1, 28, 28};
  data.num_classes = 10;
  data.train.images = torch::zeros({60000, 1, 1, 1}, torch::kUInt8);
  data.train.labels = torch::zeros({60000}, torch::kLong);
  const int64_t d = 1265258;
  auto m = bnn::pipeline::estimate_member_memory(config, data);
  EXPECT_EQ(m.parameters, d);
  EXPECT_EQ(m.state_bytes, d * (4 * 9 + 8) + d * 4 * 300);
  EXPECT_EQ(m.total_bytes, m.state_bytes + bnn::pipeline::kActivationAllowanceBytes);
  config.sampler.anchor_gradients = "recomputed";
  m = bnn::pipeline::estimate_member_memory(config, data);
  EXPECT_EQ(m.state_bytes, d * (4 * 9 + 8));
  // A stacked member's slot: parameters and gradient (float) and its row of positions (int64).
  m = bnn::pipeline::estimate_member_memory(config, data, bnn::pipeline::MemberDesign::kStacked);
  EXPECT_EQ(m.state_bytes, d * (4 * 9 + 8) + d * 16);
}

// Mean accuracy of `method` at ensemble size `size` in a run's metrics.json.
double accuracy_of(const std::filesystem::path& run, const std::string& method, int64_t size) {
  const auto row = bnn::testing::ensemble_row(run, method, size);
  return row.empty() ? -1 : row["accuracy"]["mean"].get<double>();
}

// The tiny run on a GPU, as a user starts it, against the same run on the
// CPU. Model initialisation and batch order come from CPU generators, so
// Adam and SWA follow the CPU trajectory up to float rounding (accuracy within
// 2%: 10 of the 500 test images); the sampler's noise comes from CUDA's
// generator, so Bayes is another draw of the same posterior (within 5%).
// Skips, visibly, where no CUDA device is visible.
TEST(CudaRun, TinyRunOnTheGpuScoresAsOnTheCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible: the GPU run test did not run";
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto work = bnn::testing::unique_temp_dir("bnn_cuda_run_test");
  const auto cpu = work / "cpu", gpu = work / "gpu";
  auto r = run_tiny(work, "cpu", "--device cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run_tiny(work, "gpu", "--device cuda");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("test images on cuda"), std::string::npos) << r.output;
  for (const std::string m : {"member_000", "member_001"}) {
    for (const std::string f : {"adam_probs.npy", "swa_probs.npy", "bayes_probs.npy"}) {
      const torch::Tensor p = bnn::data_loaders::read_npy(gpu / m / f).to(torch::kDouble);
      ASSERT_EQ(p.sizes(), bnn::data_loaders::read_npy(cpu / m / f).sizes()) << m << "/" << f;
      EXPECT_TRUE(torch::allclose(p.sum(1), torch::ones({p.size(0)}, torch::kDouble), 0, 1e-4)) << m << "/" << f;
    }
  }
  for (const char* method : {"adam", "swa"}) {
    EXPECT_NEAR(accuracy_of(gpu, method, 2), accuracy_of(cpu, method, 2), 0.02) << method;
  }
  EXPECT_NEAR(accuracy_of(gpu, "bayes", 2), accuracy_of(cpu, "bayes", 2), 0.05);
  if (!HasFailure()) std::filesystem::remove_all(work);
}

// A GPU run killed in the middle of sampling and resumed: the checkpoint
// restores the chain and CUDA's generator (Philox seed and offset), so the
// resumed run draws the noise the uninterrupted one drew. One member at a
// time (member 0 is the one killed), so the mlp's kernels run on one
// stream, where cuBLAS's products and ATen's reductions repeat their bits:
// the two agree to 1e-5, while noise drawn from a wrongly restored
// generator moves the Bayes probabilities by far more. (A difference
// between 1e-5 and 1e-3 would point to a kernel that does not repeat its
// bits, not to the noise.)
TEST(CudaRun, AGpuRunKilledAndResumedDrawsTheSameNoise) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible: the GPU resume test did not run";
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto work = bnn::testing::unique_temp_dir("bnn_cuda_resume_test");
  const std::string one_by_one = "--device cuda --members-per-device 1";
  auto r = run_tiny(work, "full", one_by_one, kCublasReproducible);
  ASSERT_EQ(r.code, 0) << r.output;
  r = killed_and_resumed(work, one_by_one, "--threads 1 " + one_by_one, kCublasReproducible);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("resuming from"), std::string::npos) << r.output;
  for (const std::string m : {"member_000", "member_001"}) {
    for (const std::string f : {"swa_probs.npy", "bayes_probs.npy"}) {
      EXPECT_LT(largest_difference(work / "full" / m / f, work / "cut" / m / f), 1e-5) << m << "/" << f;
    }
  }
  if (!HasFailure()) std::filesystem::remove_all(work);
}

// --devices all on a machine with two or more GPUs: one worker per GPU, one
// run directory, every member finished.
TEST(CudaRun, DevicesAllSpreadsMembersOverTheGpus) {
  if (torch::cuda::device_count() < 2) {
    GTEST_SKIP() << torch::cuda::device_count() << " CUDA device(s) visible: the multi-GPU test needs 2";
  }
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto work = bnn::testing::unique_temp_dir("bnn_cuda_devices_test");
  const auto r = run_tiny(work, "run", "--devices all");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find(std::to_string(torch::cuda::device_count()) + " workers on cuda:0, cuda:1"),
            std::string::npos)
      << r.output;
  for (const std::string m : {"member_000", "member_001"}) {
    EXPECT_TRUE(std::filesystem::exists(work / "run" / m / "bayes_probs.npy")) << m;
  }
  EXPECT_TRUE(std::filesystem::exists(work / "run" / "metrics.json"));
  if (!HasFailure()) std::filesystem::remove_all(work);
}

TEST(Devices, BadListsNameTheEntry) {
  using bnn::pipeline::parse_device_list;
  EXPECT_EQ(parse_device_list("cpu,cpu"), (std::vector<std::string>{"cpu", "cpu"}));
  EXPECT_EQ(bnn::testing::error_of([] { parse_device_list("cpu,,cpu"); }), "--devices: empty entry in 'cpu,,cpu'");
  EXPECT_EQ(bnn::testing::error_of([] { parse_device_list("gpu7"); }),
            "device 'gpu7' is not valid: use auto, cpu, cuda or cuda:N");
  // Note [Why no CUDA]: the reason follows; here, for a CPU build of LibTorch.
  if (!torch::cuda::is_available() && bnn::runtime::cuda_linkage().torch_cuda.empty()) {
    const std::string why = "this bnn is built against a CPU build of LibTorch (bnn version); build it against a "
                            "CUDA LibTorch (README.md, Building by hand: scripts/build-pip-torch.sh)";
    EXPECT_EQ(bnn::testing::error_of([] { parse_device_list("all"); }),
              "--devices all: no CUDA device is visible: " + why);
    EXPECT_EQ(bnn::testing::error_of([] { parse_device_list("cpu,cuda:1"); }),
              "device 'cuda:1' requested but CUDA is not available: " + why);
  }
}

}  // namespace
