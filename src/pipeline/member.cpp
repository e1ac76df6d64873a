#include "src/pipeline/member.h"

#include <cmath>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "models/flat_parameters.h"
#include "models/registry.h"
#include "samplers/random.h"
#include "samplers/registry.h"
#include "src/config/sampler_options.h"
#include "src/io/atomic_file.h"
#include "src/io/npy.h"
#include "src/pipeline/optimiser_phases.h"
#include "src/pipeline/sampling_phase.h"
#include "src/pipeline/stacked_group.h"
#include "src/pipeline/stored_weights.h"
#include "src/runtime/linkage.h"
#include "src/runtime/stop_signal.h"

namespace bnn::pipeline {
namespace {

// Streams of a member seed (Note [RNG streams] in samplers/random.h).
constexpr uint64_t kInitStream = 0;
constexpr uint64_t kPartitionStream = 1;
constexpr uint64_t kOptimizerOrderStream = 2;
constexpr uint64_t kSamplerStream = 3;
// 4 is bnn rhat's chain stream (src/pipeline/rhat.cpp).
constexpr uint64_t kRedrawStream = 5;  // Note [Redrawn batches]

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void write_status(const std::filesystem::path& dir, const nlohmann::json& status) {
  std::filesystem::create_directories(dir);
  io::write_file_atomically(dir / kStatusFile, status.dump(2) + "\n");
}

// Note [Member locks]: the member stops where it found its lock gone, and
// writes nothing more: another process may own the folder now.
MemberOutcome lock_lost(int64_t index, const io::LockLost& e) {
  MemberOutcome outcome{index, false, e.what()};
  outcome.lock_lost = true;
  spdlog::error("member {} stopped without writing more: {}; another process may be training it now (never delete "
                "the lock files of a run that is running). bnn run --resume continues it once no other process does",
                index, e.what());
  return outcome;
}

// Note [Member locks]: why a failure happened, where the member's lock is gone.
std::optional<io::LockLost> lock_gone(const MemberContext& context) {
  if (context.lock == nullptr) return std::nullopt;
  try {
    context.lock->check_still_held();
  } catch (const io::LockLost& e) {
    return e;
  } catch (const std::exception&) {  // cannot tell: the failure stays what it was
  }
  return std::nullopt;
}

}  // namespace

Member::Member(const MemberContext& ctx, int64_t index)
    : ctx_(ctx),
      cfg_(ctx.config),
      index_(index),
      seed_(member_seed(cfg_, index)),
      dir_(member_dir(ctx.run_dir, index)),
      partition_(ctx.data.train, cfg_.data.batch_size, samplers::derive_seed(seed_, kPartitionStream)),
      model_(models::make_model(model_spec(cfg_, ctx.data), samplers::derive_seed(seed_, kInitStream))),
      writer_(ctx.group == nullptr || ctx.group->rank() == 0) {
  state_.order_gen = samplers::make_generator(torch::kCPU, samplers::derive_seed(seed_, kOptimizerOrderStream));
  model_->to(ctx.device);
  flat_ = std::make_unique<models::FlatParameters>(*model_);
  if (cfg_.prior.biases) flat_->include_biases_in_prior();
  if (ctx.stacked != nullptr) {
    TORCH_CHECK(ctx.group == nullptr, "stacked members are not data-parallel");
    stacked_oracle_ = ctx.stacked->join(ctx.slot, *model_, *flat_, partition_);
    oracle_ = stacked_oracle_.get();
  } else if (ctx.group == nullptr) {
    model_oracle_ = std::make_unique<ModelOracle>(*model_, *flat_, partition_);
    oracle_ = model_oracle_.get();
  } else {
    model_oracle_ = std::make_unique<ModelOracle>(*model_, *flat_, partition_,
                                                  Shard{ctx.group->rank(), ctx.group->world_size()});
    parallel_oracle_ = std::make_unique<distributed::DataParallelOracle>(*model_oracle_, *ctx.group);
    oracle_ = parallel_oracle_.get();
  }
  if (cfg_.sampler.repartition) {
    const uint64_t redraw_seed = samplers::derive_seed(seed_, kRedrawStream);
    if (stacked_oracle_) {
      stacked_oracle_->redraw_batches_each_cycle(redraw_seed);
    } else {
      model_oracle_->redraw_batches_each_cycle(redraw_seed);
    }
  }
  write_files([&] {
    // Not create_directories: a run folder deleted meanwhile is not made again
    // (the error that follows is the lost lock's: Note [Run ownership]).
    for (const auto& folder : {dir_, dir_ / kSamplesDir}) {
      std::error_code ec;
      if (std::filesystem::create_directory(folder, ec) || std::filesystem::is_directory(folder)) continue;
      throw std::runtime_error(fmt::format("cannot create the folder {}: {}", folder.string(),
                                           std::filesystem::exists(folder) ? "a file of that name is in its place"
                                                                           : ec.message()));
    }
    if (ctx.ood != nullptr) {
      for (const OodSet& set : *ctx.ood) {
        std::filesystem::create_directories(ood_member_dir(dir_, set.name) / kSamplesDir);
      }
    }
  });
}

bool Member::writes() const {
  if (!writer_ || failed_write_) return false;
  if (ctx_.lock != nullptr) ctx_.lock->check_still_held();
  return true;
}

void Member::write_files(const std::function<void()>& write) const {
  if (!writes()) return;
  if (ctx_.group == nullptr) {
    write();
    return;
  }
  try {
    write();
  } catch (const std::exception& e) {
    failed_write_ = std::current_exception();
    failed_write_code_ = io::exit_code_of(e);
    spdlog::warn("member {}: {}; rank 0 writes nothing more, and the {} ranks stop together where they next agree "
                 "(the epoch's or the phase's end)",
                 index_, e.what(), ctx_.group->world_size());
  }
}

void Member::agree_on_writes() {
  if (ctx_.group != nullptr) {
    ctx_.group->stop_if_rank_zero_failed(failed_write_, failed_write_code_, fmt::format("in member {}", index_));
  }
}

std::string Member::arithmetic_now() const {
  std::string out = ctx_.device.str();
  if (ctx_.device.is_cpu()) {
    const int threads = torch::get_num_threads();
    out += fmt::format(", {} thread{}", threads, threads == 1 ? "" : "s");
  }
  if (ctx_.group != nullptr) out += fmt::format(", data-parallel over {} ranks", ctx_.group->world_size());
  out += ctx_.stacked != nullptr ? fmt::format(", stacked in {} slots", ctx_.stacked->slots()) : ", own model";
  return fmt::format("{} [{}]", out, runtime::arithmetic_platform(ctx_.device));
}

void Member::run() {
  const Position at = train_anchor(/*resume=*/true);
  // Note [Divergence check]: an x* worse than a uniform guess is said as
  // soon as it is made; the member is marked when its sampling ends.
  if (at.phase == Phase::kSample && at.epochs_done == 0) {
    if (const auto d = divergence()) {
      spdlog::warn("member {}: {}; it will be marked diverged when its sampling ends", index_, d->reason);
    }
  }
  SamplingPhase sampling(cfg_, index_, partition_, ctx_.data.test, ctx_.data.num_classes,
                         [this] { return make_sampler(state_.anchor, samplers::derive_seed(seed_, kSamplerStream)); },
                         *this);
  sampling.run(state_, flat_->values(), at.epochs_done, faults_);
  agree_on_writes();  // the mean probabilities, written after the last checkpoint
  // Its last gradient is taken: the others need not wait while it writes its results.
  if (stacked_oracle_) stacked_oracle_->leave_group();
}

Position Member::train_anchor(bool resume) {
  spdlog::info("member {}: seed {}, {} ({} parameters), {} batches of {}", index_, seed_, model_->pretty_string(),
               flat_->numel(), partition_.num_batches(), partition_.batch_size());
  // Note [Flat Adam]: over the flat vector, unless a checkpoint holds the per-tensor state.
  std::unique_ptr<torch::optim::Adam> adam;
  auto adam_in = [&](bool flat_layout) -> torch::optim::Adam& {
    adam = make_adam(*flat_, *model_, flat_layout, cfg_.adam.lr);
    return *adam;
  };
  Position at{cfg_.map.optimizer == "lbfgs" ? Phase::kMap : Phase::kAdam, 0};
  check_ranks_see_the_checkpoint(resume);
  if (resume && std::filesystem::exists(checkpoint_path())) {
    at = restore_member_checkpoint(
        checkpoint_path(), ctx_.device, seed_, state_, flat_->values(), *model_, adam_in,
        [this] { return make_sampler(state_.anchor, samplers::derive_seed(seed_, kSamplerStream)); });
    spdlog::info("member {}: resuming from {} after {} epoch(s) of {}", index_, checkpoint_path().string(),
                 at.epochs_done, phase_name(at.phase));
  } else {
    save_npy(point_weights_path(dir_, "init"), flat_->values());
  }
  const std::string now = arithmetic_now();
  if (state_.arithmetic.empty()) {
    state_.arithmetic.push_back(now);
  } else if (!same_arithmetic(state_.arithmetic.back(), now)) {
    spdlog::warn("member {}: resumed under other arithmetic (checkpoint: {}; now: {}): it goes on, but agrees "
                 "with an uninterrupted run to float rounding, not bit for bit",
                 index_, state_.arithmetic.back(), now);
    state_.arithmetic.push_back(now);
  }
  // The same: nothing to add. An older bnn's entry, without its platform,
  // stays as it is: where its part of the run ran is not known.
  if (!adam) adam_in(/*flat_layout=*/true);
  check_ranks_agree(fmt::format("the start of {}", phase_name(at.phase)));
  OptimiserPhases phases(cfg_, index_, *oracle_, *flat_, partition_, state_.order_gen, *this);
  if (at.phase == Phase::kMap) {  // no checkpoint inside: a killed L-BFGS reruns (deterministically)
    phases.map(model_->parameters());
    save_npy(point_probs_path(dir_, "map"), predict());
    write_ood(point_probs_path({}, "map"), torch::kFloat);
    write_files([&] {
      write_stored_point(point_weights_path(dir_, "map"), point_buffers_path(dir_, "map"), flat_->values(), *model_,
                         torch::kFloat);
    });
    agree_on_writes();  // Note [Rank 0's failures]: the phase's point estimate
    at = {Phase::kSample, 0};
  }
  if (at.phase == Phase::kAdam) {
    phases.adam(*adam, at.epochs_done);
    save_npy(point_weights_path(dir_, "adam"), flat_->values());
    save_npy(point_probs_path(dir_, "adam"), predict());
    write_ood(point_probs_path({}, "adam"), torch::kFloat);
    agree_on_writes();
    at = {Phase::kSwa, 0};
  }
  if (at.phase == Phase::kSwa) {
    phases.swa(*adam, at.epochs_done, state_.swa_sum, state_.swa_count);
    save_npy(point_probs_path(dir_, "swa"), predict());
    write_ood(point_probs_path({}, "swa"), torch::kFloat);
    write_files([&] {
      write_stored_point(point_weights_path(dir_, "swa"), point_buffers_path(dir_, "swa"), flat_->values(), *model_,
                         torch::kFloat);
    });
    agree_on_writes();
    at = {Phase::kSample, 0};
  }
  return at;
}

std::optional<Divergence> Member::divergence() const {
  return check_divergence(state_.trace, anchor_point(cfg_), cfg_, ctx_.data.num_classes, anchor_accuracy(dir_, cfg_));
}

void Member::discard_checkpoint() const {
  // Called once status.json says done, its lock checked just before: the
  // member's last word, whatever happens to the lock file now.
  if (!writer_) return;
  std::error_code ec;
  std::filesystem::remove(checkpoint_path(), ec);
}

int64_t Member::thin_steps() const { return pipeline::thin_steps(cfg_, partition_); }

std::unique_ptr<samplers::Sampler> Member::make_sampler(const torch::Tensor& anchor, uint64_t seed) {
  return samplers::make_sampler(cfg_.sampler.name, *oracle_, anchor,
                                config::langevin_options(cfg_, partition_.num_batches(), flat_->numel()), seed);
}

void Member::write_npy(const std::filesystem::path& name, const torch::Tensor& t) const {
  save_npy(dir_ / name, t);
}

void Member::save_npy(const std::filesystem::path& path, const torch::Tensor& t) const {
  write_files([&] { io::write_npy(path, t); });  // Note [Data-parallel member]: rank 0 writes
}

// Note [Data-parallel member]: every rank resumes from rank 0's checkpoint. A
// rank that sees none (or another file) would start elsewhere in the
// schedule, and the ranks' collectives (the sampler's anchor gradients, say)
// would no longer pair up: gloo aborts the process. So before restoring, the
// ranks compare whether they see a checkpoint and its size.
void Member::check_ranks_see_the_checkpoint(bool resume) {
  if (ctx_.group == nullptr) return;
  agree_on_writes();  // the member's folders
  std::error_code ec;
  const bool has = resume && std::filesystem::exists(checkpoint_path(), ec);
  const auto size = has ? static_cast<int64_t>(std::filesystem::file_size(checkpoint_path(), ec)) : int64_t{0};
  // A file this rank cannot look at (-1) never matches another rank's.
  if (ctx_.group->identical_on_all_ranks(torch::tensor({int64_t{has ? 1 : 0}, ec ? int64_t{-1} : size}))) return;
  const std::string sees = ec  ? fmt::format("cannot look at {}: {}", checkpoint_path().string(), ec.message())
                           : has ? fmt::format("sees {} of {} bytes", checkpoint_path().string(), size)
                                 : fmt::format("sees no {}", checkpoint_path().string());
  throw std::runtime_error(fmt::format(
      "member {}: the {} ranks do not see the same checkpoint (rank {} {}); every rank must resume from rank "
      "0's run directory: give them all the same folder, on a file system they share",
      index_, ctx_.group->world_size(), ctx_.group->rank(), sees));
}

// Note [Data-parallel member]: ranks that disagree would silently average
// gradients of different chains; this catches, e.g., a resume on a rank that
// could not read rank 0's checkpoint.
void Member::check_ranks_agree(const std::string& where) {
  agree_on_writes();
  if (ctx_.group == nullptr || ctx_.group->identical_on_all_ranks(flat_->values())) return;
  throw std::runtime_error(fmt::format(
      "member {}: the {} ranks hold different parameters at {}; every rank must start from the same state "
      "(to resume, all ranks must see rank 0's run directory)",
      index_, ctx_.group->world_size(), where));
}

torch::Tensor Member::predict() {
  return predict_test_probabilities(*model_, partition_, ctx_.data.test, cfg_.evaluation.bn_batches);
}

void Member::write_ood(const std::filesystem::path& name, torch::ScalarType dtype) {
  if (ctx_.ood == nullptr) return;
  write_files([&] {  // Note [Data-parallel member]: rank 0 writes
    for (const OodSet& set : *ctx_.ood) {
      io::write_npy(ood_member_dir(dir_, set.name) / name, predict_split_probabilities(*model_, set.images).to(dtype));
    }
  });
}

// The current parameters and the BatchNorm statistics predict() just recalibrated.
void Member::store_sample(int64_t step) {
  const auto dtype = cfg_.evaluation.sample_weights_dtype == "float16" ? torch::kHalf : torch::kFloat;
  write_files([&] {  // Note [Data-parallel member]: rank 0 writes
    write_stored_point(sample_weights_path(dir_, step), sample_buffers_path(dir_, step), flat_->values(), *model_,
                       dtype);
  });
}

double Member::accuracy(const torch::Tensor& probs) const {
  return probs.argmax(1).eq(ctx_.data.test.labels).to(torch::kDouble).mean().item<double>();
}

// Loss and parameters must be finite at every epoch end (one sync per epoch).
void Member::check_finite(const std::string& phase, int64_t epoch, double loss) {
  check_ranks_agree(fmt::format("the end of {} epoch {}", phase, epoch + 1));
  if (std::isfinite(loss) && torch::isfinite(flat_->values()).all().item<bool>()) return;
  // The phase's own step: Adam's and SWA's learning rates, the sampler's h
  // (bnn rhat's phases are "chain C sample"); L-BFGS ("map") has none.
  const char* advice = phase == "adam"                              ? "; lower adam.lr"
                       : phase == "swa"                             ? "; lower swa.lr"
                       : phase.find("sample") != std::string::npos ? "; lower sampler.step_size"
                                                                    : "";
  throw NonFiniteError(fmt::format("non-finite {} in {} epoch {} (mean training loss {}){}",
                                   std::isfinite(loss) ? "parameters" : "loss", phase, epoch + 1, loss, advice));
}

void Member::log_epoch(const std::string& phase, int64_t epoch, int64_t epochs, double loss, double acc, double rate,
                       Clock::time_point start) {
  const double secs = seconds_since(start);
  last_epoch_seconds_ = secs;
  spdlog::info("member {} {:>6} epoch {:>3}/{}: loss {:.4f}  test acc {:.4f}  {} {:.3g}  {:.1f}s", index_, phase,
               epoch + 1, epochs, loss, acc, phase == "sample" ? "h" : "lr", rate, secs);
  state_.trace += fmt::format("{},{},{:.17g},{:.17g},{:.17g},{:.3f}\n", phase, epoch + 1, loss, acc, rate, secs);
  write_files([&] {
    io::write_file_atomically(dir_ / kTraceFile, "phase,epoch,loss,test_accuracy,lr_or_h,seconds\n" + state_.trace);
  });
}

void Member::save_checkpoint(Position at, torch::optim::Adam* adam) {
  if (cfg_.run.checkpoint) {
    write_files([&] { save_member_checkpoint(checkpoint_path(), seed_, at, state_, flat_->values(), *model_, adam); });
  }
  agree_on_writes();  // Note [Rank 0's failures]: this epoch's files
  // Note [Time limit], Note [Stop signals]: stop here unless the member is
  // done; the deadline stops only a member with a checkpoint to resume from.
  if (ctx_.deadline != nullptr) ctx_.deadline->epoch_took(last_epoch_seconds_);
  const bool last = at.phase == Phase::kSample && at.epochs_done == cfg_.sampler.epochs;
  if (last) return;
  const int signo = runtime::stop_signal();
  const bool late = ctx_.deadline != nullptr && cfg_.run.checkpoint && !ctx_.deadline->allows_an_epoch();
  bool stop = signo != 0 || late;
  if (ctx_.group != nullptr) stop = ctx_.group->any_rank(stop);  // the ranks stop together
  if (!stop) return;
  throw MemberStopped(signo != 0 ? runtime::signal_name(signo) : late ? "the time limit" : "the other ranks' stop",
                      fmt::format("after {} epoch {}", phase_name(at.phase), at.epochs_done));
}

models::ModelSpec model_spec(const config::Config& config, const data_loaders::Dataset& data) {
  models::ModelSpec spec;
  spec.name = config.model.name;
  spec.input_shape = data.input_shape;
  spec.num_classes = data.num_classes;
  spec.hidden = config.model.hidden;
  spec.batch_norm = config.model.batch_norm;
  spec.path = config.model.path;
  spec.init_from_file = config.model.init == "file";
  return spec;
}

torch::Tensor predict_split_probabilities(models::Classifier& model, const data_loaders::Split& split) {
  return models::predict_probabilities(model, split.size(),
                                       [&split](int64_t start, int64_t n) { return split.slice(start, n).inputs(); });
}

torch::Tensor predict_test_probabilities(models::Classifier& model, const data_loaders::Partition& partition,
                                         const data_loaders::Split& test, int64_t bn_batches) {
  models::recalibrate_batch_norm(model, partition.first_batches(bn_batches).inputs());
  return predict_split_probabilities(model, test);
}

std::string out_of_memory_line(const std::string& what, const std::string& device) {
  if (what.find("out of memory") == std::string::npos) return {};
  const std::string size = "([0-9.]+ (?:[KMGT]i?B|bytes))";
  // The first pattern that matches, of each list (LibTorch 2.x, then 1.13).
  auto find = [&](std::initializer_list<std::string> patterns) -> std::string {
    for (const auto& pattern : patterns) {
      std::smatch m;
      if (std::regex_search(what, m, std::regex(pattern))) return m[1].str();
    }
    return {};
  };
  const std::string asked = find({"Tried to allocate " + size});
  const std::string free = find({"of which " + size + " is free", size + " free;"});
  const std::string total = find({"total capacity of " + size, size + " total capacity"});
  std::string line = "out of memory on " + device;
  if (!asked.empty()) line += ": asked for " + asked;
  if (!free.empty()) line += (asked.empty() ? ": " : ", ") + free + " free";
  if (!total.empty()) line += " of " + total;
  return line + "; train fewer members at once (--members-per-device) or use smaller batches";
}

void on_rank_zero(distributed::ProcessGroup* group, const std::string& when, const std::function<void()>& work) {
  if (group == nullptr) {
    work();
    return;
  }
  std::exception_ptr error;
  int code = 0;
  if (group->rank() == 0) {
    try {
      work();
    } catch (const std::exception& e) {
      error = std::current_exception();
      code = io::exit_code_of(e);
    } catch (...) {
      error = std::current_exception();
    }
  }
  group->stop_if_rank_zero_failed(error, code, when);
}

MemberOutcome run_member(const MemberContext& context, int64_t index) {
  const auto start = Clock::now();
  const auto dir = member_dir(context.run_dir, index);
  const bool writer = context.group == nullptr || context.group->rank() == 0;  // Note [Data-parallel member]
  std::error_code ec;
  if (writer) std::filesystem::remove(dir / kStatusFile, ec);  // a rerun is unfinished until it finishes
  MemberOutcome outcome{index, false, ""};
  nlohmann::json status = {{"member", index}};
  if (context.group != nullptr) status["data_parallel_ranks"] = context.group->world_size();
  // How the last process that ran it trained it (a resume may differ: Note
  // [Stacked members in a run] says what that changes).
  status["device"] = context.device.str();
  if (context.stacked != nullptr) status["stacked_slots"] = context.stacked->slots();
  try {
    Member member(context, index);
    status["seed"] = member.seed();
    member.run();
    outcome.ok = true;
    status["status"] = "done";
    status["samples"] = member.samples();
    // Note [Stored samples]: what bnn predict --method bayes may average:
    // the k-th, 2k-th, ... retained steps, and no other. Rank 0's to look
    // at, its failure every rank's (Note [Rank 0's failures]).
    const auto& e = context.config.evaluation;
    const auto sample_weights = [&] {
      const std::vector<int64_t> stored = stored_sample_steps(dir);
      std::vector<int64_t> expected;
      const Retention retention = retention_of(context.config, member.partition());
      for (int64_t m = 1; e.save_sample_weights && m * e.sample_weights_every <= member.samples(); ++m) {
        expected.push_back(retention.retained_step(m * e.sample_weights_every));
      }
      status["sample_weights"] = stored.size();
      if (stored != expected) {
        status["sample_weights_incomplete"] = true;
        spdlog::warn("member {}: the weights of {} of its {} retained samples are stored, where "
                     "evaluation.save_sample_weights {} and sample_weights_every {} keep {} (the processes that ran "
                     "it stored different ones): bnn predict --method bayes will not use it",
                     index, stored.size(), member.samples(), e.save_sample_weights, e.sample_weights_every,
                     expected.size());
      }
    };
    // What `bnn evaluate --burn-in/--thin` needs to select stored samples.
    status["batches_per_epoch"] = member.batches_per_epoch();
    status["thin_steps"] = member.thin_steps();
    status["arithmetic"] = member.arithmetic();
    if (const std::string w = member.sampler_warning(); !w.empty()) {
      spdlog::warn("member {}: {}", index, w);
      status["sampler_warning"] = w;
    }
    if (const auto d = member.divergence()) {
      outcome.diverged = true;
      spdlog::error("member {} diverged: {}", index, d->reason);
      status["diverged"] = {{"reason", d->reason},
                            {"chain_loss", d->chain_loss},
                            {"reference_loss", d->reference_loss},
                            {"chain_accuracy", d->chain_accuracy},
                            {"reference_accuracy", d->reference_accuracy}};
    }
    status["seconds"] = seconds_since(start);
    on_rank_zero(context.group, fmt::format("as member {} ended", index), [&] {
      sample_weights();
      if (context.lock != nullptr) context.lock->check_still_held();
      write_status(dir, status);
    });
    member.discard_checkpoint();
    return outcome;
  } catch (const io::LockLost& e) {
    return lock_lost(index, e);
  } catch (const MemberStopped& e) {
    outcome.stopped = true;
    spdlog::info("member {}: stopped by {} {} ({})", index, e.reason(), e.what(),
                 context.config.run.checkpoint ? "its checkpoint is kept; bnn run --resume continues it"
                                               : "run.checkpoint is false: bnn run --resume starts it again");
    return outcome;
  } catch (const NonFiniteError& e) {
    outcome.message = e.what();
  } catch (const c10::Error& e) {
    if (const auto lost = lock_gone(context)) return lock_lost(index, *lost);
    // In a data-parallel member such an error may hit one rank only (say, out
    // of memory): going on to the next member would pair that rank's
    // collectives with the others' current ones. It ends the run instead; a
    // non-finite loss or parameters, found on all ranks at once after their
    // agreement check, fails just the member.
    if (context.group != nullptr) throw;
    outcome.message = e.what_without_backtrace();
    if (const std::string line = out_of_memory_line(outcome.message, context.device.str()); !line.empty()) {
      outcome.message = line;
    }
  } catch (const std::exception&) {
    // An I/O error may be the new lock holder's doing (it removes the
    // temporary files it finds): then the lost lock is the story.
    if (const auto lost = lock_gone(context)) return lock_lost(index, *lost);
    throw;
  }
  status["status"] = "failed";
  status["error"] = outcome.message;
  spdlog::error("member {} failed: {}", index, outcome.message);
  status["seconds"] = seconds_since(start);
  if (writer) {
    try {
      if (context.lock != nullptr) context.lock->check_still_held();
    } catch (const io::LockLost& e) {
      return lock_lost(index, e);
    }
  }
  on_rank_zero(context.group, fmt::format("as member {} ended", index), [&] { write_status(dir, status); });
  return outcome;
}

}  // namespace bnn::pipeline
