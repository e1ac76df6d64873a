// `bnn run --devices`: members spread over several workers (one per device)
// write the same results as one worker; bad device lists are clear errors.
#include <gtest/gtest.h>

#include "src/config/config.h"
#include "src/io/atomic_file.h"
#include "src/pipeline/run.h"
#include "tests/support/error_text.h"
#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace {

const std::filesystem::path kFmnist = "/usr/share/datasets/fashion-mnist";
const std::string kTiny = std::string(BNN_SOURCE_DIR) + "/configs/tiny.yaml";

// Two CPU workers stand in for two GPUs: the member queue, the per-device data
// copies and the shared run directory are the same code paths.
TEST(Devices, TwoWorkersWriteWhatOneWorkerWrites) {
  if (!std::filesystem::exists(kFmnist)) GTEST_SKIP() << "Fashion-MNIST not installed at " << kFmnist;
  const auto work = bnn::testing::unique_temp_dir("bnn_devices_test");
  const auto one = work / "one", two = work / "two";
  auto r = bnn::testing::run_bnn("run --config " + kTiny + " --out " + one.string() + " --threads 1",
                                 work / "one.txt");
  ASSERT_EQ(r.code, 0) << r.output;
  r = bnn::testing::run_bnn("run --config " + kTiny + " --out " + two.string() + " --threads 1 --devices cpu,cpu",
                            work / "two.txt");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 workers on cpu, cpu"), std::string::npos) << r.output;
  for (const std::string m : {"member_000", "member_001"}) {
    for (const std::string f : {"adam_probs.npy", "swa_probs.npy", "bayes_probs.npy"}) {
      EXPECT_EQ(bnn::io::read_file(one / m / f), bnn::io::read_file(two / m / f)) << m << "/" << f;
    }
  }
  EXPECT_EQ(bnn::io::read_file(one / "metrics.json"), bnn::io::read_file(two / "metrics.json"));
  std::filesystem::remove_all(work);
}

TEST(Devices, BadListsNameTheEntry) {
  using bnn::pipeline::parse_device_list;
  EXPECT_EQ(parse_device_list("cpu,cpu"), (std::vector<std::string>{"cpu", "cpu"}));
  EXPECT_EQ(bnn::testing::error_of([] { parse_device_list("cpu,,cpu"); }), "--devices: empty entry in 'cpu,,cpu'");
  EXPECT_EQ(bnn::testing::error_of([] { parse_device_list("gpu7"); }),
            "device 'gpu7' is not valid: use auto, cpu, cuda or cuda:N");
  if (!torch::cuda::is_available()) {
    EXPECT_EQ(bnn::testing::error_of([] { parse_device_list("all"); }), "--devices all: no CUDA device is visible");
    EXPECT_EQ(bnn::testing::error_of([] { parse_device_list("cpu,cuda:1"); }),
              "device 'cuda:1' requested but CUDA is not available");
  }
}

}  // namespace
