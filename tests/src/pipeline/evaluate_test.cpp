// `bnn evaluate` as a user runs it on a tiny run: report, uncertainty.json and
// figures; --burn-in / --thin recompute the Bayesian ensemble from the stored
// samples; --members selects members; a missing gnuplot loses no metrics.

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data_loaders/npy.h"
#include "src/io/atomic_file.h"
#include "src/io/file_lock.h"
#include "src/io/npy.h"
#include "src/pipeline/evaluate.h"
#include "tests/support/data_paths.h"
#include "tests/support/figure_files.h"
#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace {
using bnn::testing::kTinyConfig;

// This test program's own folder (removed at its end unless a test failed).
const std::filesystem::path& evaluate_work() {
  static const auto dir = bnn::testing::unique_temp_dir("bnn_evaluate_test");
  return dir;
}

using EvaluateResult = bnn::testing::CommandResult;

EvaluateResult evaluate_cli(const std::string& args) {
  static int calls = 0;
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  return bnn::testing::run_bnn(args, evaluate_work() / (test + "_" + std::to_string(++calls) + ".txt"));
}

nlohmann::json read_json(const std::filesystem::path& path) {
  return nlohmann::json::parse(bnn::io::read_file(path));
}

// The bayes row of ensemble size 1 in metrics.json.
nlohmann::json bayes_size1(const std::filesystem::path& dir) {
  return bnn::testing::ensemble_row(dir, "bayes", 1);
}

// One tiny run shared by the tests of this file (made once per process), on
// the CPU like every run_bnn command that names no device.
const std::filesystem::path& tiny_run() {
  static const std::filesystem::path dir = [] {
    const auto d = evaluate_work() / "tiny";
    std::filesystem::remove_all(d);
    const EvaluateResult r = evaluate_cli("run --config " + kTinyConfig + " --out " + d.string() + " --threads 1");
    EXPECT_EQ(r.code, 0) << r.output;
    return d;
  }();
  return dir;
}

// A fresh folder `name` holding tiny_run()'s evaluation without figures.
std::filesystem::path evaluated_without_figures(const std::string& name) {
  const auto out = evaluate_work() / name;
  std::filesystem::remove_all(out);
  const EvaluateResult r = evaluate_cli("evaluate " + tiny_run().string() + " --out " + out.string() + " --no-figures");
  EXPECT_EQ(r.code, 0) << r.output;
  return out;
}

TEST(SelectSampleSteps, BurnInThenEveryKth) {
  using bnn::pipeline::select_sample_steps;
  const std::vector<int64_t> stored = {20, 30, 40, 50, 60};
  EXPECT_EQ(select_sample_steps(stored, 0, 1), stored);
  EXPECT_EQ(select_sample_steps(stored, 30, 1), (std::vector<int64_t>{40, 50, 60}));
  EXPECT_EQ(select_sample_steps(stored, 0, 2), (std::vector<int64_t>{30, 50}));
  EXPECT_EQ(select_sample_steps(stored, 20, 3), (std::vector<int64_t>{50}));
  EXPECT_TRUE(select_sample_steps(stored, 60, 1).empty());
}

