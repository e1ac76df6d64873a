// The bnn executable as a user runs it, on a slice of the real Fashion-MNIST.
#include <cstdlib>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data_loaders/npy.h"
#include "src/io/atomic_file.h"
#include "src/io/npy.h"
#include "src/pipeline/run.h"
#include "tests/support/data_paths.h"
#include "tests/support/run_bnn.h"

namespace {
using bnn::testing::kTinyConfig;

// One work directory per checkout, so that several checkouts on one machine
// can run their suites at the same time.
const std::filesystem::path kE2eWork =
    std::filesystem::temp_directory_path() /
    ("bnn_e2e_test_" + std::to_string(std::hash<std::string>{}(BNN_SOURCE_DIR) % 1000000007));

using Result = bnn::testing::CommandResult;

Result bnn(const std::string& args, const std::string& env = "") {
  std::filesystem::create_directories(kE2eWork);
  // ctest runs tests in parallel processes: one log file per test and call.
  static int calls = 0;
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  return bnn::testing::run_bnn(args, kE2eWork / (test + "_" + std::to_string(++calls) + ".txt"), env);
}


TEST(EndToEnd, TinyRunOnFashionMnistSlice) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto out = kE2eWork / "tiny";
  std::filesystem::remove_all(out);
  const Result r = bnn("run --config " + kTinyConfig + " --out " + out.string() + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("member 0   adam epoch   1/2"), std::string::npos) << r.output;

  const auto metrics = nlohmann::json::parse(bnn::io::read_file(out / "metrics.json"));
  ASSERT_EQ(metrics["ensembles"].size(), 6u);  // sizes 1, 2 for adam, swa, bayes
  for (const auto& row : metrics["ensembles"]) {
    for (const char* key : {"accuracy", "nll", "ace", "rps", "ece", "brier"}) {
      ASSERT_TRUE(row[key].contains("mean")) << key;
      ASSERT_TRUE(row[key].contains("std")) << key;
    }
    EXPECT_GT(row["accuracy"]["mean"].get<double>(), 0.5) << row;  // well above chance (0.1)
  }
  const torch::Tensor labels = bnn::data_loaders::read_npy(out / "labels.npy");
  EXPECT_EQ(labels.numel(), 500);
  const torch::Tensor bayes = bnn::data_loaders::read_npy(out / "member_001" / "bayes_probs.npy");
  EXPECT_EQ(bayes.sizes(), (std::vector<int64_t>{500, 10}));
  // Size 1's per-group values are the members' own, in member order: member 1's accuracy from its file.
  for (const auto& row : metrics["ensembles"]) {
    if (row["method"] != "bayes" || row["size"] != 1) continue;
    const auto accuracies = row["accuracy"]["values"].get<std::vector<double>>();
    ASSERT_EQ(accuracies.size(), 2u) << row;
    EXPECT_DOUBLE_EQ(accuracies[1], bayes.argmax(1).eq(labels).to(torch::kDouble).mean().item<double>());
    EXPECT_DOUBLE_EQ(row["accuracy"]["mean"].get<double>(), (accuracies[0] + accuracies[1]) / 2);
  }
  // Retained samples: epochs 2 and 3 after one burn-in epoch.
  int samples = 0;
  for (const auto& e : std::filesystem::directory_iterator(out / "member_000" / "samples")) {
    EXPECT_EQ(bnn::data_loaders::read_npy(e.path()).scalar_type(), torch::kFloat);  // Note [Stored sample probabilities]
    ++samples;
  }
  EXPECT_EQ(samples, 2);
  EXPECT_TRUE(std::filesystem::exists(out / "config.yaml"));
  EXPECT_TRUE(std::filesystem::exists(out / "metrics.csv"));

  // A rerun into the same directory keeps the finished members.
  const Result rerun = bnn("run --config " + kTinyConfig + " --out " + out.string() + " --threads 1");
  ASSERT_EQ(rerun.code, 0) << rerun.output;
  EXPECT_NE(rerun.output.find("member 1 already finished"), std::string::npos) << rerun.output;
  EXPECT_TRUE(bnn::data_loaders::read_npy(out / "member_001" / "bayes_probs.npy").equal(bayes));

  // Same seed, same results: rerun member 1 alone into a copy and compare.
  const auto again = kE2eWork / "tiny_again";
  std::filesystem::remove_all(again);
  ASSERT_EQ(bnn("run --config " + kTinyConfig + " --out " + again.string() + " --members 1 --threads 1").code, 0);
  EXPECT_TRUE(bnn::data_loaders::read_npy(again / "member_001" / "bayes_probs.npy").equal(bayes));
}

