// bnn as a hostile or careless user runs it: every case asserts the exit
// code, the one-line message, and that every file written before is byte for
// byte what it was (Note [Run ownership], Note [Divergence check], Note
// [Member locks]). Two finished runs of configs/tiny.yaml on a slice of the
// real Fashion-MNIST, A and B (another seed), are made once per checkout and
// shared by the test processes; each case works on copies where it damages
// something.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data_loaders/npy.h"
#include "src/io/atomic_file.h"
#include "src/io/file_lock.h"
#include "src/io/npy.h"
#include "tests/support/data_paths.h"
#include "tests/support/figure_files.h"
#include "tests/support/run_bnn.h"

namespace {
using bnn::testing::kTinyConfig;

namespace fs = std::filesystem;
using bnn::testing::CommandResult;

// One work folder per build of bnn (two build trees of a checkout must not share one).
const fs::path kHostileWork = fs::temp_directory_path() /
                       ("bnn_hostile_test_" + std::to_string(std::hash<std::string>{}(BNN_BINARY) % 1000000007));

CommandResult bnn_as_user(const std::string& args) {
  static int calls = 0;
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  return bnn::testing::run_bnn(args, kHostileWork / "logs" / (test + "_" + std::to_string(++calls) + ".txt"));
}

// Runs A and B, once for all test processes (under a lock; a marker says done).
void make_fixture() {
  fs::create_directories(kHostileWork / "logs");
  std::optional<bnn::io::FileLock> lock;
  while (!(lock = bnn::io::FileLock::try_acquire(kHostileWork / "fixture.lock"))) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // Made again whenever bnn was rebuilt.
  const std::string stamp = std::to_string(fs::last_write_time(BNN_BINARY).time_since_epoch().count());
  if (fs::exists(kHostileWork / "fixture.done") && bnn::io::read_file(kHostileWork / "fixture.done") == stamp) return;
  for (const auto& [name, extra] : {std::pair{"A", ""}, std::pair{"B", " --seed 8"}}) {
    fs::remove_all(kHostileWork / name);
    const CommandResult r =
        bnn_as_user("run --config " + kTinyConfig + " --out " + (kHostileWork / name).string() + " --threads 1" + extra);
    ASSERT_EQ(r.code, 0) << r.output;
  }
  bnn::io::write_file_atomically(kHostileWork / "fixture.done", stamp);
}

// Every file under `root` (recursively) and its bytes.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> files;
  if (!fs::exists(root)) return files;
  if (fs::is_regular_file(root)) return {{root.filename().string(), bnn::io::read_file(root)}};
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) files[fs::relative(e.path(), root).string()] = bnn::io::read_file(e.path());
  }
  return files;
}

// Whether `path` exists within two minutes (a running bnn's first checkpoint, say).
bool appears(const fs::path& path) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(path) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return fs::exists(path);
}

// A fresh copy of run `name` for a case to damage.
fs::path copy_of(const std::string& name, const std::string& as) {
  const fs::path to = kHostileWork / "cases" / as;
  fs::remove_all(to);
  fs::create_directories(to.parent_path());
  fs::copy(kHostileWork / name, to, fs::copy_options::recursive);
  return to;
}

fs::path fresh(const std::string& as) {
  const fs::path p = kHostileWork / "cases" / as;
  fs::remove_all(p);
  fs::create_directories(p.parent_path());
  return p;
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

struct Case {
  Case(std::string name, std::function<std::string()> setup, int code, std::string message,
       std::vector<fs::path> kept = {}, std::function<void(const CommandResult&)> check = nullptr)
      : name(std::move(name)), setup(std::move(setup)), code(code), message(std::move(message)),
        kept(std::move(kept)), check(std::move(check)) {}
  std::string name;
  std::function<std::string()> setup;  // makes what the case needs; returns the arguments
  int code;
  std::string message;
  std::vector<fs::path> kept;  // trees whose files must be unchanged (A and B always)
  std::function<void(const CommandResult&)> check;
};

void run_cases(const std::vector<Case>& cases) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  make_fixture();
  if (::testing::Test::HasFatalFailure()) return;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string args = c.setup();
    std::vector<fs::path> kept = c.kept;
    kept.push_back(kHostileWork / "A");
    kept.push_back(kHostileWork / "B");
    std::vector<std::map<std::string, std::string>> before;
    for (const auto& k : kept) before.push_back(snapshot(k));
    const CommandResult r = bnn_as_user(args);
    EXPECT_EQ(r.code, c.code) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << args << "\n" << r.output;
    if (c.code == 2) {
      // One line: "bnn: error: ..." naming what is wrong, no library text.
      EXPECT_NE(r.output.find("bnn: error: "), std::string::npos) << r.output;
      EXPECT_EQ(r.output.find("enforce fail"), std::string::npos) << r.output;
      EXPECT_EQ(r.output.find("basic_filebuf"), std::string::npos) << r.output;
      EXPECT_EQ(r.output.find("[json.exception"), std::string::npos) << r.output;
    }
    for (size_t i = 0; i < kept.size(); ++i) {
      EXPECT_TRUE(snapshot(kept[i]) == before[i]) << kept[i] << " changed under: " << args;
    }
    if (c.check) c.check(r);
  }
}

std::string tiny_run_args(const std::string& out, const std::string& extra) {
  return "run --config " + kTinyConfig + " --out " + out + " --threads 1" + extra;
}

std::string a() { return (kHostileWork / "A").string(); }
std::string b() { return (kHostileWork / "B").string(); }

