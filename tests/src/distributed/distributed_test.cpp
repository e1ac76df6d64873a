// One chain, data-parallel over processes (docs/distributed.md): the process
// group's collectives, the rendezvous variables, and `bnn run --distributed`
// with 2 processes on loopback (Gloo) against the single-process chain.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "data_loaders/npy.h"
#include "src/distributed/process_group.h"
#include "src/io/atomic_file.h"
#include "src/io/file_lock.h"
#include "src/io/npy.h"
#include "tests/support/data_paths.h"
#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace {
using bnn::testing::kTinyConfig;

namespace dist = bnn::distributed;


// A TCP port on 127.0.0.1 that was free a moment ago.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  return ok ? ntohs(addr.sin_port) : 0;
}

std::function<std::optional<std::string>(const std::string&)> lookup_in(std::map<std::string, std::string> env) {
  return [env](const std::string& name) -> std::optional<std::string> {
    const auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

std::string rendezvous_error(const std::map<std::string, std::string>& env) {
  try {
    dist::rendezvous_from_environment(lookup_in(env));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(DistributedRendezvous, ReadsTheTorchrunVariables) {
  const auto r = dist::rendezvous_from_environment(
      lookup_in({{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}, {"RANK", "3"}, {"WORLD_SIZE", "4"}}));
  EXPECT_EQ(r.master_addr, "10.0.0.1");
  EXPECT_EQ(r.master_port, 29500);
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.world_size, 4);
  EXPECT_EQ(r.local_rank, 3);  // LOCAL_RANK unset: the rank
  EXPECT_EQ(dist::rendezvous_from_environment(lookup_in({{"MASTER_ADDR", "h"},
                                                         {"MASTER_PORT", "1"},
                                                         {"RANK", "3"},
                                                         {"WORLD_SIZE", "4"},
                                                         {"LOCAL_RANK", "1"}}))
                .local_rank,
            1);
  EXPECT_FALSE(r.agent_store);
  // Note [torchrun's agent store]: every rank a client, under the attempt's prefix.
  const auto agent = dist::rendezvous_from_environment(lookup_in({{"MASTER_ADDR", "h"},
                                                                  {"MASTER_PORT", "29500"},
                                                                  {"RANK", "0"},
                                                                  {"WORLD_SIZE", "2"},
                                                                  {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                                                  {"TORCHELASTIC_RESTART_COUNT", "2"}}));
  EXPECT_TRUE(agent.agent_store);
  EXPECT_EQ(agent.store_prefix, "/worker/attempt_2");
}

TEST(DistributedRendezvous, NamesTheMissingOrInvalidVariable) {
  const std::map<std::string, std::string> good = {
      {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}, {"RANK", "0"}, {"WORLD_SIZE", "2"}};
  for (const std::string name : {"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"}) {
    auto env = good;
    env.erase(name);
    EXPECT_NE(rendezvous_error(env).find("environment variable " + name + " is not set"), std::string::npos)
        << rendezvous_error(env);
  }
  auto env = good;
  env["RANK"] = "2";
  EXPECT_EQ(rendezvous_error(env), "environment variable RANK='2' is not valid: expected a rank in 0-1 (WORLD_SIZE=2)");
  env = good;
  env["MASTER_PORT"] = "29500x";
  EXPECT_EQ(rendezvous_error(env), "environment variable MASTER_PORT='29500x' is not valid: expected a TCP port, "
                                   "1-65535");
  env = good;
  env["WORLD_SIZE"] = "0";
  EXPECT_NE(rendezvous_error(env).find("WORLD_SIZE='0' is not valid"), std::string::npos);
}

class DistributedGroup : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!dist::gloo_available()) {
      GTEST_SKIP() << "this LibTorch has no torch.distributed with Gloo (c10d), or bnn was configured without it "
                      "(cmake/c10d.cmake; Debian: libgloo-dev)";
    }
  }
};

// Two ranks as two threads of this process, on loopback.
TEST_F(DistributedGroup, AllReduceSumsAndAgreementIsDetected) {
  dist::Rendezvous r;
  r.master_addr = "127.0.0.1";
  r.master_port = free_port();
  r.world_size = 2;
  auto rank = [r](int k) mutable {
    r.rank = k;
    r.local_rank = k;
    dist::ProcessGroup group(r, torch::kCPU, std::chrono::seconds(60));
    EXPECT_EQ(group.rank(), k);
    EXPECT_EQ(group.world_size(), 2);
    EXPECT_STREQ(group.backend(), "gloo");
    torch::Tensor t = torch::tensor({1.0f, 2.0f}) * (k == 0 ? 1 : 10);
    group.all_reduce_sum(t);
    torch::Tensor scalar = torch::tensor(static_cast<int64_t>(k + 1));  // 0-dim works too
    group.all_reduce_sum(scalar);
    const bool same = group.identical_on_all_ranks(torch::arange(4));
    const bool differs = group.identical_on_all_ranks(torch::arange(4) + (k == 1 ? 1 : 0));
    EXPECT_TRUE(group.any_rank(k == 1));
    EXPECT_FALSE(group.any_rank(false));
    EXPECT_EQ(group.from_rank_zero(k == 0 ? 75 : 3), 75);
    return std::make_tuple(t, scalar.item<int64_t>(), same, differs);
  };
  auto one = std::async(std::launch::async, rank, 1);
  const auto [t0, s0, same0, differs0] = rank(0);
  const auto [t1, s1, same1, differs1] = one.get();
  EXPECT_TRUE(t0.equal(torch::tensor({11.0f, 22.0f}))) << t0;
  EXPECT_TRUE(t1.equal(t0)) << t1;
  EXPECT_EQ(s0, 3);
  EXPECT_EQ(s1, 3);
  EXPECT_TRUE(same0 && same1);
  EXPECT_FALSE(differs0 || differs1);
}

// `bnn run` single-process and as 2 ranks (--distributed, Gloo on loopback) on
// a slice of Fashion-MNIST: an MLP without BatchNorm (with BatchNorm each rank
// would normalise by its shard's statistics), 2 Adam + 1 SWA + 3 sampling
// epochs (SMS-UBU, control variate), 10 batches of 100, one member.
class DistributedRun : public DistributedGroup {
 protected:
  void SetUp() override {
    DistributedGroup::SetUp();
    if (IsSkipped()) return;
    BNN_SKIP_WITHOUT_FASHION_MNIST();
    work_ = bnn::testing::unique_temp_dir("bnn_distributed_test");
  }
  void TearDown() override {
    if (!work_.empty()) std::filesystem::remove_all(work_);
  }

  static std::string args(const std::filesystem::path& out) {
    return "run --config " + kTinyConfig + " --set run.members=1 --set model.batch_norm=false --threads 1 --out " +
           out.string();
  }
  bnn::testing::CommandResult bnn(const std::string& a, const std::string& env = "") {
    return bnn::testing::run_bnn(a, work_ / ("log_" + std::to_string(++calls_) + ".txt"), env);
  }

  // Launches WORLD_SIZE=2 ranks on loopback, `bnn <args[r]> --distributed`
  // for rank r with the environment `env` added (and `rank0_env` on rank 0:
  // variables, then perhaps a command that runs the rest, as `env` takes
  // them); returns each rank's exit code and output. `timeout` ends a rank
  // that hangs.
  std::vector<bnn::testing::CommandResult> bnn_ranks(const std::vector<std::string>& args,
                                                     const std::string& env = "", const std::string& rank0_env = "") {
    const int port = free_port();
    std::string script;
    for (int rank = 1; rank >= 0; --rank) {
      const auto log = work_ / fmt::format("rank{}_{}.txt", rank, ++calls_);
      script += fmt::format(
          "(env MASTER_ADDR=127.0.0.1 MASTER_PORT={} RANK={} WORLD_SIZE=2 {} timeout 300 {} {} --distributed "
          "> {} 2>&1; echo $? > {}.rc) {}",
          port, rank, rank == 0 ? env + " " + rank0_env : env, BNN_BINARY,
          bnn::testing::on_cpu_unless_named(args.at(rank)), log.string(), log.string(), rank == 1 ? "& " : "; wait");
    }
    EXPECT_EQ(std::system(script.c_str()), 0);
    std::vector<bnn::testing::CommandResult> out;
    for (int rank = 0; rank < 2; ++rank) {
      const auto log = work_ / fmt::format("rank{}_{}.txt", rank, calls_ - rank);
      out.push_back({std::stoi(bnn::io::read_file(log.string() + ".rc")), bnn::io::read_file(log)});
    }
    return out;
  }

  // The loss column of a member's trace.csv.
  static std::vector<double> trace_losses(const std::filesystem::path& path) {
    std::vector<double> losses;
    std::istringstream in(bnn::io::read_file(path));
    std::string line;
    std::getline(in, line);  // header: phase,epoch,loss,...
    while (std::getline(in, line)) {
      const size_t second = line.find(',', line.find(',') + 1);
      losses.push_back(std::stod(line.substr(second + 1)));
    }
    return losses;
  }

  // Note [Rank 0's failures]: rank 0 exits `code` with "bnn: error: `error`";
  // rank 1 with it, saying rank 0 stopped `when`, without a communication error.
  static void expect_rank_one_stops_with_rank_zero(const std::vector<bnn::testing::CommandResult>& ranks, int code,
                                                   const std::string& error, const std::string& when) {
    EXPECT_EQ(ranks[0].code, code) << ranks[0].output;
    EXPECT_NE(ranks[0].output.find("bnn: error: " + error), std::string::npos) << ranks[0].output;
    EXPECT_EQ(ranks[1].code, code) << ranks[1].output;
    EXPECT_NE(ranks[1].output.find("bnn: error: rank 0 of this distributed run stopped " + when +
                                   ", for the reason its log gives; rank 1 stops with it"),
              std::string::npos)
        << ranks[1].output;
    EXPECT_EQ(ranks[1].output.find("all-reduce"), std::string::npos) << ranks[1].output;
  }

  static std::set<std::string> files_under(const std::filesystem::path& dir) {
    std::set<std::string> names;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
      names.insert(std::filesystem::relative(e.path(), dir).string());
    }
    return names;
  }

  std::filesystem::path work_;
  int calls_ = 0;
};

