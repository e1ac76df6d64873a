// `bnn rhat`: the convergence experiment of the SMS-UBU paper (section 4,
// Fig. 3). For each of R repeats an independent SWA point x* is trained
// (repeat r trains member r's x*: Adam then SWA with member r's seed), then C
// chains of the configured sampler start at x* + N(0, rho^2 I), each with its
// own noise, while the control variate and the bounce box stay at x* (Note
// [Perturbed chains] below). Each chain's mean training loss per
// sampling epoch is one scalar trace; R-hat and split R-hat of those traces
// across the C chains, over the epochs after sampler.burn_in, say whether the
// chains forget their starts and agree on the level of the training loss. The
// paper uses C = 4, R = 16, rho = 50^-1/2 (its localization radius), 40
// sampling epochs and 10 of burn-in, and finds R-hat close to 1.
//
// Outputs in the output directory, each written atomically:
//   bnn.json           written first: an rhat folder, its experiment and
//                      rhat.chains, .repeats, .rho, .loss_every (Note [Run
//                      ownership]: no other experiment, run or evaluation may
//                      share the folder)
//   rhat.lock          held while a `bnn rhat` writes the folder
//   config.yaml        the resolved configuration (written with the results)
//   member_NNN/        repeat r's Adam and SWA outputs, as in a run (run.h),
//                      and chains.json, its chains' losses, written when its
//                      last chain ends (Note [Repeats that persist])
//   chains.csv         repeat,chain,epoch,loss (every sampling epoch)
//   chain_windows.csv  repeat,chain,window,last_step,loss (with loss_every > 0)
//   rhat.csv           repeat,epoch,draws,rhat,split_rhat: R-hat of the epochs
//                      burn_in+1 .. epoch (evaluation::rhat_by_epoch), so the
//                      last epoch's row is the repeat's R-hat after burn-in
//   summary.json       the settings, and per repeat the final R-hat, split
//                      R-hat, ESS and each chain's mean loss after burn-in
//                      (and the same R-hats over the windows of loss_every
//                      steps after burn-in); JSON null where undefined
//   figures/           rhat_vs_epoch.{png,svg}, one line per repeat
//                      (evaluation::draw_rhat_figure)
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "src/config/config.h"
#include "src/evaluation/diagnostics.h"
#include "src/pipeline/member.h"
#include "src/pipeline/run.h"
#include "src/pipeline/throughput.h"
#include "src/runtime/deadline.h"