TEST(Evaluate, WritesReportUncertaintyAndFigures) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto& run = tiny_run();
  const auto out = evaluate_work() / "report_out";
  std::filesystem::remove_all(out);
  const EvaluateResult r = evaluate_cli("evaluate " + run.string() + " --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.output;
  // Without options the tables are those `bnn run` wrote.
  EXPECT_EQ(bnn::io::read_file(out / "metrics.json"), bnn::io::read_file(run / "metrics.json"));

  const auto u = read_json(out / "uncertainty.json");
  EXPECT_EQ(u["selection"]["members"], (std::vector<std::string>{"member_000", "member_001"}));
  EXPECT_EQ(u["selection"]["bayes_probabilities"], "bayes_probs.npy");
  for (const char* method : {"adam", "swa", "bayes"}) {
    const auto& m = u["methods"][method];
    EXPECT_GE(m["mutual_information"].get<double>(), 0.0) << method;
    EXPECT_NEAR(m["predictive_entropy"].get<double>(),
                m["expected_entropy"].get<double>() + m["mutual_information"].get<double>(), 1e-9)
        << method;
    EXPECT_EQ(m["confusion_matrix"].size(), 10u);
    EXPECT_EQ(m["per_class_accuracy"].size(), 10u);
  }
  EXPECT_EQ(u["methods"]["bayes"]["draws"], 4);  // 2 members x 2 retained samples
  EXPECT_EQ(u["class_names"].size(), 10u);
  EXPECT_EQ(u["class_names"][0], "T-shirt/top");
  EXPECT_GT(u["methods"]["bayes"]["mutual_information"].get<double>(), 0.0);

  const std::string report = bnn::io::read_file(out / "report.md");
  for (const char* text : {"# bnn evaluation report", "## Ensemble metrics", "| 2 | 1 | bayes |",
                           "## The Bayesian ensemble against the point estimates, paired",
                           "mutual information", "## Confusion matrix", "## Sampling diagnostics",
                           "| member_000 | 2 | – | – |", "## Figures", "| T-shirt/top |", "| **Ankle boot** |"}) {
    EXPECT_NE(report.find(text), std::string::npos) << text << "\n" << report;
  }
  const std::string html = bnn::io::read_file(out / "report.html");
  for (const char* text : {"<!DOCTYPE html>", "<h1>bnn evaluation report</h1>", "<h2>Ensemble metrics</h2>",
                           "<td style=\"text-align:left\">T-shirt/top</td>", "</table>", "</html>"}) {
    EXPECT_NE(html.find(text), std::string::npos) << text;
  }
  if (!bnn::testing::has_gnuplot()) GTEST_SKIP() << bnn::testing::kNoGnuplot << ": figures not checked";
  for (const char* name : {"metrics_vs_size", "reliability_adam", "reliability_swa", "reliability_bayes",
                           "loss_traces"}) {
    EXPECT_NO_THROW(bnn::testing::decode_png(out / "figures" / (std::string(name) + ".png"))) << name;
    EXPECT_TRUE(bnn::testing::is_svg(out / "figures" / (std::string(name) + ".svg"))) << name;
    EXPECT_NE(report.find(std::string("](figures/") + name + ".png)"), std::string::npos) << name;
    EXPECT_NE(html.find(std::string("<img alt=\"") + name + "\" src=\"data:image/png;base64,iVBORw0KGgo"),
              std::string::npos)
        << name;  // the PNG itself, embedded
  }
}