// Findings 1-4 and the rest of ownership: no folder is written over.
TEST(HostileInput, RunDirectoriesAreNeverWrittenOver) {
  run_cases({
      {"1: evaluate A --out B, another finished run",
       [] { return "evaluate " + a() + " --out " + b() + " --no-figures"; }, 2,
       "is another bnn run directory: its metrics.json, report.md, ... describe its own members"},
      {"2: a run whose config.yaml was deleted, with another config",
       [] {
         const auto c = copy_of("A", "no_config");
         fs::remove(c / "config.yaml");
         return tiny_run_args(c.string(), " --set sampler.step_size=0.002");
       },
       2, "holds members of another experiment (sampler.step_size: 0.001 there, 0.002 now)",
       {kHostileWork / "cases" / "no_config"}},
      {"3: run --out a folder of the user's own",
       [] {
         const auto u = fresh("user_folder");
         write_text(u / "metrics.json", "{\"mine\": 1}\n");
         write_text(u / "report.md", "# my notes\n");
         return tiny_run_args(u.string(), "");
       },
       2, "is not empty and is not a bnn run directory (no bnn.json)", {kHostileWork / "cases" / "user_folder"}},
      {"3b: evaluate --out a folder of the user's own",
       [] {
         const auto u = fresh("user_folder2");
         write_text(u / "report.md", "# my notes\n");
         return "evaluate " + a() + " --out " + u.string() + " --no-figures";
       },
       2, "is not empty and is not a bnn evaluation folder", {kHostileWork / "cases" / "user_folder2"}},
      {"another run's config into A",
       [] { return tiny_run_args(a(), " --set sampler.step_size=0.002"); }, 2,
       "holds members of another experiment (sampler.step_size: 0.001 there, 0.002 now); give --out a new folder"},
      {"evaluate A and B merged into B",
       [] { return "evaluate " + a() + " " + b() + " --out " + b() + " --no-figures"; }, 2,
       "hold different configurations"},
      {"evaluate B into an evaluation folder of A",
       [] {
         const auto e = fresh("eval_of_a");
         const auto made = bnn_as_user("evaluate " + a() + " --out " + e.string() + " --no-figures");
         EXPECT_EQ(made.code, 0) << made.output;
         return "evaluate " + b() + " --out " + e.string() + " --no-figures";
       },
       2, "holds the evaluation of another experiment", {kHostileWork / "cases" / "eval_of_a"}},
      {"evaluate into a member folder of a run that is not there yet",
       [] { return "evaluate " + a() + " --out " + (kHostileWork / "A" / "member_005").string() + " --no-figures"; },
       2, "/A/member_005 is a member folder of the bnn run "},
      {"a whole run into a member folder of another run",
       [] { return tiny_run_args((kHostileWork / "A" / "member_007").string(), ""); }, 2,
       "/A/member_007 is a member folder of the bnn run "},
      {"a run whose member folder holds an evaluation",
       [] {
         const auto c = copy_of("A", "member_is_evaluation");
         fs::remove_all(c / "member_001");
         write_text(c / "member_001" / "bnn.json",
                    R"({"bnn": "evaluation", "format": 1, "experiment": "0", "settings": {}})" "\n");
         return "run --resume " + c.string() + " --threads 1";
       },
       2, "/member_is_evaluation/member_001 holds the tables of `bnn evaluate` (its bnn.json), not member 1 of this "
          "run: bnn would mix the member's files with them; move that folder out of the run",
       {kHostileWork / "cases" / "member_is_evaluation"}},
      {"run into an evaluation folder",
       [] {
         const auto e = fresh("eval_of_a2");
         const auto made = bnn_as_user("evaluate " + a() + " --out " + e.string() + " --no-figures");
         EXPECT_EQ(made.code, 0) << made.output;
         return tiny_run_args(e.string(), "");
       },
       2, "holds the tables of `bnn evaluate`, not a run", {kHostileWork / "cases" / "eval_of_a2"}},
      {"a run directory with a damaged manifest",
       [] {
         const auto c = copy_of("A", "bad_manifest");
         write_text(c / "bnn.json", "{not json");
         return tiny_run_args(c.string(), "");
       },
       2, "bnn.json is not a bnn manifest", {kHostileWork / "cases" / "bad_manifest"}},
      {"... and bnn evaluate of it in place",
       [] {
         const auto c = copy_of("A", "bad_manifest_evaluate");
         write_text(c / "bnn.json", "{not json");
         return "evaluate " + c.string() + " --no-figures";
       },
       2, "bnn.json is not a bnn manifest", {kHostileWork / "cases" / "bad_manifest_evaluate"}},
      {"--out names a file",
       [] {
         const auto f = fresh("a_file");
         write_text(f, "data\n");
         return tiny_run_args(f.string(), "");
       },
       2, "is a file; give --out a folder", {kHostileWork / "cases" / "a_file"}},
      {"evaluate a run whose config.yaml was edited",
       [] {
         const auto c = copy_of("A", "edited_config");
         std::string yaml = bnn::io::read_file(c / "config.yaml");
         const size_t at = yaml.find("step_size: 0.001\n");
         EXPECT_NE(at, std::string::npos) << yaml;
         if (at != std::string::npos) yaml.replace(at, 16, "step_size: 0.002");
         write_text(c / "config.yaml", yaml);
         return "evaluate " + c.string() + " --no-figures";
       },
       2,
       "config.yaml no longer says the experiment this run's members were trained with, which " +
           (kHostileWork / "cases" / "edited_config" / "bnn.json").string() +
           " records (sampler.step_size: 0.001 in bnn.json, 0.002 in config.yaml): was it edited?",
       {kHostileWork / "cases" / "edited_config"}},
      {"... and bnn run --resume of it",
       [] { return "run --resume " + (kHostileWork / "cases" / "edited_config").string() + " --threads 1"; }, 2,
       "(sampler.step_size: 0.001 in bnn.json, 0.002 in config.yaml): was it edited? Restore those keys",
       {kHostileWork / "cases" / "edited_config"}},
      {"9: --resume with a --set that changes the experiment",
       [] { return "run --resume " + a() + " --set sampler.step_size=0.002"; }, 2,
       "bnn run --resume " + a() + ": the options given change the experiment (sampler.step_size: 0.001 there, "
       "0.002 now)"},
  });
}

// A member folder copied into a run from elsewhere is not scored as one of
// its members, and an evaluation of fewer members than the run trains says
// which are left out.
TEST(HostileInput, MemberFoldersFromElsewhereAreNotScored) {
  const auto evaluate = [](const fs::path& run) {
    return "evaluate " + run.string() + " --out " + fresh(run.filename().string() + "_eval").string() +
           " --no-figures";
  };
  run_cases({
      {"a member beyond run.members",
       [&] {
         const auto c = copy_of("A", "extra_member");
         fs::copy(c / "member_001", c / "member_005", fs::copy_options::recursive);
         return evaluate(c);
       },
       2, "member_005: the run trains members 0-1 (run.members = 2), so this folder is none of them; move it out "
          "of the run directory"},
      {"a member folder under another member's name",
       [&] {
         const auto c = copy_of("A", "renamed_member");
         fs::remove_all(c / "member_001");
         fs::copy(c / "member_000", c / "member_001", fs::copy_options::recursive);
         return evaluate(c);
       },
       2, "member_001: status.json is member 0's, not member 1's (a copy of another member's folder?)"},
      {"a member of a run with another seed",
       [&] {
         const auto c = copy_of("A", "foreign_member");
         fs::remove_all(c / "member_001");
         fs::copy(kHostileWork / "B" / "member_001", c / "member_001", fs::copy_options::recursive);
         return evaluate(c);
       },
       2, "is not the seed of member 1 in this run"},
      {"a member folder named otherwise",
       [&] {
         const auto c = copy_of("A", "odd_name");
         fs::copy(c / "member_001", c / "member_1", fs::copy_options::recursive);
         return evaluate(c);
       },
       2, "member_1: not a member folder name of bnn (member_000, member_001, ...)"},
      {"an unfinished member is named",
       [&] {
         const auto c = copy_of("A", "one_unfinished");
         fs::remove(c / "member_001" / "status.json");
         return evaluate(c);
       },
       0, "evaluating 1 of the run's 2 members (run.members): member_001 is not finished"},
      {"a folder that does not exist", [] { return std::string("evaluate /no/such/run --no-figures"); }, 2,
       "/no/such/run does not exist"},
      {"an evaluation folder as a run",
       [] {
         const auto e = fresh("eval_as_run");
         const auto made = bnn_as_user("evaluate " + a() + " --out " + e.string() + " --no-figures");
         EXPECT_EQ(made.code, 0) << made.output;
         return "evaluate " + e.string() + " --no-figures";
       },
       2, "holds the tables of `bnn evaluate`, not a run; bnn evaluate scores run directories",
       {kHostileWork / "cases" / "eval_as_run"}},
      {"--reference-probs names a folder",
       [&] { return evaluate(copy_of("A", "ref_folder")) + " --reference-probs " + a(); }, 2,
       "--reference-probs " + a() + " is a folder; give an .npy file"},
  });
}

