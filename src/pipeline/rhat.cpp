#include "src/pipeline/rhat.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "data_loaders/dataset.h"
#include "samplers/random.h"
#include "src/evaluation/figures.h"
#include "src/io/atomic_file.h"
#include "src/io/file_lock.h"
#include "src/pipeline/run.h"
#include "src/pipeline/run_directory.h"
#include "src/pipeline/sampling_phase.h"
#include "src/runtime/device_streams.h"
#include "src/runtime/stop_signal.h"

namespace bnn::pipeline {
namespace {

constexpr uint64_t kChainStream = 4;  // of a member seed (Note [RNG streams] in samplers/random.h)

// Chain c of Note [Perturbed chains], from x* + rho z, the member's
// parameters at x* = `anchor`.
ChainLosses run_chain(Member& member, const torch::Tensor& anchor, int64_t c, const ChainOptions& options) {
  const config::Config& cfg = member.config();
  const data_loaders::Partition& partition = member.partition();
  const uint64_t chain_seed = samplers::derive_seed(samplers::derive_seed(member.seed(), kChainStream), c);
  torch::Tensor x = member.flat().values();
  {
    torch::NoGradGuard no_grad;
    x.copy_(anchor);  // the control variate is built at x*
  }
  const auto sampler = member.make_sampler(anchor, samplers::derive_seed(chain_seed, 0));
  {
    torch::NoGradGuard no_grad;
    torch::Tensor z = torch::empty_like(x);
    samplers::ChunkedNormal(z, samplers::derive_seed(chain_seed, 1)).fill(z);
    x.add_(z, options.rho);
  }
  spdlog::info("member {} chain {}: {}, start x* + {:g} N(0, I)", member.index(), c, sampler->pretty_string(),
               options.rho);
  const double examples_per_window = static_cast<double>(options.loss_every * partition.batch_size());
  ChainLosses out;
  out.steps_per_epoch = partition.num_batches();
  torch::Tensor window = torch::zeros({}, x.options());
  const FaultInjection faults;  // Note [Fault injection]
  for (int64_t e = 0; e < cfg.sampler.epochs; ++e) {
    const auto start = Clock::now();
    const double loss = sampling_epoch(
        *sampler, partition, x.options(),
        fmt::format("member {} chain {} {}/{}", member.index(), c, e + 1, cfg.sampler.epochs),
        [&](const torch::Tensor& step_loss) {
          faults.after_sampler_step(sampler->steps_taken());
          if (options.loss_every <= 0) return;
          window += step_loss;
          if (sampler->steps_taken() % options.loss_every != 0) return;
          out.window_loss.push_back(window.item<double>() / examples_per_window);
          window.zero_();
        });
    member.check_epoch(fmt::format("chain {} sample", c), e, loss);
    out.epoch_loss.push_back(loss);
    spdlog::info("member {} chain {} epoch {:>3}/{}: loss {:.4f}  {:.1f}s", member.index(), c, e + 1,
                 cfg.sampler.epochs, loss, std::chrono::duration<double>(Clock::now() - start).count());
    // Note [Stop signals]: a repeat is kept only whole; it stops unless this was its last epoch.
    const bool last = c + 1 == options.chains && e + 1 == cfg.sampler.epochs;
    if (const int signo = runtime::stop_signal(); signo != 0 && !last) {
      throw MemberStopped(runtime::signal_name(signo), fmt::format("after chain {} epoch {}", c, e + 1));
    }
  }
  return out;
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Split R-hat and ESS need this many draws per chain (diagnostics.h).
constexpr int64_t kMinDraws = 4;

// A diagnostic that is undefined for these draws (constant chains) is NaN.
template <typename F>
double or_nan(F compute) {
  try {
    return compute();
  } catch (const c10::Error&) {
    return kNaN;
  }
}

RhatScore score(const torch::Tensor& draws) {
  RhatScore s;
  s.draws = draws.size(1);
  s.rhat = s.split_rhat = s.ess = kNaN;
  if (s.draws < kMinDraws) return s;
  s.rhat = or_nan([&] { return evaluation::rhat(draws); });
  s.split_rhat = or_nan([&] { return evaluation::split_rhat(draws); });
  s.ess = or_nan([&] { return evaluation::effective_sample_size(draws); });
  return s;
}

// Chains x draws, the draws of each chain from `first` on.
torch::Tensor stack(const std::vector<std::vector<double>>& traces, size_t first) {
  std::vector<torch::Tensor> rows;
  for (const auto& t : traces) {
    const std::vector<double> kept(t.begin() + static_cast<std::ptrdiff_t>(std::min(first, t.size())), t.end());
    rows.push_back(torch::tensor(kept, torch::kDouble));
  }
  return torch::stack(rows);
}

RhatRepeat analyse(int64_t repeat, std::vector<ChainLosses> chains, int64_t burn_in, int64_t loss_every) {
  RhatRepeat r;
  r.repeat = repeat;
  r.chains = std::move(chains);
  std::vector<std::vector<double>> epochs, windows;
  for (const ChainLosses& c : r.chains) {
    epochs.push_back(c.epoch_loss);
    windows.push_back(c.window_loss);
  }
  const torch::Tensor all = stack(epochs, 0);
  r.by_epoch = evaluation::rhat_by_epoch(all, burn_in);
  const torch::Tensor after = all.slice(/*dim=*/1, burn_in);
  r.epochs = score(after);
  for (int64_t c = 0; c < after.size(0); ++c) r.chain_means.push_back(after[c].mean().item<double>());
  // Window w holds steps w k + 1 .. (w + 1) k: kept when it starts after burn-in.
  if (loss_every > 0) {
    const int64_t burn_in_steps = burn_in * r.chains.front().steps_per_epoch;
    r.windows = score(stack(windows, static_cast<size_t>((burn_in_steps + loss_every - 1) / loss_every)));
  }
  return r;
}

std::string csv_number(double v) { return std::isfinite(v) ? fmt::format("{:.17g}", v) : "nan"; }

nlohmann::json json_number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json to_json(const RhatScore& s) {
  return {{"draws", s.draws}, {"rhat", json_number(s.rhat)}, {"split_rhat", json_number(s.split_rhat)},
          {"ess", json_number(s.ess)}};
}

// The tables and the figure, staged and renamed together at the end: a run
// that fails before or while they are written leaves the last complete ones
// of the folder's experiment as they were (its member_NNN/ files are
// rewritten as the run goes). `staged` holds the figure drawn, if one was.
void write_outputs(const config::Config& config, const RhatOptions& options, const RhatResult& result,
                   io::StagedFiles& staged) {
  const auto& dir = options.out_dir;
  staged.stage(dir / kConfigFile, config::to_yaml(config));
  std::string chains = "repeat,chain,epoch,loss\n", windows = "repeat,chain,window,last_step,loss\n";
  std::string rhat = "repeat,epoch,draws,rhat,split_rhat\n";
  nlohmann::json repeats = nlohmann::json::array();
  for (const RhatRepeat& r : result.repeats) {
    for (size_t c = 0; c < r.chains.size(); ++c) {
      const ChainLosses& losses = r.chains[c];
      for (size_t e = 0; e < losses.epoch_loss.size(); ++e) {
        fmt::format_to(std::back_inserter(chains), "{},{},{},{}\n", r.repeat, c, e + 1,
                       csv_number(losses.epoch_loss[e]));
      }
      for (size_t w = 0; w < losses.window_loss.size(); ++w) {
        fmt::format_to(std::back_inserter(windows), "{},{},{},{},{}\n", r.repeat, c, w + 1,
                       static_cast<int64_t>(w + 1) * options.loss_every, csv_number(losses.window_loss[w]));
      }
    }
    for (const auto& p : r.by_epoch) {
      fmt::format_to(std::back_inserter(rhat), "{},{},{},{},{}\n", r.repeat, p.epoch, p.draws, csv_number(p.rhat),
                     csv_number(p.split_rhat));
    }
    nlohmann::json entry = {{"repeat", r.repeat},
                            {"member", member_dir("", r.repeat).string()},
                            {"epochs", to_json(r.epochs)},
                            {"chain_mean_loss", r.chain_means}};
    if (options.loss_every > 0) entry["windows"] = to_json(r.windows);
    repeats.push_back(entry);
  }
  staged.stage(dir / "chains.csv", chains);
  if (options.loss_every > 0) staged.stage(dir / "chain_windows.csv", windows);
  staged.stage(dir / "rhat.csv", rhat);
  double worst = kNaN, worst_split = kNaN;
  for (const RhatRepeat& r : result.repeats) {
    worst = std::isnan(worst) ? r.epochs.rhat : std::max(worst, r.epochs.rhat);
    worst_split = std::isnan(worst_split) ? r.epochs.split_rhat : std::max(worst_split, r.epochs.split_rhat);
  }
  const nlohmann::json summary = {
      {"sampler", config.sampler.name},
      {"chains", options.chains},
      {"repeats", options.repeats},
      {"rho", result.rho},
      {"sampling_epochs", config.sampler.epochs},
      {"burn_in_epochs", result.burn_in},
      {"loss_every", options.loss_every},
      {"max_rhat", json_number(worst)},
      {"max_split_rhat", json_number(worst_split)},
      {"figure", options.figures && result.figure_error.empty() ? nlohmann::json("figures/rhat_vs_epoch.png")
                                                                 : nlohmann::json(nullptr)},
      {"figure_error", result.figure_error},
      {"per_repeat", repeats}};
  staged.stage(dir / "summary.json", summary.dump(2) + "\n");
  staged.commit();
  if (summary["figure"].is_null()) {  // an earlier run's figure would no longer match the tables
    std::error_code ec;
    for (const char* name : {"rhat_vs_epoch.png", "rhat_vs_epoch.svg"}) {
      if (std::filesystem::remove(dir / "figures" / name, ec)) {
        spdlog::warn("removed {}, an earlier bnn rhat's figure: it was not drawn from these tables",
                     (dir / "figures" / name).string());
      }
    }
  }
}

// Note [Member locks]: where rhat.lock was deleted while this process held
// it, another bnn rhat may have claimed the folder since: nothing more is
// written into it.
void still_ours(const io::FileLock& lock, const std::filesystem::path& dir) {
  try {
    lock.check_still_held();
  } catch (const io::LockLost& e) {
    throw std::runtime_error(fmt::format("{}; another bnn rhat may be writing into {} now, so this one writes no "
                                         "more there (never delete the lock files of a folder in use; run bnn rhat "
                                         "again once no other does: the repeats saved are kept)",
                                         e.what(), dir.string()));
  }
}

// The experiment the folder's manifest names (claimed by this command).
std::string folder_experiment(const std::filesystem::path& dir) {
  return nlohmann::json::parse(io::read_file(dir / kManifestFile)).at("experiment").get<std::string>();
}

void save_repeat(const std::filesystem::path& dir, const std::string& experiment, int64_t repeat,
                 const std::vector<ChainLosses>& chains, int64_t loss_every) {
  nlohmann::json list = nlohmann::json::array();
  for (const ChainLosses& c : chains) {
    list.push_back({{"epoch_loss", c.epoch_loss}, {"window_loss", c.window_loss}});
  }
  const nlohmann::json j = {{"experiment", experiment},
                            {"repeat", repeat},
                            {"loss_every", loss_every},
                            {"steps_per_epoch", chains.empty() ? 0 : chains.front().steps_per_epoch},
                            {"chains", list}};
  io::write_file_atomically(member_dir(dir, repeat) / kRhatChainsFile, j.dump(1) + "\n");
}

// The saved chains of `repeat`, none where it has none; throws ConfigError
// for a file that is not what this command would have written (another
// experiment's, other chains, epochs, steps or windows).
std::optional<std::vector<ChainLosses>> load_repeat(const std::filesystem::path& dir, const std::string& experiment,
                                                    int64_t repeat, const config::Config& config,
                                                    const RhatOptions& options, int64_t steps_per_epoch) {
  const auto file = member_dir(dir, repeat) / kRhatChainsFile;
  if (!std::filesystem::exists(file)) return std::nullopt;
  const auto refuse = [&](const std::string& why) {
    return config::ConfigError(
        fmt::format("{}: {}; remove it to run repeat {} again", file.string(), why, repeat));
  };
  std::vector<ChainLosses> chains;
  try {
    const auto j = nlohmann::json::parse(io::read_file(file));
    if (j.at("experiment").get<std::string>() != experiment) {
      throw refuse(fmt::format("holds the chains of experiment {}, and this folder's bnn.json is of {} (bnn "
                               "builds of other defaults, or files of two folders mixed)",
                               j.at("experiment").get<std::string>(), experiment));
    }
    if (j.at("repeat").get<int64_t>() != repeat) throw refuse(fmt::format("holds repeat {}", j.at("repeat").dump()));
    if (j.at("loss_every").get<int64_t>() != options.loss_every) {
      throw refuse(fmt::format("holds windows of {} steps, not --loss-every {}", j.at("loss_every").dump(),
                               options.loss_every));
    }
    const int64_t steps = j.at("steps_per_epoch").get<int64_t>();
    if (steps != steps_per_epoch) {
      throw refuse(fmt::format("holds chains of {} steps an epoch, not the data's {}", steps, steps_per_epoch));
    }
    // One window per loss_every steps, counted across the epochs.
    const int64_t windows = options.loss_every > 0 ? config.sampler.epochs * steps / options.loss_every : 0;
    for (const auto& c : j.at("chains")) {
      ChainLosses losses;
      losses.epoch_loss = c.at("epoch_loss").get<std::vector<double>>();
      losses.window_loss = c.at("window_loss").get<std::vector<double>>();
      losses.steps_per_epoch = steps;
      if (static_cast<int64_t>(losses.epoch_loss.size()) != config.sampler.epochs) {
        throw refuse(fmt::format("holds a chain of {} epochs, not sampler.epochs {}", losses.epoch_loss.size(),
                                 config.sampler.epochs));
      }
      if (static_cast<int64_t>(losses.window_loss.size()) != windows) {
        throw refuse(fmt::format("holds a chain of {} windows, not the {} of --loss-every {}",
                                 losses.window_loss.size(), windows, options.loss_every));
      }
      chains.push_back(std::move(losses));
    }
    if (static_cast<int64_t>(chains.size()) != options.chains) {
      throw refuse(fmt::format("holds {} chains, not --chains {}", chains.size(), options.chains));
    }
  } catch (const nlohmann::json::exception& e) {
    throw refuse(fmt::format("not a repeat's chains as bnn rhat writes them ({})", e.what()));
  }
  return chains;
}

std::string fixed(double v, int decimals) { return std::isfinite(v) ? fmt::format("{:.{}f}", v, decimals) : "-"; }

}  // namespace

double default_perturbation(const config::Config& config) {
  return std::isfinite(config.sampler.rho) ? config.sampler.rho : 1.0 / std::sqrt(50.0);
}

void validate(const config::Config& config, const RhatOptions& options) {
  if (options.chains < 2) {
    throw config::ConfigError(fmt::format("R-hat needs at least 2 chains, got --chains {}", options.chains));
  }
  if (options.repeats < 1) {
    throw config::ConfigError(fmt::format("--repeats must be at least 1, got {}", options.repeats));
  }
  if (options.rho && (!std::isfinite(*options.rho) || *options.rho < 0)) {
    throw config::ConfigError(fmt::format("--rho must be finite and >= 0, got {}", *options.rho));
  }
  if (options.loss_every < 0) {
    throw config::ConfigError(fmt::format("--loss-every must be >= 0, got {}", options.loss_every));
  }
  if (config.sampler.epochs - config.sampler.burn_in < kMinDraws) {
    throw config::ConfigError(fmt::format(
        "R-hat needs at least {} sampling epochs after burn-in: sampler.epochs {} and sampler.burn_in {} leave {}",
        kMinDraws, config.sampler.epochs, config.sampler.burn_in, config.sampler.epochs - config.sampler.burn_in));
  }
}

RhatResult run_rhat(const config::Config& config, const RhatOptions& options) {
  validate(config, options);
  RhatResult result;
  result.rho = options.rho.value_or(default_perturbation(config));
  if (const double box = config.sampler.rho_max.value_or(std::numeric_limits<double>::infinity());
      result.rho > box) {
    spdlog::warn("--rho {:g} is beyond sampler.rho_max {:g}: a chain's start lies outside the bounce box wherever "
                 "|z| > {:.3g}, and its first step folds those coordinates back into the box",
                 result.rho, box, box / result.rho);
  }
  result.burn_in = config.sampler.burn_in;
  const auto& dir = options.out_dir;
  const torch::Device device = resolve_device(config.run.device);
  const data_loaders::Dataset data = load_dataset(config, device);
  check_batch_norm_batches(config, check_model_builds(config, data), /*processes=*/1);
  // Windows need the steps per epoch, known with the data (none: the batch
  // size's own error comes later).
  const int64_t per_epoch = data_loaders::Partition::batches_in(data.train.size(), config.data.batch_size);
  if (options.loss_every > 0 && per_epoch > 0) {
    // As analyse() keeps them: whole windows that start after burn-in.
    const auto kept = [&](int64_t k) {
      return config.sampler.epochs * per_epoch / k - (config.sampler.burn_in * per_epoch + k - 1) / k;
    };
    if (kept(options.loss_every) < kMinDraws) {
      int64_t largest = options.loss_every;
      while (largest > 1 && kept(largest) < kMinDraws) --largest;
      throw config::ConfigError(fmt::format(
          "--loss-every {} leaves {} window(s) after burn-in ({} sampling steps of {} per epoch); R-hat needs at "
          "least {}: use --loss-every {} or less",
          options.loss_every, std::max<int64_t>(kept(options.loss_every), 0),
          (config.sampler.epochs - config.sampler.burn_in) * per_epoch, per_epoch, kMinDraws, largest));
    }
  }
  // Note [Run ownership]: the folder is this experiment's alone, and only this
  // process's until it returns; claimed once the data has loaded, so that a
  // wrong data.dir leaves nothing behind to refuse the corrected config.
  const io::FileLock lock = claim_rhat_directory(dir, config,
                                                 {{"rhat.chains", std::to_string(options.chains)},
                                                  {"rhat.repeats", std::to_string(options.repeats)},
                                                  {"rhat.rho", fmt::format("{}", result.rho)},
                                                  {"rhat.loss_every", std::to_string(options.loss_every)}});
  spdlog::info("bnn rhat: {} repeats x {} chains of {} from x* + {:g} N(0, I); {} training images on {}",
               options.repeats, options.chains, config.sampler.name, result.rho, data.train.size(), device.str());
  const MemberContext context{config, data, device, dir};
  ChainOptions chain_options;
  chain_options.chains = options.chains;
  chain_options.rho = result.rho;
  chain_options.loss_every = options.loss_every;
  // Note [Repeats that persist].
  const std::string experiment = folder_experiment(dir);
  const int64_t steps_per_epoch = data_loaders::Partition::batches_in(data.train.size(), config.data.batch_size);
  std::map<int64_t, std::vector<ChainLosses>> chains_of;
  std::vector<int64_t> to_run;
  for (int64_t r = 0; r < options.repeats; ++r) {
    if (auto saved = load_repeat(dir, experiment, r, config, options, steps_per_epoch)) {
      chains_of[r] = std::move(*saved);
      spdlog::info("repeat {}: its chains from {}", r, (member_dir(dir, r) / kRhatChainsFile).string());
    } else if (options.only.empty() || std::count(options.only.begin(), options.only.end(), r) > 0) {
      to_run.push_back(r);
    }
  }
  // Workers take the next repeat to run; after a failure none starts another
  // (those saved stay saved), and the first failure is rethrown.
  // A repeat's epochs: its member's x* and every chain's sampling.
  const int64_t repeat_epochs = member_epochs(config) + (options.chains - 1) * config.sampler.epochs;
  RunOptions at_once;
  at_once.members_per_device = options.at_once;
  at_once.deadline = options.deadline;
  at_once.throughput = options.throughput;
  const int64_t workers =
      to_run.empty() ? 0
                     : members_at_once(config, data, device, at_once, static_cast<int64_t>(to_run.size()),
                                       repeat_epochs, kRepeatsAtOnce);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::atomic<int64_t> not_started{0};
  std::atomic<int64_t> stopped{0};  // Note [Stop signals]: stopped part-way, lost
  std::mutex done;
  std::exception_ptr first_error;  // the first failure in time, under `done`
  // Called while the failure is handled: said now, since the other workers
  // end their repeats before it is rethrown.
  const auto record_failure = [&](int64_t repeat, const char* what) {
    spdlog::error("{} failed: {}; no other repeat starts",
                  repeat >= 0 ? fmt::format("repeat {}", repeat) : std::string("a worker"), what);
    failed = true;
    const std::lock_guard<std::mutex> lock(done);
    if (!first_error) first_error = std::current_exception();
  };
  auto worker = [&]() {
    int64_t repeat = -1;
    try {
      const runtime::WorkerStream stream(device, /*own_stream=*/workers > 1);  // as in run.cpp
      for (size_t i; !failed && (i = next++) < to_run.size();) {
        runtime::Deadline* deadline = options.deadline;
        if (runtime::stop_signal() != 0 || (deadline != nullptr && !deadline->allows_a_member(repeat_epochs))) {
          ++not_started;
          continue;
        }
        const double began = deadline != nullptr ? deadline->elapsed() : 0.0;
        repeat = to_run[i];
        std::vector<ChainLosses> chains;
        try {
          chains = run_member_chains(context, repeat, chain_options);
        } catch (const MemberStopped& e) {  // Note [Stop signals]: a repeat is kept only whole
          spdlog::info("repeat {}: stopped by {} {}; it starts again from its beginning", repeat, e.reason(), e.what());
          ++stopped;
          continue;
        }
        still_ours(lock, dir);
        save_repeat(dir, experiment, repeat, chains, options.loss_every);
        if (deadline != nullptr) deadline->member_took(deadline->elapsed() - began);
        const std::lock_guard<std::mutex> lock(done);
        chains_of[repeat] = std::move(chains);
      }
    } catch (const c10::Error& e) {
      record_failure(repeat, e.what_without_backtrace());
    } catch (const std::exception& e) {
      record_failure(repeat, e.what());
    } catch (...) {
      record_failure(repeat, "not a standard exception");
    }
  };
  if (workers == 1) {
    worker();
  } else if (workers > 1) {
    spdlog::info("{} repeats at a time on {}", workers, device.str());
    runtime::synchronize_device(device);  // the data, put there by this thread's stream
    std::vector<std::thread> threads;
    for (int64_t w = 0; w < workers; ++w) threads.emplace_back(worker);
    for (std::thread& t : threads) t.join();
  }
  if (first_error) std::rethrow_exception(first_error);
  if (const int signo = runtime::stop_signal(); signo != 0 && (not_started > 0 || stopped > 0)) {
    spdlog::warn("stopped by {}: {} repeat(s) not started, {} stopped part-way (a repeat is kept only whole)",
                 runtime::signal_name(signo), not_started.load(), stopped.load());
  } else if (not_started > 0) {
    spdlog::warn("time limit of {:g} s: {} repeat(s) not started, as a whole one would not have ended in time",
                 options.deadline->seconds(), not_started.load());
  }
  for (int64_t r = 0; r < options.repeats; ++r) {
    if (!chains_of.count(r)) {
      result.missing.push_back(r);
      continue;
    }
    result.repeats.push_back(analyse(r, std::move(chains_of[r]), result.burn_in, options.loss_every));
    const RhatScore& s = result.repeats.back().epochs;
    spdlog::info("repeat {}: R-hat {:.4f}, split R-hat {:.4f} after {} epochs of burn-in", r, s.rhat, s.split_rhat,
                 result.burn_in);
  }
  if (!result.missing.empty()) return result;  // the tables wait for every repeat
  std::vector<evaluation::RhatCurve> curves;
  for (const RhatRepeat& r : result.repeats) curves.push_back({fmt::format("repeat {}", r.repeat), r.by_epoch});
  io::StagedFiles staged;
  if (options.figures && !evaluation::has_split_rhat(curves)) {
    // Chains that never moved (obabo rejecting every block, say) have no
    // within-chain variance: the table says so with its numbers.
    result.figure_error = "no split R-hat could be computed at any epoch (each chain's epoch losses are constant: "
                          "did the chains move?)";
    spdlog::warn("figure not drawn: {}", result.figure_error);
  } else if (options.figures) {
    const auto outcome = evaluation::draw_rhat_figure(
        curves,
        fmt::format("R-hat of the mean training loss across {} chains from x* + {:g} N(0, I), burn-in {} epochs",
                    options.chains, result.rho, result.burn_in),
        dir / "figures", &staged);
    result.figure_error = outcome.error;
    if (!outcome.error.empty()) spdlog::warn("figure not drawn: {}", outcome.error);
  }
  still_ours(lock, dir);
  write_outputs(config, options, result, staged);
  return result;
}

std::string rhat_table(const RhatResult& result) {
  const bool windows = !result.repeats.empty() && result.repeats.front().windows.draws > 0;
  std::string out = fmt::format("{:<7} {:>7} {:>8} {:>12} {:>8}{}  {}\n", "repeat", "epochs", "R-hat", "split R-hat",
                                "ESS", windows ? fmt::format(" {:>10} {:>13}", "win R-hat", "win split") : "",
                                "chain mean losses after burn-in");
  double worst = 0, worst_split = 0;
  for (const RhatRepeat& r : result.repeats) {
    std::string means;
    for (const double m : r.chain_means) means += fmt::format(" {:.4f}", m);
    fmt::format_to(std::back_inserter(out), "{:<7} {:>7} {:>8} {:>12} {:>8}{} {}\n", r.repeat, r.epochs.draws,
                   fixed(r.epochs.rhat, 4), fixed(r.epochs.split_rhat, 4), fixed(r.epochs.ess, 1),
                   windows ? fmt::format(" {:>10} {:>13}", fixed(r.windows.rhat, 4), fixed(r.windows.split_rhat, 4))
                           : "",
                   means);
    worst = std::max(worst, r.epochs.rhat);
    worst_split = std::max(worst_split, r.epochs.split_rhat);
  }
  fmt::format_to(std::back_inserter(out), "{:<7} {:>7} {:>8} {:>12}\n", "max", "", fixed(worst, 4),
                 fixed(worst_split, 4));
  if (worst_split > 1.1 || worst > 1.1) {
    out += fmt::format(
        "{} above 1.1: the chains have not forgotten their starts (or disagree); run longer or check the step "
        "size.\n",
        worst > 1.1 && worst_split > 1.1 ? "R-hat and split R-hat" : worst > 1.1 ? "R-hat" : "split R-hat");
  }
  if (worst_split > 1.1 && worst < 1.0) {
    out += "R-hat below 1 with split R-hat above 1.1: the chains still drift together, a shared trend that split "
           "R-hat sees and R-hat hides; a later burn-in (--set sampler.burn_in=...) shows whether they agree once "
           "settled.\n";
  }
  return out;
}

std::vector<ChainLosses> run_member_chains(const MemberContext& context, int64_t index, const ChainOptions& options) {
  TORCH_CHECK(options.chains >= 1, "perturbed chains: need at least one chain, got ", options.chains);
  TORCH_CHECK(options.rho >= 0 && std::isfinite(options.rho), "perturbed chains: rho must be finite and >= 0, got ",
              options.rho);
  TORCH_CHECK(options.loss_every >= 0, "perturbed chains: loss_every must be >= 0, got ", options.loss_every);
  config::Config config = context.config;
  config.run.checkpoint = false;  // perturbed chains neither read nor write checkpoints
  const MemberContext without_checkpoints{config, context.data, context.device, context.run_dir};
  try {
    Member member(without_checkpoints, index);
    member.train_anchor(/*resume=*/false);
    const torch::Tensor anchor = member.flat().values().clone();
    std::vector<ChainLosses> out;
    for (int64_t c = 0; c < options.chains; ++c) out.push_back(run_chain(member, anchor, c, options));
    return out;
  } catch (const NonFiniteError& e) {
    throw std::runtime_error(fmt::format("member {}: {}", index, e.what()));
  }
}

}  // namespace bnn::pipeline