TEST(Evaluate, BurnInAndThinRecomputeFromStoredSamples) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto& run = tiny_run();
  // --thin 1 keeps every stored sample: the run's own ensemble, to float32
  // rounding (the samples are float32: Note [Stored sample probabilities]).
  const auto all = evaluate_work() / "thin1";
  std::filesystem::remove_all(all);
  EvaluateResult r = evaluate_cli("evaluate " + run.string() + " --out " + all.string() + " --thin 1 --no-figures");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find("float16"), std::string::npos) << r.output;
  EXPECT_EQ(bnn::data_loaders::read_npy(run / "member_000" / "samples" / "step_00000020.npy").scalar_type(),
            torch::kFloat);
  for (const char* metric : {"accuracy", "nll", "ace", "rps", "brier"}) {
    for (size_t g = 0; g < 2; ++g) {
      EXPECT_NEAR(bayes_size1(all)[metric]["values"].at(g).get<double>(),
                  bayes_size1(run)[metric]["values"].at(g).get<double>(), 1e-6)
          << metric << " group " << g;
    }
  }
  EXPECT_EQ(read_json(all / "uncertainty.json")["selection"]["bayes_probabilities"], "stored samples");
  EXPECT_NE(bnn::io::read_file(all / "report.md").find("every 1 stored sample(s): 4 samples in all\n"),
            std::string::npos);

  // evaluation.sample_probs_dtype float16 halves the files, and the
  // evaluation that reads them says so: its NLL can be higher (a
  // probability below 3e-8 reads as 0), the rest moves by float16 rounding.
  const auto half = evaluate_work() / "half";
  std::filesystem::remove_all(half);
  r = evaluate_cli("run --config " + kTinyConfig + " --out " + half.string() +
                   " --members 0 --threads 1 --set evaluation.sample_probs_dtype=float16");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(bnn::data_loaders::read_npy(half / "member_000" / "samples" / "step_00000020.npy").scalar_type(),
            torch::kHalf);
  const auto half_thin1 = evaluate_work() / "half_thin1";
  std::filesystem::remove_all(half_thin1);
  r = evaluate_cli("evaluate " + half.string() + " --out " + half_thin1.string() + " --thin 1 --no-figures");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 of the 2 samples read are float16"), std::string::npos) << r.output;
  EXPECT_NE(bnn::io::read_file(half_thin1 / "report.md")
                .find("2 samples in all; 2 of them stored as float16, which reads a probability below 3e-8 as 0"),
            std::string::npos);
  EXPECT_NEAR(bayes_size1(half_thin1)["accuracy"]["mean"].get<double>(),
              bayes_size1(run)["accuracy"]["values"].at(0).get<double>(), 2e-3);
  EXPECT_GE(bayes_size1(half_thin1)["nll"]["mean"].get<double>(),
            bayes_size1(run)["nll"]["values"].at(0).get<double>() - 1e-3);
  std::filesystem::remove_all(half);

  // --burn-in 2 on a run with burn-in 1 equals a run made with burn-in 2 (the
  // trajectory does not depend on burn-in), to float32 rounding.
  const auto late = evaluate_work() / "burn2";
  std::filesystem::remove_all(late);
  ASSERT_EQ(evaluate_cli("evaluate " + run.string() + " --out " + late.string() + " --burn-in 2 --members 0 --no-figures")
                .code,
            0);
  const auto direct = evaluate_work() / "burn2_run";
  std::filesystem::remove_all(direct);
  ASSERT_EQ(evaluate_cli("run --config " + kTinyConfig + " --out " + direct.string() +
                    " --members 0 --threads 1 --set sampler.burn_in=2")
                .code,
            0);
  for (const char* metric : {"accuracy", "nll", "ace", "rps"}) {
    EXPECT_NEAR(bayes_size1(late)[metric]["mean"].get<double>(), bayes_size1(direct)[metric]["mean"].get<double>(),
                1e-6)
        << metric;
  }
  const auto u = read_json(late / "uncertainty.json");
  EXPECT_EQ(u["selection"]["members"], (std::vector<std::string>{"member_000"}));
  EXPECT_EQ(u["methods"]["bayes"]["draws"], 1);
  EXPECT_EQ(read_json(late / "metrics.json")["ensembles"].size(), 3u);  // size 1 for 3 methods
  std::filesystem::remove_all(direct);

  // metrics.json names the members in the order the groups take them, and a
  // group's values are its members' wherever they are evaluated: member 1
  // alone scores what it scored as the second group of the whole run.
  const auto second = evaluate_work() / "member1";
  std::filesystem::remove_all(second);
  ASSERT_EQ(evaluate_cli("evaluate " + run.string() + " --out " + second.string() + " --members 1 --no-figures").code,
            0);
  const auto alone = read_json(second / "metrics.json");
  const auto whole = read_json(run / "metrics.json");
  EXPECT_EQ(alone["members"], (std::vector<std::string>{"member_001"}));
  EXPECT_EQ(whole["members"], (std::vector<std::string>{"member_000", "member_001"}));
  for (const char* metric : {"accuracy", "nll", "ace"}) {
    EXPECT_EQ(bayes_size1(second)[metric]["values"].at(0).get<double>(),
              bayes_size1(run)[metric]["values"].at(1).get<double>())
        << metric;
  }
}

TEST(Evaluate, SamplingDiagnosticsPerMember) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  // Six sampling epochs after one of burn-in: five loss draws per member.
  const auto run = evaluate_work() / "longer";
  std::filesystem::remove_all(run);
  ASSERT_EQ(evaluate_cli("run --config " + kTinyConfig + " --out " + run.string() +
                    " --members 0 --threads 1 --set sampler.epochs=6")
                .code,
            0);
  const std::string report = bnn::io::read_file(run / "report.md");
  const auto row = report.find("| member_000 | 5 | ");
  ASSERT_NE(row, std::string::npos) << report;
  const std::string line = report.substr(row, report.find('\n', row) - row);
  EXPECT_EQ(line.find("–"), std::string::npos) << line;  // numbers, not placeholders
  std::filesystem::remove_all(run);
}

TEST(Evaluate, BadSelectionsAreClearErrors) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const std::string run = tiny_run().string(), out = " --out " + (evaluate_work() / "bad").string() + " --no-figures";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--burn-in 0", "--burn-in 0 must be at least the run's sampler.burn_in 1"},
      {"--burn-in 3", "less than sampler.epochs 3"},
      {"--thin 3", "keep none of the 2 stored samples"},
      {"--thin 0", "--thin 0 must be at least 1"},
      {"--members 5", "--members: '5' selects members outside 0-1"},
  };
  for (const auto& [args, text] : cases) {
    const EvaluateResult r = evaluate_cli("evaluate " + run + out + " " + args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(text), std::string::npos) << args << "\n" << r.output;
  }
}