namespace bnn::pipeline {

// Note [Perturbed chains] (the R-hat experiment of the SMS-UBU paper, Fig. 3):
// member `index` trains its x* exactly as run_member()
// does (same seeds, same Adam and SWA outputs in its directory, so x* equals
// that member's x* in `bnn run` with the same config), then, instead of its
// sampling phase, runs `chains` chains of the configured sampler, one after
// the other. Chain c is the configured sampler built at x* (control-variate
// anchor and bounce box stay at x*, as in the paper) with its own seed, whose
// position is then moved to x* + rho z, z ~ N(0, I) drawn from a seed of its
// own; the first bounce folds any coordinate outside the box back into it.
// Both seeds are streams of derive_seed(member seed, 4) and c (Note [RNG
// streams]), so a chain depends on the member seed and c only. Chains record
// the loss the sampler computes at every step (no test predictions are made),
// per epoch and per `loss_every` steps. Checkpoints are neither read nor
// written. Deterministic given the seed, device and thread count.
struct ChainOptions {
  int64_t chains = 4;
  double rho = 0;          // standard deviation of the start's perturbation of x*
  int64_t loss_every = 0;  // also record the mean loss per this many steps (0: off)
};

struct ChainLosses {
  // Per sampling epoch: summed training cross-entropy / number of examples (as trace.csv).
  std::vector<double> epoch_loss;
  // Per window of loss_every steps (steps w k + 1 .. (w + 1) k, counted
  // across epochs): summed cross-entropy / examples in those batches.
  std::vector<double> window_loss;
  int64_t steps_per_epoch = 0;  // batches per epoch
};

// Throws for any failure, a non-finite loss included (the message names the chain).
std::vector<ChainLosses> run_member_chains(const MemberContext& context, int64_t index, const ChainOptions& options);


// Note [Repeats that persist]: a repeat (x* and its chains: with the
// paper's settings 20 + 4 x 40 epochs) takes as long as three members of
// `bnn run`, and R of them more than a machine may give
// one command (a lent GPU's ten minutes). So each repeat's chain losses are
// written to member_NNN/chains.json as soon as its last chain ends, and a
// `bnn rhat` into a folder that holds them (the same experiment: the folder's
// manifest says so) takes them from there instead of running the repeat
// again. `--only LIST` runs just those repeats (others already saved are
// read all the same). The tables (chains.csv, rhat.csv, summary.json, the
// figure) are written once every repeat is there, by whichever command
// completes them; until then the command exits 75 naming the repeats still
// to run. Repeats run in separate folders (on machines that keep nothing)
// are gathered by copying their member_NNN/chains.json into one folder of
// the experiment (one of the slices') and running `bnn rhat` there again,
// which runs nothing. Loaded or run, a repeat's numbers are the same (each
// is deterministic given the seed, device and threads), so the tables are
// the uninterrupted command's, byte for byte, where both ran alike. A saved
// repeat names the folder's experiment (bnn.json's, the settings included),
// and saved repeats are results: a folder that holds some is not taken by
// other settings (Note [Run ownership]). One that is not what this command
// would write (another experiment's, other chains, epochs, steps or
// windows) is an error naming the file.
// What the log and errors call the repeats run at once, and their option.
inline constexpr AtOnceNames kRepeatsAtOnce{"--repeats-at-once", "repeat"};

struct RhatOptions {
  std::filesystem::path out_dir;
  int64_t chains = 4;
  int64_t repeats = 3;
  std::vector<int64_t> only;  // repeats to run now (empty: all not saved yet)
  // Repeats run at once, each in a worker thread (on a GPU on its own CUDA
  // stream), as `bnn run`'s members (Note [Members per device]); 0 = auto.
  int64_t at_once = 0;
  // Note [Time limit] for repeats: a repeat starts only where a whole one,
  // as long as the longest this command ran, ends by the deadline (a repeat
  // stopped part-way would be lost: its chains are saved at its end); the
  // first ones start regardless. Those not started are `missing`.
  runtime::Deadline* deadline = nullptr;
  // With a deadline and at_once auto: repeats at once from this table, for
  // the most whole repeats in the time left (Note [Members for a time limit]).
  std::optional<ThroughputTable> throughput;
  std::optional<double> rho;  // unset: default_perturbation(config)
  int64_t loss_every = 0;     // also record the mean loss per this many steps
  bool figures = true;        // draw figures/rhat_vs_epoch (needs gnuplot)
};

// R-hat of one set of scalar traces after burn-in; NaN where undefined.
struct RhatScore {
  int64_t draws = 0;  // per chain
  double rhat = 0;
  double split_rhat = 0;
  double ess = 0;
};

struct RhatRepeat {
  int64_t repeat = 0;
  std::vector<ChainLosses> chains;
  std::vector<evaluation::RhatAtEpoch> by_epoch;
  RhatScore epochs;   // over the epochs after burn-in
  RhatScore windows;  // over the loss_every windows after burn-in (draws 0 when off)
  std::vector<double> chain_means;  // each chain's mean epoch loss after burn-in
};

struct RhatResult {
  double rho = 0;
  int64_t burn_in = 0;  // epochs
  std::vector<RhatRepeat> repeats;  // every repeat saved in the folder, in order
  std::vector<int64_t> missing;     // repeats neither saved nor run: no tables were written
  std::string figure_error;  // why figures/ was not drawn; empty if it was (or not requested)
};

// The perturbation of the paper: its localization radius sampler.rho when that
// is finite, else 50^-1/2 (the paper's value).
double default_perturbation(const config::Config& config);

// Checks the options against `config` (at least 2 chains and 1 repeat, rho
// finite and >= 0, loss_every >= 0, at least 4 sampling epochs after burn-in);
// throws config::ConfigError naming the problem.
void validate(const config::Config& config, const RhatOptions& options);

// Runs the experiment on config.run.device and writes the outputs listed
// above (the tables only where no repeat is `missing`). Deterministic given
// the config (run.seed), the options, the device and the thread count.
// Throws on any failure (a non-finite chain included).
RhatResult run_rhat(const config::Config& config, const RhatOptions& options);

// A short plain-text table: one line per repeat and the worst over repeats.
std::string rhat_table(const RhatResult& result);

}  // namespace bnn::pipeline