TEST(EndToEnd, MergingTwoHalfRunsGivesTheFullRunsTable) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto full = kE2eWork / "merge_full", a = kE2eWork / "merge_a", b = kE2eWork / "merge_b", merged = kE2eWork / "merged";
  for (const auto& d : {full, a, b, merged}) std::filesystem::remove_all(d);
  ASSERT_EQ(bnn("run --config " + kTinyConfig + " --out " + full.string() + " --threads 1").code, 0);
  ASSERT_EQ(bnn("run --config " + kTinyConfig + " --out " + a.string() + " --members 0 --threads 1").code, 0);
  ASSERT_EQ(bnn("run --config " + kTinyConfig + " --out " + b.string() + " --members 1 --threads 1").code, 0);
  // b before a on the command line: members are ordered by index, not by argument.
  const Result r = bnn("evaluate " + b.string() + " " + a.string() + " --out " + merged.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(bnn::io::read_file(merged / "metrics.json"), bnn::io::read_file(full / "metrics.json"));
  EXPECT_EQ(bnn::io::read_file(merged / "metrics.csv"), bnn::io::read_file(full / "metrics.csv"));

  // Merging a member twice, or runs of another experiment, is refused.
  Result twice = bnn("evaluate " + a.string() + " " + full.string() + " --out " + merged.string());
  EXPECT_EQ(twice.code, 2);
  EXPECT_NE(twice.output.find("member_000 is finished in both"), std::string::npos) << twice.output;
  const auto other = kE2eWork / "merge_other";
  std::filesystem::remove_all(other);
  ASSERT_EQ(bnn("run --config " + kTinyConfig + " --out " + other.string() + " --members 1 --threads 1 --seed 8").code,
            0);
  Result mixed = bnn("evaluate " + a.string() + " " + other.string() + " --out " + merged.string());
  EXPECT_EQ(mixed.code, 2);
  EXPECT_NE(mixed.output.find("hold different configurations (run.seed: 7 in the first, 8 in the second); only"),
            std::string::npos)
      << mixed.output;
  Result missing = bnn("evaluate " + (kE2eWork / "no_such_run").string());
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.output.find((kE2eWork / "no_such_run").string() + " does not exist"), std::string::npos)
      << missing.output;
  std::filesystem::create_directories(kE2eWork / "not_a_run");
  missing = bnn("evaluate " + (kE2eWork / "not_a_run").string());
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.output.find("is not a bnn run directory: config.yaml missing"), std::string::npos)
      << missing.output;
}

TEST(EndToEnd, DivergingMemberIsReportedAndKeepsNothingBroken) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto out = kE2eWork / "diverge";
  std::filesystem::remove_all(out);
  const Result r = bnn("run --config " + kTinyConfig + " --out " + out.string() +
                       " --members 0 --threads 1 --set sampler.step_size=10 --set sampler.rho=.inf"
                       " --set sampler.friction=1");
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("non-finite"), std::string::npos) << r.output;
  const auto status = nlohmann::json::parse(bnn::io::read_file(out / "member_000" / "status.json"));
  EXPECT_EQ(status["status"], "failed");
  EXPECT_TRUE(std::filesystem::exists(out / "member_000" / "swa_probs.npy"));
}

// nogin on a network: per-example gradients from the model oracle, the
// covariance variant taken from sampler.nogin_covariance.
TEST(EndToEnd, NoginRunsOnANetwork) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto out = kE2eWork / "nogin";
  std::filesystem::remove_all(out);
  const Result r = bnn("run --config " + kTinyConfig + " --out " + out.string() +
                       " --members 0 --threads 1 --set sampler.name=nogin --set sampler.nogin_covariance=low_rank");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("Nogin(h=0.001"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("covariance=low_rank)"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(out / "member_000" / "bayes_probs.npy"));
}

// SGLD reads no friction, but its config.yaml holds the 1/rho bnn fills in
// for every sampler: evaluate and resume read it back. They once refused it
// as a key SGLD does not use, after every SGLD run had trained.
TEST(EndToEnd, SgldRunsAreReadBackByTheirOwnCommands) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto out = kE2eWork / "sgld", evaluated = kE2eWork / "sgld_evaluated";
  std::filesystem::remove_all(out);
  std::filesystem::remove_all(evaluated);
  Result r = bnn("run --config " + kTinyConfig + " --out " + out.string() +
                 " --members 0 --threads 1 --set sampler.name=sgld --set sampler.step_size=1e-5");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(out / "metrics.json"));
  r = bnn("run --resume " + out.string() + " --threads 1");
  EXPECT_EQ(r.code, 0) << r.output;
  r = bnn("evaluate " + out.string() + " --out " + evaluated.string() + " --no-figures");
  EXPECT_EQ(r.code, 0) << r.output;
}