// One-hot labels as the reference posterior: top-1 agreement is then the
// accuracy and total variation 1 - p(label), for every method and size.
TEST(Evaluate, ReferenceProbabilitiesAddAgreementAndTotalVariation) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto& run = tiny_run();
  const auto dir = evaluate_work() / "reference";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const torch::Tensor labels = bnn::data_loaders::read_npy(run / "labels.npy");
  const torch::Tensor onehot = torch::one_hot(labels, 10).to(torch::kFloat);
  bnn::io::write_npy(dir / "hmc.npy", onehot);
  const auto out = dir / "out";
  const EvaluateResult r = evaluate_cli("evaluate " + run.string() + " --out " + out.string() + " --no-figures --reference-probs " +
                           (dir / "hmc.npy").string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("agree "), std::string::npos) << r.output;
  const auto metrics = read_json(out / "metrics.json");
  for (const auto& row : metrics["ensembles"]) {
    EXPECT_NEAR(row["agreement"]["mean"].get<double>(), row["accuracy"]["mean"].get<double>(), 1e-12) << row.dump();
  }
  const torch::Tensor bayes = bnn::data_loaders::read_npy(run / "member_000" / "bayes_probs.npy").to(torch::kDouble);
  const auto one = bnn::pipeline::evaluate_runs({run}, dir / "member0", {std::nullopt, std::nullopt, {0}, false,
                                                                         dir / "hmc.npy"});
  const double tv = (1.0 - bayes.gather(1, labels.unsqueeze(1))).mean().item<double>();
  for (const auto& row : one) {
    if (row.method == "bayes") {
      EXPECT_NEAR(row.total_variation.mean, tv, 1e-6);
    }
  }
  const std::string report = bnn::io::read_file(out / "report.md");
  EXPECT_NE(report.find("| agreement | total_variation |"), std::string::npos);
  EXPECT_NE(report.find("hmc.npy"), std::string::npos);

  const torch::Tensor halved = onehot.clone();
  halved[3] *= 0.5;
  bnn::io::write_npy(dir / "halved.npy", halved);
  bnn::io::write_npy(dir / "short.npy", onehot.narrow(0, 0, 10));
  bnn::io::write_npy(dir / "ints.npy", labels);
  const torch::Tensor negative = onehot.clone();
  negative[7][2] = -0.5;
  bnn::io::write_npy(dir / "negative.npy", negative);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"halved.npy", "halved.npy: row 3 sums to 0.5, not 1"},
      {"short.npy", "short.npy: shape (10, 10), but the run's test set has 500 examples of 10 classes"},
      {"ints.npy",
       "ints.npy: holds Long values of shape (500); give float32 or float64 probabilities of shape (500, 10)"},
      {"negative.npy", "negative.npy: row 7 holds -0.5 for class 2"},
      {"missing.npy", "missing.npy"},
  };
  for (const auto& [file, text] : cases) {
    const EvaluateResult bad = evaluate_cli("evaluate " + run.string() + " --out " + (dir / "bad").string() +
                               " --no-figures --reference-probs " + (dir / file).string());
    EXPECT_EQ(bad.code, 2) << file << "\n" << bad.output;
    EXPECT_NE(bad.output.find("--reference-probs " + (dir / "").string() + text), std::string::npos)
        << file << "\n" << bad.output;
    EXPECT_FALSE(std::filesystem::exists(dir / "bad" / "metrics.json")) << file;
  }
  std::filesystem::remove_all(dir);
}

TEST(Evaluate, MissingGnuplotKeepsTheMetrics) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto& run = tiny_run();
  const auto out = evaluate_work() / "no_gnuplot";
  std::filesystem::remove_all(out);
  ::setenv("BNN_GNUPLOT", "/no/such/gnuplot", 1);
  const EvaluateResult r = evaluate_cli("evaluate " + run.string() + " --out " + out.string());
  ::unsetenv("BNN_GNUPLOT");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("figures not drawn: gnuplot not found"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(out / "metrics.json"));
  EXPECT_TRUE(std::filesystem::exists(out / "uncertainty.json"));
  EXPECT_NE(bnn::io::read_file(out / "report.md").find("Not drawn: gnuplot not found"), std::string::npos);
}

// Note [Evaluation lock]: an evaluation whose evaluate.lock was deleted and
// made again while it ran (here by a stand-in gnuplot, as it draws the
// figures) writes no tables: another evaluation may own the folder now.
TEST(Evaluate, AnEvaluationWhoseLockFileIsReplacedWritesNoTables) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto& run = tiny_run();
  const auto out = evaluate_work() / "lock_replaced";
  std::filesystem::remove_all(out);
  const auto fake = evaluate_work() / "lock_replacing_gnuplot.sh";
  bnn::io::write_file_atomically(fake, "#!/bin/sh\nrm -f '" + (out / "evaluate.lock").string() + "'\n: > '" +
                                           (out / "evaluate.lock").string() + "'\nexit 1\n");
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  ::setenv("BNN_GNUPLOT", fake.c_str(), 1);
  const EvaluateResult r = evaluate_cli("evaluate " + run.string() + " --out " + out.string());
  ::unsetenv("BNN_GNUPLOT");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("evaluate.lock was replaced by another file while this process held it; another bnn may "
                          "be evaluating into"),
            std::string::npos)
      << r.output;
  for (const char* name : {"metrics.json", "metrics.csv", "metrics.txt", "uncertainty.json", "report.md"}) {
    EXPECT_FALSE(std::filesystem::exists(out / name)) << name;
  }
}