// Tolerance: the two chains differ only in the order of float32 sums (each
// rank's 50-row gradient sum, then the 2-rank all-reduce, against one 100-row
// sum), about 1e-7 relative per step; after 30 optimiser and 30 sampler
// steps (plus the anchor gradients) the parameters agree to ~1e-5 and the
// probabilities to ~1e-6 (tolerance 1e-4), far below any change
// a wrong shard, a missed all-reduce or unsynchronised noise would make
// (those change the outputs at the 1e-2 level or more).
//
// Rank 1 is given its own --out directory, which it must not even create:
// that shows it writes nothing (and needs no shared directory for a fresh run).
TEST_F(DistributedRun, TwoRanksOnLoopbackEqualTheSingleProcessChain) {
  const auto single = work_ / "single", parallel = work_ / "parallel", rank1 = work_ / "rank1";
  const auto r = bnn(args(single));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto ranks = bnn_ranks({args(parallel), args(rank1)});
  ASSERT_EQ(ranks[0].code, 0) << ranks[0].output;
  ASSERT_EQ(ranks[1].code, 0) << ranks[1].output;
  EXPECT_NE(ranks[0].output.find("distributed: rank 0 of 2 on cpu, gloo backend"), std::string::npos)
      << ranks[0].output;
  EXPECT_NE(ranks[1].output.find("distributed: rank 1 of 2 on cpu, gloo backend"), std::string::npos)
      << ranks[1].output;

  // Rank 0 wrote the run: the same files as the single process; rank 1 wrote
  // nothing and printed no results table.
  EXPECT_EQ(files_under(parallel), files_under(single));
  EXPECT_FALSE(std::filesystem::exists(rank1));
  EXPECT_EQ(ranks[1].output.find("accuracy"), std::string::npos) << ranks[1].output;

  const auto m = std::filesystem::path("member_000");
  EXPECT_EQ(bnn::io::read_file(single / m / "init_weights.npy"), bnn::io::read_file(parallel / m / "init_weights.npy"));
  for (const std::string file : {"adam_weights.npy", "swa_weights.npy", "adam_probs.npy", "swa_probs.npy",
                                 "bayes_probs.npy", "samples/step_00000020.npy", "samples/step_00000030.npy"}) {
    const torch::Tensor a = bnn::data_loaders::read_npy(single / m / file).to(torch::kDouble);
    const torch::Tensor b = bnn::data_loaders::read_npy(parallel / m / file).to(torch::kDouble);
    ASSERT_EQ(a.sizes(), b.sizes()) << file;
    const double diff = (a - b).abs().max().item<double>();
    std::printf("max |single - 2 ranks| of %s: %.3g\n", file.c_str(), diff);
    EXPECT_LT(diff, 1e-4) << file;  // samples too: float32 (Note [Stored sample probabilities])
  }
  // The mean training loss of every epoch (the all-reduced batch losses).
  const auto single_trace = trace_losses(single / m / "trace.csv");
  const auto parallel_trace = trace_losses(parallel / m / "trace.csv");
  ASSERT_EQ(single_trace.size(), 6u);
  ASSERT_EQ(parallel_trace.size(), single_trace.size());
  for (size_t i = 0; i < single_trace.size(); ++i) EXPECT_NEAR(parallel_trace[i], single_trace[i], 1e-5) << i;
}