TEST(EndToEnd, BadInputIsOneClearLine) {
  struct Case {
    std::string args, text;
  };
  const std::vector<Case> cases = {
      {"run --config " + kTinyConfig + " --set sampler.rho_max=0.01", "'sampler.rho_max': invalid value '0.01'"},
      {"run --config " + kTinyConfig + " --set model.name=vgg",
       "'model.name': invalid value 'vgg': valid: mlp, logistic, fmnist_cnn, chest_xray_cnn, celeba_cnn, "
       "cifar10_wide_cnn"},
      {"run --config /no/such.yaml", "config file /no/such.yaml does not exist"},
      {"run --config " + kTinyConfig + " --members 5", "--members: '5' selects members outside 0-1"},
      {"run --config " + kTinyConfig + " --set data.dir=/no/such/dir --out " + (kE2eWork / "nodata").string(),
       "/no/such/dir"},
      {"frobnicate", "unknown command 'frobnicate'"},
      {"''", "unknown command ''"},
      // Before the work, not after it.
      {"bias --chains 50 --time 20 --burn-in 2 --bins 100 --out /no/such/folder/b.csv",
       "bnn bias --out /no/such/folder/b.csv: the folder /no/such/folder does not exist"},
      // Option values: what was wrong with a number, empty list entries, and
      // options where a command takes none.
      {"evaluate /no/run --burn-in 2.5", "option --burn-in: '2.5' is not a valid value; it takes a whole number, in "
                                         "digits (see --help)"},
      {"bias --seed -1", "option --seed: '-1' is not a valid value; it takes a whole number, 0 or more"},
      {"bias --chains many", "option --chains: 'many' is not a valid value; it takes a number"},
      {"bias --chains +5", "option --chains: '+5' is not a valid value; it takes a whole number, in digits"},
      {"bias --chains 99999999999", "bnn bias: --chains 99999999999 must be at most 100000000"},
      {"bias --chains 100 --time 0.1 --samplers sms_ubu",
       "bnn bias: --time 0.1 is not one step of size 0.25 (--step-sizes), so that chain would keep no sample; give "
       "--time 0.25 or more"},
      {"coupled-bias --config " + kTinyConfig + " --set sampler.repartition=true",
       "config key 'sampler.repartition': bnn coupled-bias keeps one partition of the data for both coupled chains"},
      {"hessian --checkpoint /no/member --tolerance inf",
       "option --tolerance: 'inf' is not a valid value; it takes a finite number"},
      {"bias --samplers ''", "option --samplers: '' is an empty value (an unset shell variable?); give one"},
      {"run --config ''", "option --config: '' is an empty value"},
      {"run --config=''", "option --config: '' is an empty value"},
      {"evaluate ''", "an argument is '', empty (an unset shell variable?); give one"},
      {"bias -o ''", "option --out: '' is an empty value"},
      {"evaluate /no/run --config x.yaml", "bnn evaluate has no option --config (see bnn evaluate --help)"},
      {"bias --out", "option --out needs a value (see bnn bias --help)"},
      {"bias --step-sizes 0.25,,0.1", "option --step-sizes: '0.25,,0.1' has an empty entry"},
      {"samplers --anything", "bnn samplers takes no options or arguments, got '--anything'"},
      {"version extra", "bnn version takes no options or arguments, got 'extra'"},
      {"hessian --checkpoint /no/member --iterations 0", "--iterations 0 must be at least 1"},
      {"hessian --checkpoint /no/member --tolerance 0", "--tolerance 0 must be positive"},
  };
  for (const auto& c : cases) {
    const Result r = bnn(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find("bnn: error: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(c.text), std::string::npos) << c.args << "\n" << r.output;
  }
}

TEST(EndToEnd, HelpVersionAndModels) {
  Result r = bnn("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("bnn run --config FILE"), std::string::npos);
  r = bnn("run --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("sampler.step_size"), std::string::npos);
  r = bnn("samplers --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("usage: bnn samplers"), std::string::npos) << r.output;
  r = bnn("hessian --help");  // one default per option
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.output.find("may use) (default"), std::string::npos) << r.output;  // --threads
  r = bnn("version");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("LibTorch"), std::string::npos);
  EXPECT_NE(r.output.find("CUDA available"), std::string::npos);
  // Note [libstdc++ before LibTorch]: std::filesystem comes from libstdc++.
  EXPECT_NE(r.output.find("std::filesystem from: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("libstdc++.so"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\narithmetic on cpu: LibTorch "), std::string::npos) << r.output;
  r = bnn("models");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("1265258"), std::string::npos) << r.output;
  // The fused sampler path: named by bnn version, a bad value refused before any work.
  r = bnn("version", "BNN_FUSED_STEPS=buffered");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("buffered passes (BNN_FUSED_STEPS=buffered)"), std::string::npos) << r.output;
  r = bnn("run --config configs/tiny.yaml --out /nonexistent/never", "BNN_FUSED_STEPS=on");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("bnn: error: BNN_FUSED_STEPS: 'on' is not 0 (tensor operations), 1 (fused passes, the "
                          "default) or buffered"),
            std::string::npos)
      << r.output;
}

TEST(MemberList, ParsesRangesAndLists) {
  using bnn::pipeline::parse_member_list;
  EXPECT_EQ(parse_member_list("3", 8), (std::vector<int64_t>{3}));
  EXPECT_EQ(parse_member_list("0-3", 8), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(parse_member_list("0,2,5-7", 8), (std::vector<int64_t>{0, 2, 5, 6, 7}));
  EXPECT_EQ(parse_member_list("0,0", 8), (std::vector<int64_t>{0}));  // not two members' work
  EXPECT_EQ(parse_member_list("5,0-6", 8), (std::vector<int64_t>{5, 0, 1, 2, 3, 4, 6}));
  EXPECT_THROW(parse_member_list("3-1", 8), bnn::config::ConfigError);
  EXPECT_THROW(parse_member_list("a", 8), bnn::config::ConfigError);
}

}  // namespace