// A file-size limit (ulimit -f) is a failed write naming the file, not a
// silent death by SIGXFSZ, and exits 74, the storage's failure (as a full disk
// would), not 2, bad input.
TEST(HostileInput, AFileSizeLimitNamesTheFile) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto out = fresh("size_limit");
  const CommandResult r = bnn::testing::run_logged(
      "bash -c 'ulimit -f 40 && exec " + std::string(BNN_BINARY) + " " +
          tiny_run_args(out.string(), " --set run.members=1") + " --device cpu'",
      kHostileWork / "size_limit.txt");
  EXPECT_EQ(r.code, bnn::io::kExitStorage) << r.output;
  EXPECT_NE(r.output.find("bnn: error: cannot write " + (out / "member_000").string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(": File too large"), std::string::npos) << r.output;
}

// Note [Sample storage]: bnn run says, before training, how many sample files
// a member stores and how large they are; here every step's probabilities and
// every other step's weights (20 retained steps, 10 weights files, and their
// BatchNorm statistics where the model has some), against what the member
// then wrote.
TEST(HostileInput, TheStoredSamplesAreSaidBeforeTraining) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto out = fresh("storage_said");
  const CommandResult r = bnn_as_user(tiny_run_args(
      out.string(), " --set run.members=1 --set sampler.thin=1 --set evaluation.save_sample_weights=true "
                    "--set evaluation.sample_weights_every=2"));
  ASSERT_EQ(r.code, 0) << r.output;
  int64_t files = 0;
  double bytes = 0;
  for (const auto& e : fs::directory_iterator(out / "member_000" / "samples")) {
    ++files;
    bytes += static_cast<double>(fs::file_size(e.path()));
  }
  const std::string said = fmt::format("stored samples: {} file(s), {:.1f} MiB, per member; {:.1f} MiB for the 1 "
                                       "member(s) to train into {}",
                                       files, bytes / 1048576.0, bytes / 1048576.0, out.string());
  EXPECT_NE(r.output.find(said), std::string::npos) << said << "\n" << r.output;
  EXPECT_LT(r.output.find(said), r.output.find("adam epoch   1/")) << r.output;
}

// Note [Staged writes]: an evaluation whose largest file (report.html, 16 KB
// here) cannot be written (a 10 KiB file size limit, as a full disk) replaces
// none of the earlier evaluation's tables and reports, and leaves no
// temporary file; it used to leave report.md new and report.html old.
TEST(HostileInput, AnEvaluationThatCannotWriteEverythingReplacesNothing) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  make_fixture();
  const auto out = fresh("staged_evaluation");
  const CommandResult first = bnn_as_user("evaluate " + a() + " --out " + out.string() + " --no-figures");
  ASSERT_EQ(first.code, 0) << first.output;
  ASSERT_GT(fs::file_size(out / "report.html"), 10240U);
  ASSERT_LT(fs::file_size(out / "metrics.json"), 10240U);
  const auto before = snapshot(out);
  const std::string other = "evaluate " + a() + " --members 0 --out " + out.string() + " --no-figures";
  const CommandResult cut = bnn::testing::run_logged(
      "bash -c 'ulimit -f 10 && exec " + std::string(BNN_BINARY) + " " + other + "'",
      kHostileWork / "staged_evaluation.txt");
  EXPECT_EQ(cut.code, bnn::io::kExitStorage) << cut.output;
  EXPECT_NE(cut.output.find("cannot write " + (out / "report.html").string()), std::string::npos) << cut.output;
  EXPECT_TRUE(snapshot(out) == before) << "a file of the earlier evaluation changed";
  const CommandResult again = bnn_as_user(other);
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_NE(bnn::io::read_file(out / "metrics.json"), before.at("metrics.json"));
}

// Note [Staged writes] with figures: the figures of an evaluation join its
// tables and reports, so one that draws them all but cannot write its report
// (report.html, which embeds them, is the only file over a size limit
// between it and the largest other file) leaves every earlier figure, table and report as it was; they used
// to be the new figures beside the old tables. Only the figures' data and
// script, inputs to rerun gnuplot by hand, are the new ones.
TEST(HostileInput, AnEvaluationThatCannotWriteItsReportKeepsTheEarlierFigures) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  if (!bnn::testing::has_gnuplot()) GTEST_SKIP() << bnn::testing::kNoGnuplot;
  make_fixture();
  const auto out = fresh("staged_figures");
  const CommandResult first = bnn_as_user("evaluate " + a() + " --out " + out.string());
  ASSERT_EQ(first.code, 0) << first.output;
  const auto shown = [](std::map<std::string, std::string> files) {  // less the figures' inputs
    for (auto it = files.begin(); it != files.end();) {
      const std::string& name = it->first;
      const bool input = name.rfind("figures/data/", 0) == 0 || name == "figures/figures.gp" ||
                         name == "figures/gnuplot.log";
      it = input ? files.erase(it) : std::next(it);
    }
    return files;
  };
  const auto before = shown(snapshot(out));
  ASSERT_TRUE(before.count("figures/metrics_vs_size.png")) << first.output;
  // The limit: halfway between the largest other file and report.html, in KiB.
  size_t largest = 0;
  for (const auto& [name, bytes] : snapshot(out)) {
    if (name != "report.html") largest = std::max(largest, bytes.size());
  }
  const size_t report = before.at("report.html").size();
  if (2 * largest > report) {
    GTEST_SKIP() << "this gnuplot's figures (" << largest << " bytes) are too large beside report.html (" << report
                 << " bytes) for a file-size limit between them";
  }
  const size_t limit_kib = (largest + report) / 2 / 1024;
  const std::string other = "evaluate " + a() + " --members 0 --out " + out.string();
  const CommandResult cut = bnn::testing::run_logged(
      "bash -c 'ulimit -f " + std::to_string(limit_kib) + " && exec " + std::string(BNN_BINARY) + " " + other + "'",
      kHostileWork / "staged_figures.txt");
  EXPECT_EQ(cut.code, bnn::io::kExitStorage) << cut.output;
  EXPECT_NE(cut.output.find("cannot write " + (out / "report.html").string()), std::string::npos) << cut.output;
  EXPECT_EQ(cut.output.find("figures not drawn"), std::string::npos) << cut.output;
  const auto after = shown(snapshot(out));
  EXPECT_EQ(after.size(), before.size());
  for (const auto& [name, bytes] : before) {
    EXPECT_TRUE(after.count(name) && after.at(name) == bytes) << name << " changed";
  }
  const CommandResult again = bnn_as_user(other);
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_NE(bnn::io::read_file(out / "figures" / "metrics_vs_size.png"), before.at("figures/metrics_vs_size.png"));
}

// Note [Stop signals]: a bnn run whose members are all finished waits for
// another process's evaluation lock; SIGTERM ends the wait (exit 75, nothing
// written) where it used to be ignored until the lock came free.
TEST(HostileInput, ASignalEndsTheWaitForAnotherEvaluation) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  make_fixture();
  const auto c = copy_of("A", "evaluation_wait");
  const auto before = snapshot(c);
  auto lock = bnn::io::FileLock::try_acquire(c / "evaluate.lock");
  ASSERT_TRUE(lock.has_value());
  const auto log = kHostileWork / "logs" / "evaluation_wait.txt";
  const auto pid_file = kHostileWork / "evaluation_wait.pid";
  fs::remove(pid_file);
  fs::remove(log);  // an earlier test process's
  auto running = std::async(std::launch::async, [&] {
    return bnn::testing::run_logged("bash -c '" + std::string(BNN_BINARY) + " run --resume " + c.string() +
                                        " --threads 1 --device cpu & echo $! > " + pid_file.string() +
                                        "; wait $!'",
                                    log);
  });
  const auto waiting = [&] {
    return fs::exists(log) && bnn::io::read_file(log).find("waiting for another bnn") != std::string::npos;
  };
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!waiting() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const bool started = waiting() && appears(pid_file);
  if (started) {
    ::kill(static_cast<pid_t>(std::stol(bnn::io::read_file(pid_file))), SIGTERM);
  } else {
    lock.reset();  // so that bnn ends and the test reports instead of waiting forever
  }
  const CommandResult r = running.get();
  ASSERT_TRUE(started) << "bnn never waited for the lock\n" << r.output;
  EXPECT_EQ(r.code, 75) << r.output;
  EXPECT_NE(r.output.find("stopped by SIGTERM while waiting for another bnn's evaluation of " + c.string() +
                          ": that one writes the metrics, or bnn run --resume " + c.string()),
            std::string::npos)
      << r.output;
  auto after = snapshot(c);
  after.erase("evaluate.lock");
  auto expected = before;
  expected.erase("evaluate.lock");
  EXPECT_TRUE(after == expected) << "a file of the run changed";
}

