// `bnn rhat` as a user runs it, on small generated Fashion-MNIST-format files:
// output files and their shapes, R-hat bounds, determinism, starts far from x*
// seen by R-hat, x* shared with `bnn run`, option errors; and the R-hat
// against epoch figure and table of `bnn evaluate`.
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data_loaders/npy.h"
#include "src/io/atomic_file.h"
#include "src/io/npy.h"
#include "src/pipeline/rhat.h"
#include "tests/support/figure_files.h"
#include "tests/support/idx_files.h"
#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using bnn::testing::CommandResult;

constexpr int kImageSide = 28;
constexpr int kSampleEpochs = 7;
constexpr int kBurnIn = 2;

// Class k lights rows 2k+4 .. 2k+6 over deterministic noise, so a small mlp
// learns it within an epoch or two.
void write_random_idx_split(const fs::path& dir, const std::string& prefix, int n, uint32_t seed) {
  std::vector<uint8_t> pixels(static_cast<size_t>(n) * kImageSide * kImageSide), labels(n);
  uint32_t state = seed;
  for (int i = 0; i < n; ++i) {
    labels[i] = static_cast<uint8_t>(i % 10);
    for (int p = 0; p < kImageSide * kImageSide; ++p) {
      state = state * 1664525u + 1013904223u;
      const int row = p / kImageSide;
      const bool lit = row >= 2 * labels[i] + 4 && row < 2 * labels[i] + 7;
      pixels[static_cast<size_t>(i) * kImageSide * kImageSide + p] = static_cast<uint8_t>((lit ? 160 : 0) + (state >> 26));
    }
  }
  bnn::testing::write_plain(dir / (prefix + "-images-idx3-ubyte"),
                            bnn::testing::idx_bytes(bnn::testing::kImagesMagic, {n, kImageSide, kImageSide}, pixels));
  bnn::testing::write_plain(dir / (prefix + "-labels-idx1-ubyte"),
                            bnn::testing::idx_bytes(bnn::testing::kLabelsMagic, {n}, labels));
}

// A fresh directory with the data and a smoke-sized config: 6 batches of 40,
// Adam 2 epochs, SWA 1, SMS-UBU 7 epochs with 2 of burn-in.
struct Experiment {
  fs::path dir;
  fs::path config;
};

Experiment make_experiment(const std::string& name) {
  Experiment s;
  s.dir = bnn::testing::unique_temp_dir("bnn_rhat_" + name);
  write_random_idx_split(s.dir, "train", 240, 1);
  write_random_idx_split(s.dir, "t10k", 60, 2);
  s.config = s.dir / "rhat_smoke.yaml";
  std::ofstream(s.config) << "data:\n  dataset: fashion_mnist\n  dir: " << s.dir.string()
                          << "\n  batch_size: 40\nmodel:\n  name: mlp\n  hidden: [16]\n"
                             "adam:\n  epochs: 2\n  lr: 0.01\nswa:\n  epochs: 1\n"
                             "sampler:\n  name: sms_ubu\n  epochs: "
                          << kSampleEpochs << "\n  burn_in: " << kBurnIn
                          << "\n  step_size: 1.0e-3\nevaluation:\n  bn_batches: 2\n"
                             "run:\n  members: 2\n  seed: 3\n  device: cpu\n";
  return s;
}

// `bnn run` and `bnn rhat` on one thread; logs kept in the experiment directory.
CommandResult bnn_on(const Experiment& s, const std::string& args) {
  static int calls = 0;
  const bool threads = args.rfind("evaluate", 0) != 0;
  return bnn::testing::run_bnn(args + (threads ? " --threads 1" : ""),
                               s.dir / ("log_" + std::to_string(++calls) + ".txt"));
}

std::vector<std::vector<std::string>> read_csv(const fs::path& path) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(bnn::io::read_file(path));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) fields.push_back(cell);
    rows.push_back(fields);
  }
  return rows;
}

void expect_figure(const fs::path& base) {
  const auto png = bnn::testing::decode_png(base.string() + ".png");
  EXPECT_GT(png.width, 100u) << base;
  EXPECT_TRUE(bnn::testing::is_svg(base.string() + ".svg")) << base;
}