// Both ranks share the run directory, are killed in the middle of sampling
// (after the epoch-2 checkpoint, Note [Fault injection] in fault_injection.h) and
// resume from rank 0's checkpoint: the result is bit-identical to an
// uninterrupted 2-rank run (where rank 0 alone is killed, rank 1 exits 69
// with the collective's error). So too where rank 0 alone is sent SIGTERM in the
// middle of sampling epoch 2 (Note [Stop signals]): the ranks agree to stop
// at that epoch's end, both exit 75, and resume to the same bits. And where
// rank 0 alone cannot write (Note [Rank 0's failures] in process_group.h): a
// file-size limit of 340 KiB (prlimit) lets it write Adam's checkpoints (about 300 KB)
// but not SWA's (about 410 KB), so both ranks stop at SWA's epoch end with
// rank 0's exit code 74, rank 1 without a communication error, and resume
// from Adam's last checkpoint to the same bits.
TEST_F(DistributedRun, KilledSignalledOrFailingRanksResumeBitIdentically) {
  const auto full = work_ / "full", cut = work_ / "cut";
  auto ranks = bnn_ranks({args(full), args(full)});
  ASSERT_EQ(ranks[0].code, 0) << ranks[0].output;
  ASSERT_EQ(ranks[1].code, 0) << ranks[1].output;
  ranks = bnn_ranks({args(cut), args(cut)}, "BNN_KILL_AT_SAMPLER_STEP=25");
  ASSERT_EQ(ranks[0].code, 128 + 9) << ranks[0].output;
  ASSERT_EQ(ranks[1].code, 128 + 9) << ranks[1].output;
  // Both ranks resume `dir` from the checkpoint `after` ("2 epoch(s) of sampling"), to the full run's bits.
  const auto resume_to_full = [&](const std::filesystem::path& dir, const std::string& after) {
    const std::string resume = "run --threads 1 --resume " + dir.string();
    const auto resumed = bnn_ranks({resume, resume});
    ASSERT_EQ(resumed[0].code, 0) << resumed[0].output;
    ASSERT_EQ(resumed[1].code, 0) << resumed[1].output;
    EXPECT_NE(resumed[0].output.find("after " + after), std::string::npos) << resumed[0].output;
    for (const std::string file : {"member_000/bayes_probs.npy", "member_000/samples/step_00000030.npy",
                                   "metrics.json"}) {
      EXPECT_EQ(bnn::io::read_file(full / file), bnn::io::read_file(dir / file)) << file;
    }
  };
  resume_to_full(cut, "2 epoch(s) of sampling");

  // Rank 0 alone killed: rank 1's next collective fails, and it exits 69 (not 2, bad input).
  ranks = bnn_ranks({args(work_ / "peer"), args(work_ / "peer")}, "", "BNN_KILL_AT_SAMPLER_STEP=25");
  EXPECT_EQ(ranks[0].code, 128 + 9) << ranks[0].output;
  EXPECT_EQ(ranks[1].code, 69) << ranks[1].output;
  EXPECT_NE(ranks[1].output.find("bnn: error: gloo all-reduce as rank 1 of 2 failed: "), std::string::npos)
      << ranks[1].output;

  const auto signalled = work_ / "signalled";
  ranks = bnn_ranks({args(signalled), args(signalled)}, "", "BNN_SIGNAL_AT_SAMPLER_STEPS=15");
  EXPECT_EQ(ranks[0].code, 75) << ranks[0].output;
  EXPECT_EQ(ranks[1].code, 75) << ranks[1].output;
  EXPECT_NE(ranks[0].output.find("member 0: stopped by SIGTERM after sampling epoch 2"), std::string::npos)
      << ranks[0].output;
  resume_to_full(signalled, "2 epoch(s) of sampling");

  const auto failing = work_ / "failing";
  ranks = bnn_ranks({args(failing), args(failing)}, "", "prlimit --fsize=348160");
  expect_rank_one_stops_with_rank_zero(
      ranks, 74, "cannot write " + (failing / "member_000" / "checkpoint.pt").string() + ": File too large",
      "in member 0");
  EXPECT_NE(ranks[0].output.find("rank 0 writes nothing more, and the 2 ranks stop together where they next agree"),
            std::string::npos)
      << ranks[0].output;
  resume_to_full(failing, "2 epoch(s) of adam");

  // Rank 0's evaluation fails (its metrics.json is a folder now): rank 1 stops with it.
  std::filesystem::remove(failing / "metrics.json");
  std::filesystem::create_directories(failing / "metrics.json" / "a_file_inside");
  const std::string again = "run --threads 1 --resume " + failing.string();
  ranks = bnn_ranks({again, again});
  expect_rank_one_stops_with_rank_zero(ranks, 2, "cannot write " + (failing / "metrics.json").string(),
                                       "after training");
}