// A process that joins a run with its own operational keys leaves the run's
// config.yaml as its first command wrote it: the next bnn run --resume takes
// the run's settings, not the last joiner's (here run.checkpoint false).
TEST(HostileInput, AJoiningProcessLeavesTheRunsConfig) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  make_fixture();
  const auto c = copy_of("A", "joined");
  fs::remove(c / "member_001" / "status.json");
  const std::string config = bnn::io::read_file(c / "config.yaml");
  const CommandResult r = bnn_as_user(tiny_run_args(c.string(), " --members 1 --set run.checkpoint=false"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(bnn::io::read_file(c / "config.yaml"), config);
  EXPECT_NE(bnn::io::read_file(c / "member_001" / "status.json").find("\"done\""), std::string::npos);
}

// Finding 4: bnn starts while this process holds member_000's lock.
TEST(HostileInput, AHeldMemberIsLeftAlone) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  make_fixture();
  const auto c = copy_of("A", "held");
  fs::remove(c / "member_000" / "status.json");
  const auto before = snapshot(c / "member_000");
  auto lock = bnn::io::FileLock::try_acquire(c / "member_000" / "lock");
  ASSERT_TRUE(lock.has_value());
  const CommandResult r = bnn_as_user("run --resume " + c.string() + " --members 0 --threads 1");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("member 0: another process is training it"), std::string::npos) << r.output;
  EXPECT_TRUE(snapshot(c / "member_000") == before);
  lock.reset();
  // Released (as by a process that died): the member is trained again.
  const CommandResult again = bnn_as_user("run --resume " + c.string() + " --members 0 --threads 1");
  EXPECT_EQ(again.code, 0) << again.output;
  EXPECT_EQ(bnn::io::read_file(c / "member_000" / "bayes_probs.npy"),
            bnn::io::read_file(kHostileWork / "A" / "member_000" / "bayes_probs.npy"));
  // Every member held elsewhere and none finished: nothing failed (exit 0),
  // and the others write the metrics.
  const auto all = copy_of("A", "all_held");
  std::vector<bnn::io::FileLock> held;
  for (const char* m : {"member_000", "member_001"}) {
    fs::remove(all / m / "status.json");
    held.push_back(*bnn::io::FileLock::try_acquire(all / m / "lock"));
  }
  const CommandResult none = bnn_as_user("run --resume " + all.string() + " --threads 1");
  EXPECT_EQ(none.code, 0) << none.output;
  EXPECT_NE(none.output.find("has finished yet: the 2 member(s) left are being trained by other processes"),
            std::string::npos)
      << none.output;
}

// Note [Member locks]: a user deletes the lock file of a member that is
// training and a second process locks a new one. The first process stops the
// member at its next write and writes nothing more into it.
TEST(HostileInput, AMemberWhoseLockFileIsReplacedStops) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto out = fresh("lock_replaced");
  const auto member = out / "member_000";
  // 1000 sampling epochs: far longer than the polling below takes to act.
  auto running = std::async(std::launch::async, [&] {
    return bnn_as_user(tiny_run_args(out.string(), " --set run.members=1 --set sampler.epochs=1000"));
  });
  ASSERT_TRUE(appears(member / "checkpoint.pt"));
  fs::remove(member / "lock");
  const auto thief = bnn::io::FileLock::try_acquire(member / "lock");
  ASSERT_TRUE(thief.has_value());
  const CommandResult r = running.get();
  EXPECT_EQ(r.code, 3) << r.output;
  // "deleted" where bnn looked between the removal and the new lock, "replaced" after.
  const std::string stopped = "member 0 stopped without writing more: " + (member / "lock").string() + " was ";
  const std::string because = " while this process held it; another process may be training it now";
  EXPECT_TRUE(r.output.find(stopped + "replaced by another file" + because) != std::string::npos ||
              r.output.find(stopped + "deleted" + because) != std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(member / "status.json"));
  EXPECT_FALSE(fs::exists(member / "bayes_probs.npy"));
  EXPECT_TRUE(fs::exists(member / "checkpoint.pt"));  // another process may resume from it
}

// Note [Run ownership]: the run folder of a running bnn is taken by another
// experiment (its bnn.json replaced, as by a run started on the folder after
// it was deleted), and the member that was training stops (its lock file
// deleted): the next member is not started there, and no metrics are
// written; and a folder deleted outright is not made again.
TEST(HostileInput, ARunWhoseFolderIsTakenStartsNoMoreMembers) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  for (const bool deleted : {false, true}) {
    SCOPED_TRACE(deleted ? "deleted" : "taken");
    const auto out = fresh(deleted ? "folder_deleted" : "folder_taken");
    const auto member = out / "member_000";
    // 1000 sampling epochs: far longer than the polling below takes to act.
    auto running = std::async(std::launch::async, [&] {
      return bnn_as_user(tiny_run_args(out.string(), " --set run.members=2 --set sampler.epochs=1000"));
    });
    ASSERT_TRUE(appears(member / "checkpoint.pt"));
    if (deleted) {
      // The run writes temporary files meanwhile: removal may race with one, so again until it is gone.
      std::error_code ec;
      for (int i = 0; i < 100 && fs::exists(out); ++i) fs::remove_all(out, ec);
      ASSERT_FALSE(fs::exists(out)) << ec.message();
    } else {
      auto manifest = nlohmann::json::parse(bnn::io::read_file(out / "bnn.json"));
      manifest["settings"]["sampler.step_size"] = "0.002";
      bnn::io::write_file_atomically(out / "bnn.json", manifest.dump(2) + "\n");
      fs::remove(member / "lock");
    }
    const CommandResult r = running.get();
    EXPECT_EQ(r.code, 3) << r.output;
    const std::string lost = out.string() + " is no longer this run's folder: ";
    const std::string tail = "; 1 member(s) not started there, and no metrics written";
    if (deleted) {
      // The run may look while the removal is under way: bnn.json gone, the folder not yet.
      EXPECT_TRUE(r.output.find(lost + "the folder is gone" + tail) != std::string::npos ||
                  r.output.find(lost + "its bnn.json is gone" + tail) != std::string::npos)
          << r.output;
    } else {
      const std::string why = "it holds another experiment now (sampler.step_size: 0.002 there, 0.001 now)";
      EXPECT_NE(r.output.find(lost + why + tail), std::string::npos) << r.output;
    }
    EXPECT_FALSE(fs::exists(out / "member_001"));
    EXPECT_FALSE(fs::exists(out / "metrics.json"));
    if (deleted) {
      EXPECT_FALSE(fs::exists(out)) << "the deleted folder was made again";
    }
  }
}