// Figures that cannot be written (here figures/ is a file) are a warning:
// the tables and reports, written after them, are still written.
TEST(Evaluate, FiguresThatCannotBeWrittenKeepTheMetrics) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto& run = tiny_run();
  const auto out = evaluated_without_figures("figures_a_file");
  if (::testing::Test::HasFailure()) return;
  std::filesystem::remove(out / "metrics.json");
  bnn::io::write_file_atomically(out / "figures", "not a folder");
  const EvaluateResult r = evaluate_cli("evaluate " + run.string() + " --out " + out.string());
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("figures not drawn: "), std::string::npos) << r.output;
  EXPECT_EQ(bnn::io::read_file(out / "metrics.json"), bnn::io::read_file(run / "metrics.json"));
  EXPECT_NE(bnn::io::read_file(out / "report.md").find("# bnn evaluation report"), std::string::npos);
}

// What an evaluation killed between its writes and their renames leaves is
// removed by the next, under the lock; a run's own files in flight are not.
TEST(Evaluate, RemovesWhatAStoppedEvaluationLeft) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto& run = tiny_run();
  const auto out = evaluated_without_figures("stale");
  if (::testing::Test::HasFailure()) return;
  const std::string tail = ".tmp.4242.0123456789abcdef.0";
  const std::vector<std::filesystem::path> stale = {out / ("metrics.json" + tail), out / ("report.html" + tail),
                                                    out / "figures" / "data" / ("loss_traces.dat" + tail)};
  const auto kept = out / ("bnn.json" + tail);
  std::filesystem::create_directories(out / "figures" / "data");
  for (const auto& p : stale) bnn::io::write_file_atomically(p, "cut");
  bnn::io::write_file_atomically(kept, "in flight");
  const EvaluateResult r = evaluate_cli("evaluate " + run.string() + " --out " + out.string() + " --no-figures");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("removed 3 file(s) left by an evaluation stopped part-way"), std::string::npos) << r.output;
  for (const auto& p : stale) EXPECT_FALSE(std::filesystem::exists(p)) << p;
  EXPECT_TRUE(std::filesystem::exists(kept));
}

// Note [Evaluation lock]: an evaluation waits while another holds the lock on
// its output folder, writes nothing meanwhile, and evaluates again if a member
// finished while it waited, so the last writer covers every finished member.
TEST(Evaluate, WaitsForTheLockAndCountsMembersThatFinishedMeanwhile) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  namespace fs = std::filesystem;
  const auto run = evaluate_work() / "locked", aside = evaluate_work() / "member_001_aside";
  fs::remove_all(run);
  fs::copy(tiny_run(), run, fs::copy_options::recursive);
  fs::rename(run / "member_001", aside);  // finished later
  fs::remove(run / "metrics.json");
  auto held = bnn::io::FileLock::try_acquire(run / "evaluate.lock");
  ASSERT_TRUE(held.has_value());
  const auto log = evaluate_work() / "locked_evaluate.txt";
  EvaluateResult result{-1, ""};
  std::thread evaluate([&] { result = bnn::testing::run_bnn("evaluate " + run.string() + " --no-figures", log); });
  const auto waiting = [&] {
    return fs::exists(log) && bnn::io::read_file(log).find("waiting for another bnn") != std::string::npos;
  };
  for (int i = 0; i < 600 && !waiting(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const bool waited = waiting();
  EXPECT_FALSE(fs::exists(run / "metrics.json")) << "written while another held the lock";
  fs::rename(aside, run / "member_001");
  held.reset();
  evaluate.join();
  ASSERT_TRUE(waited) << result.output;
  ASSERT_EQ(result.code, 0) << result.output;
  EXPECT_NE(result.output.find("more members of " + run.string() + " finished during this evaluation"),
            std::string::npos)
      << result.output;
  EXPECT_EQ(bnn::testing::ensemble_row(run, "bayes", 2), bnn::testing::ensemble_row(tiny_run(), "bayes", 2));
}

}  // namespace