// The ranks launched by torchrun, as docs/distributed.md shows, against the
// same ranks launched by hand: bit-identical runs. With torchrun's default
// static rendezvous the ranks are clients of its agent's store (Note
// [torchrun's agent store]); with --standalone (a c10d rendezvous) torch 1.13
// leaves the store to rank 0, newer releases may not. (`--redirects 2 --tee 2`:
// Debian's torchrun 1.13 fails on Python 3.11 with the default --tee 0.)
TEST_F(DistributedRun, TorchrunLaunchesEqualTheRanksLaunchedByHand) {
  if (std::system("command -v torchrun > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no torchrun on PATH (Debian: python3-torch)";
  }
  const auto hand = work_ / "hand";
  const auto ranks = bnn_ranks({args(hand), args(hand)});
  ASSERT_EQ(ranks[0].code, 0) << ranks[0].output;
  ASSERT_EQ(ranks[1].code, 0) << ranks[1].output;
  EXPECT_EQ(ranks[0].output.find("torchrun's store"), std::string::npos) << ranks[0].output;
  for (const std::string rendezvous : {"static", "standalone"}) {
    const auto out = work_ / rendezvous;
    const std::string launch = rendezvous == "static" ? fmt::format("--master_port {}", free_port()) : "--standalone";
    const auto r = bnn::testing::run_logged(
        fmt::format("timeout 300 torchrun --nnodes 1 --nproc_per_node 2 {} --redirects 2 --tee 2 --log_dir {} "
                    "--no_python {} {} --distributed",
                    launch, (work_ / (rendezvous + "_logs")).string(), BNN_BINARY,
                    bnn::testing::on_cpu_unless_named(args(out))),
        work_ / (rendezvous + ".txt"));
    ASSERT_EQ(r.code, 0) << rendezvous << "\n" << r.output;
    EXPECT_NE(r.output.find("distributed: rank 0 of 2 on cpu, gloo backend"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("distributed: rank 1 of 2 on cpu, gloo backend"), std::string::npos) << r.output;
    if (rendezvous == "static") {
      EXPECT_NE(r.output.find("(torchrun's store, /worker/attempt_0)"), std::string::npos) << r.output;
    }
    EXPECT_EQ(files_under(out), files_under(hand)) << rendezvous;
    for (const std::string file : {"member_000/bayes_probs.npy", "member_000/samples/step_00000030.npy",
                                   "member_000/swa_weights.npy", "metrics.json"}) {
      EXPECT_EQ(bnn::io::read_file(out / file), bnn::io::read_file(hand / file)) << rendezvous << " " << file;
    }
  }
}

// Ranks given different runs stop together with one error naming what
// differs, before any work (their collectives used to stop pairing up part-way,
// and gloo aborted the process, or rank 1's --members were silently ignored);
// a resume where one rank sees no checkpoint is caught before restoring; and a
// rank whose command failed before joining leaves the other saying what it
// waits for, and for how long.
TEST_F(DistributedRun, RanksGivenDifferentRunsStopWithOneError) {
  const auto two = [&](const std::filesystem::path& out) { return args(out) + " --set run.members=2"; };
  auto ranks = bnn_ranks({two(work_ / "m") + " --members 0", two(work_ / "m") + " --members 1"});
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ranks[r].code, 2) << ranks[r].output;
    EXPECT_NE(ranks[r].output.find("bnn: error: the 2 ranks of this distributed run were not given the same run: "
                                   "--members differ; give every rank the same command (rank " +
                                   std::to_string(r) + " was given: --members " + std::to_string(r)),
              std::string::npos)
        << ranks[r].output;
  }
  EXPECT_FALSE(std::filesystem::exists(work_ / "m"));
  ranks = bnn_ranks({args(work_ / "e"), args(work_ / "e") + " --set sampler.epochs=4"});
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ranks[r].code, 2) << ranks[r].output;
    EXPECT_NE(ranks[r].output.find("not given the same run: sampler.epochs differ; give every rank the same command"),
              std::string::npos)
        << ranks[r].output;
  }

  const auto cut = work_ / "cut", copy = work_ / "cut_copy";
  ranks = bnn_ranks({args(cut), args(cut)}, "BNN_KILL_AT_SAMPLER_STEP=25");
  ASSERT_EQ(ranks[0].code, 128 + 9) << ranks[0].output;
  std::filesystem::copy(cut, copy, std::filesystem::copy_options::recursive);
  std::filesystem::remove(copy / "member_000" / "checkpoint.pt");
  ranks = bnn_ranks({"run --threads 1 --resume " + cut.string(), "run --threads 1 --resume " + copy.string()});
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ranks[r].code, 2) << ranks[r].output;
    EXPECT_NE(ranks[r].output.find("member 0: the 2 ranks do not see the same checkpoint"), std::string::npos)
        << ranks[r].output;
  }
  EXPECT_NE(ranks[1].output.find("(rank 1 sees no " + (copy / "member_000" / "checkpoint.pt").string() + ")"),
            std::string::npos)
      << ranks[1].output;
  EXPECT_TRUE(std::filesystem::exists(cut / "member_000" / "checkpoint.pt"));

  ranks = bnn_ranks(
      {args(work_ / "w") + " --distributed-timeout 3", args(work_ / "w") + " --set sampler.step_size=-1"});
  EXPECT_EQ(ranks[1].code, 2) << ranks[1].output;
  EXPECT_NE(ranks[0].code, 0) << ranks[0].output;
  EXPECT_NE(ranks[0].code, 124) << "rank 0 waited out the test's own timeout:\n" << ranks[0].output;
  EXPECT_NE(ranks[0].output.find("distributed: rank 0 of 2 joining at 127.0.0.1:"), std::string::npos)
      << ranks[0].output;
  EXPECT_NE(ranks[0].output.find("it waits up to 3 s (--distributed-timeout) for the other ranks"), std::string::npos)
      << ranks[0].output;
  std::printf("rank 0 alone:\n%s\n", ranks[0].output.c_str());
}