// Findings 5, 6 and 10: nonsense is a config error before any work.
TEST(HostileInput, ConfigsAreCheckedBeforeAnyWork) {
  const auto out = [] { return fresh("never_made").string(); };
  const auto no_output = [](const CommandResult&) {
    EXPECT_FALSE(fs::exists(kHostileWork / "cases" / "never_made")) << "a config error created the run directory";
  };
  run_cases({
      {"5: an empty config file",
       [&] {
         write_text(kHostileWork / "cases" / "empty.yaml", "# nothing\n");
         return "run --config " + (kHostileWork / "cases" / "empty.yaml").string() + " --out " + out();
       },
       2, "is empty (or only comments)", {}, no_output},
      {"5: a section given twice",
       [&] {
         write_text(kHostileWork / "cases" / "twice.yaml", "data:\n  train_limit: 1000\nmodel:\n  name: mlp\ndata:\n"
                                                  "  test_limit: 500\n");
         return "run --config " + (kHostileWork / "cases" / "twice.yaml").string() + " --out " + out();
       },
       2, "line 5: section 'data' is given twice (first at line 1); merge the two", {}, no_output},
      {"5: a key given twice",
       [&] {
         write_text(kHostileWork / "cases" / "key_twice.yaml", "sampler:\n  step_size: 1.0e-3\n  step_size: 1.0e-4\n");
         return "run --config " + (kHostileWork / "cases" / "key_twice.yaml").string() + " --out " + out();
       },
       2, "key 'sampler.step_size' is given twice (first at line 2)", {}, no_output},
      {"6: step size above float range",
       [&] { return tiny_run_args(out(), " --set sampler.step_size=1e300"); }, 2,
       "config key 'sampler.step_size': invalid value '1e300': beyond the float32 range", {}, no_output},
      {"6: swa.lr above float range", [&] { return tiny_run_args(out(), " --set swa.lr=1e39"); }, 2,
       "config key 'swa.lr': invalid value '1e39': beyond the float32 range", {}, no_output},
      {"6: prior precision above float range", [&] { return tiny_run_args(out(), " --set prior.precision=1e300"); }, 2,
       "config key 'prior.precision': invalid value '1e300'", {}, no_output},
      {"9: friction above float range", [&] { return tiny_run_args(out(), " --set sampler.friction=1e300"); }, 2,
       "config key 'sampler.friction': invalid value '1e300': beyond the float32 range", {}, no_output},
      {"10: a step size that cannot move the chain", [&] { return tiny_run_args(out(), " --set sampler.step_size=1e-50"); },
       2, "config key 'sampler.step_size': invalid value '1e-50'", {}, no_output},
      {"10: a step size in float range that cannot move the chain",
       [&] { return tiny_run_args(out(), " --set sampler.step_size=1e-9"); }, 2,
       "a step moves a weight by about h = 1e-09, below float32's resolution at 1", {},
       no_output},
      {"10: sgld's step below resolution",
       [&] { return tiny_run_args(out(), " --set sampler.name=sgld --set sampler.step_size=1e-16"); }, 2,
       "about sqrt(2 h) = 1.41e-08", {}, no_output},
      {"10: an mlp without hidden layers", [&] { return tiny_run_args(out(), " --set model.hidden=[]"); }, 2,
       "config key 'model.hidden': invalid value '[]': the mlp needs at least one hidden layer", {}, no_output},
      {"negative radius", [&] { return tiny_run_args(out(), " --set sampler.rho=-1"); }, 2,
       "config key 'sampler.rho': invalid value '-1'", {}, no_output},
      {"unknown key", [&] { return tiny_run_args(out(), " --set sampler.stepsize=0.1"); }, 2,
       "unknown config key 'sampler.stepsize'", {}, no_output},
      // Checks that need the data's size (tiny: 10 batches an epoch, 3 sampling epochs, 1 of burn-in), made
      // before the folder exists, which then recorded the setting as its experiment's: members failed after
      // training (thin), or in their first epoch (BatchNorm), or stored no sample for bnn predict
      // (sample_weights_every).
      {"a thinning that keeps no sample", [&] { return tiny_run_args(out(), " --set sampler.thin=21"); }, 2,
       "config key 'sampler.thin': invalid value '21': a sample every 21 steps keeps none of the 20 steps after "
       "burn-in (sampler.epochs 3 - burn_in 1, 10 batches an epoch); give at most 20",
       {}, no_output},
      {"BatchNorm with batches of one example",
       [&] { return tiny_run_args(out(), " --set model.batch_norm=true --set data.batch_size=1"); }, 2,
       "config key 'data.batch_size': invalid value '1': model mlp has BatchNorm1d layers, whose training "
       "statistics need at least 2 examples; give data.batch_size 2 or more (or model.batch_norm false)",
       {}, no_output},
      {"obabo samples inside a Metropolis-Hastings block",
       [&] { return tiny_run_args(out(), " --set sampler.name=obabo --set sampler.mh_block=3"); }, 2,
       "config key 'sampler.mh_block': invalid value '3': obabo keeps a sample, and scores an epoch's end, only "
       "where a Metropolis-Hastings block ends (inside a block the position is a proposal the test may reject), so "
       "the batches of an epoch (10) and the steps between samples (10, sampler.thin 0: an epoch) must be multiples "
       "of it; 10 divides both",
       {}, no_output},
      {"... also where the thinning is one but the epoch is not",
       [&] {
         return tiny_run_args(out(), " --set sampler.name=obabo --set sampler.mh_block=4 --set sampler.thin=8");
       },
       2, "the batches of an epoch (10) and the steps between samples (8, sampler.thin) must be multiples of it; 2 "
          "divides both", {}, no_output},
      {"stored sample weights beyond the samples kept",
       [&] {
         return tiny_run_args(out(), " --set evaluation.save_sample_weights=true "
                                     "--set evaluation.sample_weights_every=3");
       },
       2,
       "config key 'evaluation.sample_weights_every': invalid value '3': a member keeps 2 samples, so storing the "
       "weights of one in every 3 stores none; give at most 2 (or evaluation.save_sample_weights false)",
       {}, no_output},
      {"a localization beyond float32", [&] { return tiny_run_args(out(), " --set sampler.rho=1e-20"); }, 2,
       "config key 'sampler.rho': invalid value '1e-20': the localization's 1/rho^2 = 1e+40 is beyond the float32 "
       "range (3.403e+38); give 5.43e-20 or more",
       {}, no_output},
      {"the least rho named there passes the config (and the run stops at the next check)",
       [&] { return tiny_run_args(out(), " --set sampler.rho=5.43e-20 --set sampler.thin=21"); }, 2,
       "config key 'sampler.thin': invalid value '21'", {},
       [](const CommandResult& r) { EXPECT_EQ(r.output.find("sampler.rho"), std::string::npos) << r.output; }},
      // At the bounds: one sample kept (thin 20 of 20 steps) and its weights stored; settings that change
      // nothing, which older bnn recorded in runs (refused, those could not be resumed), are warned about.
      {"one sample kept, an idle anchor_gradients",
       [] {
         return tiny_run_args(fresh("bounds_a").string(),
                              " --set sampler.thin=20 --set evaluation.save_sample_weights=true --set run.members=1 "
                              "--set sampler.gradient=plain --set sampler.anchor_gradients=recomputed");
       },
       0,
       "sampler.anchor_gradients recomputed is not used: only the control variate (sampler.gradient "
       "control_variate) has anchor gradients, and sampler.gradient is plain",
       {},
       [](const CommandResult&) {
         const auto status = nlohmann::json::parse(
             bnn::io::read_file(kHostileWork / "cases" / "bounds_a" / "member_000" / "status.json"));
         EXPECT_EQ(status["samples"], 1) << status;
         EXPECT_EQ(status["sample_weights"], 1) << status;
       }},
      {"the weights of one in every 2 of 2 samples, a csghmc cycle of one step",
       [] {
         return tiny_run_args(fresh("bounds_b").string(),
                              " --set evaluation.save_sample_weights=true --set evaluation.sample_weights_every=2 "
                              "--set run.members=1 --set sampler.name=csghmc --set sampler.cycle_length=1");
       },
       0, "sampler.cycle_length 1: a cycle of one step runs every step at the full h, so this csghmc is sghmc", {},
       [](const CommandResult&) {
         const auto status = nlohmann::json::parse(
             bnn::io::read_file(kHostileWork / "cases" / "bounds_b" / "member_000" / "status.json"));
         EXPECT_EQ(status["samples"], 2) << status;
         EXPECT_EQ(status["sample_weights"], 1) << status;
       }},
      {"divergence thresholds must be positive",
       [&] { return tiny_run_args(out(), " --set sampler.max_loss_increase=0"); }, 2,
       "config key 'sampler.max_loss_increase': invalid value '0'", {}, no_output},
  });
}