TEST(RhatCommand, WritesChainsRhatSummaryAndFigureDeterministically) {
  const Experiment s = make_experiment("outputs");
  const auto out = s.dir / "out";
  const CommandResult r =
      bnn_on(s, "rhat --config " + s.config.string() + " --chains 3 --repeats 2 --loss-every 4 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("split R-hat"), std::string::npos) << r.output;

  const auto chains = read_csv(out / "chains.csv");
  ASSERT_EQ(chains.size(), 1u + 2 * 3 * kSampleEpochs);
  EXPECT_EQ(chains[0], (std::vector<std::string>{"repeat", "chain", "epoch", "loss"}));
  for (size_t i = 1; i < chains.size(); ++i) EXPECT_TRUE(std::isfinite(std::stod(chains[i][3]))) << i;
  // 6 steps per epoch, a window per 4 steps: 42 / 4 = 10 windows per chain.
  const auto windows = read_csv(out / "chain_windows.csv");
  ASSERT_EQ(windows.size(), 1u + 2 * 3 * 10);
  EXPECT_EQ(windows[1][3], "4");

  // Classic R-hat is at least sqrt((N-1)/N), split R-hat sqrt((n-1)/n) with
  // n = floor(N/2) draws per half (var+ >= (N-1)/N W).
  const auto rhat = read_csv(out / "rhat.csv");
  EXPECT_EQ(rhat[0], (std::vector<std::string>{"repeat", "epoch", "draws", "rhat", "split_rhat"}));
  ASSERT_EQ(rhat.size(), 1u + 2 * (kSampleEpochs - kBurnIn - 1));
  for (size_t i = 1; i < rhat.size(); ++i) {
    const double draws = std::stod(rhat[i][2]), classic = std::stod(rhat[i][3]), split = std::stod(rhat[i][4]);
    EXPECT_EQ(std::stoi(rhat[i][1]), std::stoi(rhat[i][2]) + kBurnIn);
    ASSERT_TRUE(std::isfinite(classic)) << i;
    EXPECT_GE(classic, std::sqrt((draws - 1) / draws) - 1e-12);
    if (draws < 4) {
      EXPECT_TRUE(std::isnan(split)) << i;
    } else {
      const double half = std::floor(draws / 2);
      ASSERT_TRUE(std::isfinite(split)) << i;
      EXPECT_GE(split, std::sqrt((half - 1) / half) - 1e-12);
    }
  }

  const auto summary = nlohmann::json::parse(bnn::io::read_file(out / "summary.json"));
  EXPECT_EQ(summary["chains"], 3);
  EXPECT_DOUBLE_EQ(summary["rho"].get<double>(), 0.14142135623730950);  // sampler.rho, the paper's 50^-1/2
  ASSERT_EQ(summary["per_repeat"].size(), 2u);
  for (const auto& repeat : summary["per_repeat"]) {
    EXPECT_EQ(repeat["epochs"]["draws"], kSampleEpochs - kBurnIn);
    EXPECT_EQ(repeat["chain_mean_loss"].size(), 3u);
    EXPECT_TRUE(repeat["epochs"]["split_rhat"].is_number()) << repeat;
    EXPECT_TRUE(repeat["windows"]["rhat"].is_number()) << repeat;
  }
  EXPECT_TRUE(fs::exists(out / "member_001" / "swa_weights.npy"));
  EXPECT_TRUE(fs::exists(out / "config.yaml"));

  // Same seed, same numbers.
  const auto again = s.dir / "again";
  ASSERT_EQ(bnn_on(s, "rhat --config " + s.config.string() + " --chains 3 --repeats 2 --loss-every 4 --no-figures --out " +
                       again.string()).code, 0);
  EXPECT_EQ(bnn::io::read_file(again / "rhat.csv"), bnn::io::read_file(out / "rhat.csv"));
  EXPECT_EQ(bnn::io::read_file(again / "chains.csv"), bnn::io::read_file(out / "chains.csv"));
  EXPECT_FALSE(fs::exists(again / "figures" / "rhat_vs_epoch.png"));
  // Run again into its own folder: the same tables, and no figure left over
  // from an earlier run (summary.json says there is none).
  fs::create_directories(again / "figures");
  bnn::io::write_file_atomically(again / "figures" / "rhat_vs_epoch.png", "an earlier run's figure");
  const std::string rhat_csv = bnn::io::read_file(again / "rhat.csv");
  ASSERT_EQ(bnn_on(s, "rhat --config " + s.config.string() + " --chains 3 --repeats 2 --loss-every 4 --no-figures --out " +
                       again.string()).code, 0);
  EXPECT_EQ(bnn::io::read_file(again / "rhat.csv"), rhat_csv);
  EXPECT_FALSE(fs::exists(again / "figures" / "rhat_vs_epoch.png"));
  EXPECT_TRUE(nlohmann::json::parse(bnn::io::read_file(again / "summary.json"))["figure"].is_null());
  if (bnn::testing::has_gnuplot()) expect_figure(out / "figures" / "rhat_vs_epoch");
  if (!HasFailure()) fs::remove_all(s.dir);
  if (!bnn::testing::has_gnuplot()) GTEST_SKIP() << bnn::testing::kNoGnuplot << ": rhat_vs_epoch not checked";
}

// Note [Repeats that persist]: repeats run by separate commands, in one
// folder or gathered from two, give the tables of one command byte for byte;
// until every repeat is saved there are no tables and the exit code is 75.
TEST(RhatCommand, RepeatsRunApartGiveTheTablesOfOneCommand) {
  const Experiment s = make_experiment("repeats");
  const std::string rhat = "rhat --config " + s.config.string() + " --chains 2 --repeats 2 --loss-every 4 --no-figures";
  const auto full = s.dir / "full", part = s.dir / "part", a = s.dir / "a", b = s.dir / "b";
  ASSERT_EQ(bnn_on(s, rhat + " --out " + full.string()).code, 0);

  CommandResult r = bnn_on(s, rhat + " --only 1 --out " + part.string());
  EXPECT_EQ(r.code, 75) << r.output;
  EXPECT_NE(r.output.find("1 of 2 repeats saved in " + part.string() +
                          "; the tables are written once every repeat is: run the same command for the others "
                          "(--only 0)\n"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::exists(part / "member_001" / "chains.json"));
  EXPECT_FALSE(fs::exists(part / "member_000"));
  for (const char* table : {"chains.csv", "chain_windows.csv", "rhat.csv", "summary.json"}) {
    EXPECT_FALSE(fs::exists(part / table)) << table;
  }
  r = bnn_on(s, rhat + " --only 0 --out " + part.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("repeat 1: its chains from " + (part / "member_001" / "chains.json").string()),
            std::string::npos)
      << r.output;
  for (const char* table : {"chains.csv", "chain_windows.csv", "rhat.csv", "summary.json"}) {
    EXPECT_EQ(bnn::io::read_file(part / table), bnn::io::read_file(full / table)) << table;
  }

  // Two repeats at once, in worker threads: the same tables (on the CPU),
  // with one thread and with two, one by one and at once.
  const auto together = s.dir / "together";
  r = bnn_on(s, rhat + " --repeats-at-once 2 --out " + together.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 repeats at a time on cpu"), std::string::npos) << r.output;
  for (const char* table : {"chains.csv", "chain_windows.csv", "rhat.csv", "summary.json"}) {
    EXPECT_EQ(bnn::io::read_file(together / table), bnn::io::read_file(full / table)) << table;
  }
  const auto two_threads = s.dir / "two_threads", one_by_one = s.dir / "one_by_one";
  r = bnn::testing::run_bnn(rhat + " --threads 2 --out " + two_threads.string(), s.dir / "log_two_threads.txt");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("cpu: 2 threads, "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(": 2 repeat(s) at a time (--repeats-at-once 1 trains them one by one"), std::string::npos)
      << r.output;
  r = bnn::testing::run_bnn(rhat + " --threads 2 --repeats-at-once 1 --out " + one_by_one.string(),
                            s.dir / "log_one_by_one.txt");
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* table : {"chains.csv", "chain_windows.csv", "rhat.csv", "summary.json"}) {
    EXPECT_EQ(bnn::io::read_file(two_threads / table), bnn::io::read_file(one_by_one / table)) << table;
  }
  // A repeat that fails in a worker fails the command with its message, and saves nothing.
  const auto diverged = s.dir / "diverged";
  r = bnn_on(s, rhat + " --repeats-at-once 2 --set sampler.step_size=1e8 --set sampler.rho=.inf --set "
                       "sampler.rho_max=.inf --set sampler.friction=1 --rho 0.1 --out " + diverged.string());
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_NE(r.output.find(": non-finite loss in chain 0 sample epoch 1"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(diverged / "member_000" / "chains.json"));
  EXPECT_FALSE(fs::exists(diverged / "member_001" / "chains.json"));
  r = bnn_on(s, rhat + " --repeats-at-once 0 --out " + together.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("bnn: error: --repeats-at-once: '0' is not a whole number from 1 to 999999, or auto"),
            std::string::npos)
      << r.output;

  // Two folders (two machines), gathered into one: the last command runs no chain.
  EXPECT_EQ(bnn_on(s, rhat + " --only 0 --out " + a.string()).code, 75);
  EXPECT_EQ(bnn_on(s, rhat + " --only 1 --out " + b.string()).code, 75);
  fs::create_directories(a / "member_001");
  fs::copy_file(b / "member_001" / "chains.json", a / "member_001" / "chains.json");
  r = bnn_on(s, rhat + " --out " + a.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find(" chain 0 epoch "), std::string::npos) << r.output;
  for (const char* table : {"chains.csv", "chain_windows.csv", "rhat.csv", "summary.json"}) {
    EXPECT_EQ(bnn::io::read_file(a / table), bnn::io::read_file(full / table)) << table;
  }

  // A saved repeat that is not what this command writes is named, not used.
  auto saved = nlohmann::json::parse(bnn::io::read_file(a / "member_000" / "chains.json"));
  saved["chains"].erase(1);
  bnn::io::write_file_atomically(a / "member_000" / "chains.json", saved.dump());
  r = bnn_on(s, rhat + " --out " + a.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("bnn: error: " + (a / "member_000" / "chains.json").string() +
                          ": holds 1 chains, not --chains 2; remove it to run repeat 0 again"),
            std::string::npos)
      << r.output;
  bnn::io::write_file_atomically(a / "member_000" / "chains.json", "{\"experiment\": 7}");
  r = bnn_on(s, rhat + " --out " + a.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(": not a repeat's chains as bnn rhat writes them ("), std::string::npos) << r.output;
  // Saved repeats are results: a folder that holds some and no tables is
  // not taken by other options (as one without them is), and keeps them.
  const auto c = s.dir / "c";
  ASSERT_EQ(bnn_on(s, rhat + " --only 0 --out " + c.string()).code, 75);
  const std::string kept = bnn::io::read_file(c / "member_000" / "chains.json");
  r = bnn_on(s, "rhat --config " + s.config.string() + " --chains 3 --repeats 1 --loss-every 4 --no-figures --out " +
                    c.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("bnn: error: --out " + c.string() +
                          " holds R-hat chains of this experiment with other options (rhat.chains: 2 there, 3 now; "
                          "rhat.repeats: 2 there, 1 now); give --out a new folder to keep both (or remove its "
                          "member_NNN/chains.json and summary.json to discard its saved repeats)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(bnn::io::read_file(c / "member_000" / "chains.json"), kept);
  // Files of another experiment's folder mixed in, a chain's windows cut,
  // or another data set's steps: named, not used.
  const auto mixed = s.dir / "mixed";
  ASSERT_EQ(bnn_on(s, "rhat --config " + s.config.string() +
                          " --chains 2 --repeats 2 --loss-every 5 --no-figures --only 1 --out " + mixed.string())
                .code,
            75);
  fs::create_directories(c / "member_001");
  fs::copy_file(mixed / "member_001" / "chains.json", c / "member_001" / "chains.json");
  r = bnn_on(s, rhat + " --out " + c.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find((c / "member_001" / "chains.json").string() + ": holds the chains of experiment "),
            std::string::npos)
      << r.output;
  fs::remove(c / "member_001" / "chains.json");
  // Repeat 0's saved file, edited by `edit`: the command refuses it with `message`.
  const auto refuses_edited = [&](auto edit, const std::string& message) {
    nlohmann::json edited = nlohmann::json::parse(kept);
    edit(edited);
    bnn::io::write_file_atomically(c / "member_000" / "chains.json", edited.dump());
    const CommandResult refused = bnn_on(s, rhat + " --out " + c.string());
    EXPECT_EQ(refused.code, 2) << refused.output;
    EXPECT_NE(refused.output.find(message), std::string::npos) << refused.output;
  };
  refuses_edited([](nlohmann::json& j) { j["chains"][1]["window_loss"].erase(0); },
                 "member_000/chains.json: holds a chain of 9 windows, not the 10 of --loss-every 4; "
                 "remove it to run repeat 0 again");
  refuses_edited([](nlohmann::json& j) { j["steps_per_epoch"] = 7; },
                 "member_000/chains.json: holds chains of 7 steps an epoch, not the data's 6");
  refuses_edited([](nlohmann::json& j) { j["chains"][0]["epoch_loss"].erase(0); },
                 "member_000/chains.json: holds a chain of 6 epochs, not sampler.epochs 7; "
                 "remove it to run repeat 0 again");
  // Repeat 0's file moved into repeat 1's folder.
  bnn::io::write_file_atomically(c / "member_000" / "chains.json", kept);
  bnn::io::write_file_atomically(c / "member_001" / "chains.json", kept);
  r = bnn_on(s, rhat + " --out " + c.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("member_001/chains.json: holds repeat 0; remove it to run repeat 1 again"),
            std::string::npos)
      << r.output;

  r = bnn_on(s, rhat + " --only 2 --out " + (s.dir / "d").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("bnn: error: --only: '2' selects repeats outside 0-1 (--repeats = 2)"), std::string::npos)
      << r.output;
  r = bnn_on(s, rhat + " --only 99999999999999999999 --out " + (s.dir / "d").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("bnn: error: --only: cannot parse '99999999999999999999' (expected e.g. 3, 0-3 or 0,2,5-7)"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(s.dir / "d"));
  if (!HasFailure()) fs::remove_all(s.dir);
}

// Note [Time limit] for repeats: none starts once a whole one would not end
// in time; --throughput chooses the repeats at once as for bnn run.
TEST(RhatCommand, TimeLimitAndThroughput) {
  const Experiment s = make_experiment("time");
  const std::string rhat = "rhat --config " + s.config.string() + " --chains 2 --repeats 2 --no-figures";
  const auto table = s.dir / "members_per_device.csv";
  std::ofstream(table) << "design,members,exit,wall_s,member_epochs_per_s,peak_gpu_mib,mib_per_member\n"
                          "streams,1,0,10,100,1,1\nstreams,2,0,10,1000,1,1\n";
  CommandResult r = bnn_on(s, rhat + " --throughput " + table.string() + " --out " + (s.dir / "a").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("bnn: error: --throughput needs --time-limit: it chooses the repeats at once for the time "
                          "left"),
            std::string::npos)
      << r.output;
  r = bnn_on(s, rhat + " --time-limit 1h --repeats-at-once 2 --throughput " + table.string() + " --out " +
                    (s.dir / "a").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("bnn: error: --throughput chooses the repeats at once; drop --repeats-at-once 2"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(s.dir / "a"));

  // A repeat of 2 + 1 + 2 x 7 = 17 epochs: 0.187 s alone, 0.0374 s two at once
  // (on two threads: the CPU takes no more at once than threads).
  r = bnn::testing::run_bnn(rhat + " --time-limit 1h --throughput " + table.string() + " --out " +
                                (s.dir / "a").string() + " --threads 2",
                            s.dir / "log_throughput.txt");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("cpu: 2 repeat(s) at a time by --throughput " + table.string() +
                          ": each repeat about 0.037 s (17 epochs at 1000 member-epochs/s with 2 at once, +10%); "
                          "2 whole repeat(s) expected"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("2 repeats at a time on cpu"), std::string::npos) << r.output;

  // A limit that has passed once the data are loaded starts no repeat.
  r = bnn_on(s, rhat + " --time-limit 0.001 --out " + (s.dir / "b").string());
  EXPECT_EQ(r.code, 75) << r.output;
  EXPECT_NE(r.output.find("time limit of 0.001 s: 2 repeat(s) not started, as a whole one would not have ended in "
                          "time"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("0 of 2 repeats saved in " + (s.dir / "b").string()), std::string::npos) << r.output;
  if (!HasFailure()) fs::remove_all(s.dir);
}

// Note [Stop signals]: SIGTERM after step 3 of repeat 0's first chain (6
// batches an epoch) stops that repeat at the epoch's end, lost, as a repeat
// is kept only whole, and repeat 1 does not start: exit 75, nothing saved.
// The same command then runs both, to the tables of a command never stopped.
TEST(RhatCommand, ASignalStopsTheRepeatsAndTheSameCommandRunsThemAgain) {
  const Experiment s = make_experiment("signal");
  const std::string rhat = "rhat --config " + s.config.string() + " --chains 2 --repeats 2 --no-figures";
  const auto full = s.dir / "full", cut = s.dir / "cut";
  ASSERT_EQ(bnn_on(s, rhat + " --out " + full.string()).code, 0);
  CommandResult r = bnn::testing::run_bnn(rhat + " --threads 1 --out " + cut.string(), s.dir / "log_signal.txt",
                                          "BNN_SIGNAL_AT_SAMPLER_STEPS=3");
  EXPECT_EQ(r.code, 75) << r.output;
  EXPECT_NE(r.output.find("repeat 0: stopped by SIGTERM after chain 0 epoch 1; it starts again from its beginning"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("stopped by SIGTERM: 1 repeat(s) not started, 1 stopped part-way (a repeat is kept only "
                          "whole)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("0 of 2 repeats saved in " + cut.string()), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("member 0 chain 1"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(cut / "summary.json"));
  r = bnn_on(s, rhat + " --out " + cut.string());
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* table : {"chains.csv", "rhat.csv"}) {
    EXPECT_EQ(bnn::io::read_file(full / table), bnn::io::read_file(cut / table)) << table;
  }
  if (!HasFailure()) fs::remove_all(s.dir);
}

// Note [Member locks]: a bnn rhat whose rhat.lock was deleted and made again
// while it ran (here by a stand-in gnuplot, as it draws the figure after the
// repeats) writes no tables; the repeats it saved stay for the next command.
TEST(RhatCommand, ARhatWhoseLockFileIsReplacedWritesNoTables) {
  const Experiment s = make_experiment("lock");
  const auto out = s.dir / "out";
  const auto lock = out / "rhat.lock";
  const auto fake = s.dir / "lock_replacing_gnuplot.sh";
  bnn::io::write_file_atomically(fake, "#!/bin/sh\nrm -f '" + lock.string() + "'\n: > '" + lock.string() +
                                           "'\nexit 1\n");
  fs::permissions(fake, fs::perms::owner_all);
  ::setenv("BNN_GNUPLOT", fake.c_str(), 1);
  const CommandResult r =
      bnn_on(s, "rhat --config " + s.config.string() + " --chains 2 --repeats 1 --out " + out.string());
  ::unsetenv("BNN_GNUPLOT");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("rhat.lock was replaced by another file while this process held it; another bnn rhat may be "
                          "writing into " +
                          out.string()),
            std::string::npos)
      << r.output;
  for (const char* name : {"summary.json", "chains.csv", "rhat.csv"}) EXPECT_FALSE(fs::exists(out / name)) << name;
  EXPECT_TRUE(fs::exists(out / "member_000" / "chains.json")) << r.output;
  if (!HasFailure()) fs::remove_all(s.dir);
}

// A failed bnn rhat leaves the last complete output as it was, its figure
// too: the figure is renamed with the tables. Here a stand-in gnuplot draws a
// figure ("A", then "B": PNG and SVG ends that pass the completeness check)
// and, the second time, replaces rhat.lock, so the tables are not written.
TEST(RhatCommand, ARhatThatWritesNoTablesKeepsTheEarlierFigure) {
  const Experiment s = make_experiment("staged_figure");
  const auto out = s.dir / "out";
  const auto fake = s.dir / "drawing_gnuplot.sh";
  const auto draw = [&](const std::string& mark, const std::string& then) {
    bnn::io::write_file_atomically(fake, "#!/bin/sh\nprintf '" + mark +
                                             "_stand_in_png_IEND1234' > rhat_vs_epoch.png.tmp\nprintf '" + mark +
                                             "</svg>\\n' > rhat_vs_epoch.svg.tmp\n" + then);
    fs::permissions(fake, fs::perms::owner_all);
    ::setenv("BNN_GNUPLOT", fake.c_str(), 1);
    const CommandResult r =
        bnn_on(s, "rhat --config " + s.config.string() + " --chains 2 --repeats 1 --out " + out.string());
    ::unsetenv("BNN_GNUPLOT");
    return r;
  };
  CommandResult r = draw("A", "");
  ASSERT_EQ(r.code, 0) << r.output;
  ASSERT_EQ(bnn::io::read_file(out / "figures" / "rhat_vs_epoch.png"), "A_stand_in_png_IEND1234");
  std::map<std::string, std::string> before;
  for (const char* name : {"summary.json", "chains.csv", "rhat.csv", "config.yaml", "figures/rhat_vs_epoch.png",
                           "figures/rhat_vs_epoch.svg"}) {
    before[name] = bnn::io::read_file(out / name);
  }
  const auto lock = out / "rhat.lock";
  r = draw("B", "rm -f '" + lock.string() + "'\n: > '" + lock.string() + "'\n");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("rhat.lock was replaced by another file"), std::string::npos) << r.output;
  for (const auto& [name, bytes] : before) EXPECT_EQ(bnn::io::read_file(out / name), bytes) << name << " changed";
  for (const auto& entry : fs::directory_iterator(out / "figures")) {
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path() << " left behind";
  }
  if (!HasFailure()) fs::remove_all(s.dir);
}

// Starts far from x* (rho = 1 against weights of order 0.1, beyond the
// bounce box of 6 x 0.14): every chain's loss starts an order of magnitude
// above x*'s and is still falling after a few dozen steps, so the chains have
// not reached their stationary distribution, and split R-hat, which compares
// the first and second halves of each chain, is far above the 1.1 alarm level.
TEST(RhatCommand, StartsFarFromXStarAreDetected) {
  const Experiment s = make_experiment("far");
  const auto out = s.dir / "out";
  const CommandResult r = bnn_on(s, "rhat --config " + s.config.string() +
                                     " --set sampler.burn_in=0 --chains 3 --repeats 2 --rho 1 --no-figures --out " +
                                     out.string());
  ASSERT_EQ(r.code, 0) << r.output;
  const auto summary = nlohmann::json::parse(bnn::io::read_file(out / "summary.json"));
  for (const auto& repeat : summary["per_repeat"]) {
    EXPECT_GT(repeat["epochs"]["split_rhat"].get<double>(), 1.1) << repeat;
  }
  EXPECT_NE(r.output.find("R-hat above 1.1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--rho 1 is beyond sampler.rho_max 0.848528: a chain's start lies outside the bounce "
                          "box wherever |z| > 0.849"),
            std::string::npos)
      << r.output;
  if (!HasFailure()) fs::remove_all(s.dir);
}

// The table's warning names the statistic past 1.1, and a whole-chain R-hat
// below 1 beside a high split R-hat is said to be a shared trend.
TEST(RhatTable, WarningNamesTheStatisticPastTheBound) {
  const auto table = [](double rhat, double split) {
    bnn::pipeline::RhatResult result;
    result.repeats.emplace_back();
    result.repeats.back().epochs = {10, rhat, split, 5.0};
    return bnn::pipeline::rhat_table(result);
  };
  EXPECT_EQ(table(1.01, 1.05).find("above 1.1"), std::string::npos);
  const std::string trend = table(0.94, 1.74);
  EXPECT_NE(trend.find("\nsplit R-hat above 1.1:"), std::string::npos) << trend;
  EXPECT_NE(trend.find("R-hat below 1 with split R-hat above 1.1: the chains still drift together"),
            std::string::npos)
      << trend;
  const std::string both = table(1.3, 1.5);
  EXPECT_NE(both.find("\nR-hat and split R-hat above 1.1:"), std::string::npos) << both;
  EXPECT_EQ(both.find("drift together"), std::string::npos) << both;
  EXPECT_NE(table(1.2, 1.05).find("\nR-hat above 1.1:"), std::string::npos);
  EXPECT_EQ(table(1.05, 1.2).find("drift together"), std::string::npos);
}

// samplers/obabo.h: with Metropolis-Hastings each step's loss is the chain's
// state's (the last block end's full-data loss), so bnn rhat follows obabo's
// chains by states they held; it used to refuse, as the losses were the
// proposals'. Chains that reject every block (h = 0.5) stay at their starts:
// each chain's epoch losses are one number, repeated, and with no variance
// within a chain there is no split R-hat to draw (the figure is left out, with
// a warning; it failed the command).
TEST(RhatCommand, ObaboWithMetropolisHastingsFollowsTheChainsStates) {
  const Experiment s = make_experiment("obabo_mh");
  const auto out = s.dir / "out";
  const CommandResult r = bnn_on(s, "rhat --config " + s.config.string() + " --out " + out.string() +
                                        " --chains 2 --repeats 1 --set sampler.name=obabo --set sampler.mh_block=6 "
                                        "--set sampler.step_size=0.5");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto chains = nlohmann::json::parse(bnn::io::read_file(out / "member_000" / "chains.json"));
  ASSERT_EQ(chains.at("chains").size(), 2U) << chains;
  for (const auto& chain : chains.at("chains")) {
    const auto losses = chain.at("epoch_loss").get<std::vector<double>>();
    ASSERT_EQ(losses.size(), static_cast<size_t>(kSampleEpochs));
    for (const double loss : losses) EXPECT_EQ(loss, losses.front()) << chain;
  }
  EXPECT_NE(r.output.find("figure not drawn: no split R-hat could be computed at any epoch"), std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::exists(out / "summary.json"));
  if (!HasFailure()) fs::remove_all(s.dir);
}

TEST(RhatCommand, RefusesBadOptions) {
  const Experiment s = make_experiment("errors");
  const std::string config = " --config " + s.config.string() + " --out " + (s.dir / "out").string();
  // Each refused with exit 2, before any folder is made.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"rhat" + config + " --chains 1", "R-hat needs at least 2 chains"},
      {"rhat" + config + " --set sampler.burn_in=4", "at least 4 sampling epochs after burn-in"},
      {"rhat" + config + " --rho=-1", "--rho must be finite and >= 0"},
      // 6 steps an epoch, 7 epochs, 2 of burn-in: windows of 9 steps keep 2 (steps 19-27 and 28-36).
      {"rhat" + config + " --loss-every 9",
       "--loss-every 9 leaves 2 window(s) after burn-in (30 sampling steps of 6 per epoch); R-hat needs at least 4: "
       "use --loss-every 7 or less"},
      {"rhat --chains 3", "bnn rhat needs --config"},
  };
  for (const auto& [args, message] : cases) {
    const CommandResult r = bnn_on(s, args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(s.dir / "out"));
  if (!HasFailure()) fs::remove_all(s.dir);
}

// Repeat r of `bnn rhat` trains member r's x* of `bnn run`; `bnn evaluate` of
// that run draws R-hat across members against epoch.
TEST(RhatEndToEnd, SharesXStarWithRunAndEvaluateDrawsRhatAgainstEpoch) {
  const Experiment s = make_experiment("run");
  const auto run = s.dir / "run", rhat = s.dir / "rhat";
  ASSERT_EQ(bnn_on(s, "run --config " + s.config.string() + " --out " + run.string()).code, 0);
  ASSERT_EQ(bnn_on(s, "rhat --config " + s.config.string() + " --chains 2 --repeats 2 --no-figures --out " +
                       rhat.string()).code, 0);
  for (const char* member : {"member_000", "member_001"}) {
    EXPECT_TRUE(bnn::data_loaders::read_npy(rhat / member / "swa_weights.npy")
                    .equal(bnn::data_loaders::read_npy(run / member / "swa_weights.npy")))
        << member;
  }
  // Neither folder is the other's to overwrite (Note [Run ownership]).
  const std::string run_config = bnn::io::read_file(run / "config.yaml");
  const std::string run_trace = bnn::io::read_file(run / "member_000" / "trace.csv");
  const std::string summary = bnn::io::read_file(rhat / "summary.json");
  CommandResult refused = bnn_on(s, "rhat --config " + s.config.string() + " --chains 2 --repeats 2 --no-figures "
                                  "--set sampler.step_size=2e-3 --out " + run.string());
  EXPECT_EQ(refused.code, 2) << refused.output;
  EXPECT_NE(refused.output.find("holds the members of a bnn run; bnn rhat would write its own config.yaml"),
            std::string::npos)
      << refused.output;
  refused = bnn_on(s, "rhat --config " + s.config.string() + " --chains 3 --repeats 2 --no-figures --out " +
                       rhat.string());
  EXPECT_EQ(refused.code, 2) << refused.output;
  EXPECT_NE(refused.output.find("(rhat.chains: 2 there, 3 now)"), std::string::npos) << refused.output;
  EXPECT_EQ(bnn::io::read_file(run / "config.yaml"), run_config);
  EXPECT_EQ(bnn::io::read_file(run / "member_000" / "trace.csv"), run_trace);
  EXPECT_EQ(bnn::io::read_file(rhat / "summary.json"), summary);
  // Without its summary and saved repeats (as after a bnn rhat that failed in its first repeat) the folder
  // holds no result, and other options may take it.
  fs::remove(rhat / "summary.json");
  for (const char* member : {"member_000", "member_001"}) fs::remove(rhat / member / "chains.json");
  refused = bnn_on(s, "rhat --config " + s.config.string() + " --chains 3 --repeats 1 --no-figures --out " +
                       rhat.string());
  EXPECT_EQ(refused.code, 0) << refused.output;
  EXPECT_EQ(nlohmann::json::parse(bnn::io::read_file(rhat / "bnn.json"))["settings"]["rhat.chains"], "3");
  EXPECT_EQ(nlohmann::json::parse(bnn::io::read_file(rhat / "summary.json"))["chains"], 3);
  const std::string report = bnn::io::read_file(run / "report.md");
  EXPECT_NE(report.find("## R-hat against epoch"), std::string::npos) << report;
  EXPECT_NE(report.find("between-mode mixing"), std::string::npos) << report;
  EXPECT_NE(report.find(fmt::format("| {} | {} |", kSampleEpochs, kSampleEpochs - kBurnIn)), std::string::npos)
      << report;

  // One member: a visible note instead of the table.
  const auto one = s.dir / "one";
  ASSERT_EQ(bnn_on(s, "evaluate " + run.string() + " --members 0 --no-figures --out " + one.string()).code, 0);
  EXPECT_NE(bnn::io::read_file(one / "report.md").find("Not computed: R-hat across members needs at least 2 members"),
            std::string::npos);
  const bool figures = bnn::testing::has_gnuplot();
  if (figures) {
    EXPECT_NE(report.find("figures/rhat_vs_epoch.png"), std::string::npos) << report;
    expect_figure(run / "figures" / "rhat_vs_epoch");
  }
  if (!HasFailure()) fs::remove_all(s.dir);
  if (!figures) GTEST_SKIP() << bnn::testing::kNoGnuplot << ": rhat_vs_epoch not checked";
}

}  // namespace