// Note [Member locks]: a distributed run whose members are all being trained
// by another process has nothing to do, and nothing failed: exit 0 on every
// rank, as for one process (rank 0 said "no member has finished" and exited 3).
TEST_F(DistributedRun, MembersHeldByAnotherProcessAreNotAFailure) {
  const auto out = work_ / "held";
  // A run folder whose one member is unfinished (its process killed), then held by "another process".
  const auto first = bnn(args(out), "BNN_KILL_AT_SAMPLER_STEP=1");
  ASSERT_EQ(first.code, 128 + 9) << first.output;
  const auto lock = bnn::io::FileLock::try_acquire(out / "member_000" / "lock");
  ASSERT_TRUE(lock.has_value());
  const std::string resume = "run --threads 1 --resume " + out.string();
  const auto ranks = bnn_ranks({resume, resume});
  EXPECT_EQ(ranks[0].code, 0) << ranks[0].output;
  EXPECT_EQ(ranks[1].code, 0) << ranks[1].output;
  EXPECT_NE(ranks[0].output.find("member 0: another process is training it"), std::string::npos) << ranks[0].output;
  EXPECT_NE(ranks[0].output.find("the 1 member(s) left are being trained by other processes"), std::string::npos)
      << ranks[0].output;
  EXPECT_FALSE(std::filesystem::exists(out / "member_000" / "status.json"));
}