// Findings 8 and 9: one line naming the file, key or option.
TEST(HostileInput, MessagesNameWhatIsWrong) {
  const auto out = [] { return fresh("never_made2").string(); };
  run_cases({
      {"8: a directory as --config", [&] { return "run --config " + kHostileWork.string() + " --out " + out(); }, 2,
       "config file " + kHostileWork.string() + " is a directory; give a YAML file"},
      {"8: --threads abc", [&] { return "run --config " + kTinyConfig + " --out " + out() + " --threads abc"; }, 2,
       "option --threads: 'abc' is not a valid value"},
      {"8: --seed=-x", [&] { return tiny_run_args(out(), "") + " --seed=xyz"; }, 2,
       "option --seed: 'xyz' is not a valid value"},
      {"8: the bad value is told apart from a good one that it contains",
       [&] { return tiny_run_args(out(), " --members 1") + " --seed 1x"; }, 2, "option --seed: '1x' is not a valid value"},
      {"a key given twice, dotted and in its section",
       [&] {
         write_text(kHostileWork / "cases" / "dotted.yaml", "sampler.step_size: 1.0e-3\nsampler:\n  step_size: 1.0e-4\n");
         return "run --config " + (kHostileWork / "cases" / "dotted.yaml").string() + " --out " + out();
       },
       2, "line 3: key 'sampler.step_size' is given twice (first at line 1)"},
      {"8: a model too wide to allocate",
       [&] { return tiny_run_args(fresh("too_wide").string(), " --set model.hidden=[4000000000000]"); }, 2,
       "config keys 'model.name' mlp, 'model.hidden' [4000000000000]: the model cannot be built for fashion_mnist "
       "inputs of shape [1, 28, 28]: can't allocate memory: you tried to allocate 12544000000000000 bytes"},
      {"8: an empty .npy in predict",
       [] {
         bnn::io::write_npy(kHostileWork / "cases" / "none.npy", torch::zeros({0, 28, 28}, torch::kByte));
         return "predict --run " + a() + " --images " + (kHostileWork / "cases" / "none.npy").string() + " --method swa";
       },
       2, "none.npy: holds no images (shape 0 x 28 x 28)"},
      {"an option that takes one value, given twice with two: the last is used, and the first named",
       [&] { return tiny_run_args(out(), " --members 0-1 --members 1-0"); }, 2,
       "option --members is given twice, as '0-1' and then as '1-0': the last one is used",
       {}, [](const CommandResult& r) { EXPECT_NE(r.output.find("runs from 1 down to 0"), std::string::npos); }},
      {"... and in predict, which parses as the other commands do",
       [] { return "predict --run " + a() + " --images x.npy --threads abc"; }, 2,
       "option --threads: 'abc' is not a valid value"},
      {"9: --members 1-0", [&] { return tiny_run_args(out(), " --members 1-0"); }, 2,
       "--members: '1-0' runs from 1 down to 0; write ranges low-high, e.g. 0-1"},
      {"9: a file as data.dir", [&] { return tiny_run_args(out(), " --set data.dir=" + kTinyConfig); }, 2,
       "config key 'data.dir': " + kTinyConfig + " is a file; give the folder holding the fashion_mnist files"},
      {"9: a missing data.dir", [&] { return tiny_run_args(out(), " --set data.dir=/no/such/folder"); }, 2,
       "config key 'data.dir': /no/such/folder does not exist"},
      {"9: bnn bias --help shows the step sizes as the parser takes them",
       [] { return std::string("bias --help"); }, 0, "--step-sizes arg"},
      {"9: ... and -h is help there too, as in every command",
       [] { return std::string("bias -h"); }, 0, "--step-sizes arg"},
      {"9: ... and the parser takes them",
       [] {
         return "bias --samplers sms_ubu --step-sizes 0.5 --chains 50 --time 20 --burn-in 2 --bins 100 --threads 1 "
                "--out " +
                (kHostileWork / "cases" / "bias.csv").string();
       },
       0, "sms_ubu"},
      {"9: ... and writes over its own earlier output",
       [] {
         EXPECT_TRUE(fs::exists(kHostileWork / "cases" / "bias.csv"));
         return "bias --samplers sms_ubu --step-sizes 0.5 --chains 50 --time 20 --burn-in 2 --bins 100 --threads 1 "
                "--out " +
                (kHostileWork / "cases" / "bias.csv").string();
       },
       0, "wrote " + (kHostileWork / "cases" / "bias.csv").string()},
      // Note [Output files], Note [Run ownership]: A's files stay as they were.
      {"bias --out onto a run's file",
       [] { return "bias --chains 50 --time 20 --burn-in 2 --bins 100 --out " + a() + "/metrics.csv"; }, 2,
       "bnn bias --out " + a() + "/metrics.csv: the file exists and is not an earlier output of bnn bias, so it is "
       "not overwritten; give another file name, or move it away first"},
      {"predict --out onto a run's file",
       [] {
         return "predict --run " + a() + " --images " + (kHostileWork / "cases" / "none.npy").string() + " --out " + a() +
                "/metrics.json";
       },
       2, "bnn predict --out " + a() + "/metrics.json: the file exists and is not an earlier output of bnn predict"},
      {"rhat --out onto a run",
       [] {
         return "rhat --config " + kTinyConfig + " --set sampler.epochs=5 --set sampler.burn_in=0 --out " + a();
       },
       2, "--out " + a() + " holds the members of a bnn run; bnn rhat would write its own config.yaml"},
  });
}

