// Crash-safe resume (Note [Member checkpoints] in src/pipeline/member_checkpoint.h):
// a run killed with SIGKILL in the middle of sampling and resumed with
// `bnn run --resume` ends with the same predictions and metrics, bit for bit,
// as a run that was never interrupted.
#include <gtest/gtest.h>
#include <torch/script.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "src/io/atomic_file.h"
#include "tests/support/data_paths.h"
#include "tests/support/figure_files.h"
#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace {
using bnn::testing::kTinyConfig;


class Resume : public ::testing::Test {
 protected:
  void SetUp() override {
    BNN_SKIP_WITHOUT_FASHION_MNIST();
    work_ = bnn::testing::unique_temp_dir("bnn_resume_test");
  }
  void TearDown() override {
    if (!work_.empty()) std::filesystem::remove_all(work_);
  }
  bnn::testing::CommandResult bnn(const std::string& args, const std::string& env = "") {
    return bnn::testing::run_bnn(args, work_ / ("log_" + std::to_string(++calls_) + ".txt"), env);
  }
  static std::string read(const std::filesystem::path& p) { return bnn::io::read_file(p); }
  // Member 0 of tiny.yaml killed at sampler `step` into work_/name; its checkpoint's path.
  std::filesystem::path killed_member_checkpoint(const std::string& name, int step) {
    const auto r = bnn("run --config " + kTinyConfig + " --out " + (work_ / name).string() + " --threads 1 --members 0",
                       "BNN_KILL_AT_SAMPLER_STEP=" + std::to_string(step));
    EXPECT_EQ(r.code, 128 + 9) << r.output;
    return work_ / name / "member_000" / "checkpoint.pt";
  }

  std::filesystem::path work_;
  int calls_ = 0;
};