// What rank 0 alone checks (the run directory is its) stops every rank with
// it: rank 0 says why, the others say to read rank 0's log; neither waits
// for the other nor fails with a communication error. Here rank 0's --out is
// a file (checked before the data load); then both resume a run whose
// member_000 holds another bnn folder's bnn.json (checked after it).
TEST_F(DistributedRun, ARunRankZeroRefusesStopsEveryRank) {
  const auto file = work_ / "a_file";
  bnn::io::write_file_atomically(file, "not a folder\n");
  const auto nested = work_ / "nested";
  ASSERT_EQ(bnn(args(nested), "BNN_KILL_AT_SAMPLER_STEP=1").code, 128 + 9);
  bnn::io::write_file_atomically(nested / "member_000" / "bnn.json", bnn::io::read_file(nested / "bnn.json"));
  const std::string resume = "run --threads 1 --resume " + nested.string();
  for (const auto& [commands, reason] :
       {std::pair<std::vector<std::string>, std::string>{{args(file), args(work_ / "rank1")},
                                                         "run directory " + file.string() + " is a file"},
        {{resume, resume}, (nested / "member_000").string() + " holds "}}) {
    SCOPED_TRACE(commands[0]);
    expect_rank_one_stops_with_rank_zero(bnn_ranks(commands), 2, reason, "before training");
  }
  EXPECT_FALSE(std::filesystem::exists(work_ / "rank1"));
}