// Finding 9: a run that failed while loading its data (or building its
// model) leaves no directory behind to refuse the corrected config.
TEST(HostileInput, AFailedStartDoesNotLockTheDirectory) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  make_fixture();
  const auto dir = fresh("failed_start");
  const CommandResult failed = bnn_as_user(tiny_run_args(dir.string(), " --set data.dir=/no/such/folder --set run.members=1"));
  ASSERT_EQ(failed.code, 2) << failed.output;
  EXPECT_FALSE(fs::exists(dir));
  const CommandResult too_wide = bnn_as_user(tiny_run_args(dir.string(), " --set model.hidden=[4000000000000] --set run.members=1"));
  ASSERT_EQ(too_wide.code, 2) << too_wide.output;
  EXPECT_FALSE(fs::exists(dir));
  const CommandResult fixed = bnn_as_user(tiny_run_args(dir.string(), " --set run.members=1"));
  ASSERT_EQ(fixed.code, 0) << fixed.output;
  EXPECT_EQ(bnn::io::read_file(dir / "member_000" / "bayes_probs.npy"),
            bnn::io::read_file(kHostileWork / "A" / "member_000" / "bayes_probs.npy"));
}

// Findings 8 and 10: damaged member files are named, nothing is rewritten.
TEST(HostileInput, DamagedMemberFilesAreNamed) {
  const auto damaged = [](const std::string& as, const std::function<void(const fs::path&)>& damage) {
    const auto c = copy_of("A", as);
    damage(c);
    return c;
  };
  const auto evaluate = [](const fs::path& c) { return "evaluate " + c.string() + " --no-figures"; };
  run_cases({
      {"8: a garbage status.json",
       [&] {
         return evaluate(damaged("bad_status", [](const fs::path& c) {
           write_text(c / "member_000" / "status.json", "{\"status\": ");
         }));
       },
       2, "member_000/status.json is not a bnn status file", {kHostileWork / "cases" / "bad_status"}},
      {"8: a garbage status.json when resuming",
       [&] {
         const auto c = damaged("bad_status2", [](const fs::path& c) {
           write_text(c / "member_001" / "status.json", "garbage");
         });
         return "run --resume " + c.string() + " --threads 1";
       },
       2, "member_001/status.json is not a bnn status file", {kHostileWork / "cases" / "bad_status2"}},
      {"8: NaN probabilities",
       [&] {
         return evaluate(damaged("nan_probs", [](const fs::path& c) {
           auto p = bnn::data_loaders::read_npy(c / "member_000" / "swa_probs.npy");
           p[3][2] = std::nan("");
           bnn::io::write_npy(c / "member_000" / "swa_probs.npy", p);
         }));
       },
       2, "member_000/swa_probs.npy: NaN or infinite probabilities", {kHostileWork / "cases" / "nan_probs"}},
      {"8: a test label out of range, named with its file",
       [&] {
         return evaluate(damaged("bad_labels", [](const fs::path& c) {
           auto y = bnn::data_loaders::read_npy(c / "labels.npy");
           y[3] = 12;
           bnn::io::write_npy(c / "labels.npy", y);
         }));
       },
       2, "labels.npy: not the test labels of 10 classes (integers in 0-9, one per test example)",
       {kHostileWork / "cases" / "bad_labels"}},
      {"8: probabilities with a row too few",
       [&] {
         return evaluate(damaged("short_probs", [](const fs::path& c) {
           auto p = bnn::data_loaders::read_npy(c / "member_001" / "bayes_probs.npy");
           bnn::io::write_npy(c / "member_001" / "bayes_probs.npy", p.slice(0, 0, 499).contiguous());
         }));
       },
       2, "member_001/bayes_probs.npy: probabilities of shape [499, 10], expected [500, 10]",
       {kHostileWork / "cases" / "short_probs"}},
      {"rows that are not probabilities",
       [&] {
         return evaluate(damaged("not_probs", [](const fs::path& c) {
           auto p = bnn::data_loaders::read_npy(c / "member_000" / "adam_probs.npy");
           bnn::io::write_npy(c / "member_000" / "adam_probs.npy", p * 2);
         }));
       },
       2, "member_000/adam_probs.npy: not probabilities", {kHostileWork / "cases" / "not_probs"}},
      {"one entry below 0 is named, row and class",
       [&] {
         return evaluate(damaged("negative_prob", [](const fs::path& c) {
           auto p = bnn::data_loaders::read_npy(c / "member_001" / "swa_probs.npy");
           p[3][2] = -0.5;
           bnn::io::write_npy(c / "member_001" / "swa_probs.npy", p);
         }));
       },
       2, "member_001/swa_probs.npy: not probabilities: row 3 holds -0.5 for class 2 (entries lie in [0, 1])",
       {kHostileWork / "cases" / "negative_prob"}},
      {"a row that does not sum to 1 is named",
       [&] {
         return evaluate(damaged("row_sum", [](const fs::path& c) {
           auto p = bnn::data_loaders::read_npy(c / "member_001" / "swa_probs.npy");
           p[7] *= 0.5;
           bnn::io::write_npy(c / "member_001" / "swa_probs.npy", p);
         }));
       },
       2, "member_001/swa_probs.npy: not probabilities: row 7 sums to 1 -0.5 (rows sum to 1, to 1e-2)",
       {kHostileWork / "cases" / "row_sum"}},
      {"10: a garbage trace.csv",
       [&] {
         return evaluate(damaged("bad_trace", [](const fs::path& c) {
           const auto t = bnn::io::read_file(c / "member_000" / "trace.csv");
           write_text(c / "member_000" / "trace.csv", t + "sample,4,lots,0.5,0.001,0.1\n");
         }));
       },
       2, "member_000/trace.csv: line 8 is not a trace row", {kHostileWork / "cases" / "bad_trace"}},
      {"probabilities stored as integers",
       [&] {
         return evaluate(damaged("int_probs", [](const fs::path& c) {
           bnn::io::write_npy(c / "member_000" / "adam_probs.npy", torch::zeros({500, 10}, torch::kLong));
         }));
       },
       2, "member_000/adam_probs.npy: probabilities must be floats", {kHostileWork / "cases" / "int_probs"}},
      {"a trace.csv without its header",
       [&] {
         return evaluate(damaged("no_header", [](const fs::path& c) {
           const auto t = bnn::io::read_file(c / "member_000" / "trace.csv");
           write_text(c / "member_000" / "trace.csv", t.substr(t.find('\n') + 1));
         }));
       },
       2, "member_000/trace.csv: line 1 is not the header", {kHostileWork / "cases" / "no_header"}},
      {"a status.json whose sample count is not a count",
       [&] {
         return evaluate(damaged("bad_count", [](const fs::path& c) {
           write_text(c / "member_001" / "status.json", "{\"status\": \"done\", \"samples\": \"two\"}\n");
         }));
       },
       2, "member_001/status.json: \"samples\" is not a count", {kHostileWork / "cases" / "bad_count"}},
      {"evaluate --out a file",
       [] {
         write_text(kHostileWork / "cases" / "out_file", "mine\n");
         return "evaluate " + a() + " --out " + (kHostileWork / "cases" / "out_file").string() + " --no-figures";
       },
       2, "out_file is a file; give a folder", {kHostileWork / "cases" / "out_file"}},
      {"10: a deleted samples folder",
       [&] {
         return evaluate(
             damaged("no_samples", [](const fs::path& c) { fs::remove_all(c / "member_000" / "samples"); }));
       },
       2, "member_000/samples holds 0 of the 2 sample predictions", {kHostileWork / "cases" / "no_samples"}},
      {"10: ... which --members can leave out",
       [] { return "evaluate " + (kHostileWork / "cases" / "no_samples").string() + " --members 1 --no-figures"; }, 0,
       "report:"},
      {"a --members entry that no run directory holds is not called unfinished",
       [&] {
         const auto c = damaged("no_member_1", [](const fs::path& c) { fs::remove_all(c / "member_001"); });
         return evaluate(c) + " --members 1";
       },
       2, "--members selects member_001, which is in none of the run directories",
       {kHostileWork / "cases" / "no_member_1"}},
      {"... nor in bnn predict",
       [] {
         bnn::io::write_npy(kHostileWork / "cases" / "two.npy", torch::zeros({2, 28, 28}, torch::kByte));
         return "predict --run " + (kHostileWork / "cases" / "no_member_1").string() + " --images " +
                (kHostileWork / "cases" / "two.npy").string() + " --members 1 --method swa";
       },
       2, "--members: " + (kHostileWork / "cases" / "no_member_1").string() + " holds no member_001"},
      {"bnn.json without config.yaml: a run that may be starting",
       [&] { return evaluate(damaged("starting", [](const fs::path& c) { fs::remove(c / "config.yaml"); })); }, 2,
       "config.yaml missing (its bnn.json is there: a run that is starting, or a damaged one; try again in a moment)",
       {kHostileWork / "cases" / "starting"}},
  });
}