// tiny.yaml: 10 batches per epoch, 3 sampling epochs with 1 of burn-in and a
// sample every 10 steps (steps 20 and 30). Step 25 is in the middle of the
// last epoch, after the sample at step 20 and the epoch-2 checkpoint.
TEST_F(Resume, KilledInTheMiddleOfSamplingResumesBitIdentically) {
  const auto full = work_ / "full", cut = work_ / "cut";
  auto r = bnn("run --config " + kTinyConfig + " --out " + full.string() + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;

  r = bnn("run --config " + kTinyConfig + " --out " + cut.string() + " --threads 1", "BNN_KILL_AT_SAMPLER_STEP=25");
  ASSERT_EQ(r.code, 128 + 9) << "expected death by SIGKILL\n" << r.output;
  const auto m0 = cut / "member_000";
  EXPECT_TRUE(std::filesystem::exists(m0 / "checkpoint.pt"));
  EXPECT_FALSE(std::filesystem::exists(m0 / "status.json"));
  EXPECT_TRUE(std::filesystem::exists(m0 / "samples" / "step_00000020.npy"));
  EXPECT_FALSE(std::filesystem::exists(m0 / "bayes_probs.npy"));
  EXPECT_FALSE(std::filesystem::exists(cut / "member_001"));
  // What a kill between a temporary file and its rename leaves (Note [Atomic
  // writes]): swept when the member is resumed, and no part of the result.
  const std::vector<std::filesystem::path> leftovers = {m0 / "checkpoint.pt.tmp.99.0123456789abcdef.7",
                                                        m0 / "samples" / "step_00000030.npy.tmp.99.0123456789abcdef.8"};
  for (const auto& p : leftovers) std::ofstream(p) << "half a file";

  r = bnn("run --resume " + cut.string() + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("member 0: removed 2 temporary file(s) left by an interrupted write"), std::string::npos)
      << r.output;
  for (const auto& p : leftovers) EXPECT_FALSE(std::filesystem::exists(p)) << p;
  EXPECT_NE(r.output.find("member 0: resuming from"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("after 2 epoch(s) of sampling"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(m0 / "checkpoint.pt"));  // removed once done

  for (const std::string member : {"member_000", "member_001"}) {
    for (const std::string file : {"adam_probs.npy", "swa_probs.npy", "bayes_probs.npy", "samples/step_00000020.npy",
                                   "samples/step_00000030.npy"}) {
      EXPECT_EQ(read(full / member / file), read(cut / member / file)) << member << "/" << file;
    }
  }
  EXPECT_EQ(read(full / "metrics.json"), read(cut / "metrics.json"));
  EXPECT_EQ(read(full / "metrics.csv"), read(cut / "metrics.csv"));
}

// Note [Stop signals]: SIGTERM after sampler step 15, in the middle of
// tiny.yaml's second sampling epoch (10 steps each). Member 0 goes on to the
// epoch's end (the sample at step 20 is taken), writes its checkpoint and
// stops; member 1 does not start; the command exits 75. Resumed, the run ends
// as the run never stopped, bit for bit. A second signal at once (step 16),
// as a launcher relays the first, changes nothing.
TEST_F(Resume, ASignalStopsAtTheEpochEndAndTheRunResumesBitIdentically) {
  const auto full = work_ / "full", cut = work_ / "cut", twice = work_ / "twice";
  const std::string tiny = "run --config " + kTinyConfig + " --threads 1 --out ";
  auto r = bnn(tiny + full.string());
  ASSERT_EQ(r.code, 0) << r.output;

  r = bnn(tiny + cut.string(), "BNN_SIGNAL_AT_SAMPLER_STEPS=15");
  ASSERT_EQ(r.code, 75) << r.output;
  const auto m0 = cut / "member_000";
  EXPECT_NE(r.output.find("bnn: SIGTERM: stopping at the next epoch end (a second signal, 2 s or more later, stops "
                          "at once)\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("member 0 sample epoch   2/3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("member 0: stopped by SIGTERM after sampling epoch 2 (its checkpoint is kept; "
                          "bnn run --resume continues it)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("stopped by SIGTERM: 2 member(s) left unfinished, 0 finished in " + cut.string() +
                          "; continue with: bnn run --resume " + cut.string() +
                          " (the metrics are written when the last member finishes)"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(std::filesystem::exists(m0 / "checkpoint.pt"));
  EXPECT_TRUE(std::filesystem::exists(m0 / "samples" / "step_00000020.npy"));
  EXPECT_FALSE(std::filesystem::exists(m0 / "status.json"));
  EXPECT_FALSE(std::filesystem::exists(cut / "member_001"));

  r = bnn("run --resume " + cut.string() + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("after 2 epoch(s) of sampling"), std::string::npos) << r.output;
  for (const std::string file : {"member_000/bayes_probs.npy", "member_000/samples/step_00000020.npy",
                                 "member_000/samples/step_00000030.npy", "member_000/trace.csv",
                                 "member_001/bayes_probs.npy", "metrics.json"}) {
    if (file == "member_000/trace.csv") {
      // The seconds column differs; every other column is the same.
      const auto columns = [](const std::string& trace) {
        std::string out;
        std::istringstream in(trace);
        for (std::string line; std::getline(in, line);) out += line.substr(0, line.rfind(',')) + "\n";
        return out;
      };
      EXPECT_EQ(columns(read(full / file)), columns(read(cut / file)));
    } else {
      EXPECT_EQ(read(full / file), read(cut / file)) << file;
    }
  }

  r = bnn(tiny + twice.string() + " --members 0", "BNN_SIGNAL_AT_SAMPLER_STEPS=15,16");
  EXPECT_EQ(r.code, 75) << r.output;
  EXPECT_NE(r.output.find("bnn: a second signal within 2 s, as a launcher relays the first: still stopping at the "
                          "next epoch end"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("member 0: stopped by SIGTERM after sampling epoch 2"), std::string::npos) << r.output;
  r = bnn("run --resume " + twice.string() + " --threads 1 --members 0");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("after 2 epoch(s) of sampling"), std::string::npos) << r.output;
  EXPECT_EQ(read(full / "member_000/bayes_probs.npy"), read(twice / "member_000/bayes_probs.npy"));
}

// Note [Stop signals]: a signal during the last epoch of the last member
// lets it finish, and leaves the metrics to the next command.
TEST_F(Resume, ASignalDuringTheLastEpochLeavesTheMetricsToTheNextCommand) {
  const auto cut = work_ / "cut";
  auto r = bnn("run --config " + kTinyConfig + " --threads 1 --set run.members=1 --out " + cut.string(),
               "BNN_SIGNAL_AT_SAMPLER_STEPS=25");
  ASSERT_EQ(r.code, 75) << r.output;
  EXPECT_NE(r.output.find("stopped by SIGTERM before evaluating: every member this command ran has finished; bnn run "
                          "--resume " + cut.string() + " goes on with any left and writes the metrics"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(std::filesystem::exists(cut / "member_000" / "status.json"));
  EXPECT_FALSE(std::filesystem::exists(cut / "member_000" / "checkpoint.pt"));
  EXPECT_FALSE(std::filesystem::exists(cut / "metrics.json"));
  r = bnn("run --resume " + cut.string() + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(cut / "metrics.json"));
  EXPECT_EQ(r.output.find("member 0: seed"), std::string::npos) << "the finished member ran again\n" << r.output;
}

// Note [Stop signals]: a Ctrl-C while the run draws its figures reaches the
// whole foreground process group. gnuplot runs in a group of its own, so the
// request reaches bnn alone, which finishes the evaluation, figures and all.
// Here a stand-in gnuplot sends SIGINT to bnn's group (bnn leads one of its
// own under setsid), as the terminal would, then runs the real gnuplot; in
// bnn's group it would have died of it, and the figures with it.
TEST_F(Resume, ACtrlCWhileTheFiguresAreDrawnLetsGnuplotFinish) {
  if (!bnn::testing::has_gnuplot()) GTEST_SKIP() << bnn::testing::kNoGnuplot;
  const auto fake = work_ / "ctrl_c_gnuplot.sh";
  bnn::io::write_file_atomically(fake, "#!/bin/sh\nkill -INT -$PPID\nsleep 1\nexec gnuplot \"$@\"\n");
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  const auto dir = work_ / "run";
  const auto r = bnn("run --config " + kTinyConfig + " --threads 1 --set run.members=1 --out " + dir.string(),
                     "BNN_GNUPLOT=" + fake.string() + " setsid");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("SIGINT"), std::string::npos) << "the stand-in sent no SIGINT\n" << r.output;
  EXPECT_EQ(r.output.find("figures not drawn"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "figures" / "metrics_vs_size.png")) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "metrics.json")) << r.output;
}

// Note [Redrawn batches]: tiny.yaml's SMS cycles are 20 steps. Cycle 0 keeps
// the member's partition, so the sample at step 20 is the one a run without
// sampler.repartition takes; cycle 1 cuts other batches, so the sample at 30
// is not. A kill at step 25, inside cycle 1, resumes to the same bits.
TEST_F(Resume, RedrawnBatchesChangeFromTheSecondCycleAndResumeBitIdentically) {
  const auto fixed = work_ / "fixed", full = work_ / "full", cut = work_ / "cut";
  const std::string tiny = "run --config " + kTinyConfig + " --threads 1 --members 0 --out ";
  const std::string redraw = " --set sampler.repartition=true";
  // Recomputed anchors, as the redrawn run must use: stored ones round otherwise.
  auto r = bnn(tiny + fixed.string() + " --set sampler.anchor_gradients=recomputed");
  ASSERT_EQ(r.code, 0) << r.output;
  r = bnn(tiny + full.string() + redraw);
  ASSERT_EQ(r.code, 0) << r.output;
  // The stored anchor gradients would be of batches no longer used.
  EXPECT_NE(r.output.find("gradient=control_variate/recomputed"), std::string::npos) << r.output;
  r = bnn(tiny + cut.string() + redraw, "BNN_KILL_AT_SAMPLER_STEP=25");
  ASSERT_EQ(r.code, 128 + 9) << r.output;
  r = bnn("run --resume " + cut.string() + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto m0 = std::filesystem::path("member_000");
  EXPECT_TRUE(read(fixed / m0 / "samples/step_00000020.npy") == read(full / m0 / "samples/step_00000020.npy"));
  EXPECT_FALSE(read(fixed / m0 / "samples/step_00000030.npy") == read(full / m0 / "samples/step_00000030.npy"));
  for (const std::string file : {"bayes_probs.npy", "samples/step_00000020.npy", "samples/step_00000030.npy"}) {
    EXPECT_TRUE(read(full / m0 / file) == read(cut / m0 / file)) << file;
  }
  r = bnn(tiny + (work_ / "stored").string() + redraw + " --set sampler.anchor_gradients=stored");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("config key 'sampler.anchor_gradients': invalid value 'stored': with "
                          "sampler.repartition true the batches change every cycle"),
            std::string::npos)
      << r.output;
}

// With BatchNorm each cycle's batches make a potential of their own, and the
// control variate sums S* again as a cycle begins. Four sampling epochs: the
// kill at step 35 resumes from the checkpoint at 30, inside cycle 1 (steps
// 20-39), where the resumed chain must sum S* again for cycle 1's batches.
TEST_F(Resume, RedrawnBatchesWithBatchNormResumeBitIdentically) {
  const auto full = work_ / "full", cut = work_ / "cut";
  const std::string tiny = "run --config " + kTinyConfig + " --threads 1 --members 0 --set model.batch_norm=true "
                           "--set sampler.repartition=true --set sampler.epochs=4 --out ";
  auto r = bnn(tiny + full.string());
  ASSERT_EQ(r.code, 0) << r.output;
  r = bnn(tiny + cut.string(), "BNN_KILL_AT_SAMPLER_STEP=35");
  ASSERT_EQ(r.code, 128 + 9) << r.output;
  r = bnn("run --resume " + cut.string() + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("after 3 epoch(s) of sampling"), std::string::npos) << r.output;
  for (const std::string file : {"bayes_probs.npy", "samples/step_00000030.npy", "samples/step_00000040.npy"}) {
    EXPECT_TRUE(read(full / "member_000" / file) == read(cut / "member_000" / file)) << file;
  }
  r = bnn(tiny + (work_ / "mh").string() + " --set sampler.name=obabo --set sampler.mh_block=5");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("config key 'sampler.mh_block': invalid value '5': with sampler.repartition true"),
            std::string::npos)
      << r.output;
}

// With stored sample weights (Note [Stored samples]) and BatchNorm, a sample
// every 5 steps: steps 15, 20, 25, 30. The kill at step 27 comes after the
// sample at 25 was stored but before any checkpoint holds it; the resumed
// member rewrites it with the same bytes.
TEST_F(Resume, StoredSampleWeightsAfterTheLastCheckpointAreRewrittenIdentically) {
  const std::string sets = " --threads 1 --members 0 --set evaluation.save_sample_weights=true"
                           " --set model.batch_norm=true --set sampler.thin=5";
  const auto full = work_ / "full", cut = work_ / "cut";
  auto r = bnn("run --config " + kTinyConfig + " --out " + full.string() + sets);
  ASSERT_EQ(r.code, 0) << r.output;
  r = bnn("run --config " + kTinyConfig + " --out " + cut.string() + sets, "BNN_KILL_AT_SAMPLER_STEP=27");
  ASSERT_EQ(r.code, 128 + 9) << "expected death by SIGKILL\n" << r.output;
  const auto m0 = cut / "member_000";
  const std::string stored_before_kill = read(m0 / "samples" / "weights_00000025.npy");
  r = bnn("run --resume " + cut.string() + " --threads 1 --members 0");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(read(m0 / "samples" / "weights_00000025.npy"), stored_before_kill);
  for (const std::string file : {"swa_weights.npy", "swa_buffers.npy", "bayes_probs.npy"}) {
    EXPECT_EQ(read(full / "member_000" / file), read(m0 / file)) << file;
  }
  for (const char* step : {"00000015", "00000020", "00000025", "00000030"}) {
    for (const std::string kind : {"weights_", "buffers_"}) {
      const std::string file = "samples/" + kind + step + ".npy";
      EXPECT_EQ(read(full / "member_000" / file), read(m0 / file)) << file;
    }
  }
}

// A resume that cannot write (here: samples/ replaced by a file, which even
// root cannot write into) fails with a message naming the path, and the last
// checkpoint stays byte-for-byte what it was.
TEST_F(Resume, WriteFailureIsAClearErrorAndKeepsTheCheckpoint) {
  const auto cut = work_ / "cut";
  auto r = bnn("run --config " + kTinyConfig + " --out " + cut.string() + " --threads 1 --members 0",
               "BNN_KILL_AT_SAMPLER_STEP=25");
  ASSERT_EQ(r.code, 128 + 9) << r.output;
  const auto m0 = cut / "member_000";
  const std::string checkpoint = read(m0 / "checkpoint.pt");
  std::filesystem::remove_all(m0 / "samples");
  bnn::io::write_file_atomically(m0 / "samples", "not a directory");

  r = bnn("run --resume " + cut.string() + " --threads 1 --members 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("bnn: error: cannot create the folder " + (m0 / "samples").string() +
                          ": a file of that name is in its place"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(read(m0 / "checkpoint.pt"), checkpoint);
}

// Note [Checkpoint integrity]: a checkpoint with a flipped bit is refused,
// naming the file, and left as it is; it used to load and resume a
// corrupted chain.
TEST_F(Resume, ADamagedCheckpointIsRefused) {
  const auto cut = work_ / "damaged";
  const auto path = killed_member_checkpoint("damaged", 15);
  ASSERT_FALSE(HasFailure());
  const std::string whole = read(path);
  std::string damaged = whole;
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 0x04);
  bnn::io::write_file_atomically(path, damaged);
  // Two at once: it is refused before either starts, not once member 1 has
  // trained while member 0 waited its turn.
  auto r = bnn("run --resume " + cut.string() + " --threads 2 --members-per-device 2");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(path.string() + ": a damaged checkpoint (the data of entry "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("does not match its CRC-32 (damaged bytes)); delete it to restart the member (no member "
                          "was trained)"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(cut / "member_001" / "status.json"));
  EXPECT_EQ(read(path), damaged);
  bnn::io::write_file_atomically(path, whole);
  r = bnn("run --resume " + cut.string() + " --threads 1 --members 0");
  EXPECT_EQ(r.code, 0) << r.output;
}

// A running sum of probabilities that is not one any more (damaged in a way
// the CRCs cannot see: rewritten here through LibTorch) fails the member
// instead of finishing it with a bayes_probs.npy that is not probabilities.
TEST_F(Resume, AMeanThatIsNotProbabilitiesFailsTheMember) {
  const auto cut = work_ / "doubled_sum";
  const auto path = killed_member_checkpoint("doubled_sum", 25);
  ASSERT_FALSE(HasFailure());
  torch::jit::Module m = torch::jit::load(path.string());
  bool doubled = false;
  for (const auto& b : m.named_buffers(/*recurse=*/true)) {
    if (b.name == "sample.prob_sum") b.value.mul_(2), doubled = true;
  }
  for (const auto& p : m.named_parameters(/*recurse=*/true)) {
    if (p.name == "sample.prob_sum") p.value.detach().mul_(2), doubled = true;
  }
  ASSERT_TRUE(doubled);
  m.save(path.string());
  const auto r = bnn("run --resume " + cut.string() + " --threads 1 --members 0");
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("the mean of the retained samples' probabilities is not probabilities (a row sums to 1 "
                          "+0.5); the running sum the member resumed from was damaged: delete the run's member_000"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(cut / "member_000" / "bayes_probs.npy"));
}

// The disk fills up while the resumed member writes its next checkpoint
// (tests/support/full_disk.cpp makes every write to checkpoint.pt fail with
// ENOSPC). bnn stops with an error naming the file and the cause, the last
// good checkpoint keeps its bytes and no temporary file is left; once there is
// space again, the next resume ends exactly where an uninterrupted run ends.
// tiny.yaml: the kill at step 15 leaves the epoch-1 checkpoint; the resume
// fails writing the epoch-2 one.
TEST_F(Resume, FullDiskIsAClearErrorAndKeepsTheLastCheckpoint) {
  const auto full = work_ / "full", cut = work_ / "cut";
  auto r = bnn("run --config " + kTinyConfig + " --out " + full.string() + " --threads 1 --members 0");
  ASSERT_EQ(r.code, 0) << r.output;
  r = bnn("run --config " + kTinyConfig + " --out " + cut.string() + " --threads 1 --members 0",
          "BNN_KILL_AT_SAMPLER_STEP=15");
  ASSERT_EQ(r.code, 128 + 9) << r.output;
  const auto m0 = cut / "member_000";
  const std::string checkpoint = read(m0 / "checkpoint.pt");

  r = bnn("run --resume " + cut.string() + " --threads 1 --members 0",
          std::string("LD_PRELOAD=") + BNN_FULL_DISK_LIB + " BNN_FULL_DISK_MATCH=checkpoint.pt");
  EXPECT_EQ(r.code, bnn::io::kExitStorage) << r.output;  // the storage's failure, not bad input (2)
  EXPECT_NE(r.output.find("bnn: error: cannot write " + (m0 / "checkpoint.pt").string() +
                          ": No space left on device"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("after 1 epoch(s) of sampling"), std::string::npos) << r.output;
  EXPECT_EQ(read(m0 / "checkpoint.pt"), checkpoint);
  for (const auto& entry : std::filesystem::directory_iterator(m0)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
  }
  EXPECT_FALSE(std::filesystem::exists(m0 / "status.json"));

  r = bnn("run --resume " + cut.string() + " --threads 1 --members 0");
  ASSERT_EQ(r.code, 0) << r.output;
  for (const std::string file : {"swa_probs.npy", "bayes_probs.npy", "samples/step_00000020.npy",
                                 "samples/step_00000030.npy"}) {
    EXPECT_EQ(read(full / "member_000" / file), read(m0 / file)) << file;
  }
}

TEST_F(Resume, ResumeNeedsARunDirectory) {
  auto r = bnn("run --resume " + (work_ / "nothing").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("bnn: error: bnn run --resume: " + (work_ / "nothing").string() +
                          " has no config.yaml; not a run directory"),
            std::string::npos)
      << r.output;
  r = bnn("run --resume " + work_.string() + " --config " + kTinyConfig);
  EXPECT_NE(r.output.find("drop --config and --out"), std::string::npos) << r.output;
  // Stopped as it started: its bnn.json is written, its config.yaml not yet.
  const auto starting = work_ / "starting";
  std::filesystem::create_directories(starting);
  bnn::io::write_file_atomically(starting / "bnn.json",
                                 R"({"bnn": "run", "format": 1, "experiment": "0", "settings": {}})" "\n");
  r = bnn("run --resume " + starting.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find(starting.string() + " has a bnn.json but no config.yaml (a run stopped as it started?): run "
                                              "its first command, bnn run --config ... --out " +
                          starting.string() + ", again, which writes it"),
            std::string::npos)
      << r.output;
}

}  // namespace