TEST_F(DistributedRun, MissingWorldSizeIsAClearError) {
  const auto r =
      bnn(args(work_ / "run") + " --distributed", "-u WORLD_SIZE MASTER_ADDR=127.0.0.1 MASTER_PORT=1 RANK=0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("bnn: error: bnn run --distributed: environment variable WORLD_SIZE is not set"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(work_ / "run"));
}

// Note [Stop signals]: the ranks agree at each epoch end and before each
// member whether any of them must stop, so a time limit stops them together
// even where their clocks differ; here rank 0 alone has a limit of 2 s and
// the member 5000 epochs (about 10 ms each): both ranks stop at one epoch end
// and exit 75, rank 1 without a communication error.
TEST_F(DistributedRun, ATimeLimitStopsTheRanksTogether) {
  const auto dir = work_ / "run";
  const std::string run = args(dir) + " --set sampler.epochs=5000";
  const auto ranks = bnn_ranks({run + " --time-limit 2", run});
  EXPECT_EQ(ranks[0].code, 75) << ranks[0].output;
  EXPECT_EQ(ranks[1].code, 75) << ranks[1].output;
  EXPECT_NE(ranks[0].output.find("time limit of 2 s reached after"), std::string::npos) << ranks[0].output;
  if (std::filesystem::exists(dir / "member_000")) {  // unless the data took the 2 s to load
    EXPECT_NE(ranks[0].output.find("member 0: stopped by the time limit after "), std::string::npos)
        << ranks[0].output;
    EXPECT_TRUE(std::filesystem::exists(dir / "member_000" / "checkpoint.pt"));
  }
}

// What a distributed run cannot honour is refused before the run directory
// is made, naming the option or key.
TEST_F(DistributedRun, WhatItCannotHonourIsRefused) {
  const std::pair<std::string, std::string> cases[] = {
      {"--set sampler.name=nogin",
       "bnn: error: sampler nogin needs per-example gradients, which a distributed run does not gather"},
      {"--members-per-device 2",
       "bnn: error: --members-per-device: a distributed run trains one member at a time on each rank; drop the "
       "option"},
      {"--member-design stacked",
       "bnn: error: --member-design stacked: a distributed run trains one member at a time on each rank; drop the "
       "option"},
  };
  for (const auto& [option, message] : cases) {
    const auto r = bnn(args(work_ / "run") + " " + option + " --distributed",
                       fmt::format("MASTER_ADDR=127.0.0.1 MASTER_PORT={} RANK=0 WORLD_SIZE=1", free_port()));
    EXPECT_EQ(r.code, 2) << option;
    EXPECT_NE(r.output.find(message), std::string::npos) << option << "\n" << r.output;
    EXPECT_FALSE(std::filesystem::exists(work_ / "run")) << option;
  }
}

}  // namespace