// Finding 7: a chain that blows up but stays finite is caught.
TEST(HostileInput, AChainThatBlowsUpIsMarkedDiverged) {
  const auto dir = kHostileWork / "cases" / "diverged";
  run_cases({
      {"7: h = 5 with the default bounce box",
       [&] { return tiny_run_args(fresh("diverged").string(), " --set sampler.step_size=5 --set run.members=1"); }, 3,
       "member 0 diverged: after burn-in the chain's mean training loss is",
       {},
       [&](const CommandResult& r) {
         const auto status = nlohmann::json::parse(bnn::io::read_file(dir / "member_000" / "status.json"));
         EXPECT_EQ(status["status"], "done");
         ASSERT_TRUE(status.contains("diverged")) << status;
         EXPECT_GT(status["diverged"]["chain_loss"].get<double>(),
                   status["diverged"]["reference_loss"].get<double>() + 1.0);
         // The accuracy compared with is x*'s own, from its probabilities (not SWA's last iterate's).
         const auto p = bnn::data_loaders::read_npy(dir / "member_000" / "swa_probs.npy");
         const auto y = bnn::data_loaders::read_npy(dir / "labels.npy");
         EXPECT_DOUBLE_EQ(status["diverged"]["reference_accuracy"].get<double>(),
                          p.argmax(1).eq(y).to(torch::kDouble).mean().item<double>());
         EXPECT_NE(bnn::io::read_file(dir / "report.md").find("## Warnings"), std::string::npos);
         EXPECT_NE(r.output.find("their samples are not of the posterior around a sound x*"), std::string::npos);
       }},
      {"7: ... and stays flagged on a rerun",
       [&] { return tiny_run_args(dir.string(), " --set sampler.step_size=5 --set run.members=1"); }, 3,
       "member_000 diverged", {dir / "member_000"}},
      {"7: a global chain with too little friction",
       [] {
         return tiny_run_args(fresh("diverged_global").string(),
                         " --set sampler.step_size=0.1 --set sampler.rho=.inf --set sampler.friction=5 "
                         "--set run.members=1");
       },
       3, "member 0 diverged"},
      {"7: an x* blown up by Adam's learning rate is said before its sampling",
       [] { return tiny_run_args(fresh("diverged_x_star").string(), " --set adam.lr=1e8 --set run.members=1"); }, 3,
       "x* itself: the training loss of its last swa epoch is",
       {},
       [](const CommandResult& r) {
         const auto said = r.output.find("it will be marked diverged when its sampling ends");
         ASSERT_NE(said, std::string::npos) << r.output;
         EXPECT_LT(said, r.output.find("sample epoch   1/3")) << r.output;
         const auto status = nlohmann::json::parse(
             bnn::io::read_file(kHostileWork / "cases" / "diverged_x_star" / "member_000" / "status.json"));
         ASSERT_TRUE(status.contains("diverged")) << status;
         EXPECT_EQ(status["diverged"]["reason"].get<std::string>().rfind("x* itself:", 0), 0U) << status;
       }},
      {"obabo's rejected blocks: every sample kept is a block's end, here x* itself",
       // h = 0.5 makes every Metropolis-Hastings block a rejection (the log says 0 of 6 accepted), so the
       // chain never leaves x*, and with samples at block ends its Bayes average is x*'s prediction. (Samples
       // inside a block were proposals, averaged far from x*; such settings are now refused, above.) Its
       // training loss is x*'s in every epoch (it was the proposals', near 50, and the chain was flagged
       // diverged), and a warning says the samples are x* itself.
       [] {
         return tiny_run_args(fresh("obabo_rejected").string(),
                              " --set sampler.name=obabo --set sampler.mh_block=5 --set sampler.step_size=0.5 "
                              "--set run.members=1");
       },
       0, "accept=0.000 (0/6 blocks)", {},
       [](const CommandResult& r) {
         const auto m = kHostileWork / "cases" / "obabo_rejected" / "member_000";
         const auto swa = bnn::data_loaders::read_npy(m / "swa_probs.npy").to(torch::kDouble);
         const auto bayes = bnn::data_loaders::read_npy(m / "bayes_probs.npy").to(torch::kDouble);
         EXPECT_LT((swa - bayes).abs().max().item<double>(), 1e-6);
         std::vector<std::string> sample_losses;
         std::istringstream trace(bnn::io::read_file(m / "trace.csv"));
         for (std::string line; std::getline(trace, line);) {
           if (line.rfind("sample,", 0) != 0) continue;
           const size_t from = line.find(',', 7) + 1;  // phase,epoch,loss,...
           sample_losses.push_back(line.substr(from, line.find(',', from) - from));
         }
         ASSERT_EQ(sample_losses.size(), 3U);
         EXPECT_EQ(sample_losses[0], sample_losses[1]);
         EXPECT_EQ(sample_losses[0], sample_losses[2]);
         EXPECT_LT(std::stod(sample_losses[0]), 1.0);
         const auto status = nlohmann::json::parse(bnn::io::read_file(m / "status.json"));
         EXPECT_FALSE(status.contains("diverged")) << status;
         const std::string warning = "the Metropolis-Hastings test accepted 0 of 6 blocks of 5 steps";
         EXPECT_EQ(status.value("sampler_warning", "").rfind(warning, 0), 0U) << status;
         EXPECT_NE(r.output.find("member 0: " + warning), std::string::npos) << r.output;
         const std::string report = bnn::io::read_file(m.parent_path() / "report.md");
         EXPECT_NE(report.find("- **member_000: " + warning), std::string::npos) << report;
       }},
      {"a non-finite Adam names adam.lr, not the step size",
       [] { return tiny_run_args(fresh("adam_overflow").string(), " --set adam.lr=1e30 --set run.members=1"); }, 3,
       "member 0 failed: non-finite ", {},
       [](const CommandResult& r) {
         EXPECT_NE(r.output.find(" in adam epoch 1 (mean training loss "), std::string::npos) << r.output;
         EXPECT_NE(r.output.find("); lower adam.lr"), std::string::npos) << r.output;
         EXPECT_EQ(r.output.find("step size"), std::string::npos) << r.output;
       }},
      {"7: the thresholds are config keys",
       [] {
         return tiny_run_args(fresh("diverged_allowed").string(),
                         " --set sampler.step_size=5 --set run.members=1 --set sampler.max_loss_increase=.inf "
                         "--set sampler.max_accuracy_drop=.inf");
       },
       0, "bayes"},
  });
}

}  // namespace
