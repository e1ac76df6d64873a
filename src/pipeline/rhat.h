// `bnn rhat`: the convergence experiment of the SMS-UBU paper (section 4,
// Fig. 3). For each of R repeats an independent SWA point x* is trained
// (repeat r trains member r's x*: Adam then SWA with member r's seed), then C
// chains of the configured sampler start at x* + N(0, rho^2 I), each with its
// own noise, while the control variate and the bounce box stay at x* (Note
// [Perturbed chains] in member.h). Each chain's mean training loss per
// sampling epoch is one scalar trace; R-hat and split R-hat of those traces
// across the C chains, over the epochs after sampler.burn_in, say whether the
// chains forget their starts and agree on the level of the training loss. The
// paper uses C = 4, R = 16, rho = 50^-1/2 (its localization radius), 40
// sampling epochs and 10 of burn-in, and finds R-hat close to 1.
//
// Outputs in the output directory, each written atomically:
//   config.yaml        the resolved configuration
//   member_NNN/        repeat r's Adam and SWA outputs, as in a run (run.h)
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

namespace bnn::pipeline {

struct RhatOptions {
  std::filesystem::path out_dir;
  int64_t chains = 4;
  int64_t repeats = 3;
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
  std::vector<RhatRepeat> repeats;
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
// above. Deterministic given the config (run.seed), the options, the device
// and the thread count. Throws on any failure (a non-finite chain included).
RhatResult run_rhat(const config::Config& config, const RhatOptions& options);

// A short plain-text table: one line per repeat and the worst over repeats.
std::string rhat_table(const RhatResult& result);

}  // namespace bnn::pipeline
