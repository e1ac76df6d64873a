#include "src/pipeline/member.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "models/flat_parameters.h"
#include "models/registry.h"
#include "samplers/random.h"
#include "samplers/registry.h"
#include "src/distributed/data_parallel_oracle.h"
#include "src/io/atomic_file.h"
#include "src/io/npy.h"
#include "src/pipeline/map_estimate.h"
#include "src/pipeline/model_oracle.h"
#include "src/pipeline/progress.h"
#include "src/pipeline/stored_weights.h"

namespace bnn::pipeline {
namespace {

// Streams of a member seed (Note [RNG streams] in samplers/random.h).
constexpr uint64_t kInitStream = 0;
constexpr uint64_t kPartitionStream = 1;
constexpr uint64_t kOptimizerOrderStream = 2;
constexpr uint64_t kSamplerStream = 3;
constexpr uint64_t kChainStream = 4;  // Note [Perturbed chains] in member.h

class NonFiniteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using Clock = std::chrono::steady_clock;

enum class Phase : int64_t { kAdam = 0, kSwa = 1, kSample = 2, kMap = 3 };

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kAdam: return "adam";
    case Phase::kSwa: return "swa";
    case Phase::kSample: return "sampling";
    case Phase::kMap: return "map";
  }
  throw std::runtime_error("checkpoint: unknown phase");
}

// Where a member stands: `epochs_done` epochs of `phase` are complete.
struct Position {
  Phase phase;
  int64_t epochs_done;
};

// Note [Fault injection]: for the crash-and-resume test only. When the
// environment variable BNN_KILL_AT_SAMPLER_STEP=N is set, the process kills
// itself with SIGKILL right after sampler step N (no clean-up of any kind,
// exactly like the OOM killer or a pre-empted node).
int64_t fault_injection_step() {
  const char* v = std::getenv("BNN_KILL_AT_SAMPLER_STEP");
  return v == nullptr ? -1 : std::atoll(v);
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Per-member state and the phases, in order.
class Member {
 public:
  Member(const MemberContext& ctx, int64_t index)
      : ctx_(ctx),
        cfg_(ctx.config),
        index_(index),
        seed_(samplers::derive_seed(cfg_.run.seed, static_cast<uint64_t>(index))),
        dir_(member_dir(ctx.run_dir, index)),
        partition_(ctx.data.train, cfg_.data.batch_size, samplers::derive_seed(seed_, kPartitionStream)),
        model_(models::make_model(model_spec(cfg_, ctx.data), samplers::derive_seed(seed_, kInitStream))),
        order_gen_(samplers::make_generator(torch::kCPU, samplers::derive_seed(seed_, kOptimizerOrderStream))),
        kill_at_step_(fault_injection_step()),
        writer_(ctx.group == nullptr || ctx.group->rank() == 0) {
    model_->to(ctx.device);
    flat_ = std::make_unique<models::FlatParameters>(*model_);
    if (cfg_.prior.biases) flat_->include_biases_in_prior();
    if (ctx.group == nullptr) {
      model_oracle_ = std::make_unique<ModelOracle>(*model_, *flat_, partition_);
      oracle_ = model_oracle_.get();
    } else {
      model_oracle_ = std::make_unique<ModelOracle>(*model_, *flat_, partition_,
                                                    Shard{ctx.group->rank(), ctx.group->world_size()});
      parallel_oracle_ = std::make_unique<distributed::DataParallelOracle>(*model_oracle_, *ctx.group);
      oracle_ = parallel_oracle_.get();
    }
    if (writer_) std::filesystem::create_directories(dir_ / "samples");
  }

  void run() { sampling_phase(train_anchor(/*resume=*/true).epochs_done); }

  // Note [Perturbed chains] in member.h.
  std::vector<ChainLosses> run_chains(const ChainOptions& options) {
    TORCH_CHECK(!cfg_.run.checkpoint, "perturbed chains neither read nor write checkpoints");
    train_anchor(/*resume=*/false);
    anchor_ = flat_->values().clone();
    std::vector<ChainLosses> out;
    for (int64_t c = 0; c < options.chains; ++c) out.push_back(run_chain(c, options));
    return out;
  }

 private:
  // Adam and SWA (or L-BFGS to the MAP point), from the checkpoint if `resume`
  // and one exists: leaves the
  // model at x* (or at the restored sampling state). Returns where sampling
  // starts.
  Position train_anchor(bool resume) {
    spdlog::info("member {}: seed {}, {} ({} parameters), {} batches of {}", index_, seed_, model_->pretty_string(),
                 flat_->numel(), partition_.num_batches(), partition_.batch_size());
    torch::optim::Adam adam(model_->parameters(), torch::optim::AdamOptions(cfg_.adam.lr));
    Position at{cfg_.map.optimizer == "lbfgs" ? Phase::kMap : Phase::kAdam, 0};
    if (resume && std::filesystem::exists(checkpoint_path())) {
      at = restore(adam);
    } else {
      write_npy("init_weights.npy", flat_->values());
    }
    check_ranks_agree(fmt::format("the start of {}", phase_name(at.phase)));
    if (at.phase == Phase::kMap) {  // no checkpoint inside: a killed L-BFGS reruns (deterministically)
      map_phase();
      write_npy("map_probs.npy", predict());
      if (writer_) {
        write_stored_point(dir_ / "map_weights.npy", dir_ / "map_buffers.npy", flat_->values(), *model_, torch::kFloat);
      }
      at = {Phase::kSample, 0};
    }
    if (at.phase == Phase::kAdam) {
      adam_phase(adam, at.epochs_done);
      write_npy("adam_weights.npy", flat_->values());
      write_npy("adam_probs.npy", predict());
      at = {Phase::kSwa, 0};
    }
    if (at.phase == Phase::kSwa) {
      swa_phase(adam, at.epochs_done);
      write_npy("swa_probs.npy", predict());
      if (writer_) {
        write_stored_point(dir_ / "swa_weights.npy", dir_ / "swa_buffers.npy", flat_->values(), *model_, torch::kFloat);
      }
      at = {Phase::kSample, 0};
    }
    return at;
  }

 public:
  // Removes the checkpoint once the member's status says done.
  void discard_checkpoint() const {
    if (!writer_) return;
    std::error_code ec;
    std::filesystem::remove(checkpoint_path(), ec);
  }

  int64_t samples() const { return samples_; }
  int64_t batches_per_epoch() const { return partition_.num_batches(); }
  int64_t thin_steps() const { return cfg_.sampler.thin == 0 ? partition_.num_batches() : cfg_.sampler.thin; }
  uint64_t seed() const { return seed_; }

 private:
  // Output files: written by rank 0 only (Note [Data-parallel member]).
  void write_npy(const std::filesystem::path& name, const torch::Tensor& t) const {
    if (writer_) io::write_npy(dir_ / name, t);
  }

  // Note [Data-parallel member]: ranks that disagree would silently average
  // gradients of different chains; this catches, e.g., a resume on a rank
  // that could not read rank 0's checkpoint.
  void check_ranks_agree(const std::string& where) {
    if (ctx_.group == nullptr || ctx_.group->identical_on_all_ranks(flat_->values())) return;
    throw std::runtime_error(fmt::format(
        "member {}: the {} ranks hold different parameters at {}; every rank must start from the same state "
        "(to resume, all ranks must see rank 0's run directory)",
        index_, ctx_.group->world_size(), where));
  }

  // Note [BatchNorm]: recalibrate on the first K training batches, predict.
  torch::Tensor predict() {
    return predict_test_probabilities(*model_, partition_, ctx_.data.test, cfg_.evaluation.bn_batches);
  }

  // Note [Stored samples] in stored_weights.h: the k-th, 2k-th, ... retained sample.
  bool keeps_sample_weights() const {
    return cfg_.evaluation.save_sample_weights && samples_ % cfg_.evaluation.sample_weights_every == 0;
  }

  // The current parameters and the BatchNorm statistics predict() just recalibrated.
  void store_sample(int64_t step) {
    if (!writer_) return;  // Note [Data-parallel member]: rank 0 writes
    const auto dtype = cfg_.evaluation.sample_weights_dtype == "float16" ? torch::kHalf : torch::kFloat;
    write_stored_point(sample_weights_path(dir_, step), sample_buffers_path(dir_, step), flat_->values(), *model_,
                       dtype);
  }

  double accuracy(const torch::Tensor& probs) const {
    return probs.argmax(1).eq(ctx_.data.test.labels).to(torch::kDouble).mean().item<double>();
  }

  // Loss and parameters must be finite at every epoch end (one sync per epoch).
  void check_finite(const std::string& phase, int64_t epoch, double loss) {
    check_ranks_agree(fmt::format("the end of {} epoch {}", phase, epoch + 1));
    if (std::isfinite(loss) && torch::isfinite(flat_->values()).all().item<bool>()) return;
    throw NonFiniteError(fmt::format("non-finite {} in {} epoch {} (mean training loss {}); lower the step size",
                                     std::isfinite(loss) ? "parameters" : "loss", phase, epoch + 1, loss));
  }

  void log_epoch(const std::string& phase, int64_t epoch, int64_t epochs, double loss, double acc, double rate,
                 Clock::time_point start) {
    const double secs = seconds_since(start);
    spdlog::info("member {} {:>6} epoch {:>3}/{}: loss {:.4f}  test acc {:.4f}  {} {:.3g}  {:.1f}s", index_, phase,
                 epoch + 1, epochs, loss, acc, phase == "sample" ? "h" : "lr", rate, secs);
    trace_ += fmt::format("{},{},{:.17g},{:.17g},{:.17g},{:.3f}\n", phase, epoch + 1, loss, acc, rate, secs);
    if (writer_) {
      io::write_file_atomically(dir_ / "trace.csv", "phase,epoch,loss,test_accuracy,lr_or_h,seconds\n" + trace_);
    }
  }

  // One optimiser epoch over the fixed batches in a fresh random order, with
  // the loss mean CE + (lambda/2)||x_w||^2 / N_D (DESIGN.md §4). Calls
  // after_step() after each update. Returns the mean training CE.
  template <typename AfterStep>
  double optimiser_epoch(torch::optim::Adam& adam, const std::string& label, AfterStep after_step) {
    const int64_t n = partition_.num_batches();
    const double batch = static_cast<double>(partition_.batch_size());
    const double prior_scale = cfg_.prior.precision / static_cast<double>(partition_.num_examples());
    const torch::Tensor order = torch::randperm(n, order_gen_, torch::TensorOptions().dtype(torch::kLong));
    torch::Tensor loss_sum = torch::zeros({}, flat_->values().options());
    Progress progress(label, n);
    for (int64_t i = 0; i < n; ++i) {
      loss_sum += oracle_->evaluate(order[i].item<int64_t>());
      {
        torch::NoGradGuard no_grad;
        flat_->grads().mul_(1.0 / batch).addcmul_(flat_->prior_mask(), flat_->values(), prior_scale);
      }
      adam.step();
      after_step();
      progress.update(i + 1);
    }
    return loss_sum.item<double>() / static_cast<double>(partition_.num_examples());
  }

  static void set_lr(torch::optim::Adam& adam, double lr) {
    for (auto& group : adam.param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
  }

  void adam_phase(torch::optim::Adam& adam, int64_t first_epoch) {
    const int64_t epochs = cfg_.adam.epochs;
    for (int64_t e = first_epoch; e < epochs; ++e) {
      const auto start = Clock::now();
      // Linear decay to 0 over T_train epochs (PolynomialLR, power 1, stepped per epoch).
      const double lr = cfg_.adam.lr * (1.0 - static_cast<double>(e) / static_cast<double>(epochs));
      set_lr(adam, lr);
      const double loss = optimiser_epoch(adam, fmt::format("member {} adam {}/{}", index_, e + 1, epochs), [] {});
      check_finite("adam", e, loss);
      log_epoch("adam", e, epochs, loss, accuracy(predict()), lr, start);
      save_checkpoint({Phase::kAdam, e + 1}, &adam);
    }
  }

  // x* = the MAP point by full-batch L-BFGS (src/pipeline/map_estimate.h).
  void map_phase() {
    const auto start = Clock::now();
    spdlog::info("member {}: L-BFGS to the MAP point over {} examples (at most {} iterations, tolerance {})",
                 index_, partition_.num_examples(), cfg_.map.iterations, cfg_.map.tolerance);
    const MapResult r =
        find_map(*oracle_, model_->parameters(), partition_.num_examples(), cfg_.prior.precision, cfg_.map);
    check_finite("map", 0, r.objective);
    if (!r.converged) {
      spdlog::warn("member {}: L-BFGS stopped after {} evaluations with max |grad| {:.3g} above map.tolerance {}; "
                   "raise map.iterations or the tolerance",
                   index_, r.evaluations, r.max_gradient, cfg_.map.tolerance);
    }
    spdlog::info("member {}: MAP after {} full-data evaluations: F = {:.6f}, mean loss {:.6f}, max |grad| {:.3g}",
                 index_, r.evaluations, r.objective, r.mean_loss, r.max_gradient);
    log_epoch("map", 0, 1, r.mean_loss, accuracy(predict()), 0.0, start);
  }

  // SWA: x* = equal-weight average of every iterate; the model is left at x*.
  void swa_phase(torch::optim::Adam& adam, int64_t first_epoch) {
    const int64_t epochs = cfg_.swa.epochs;
    set_lr(adam, cfg_.swa.lr);
    if (first_epoch == 0) {
      swa_sum_ = torch::zeros_like(flat_->values(), torch::TensorOptions().dtype(torch::kDouble));
      swa_count_ = 0;
    }
    for (int64_t e = first_epoch; e < epochs; ++e) {
      const auto start = Clock::now();
      const double loss =
          optimiser_epoch(adam, fmt::format("member {} swa {}/{}", index_, e + 1, epochs), [&] {
            torch::NoGradGuard no_grad;
            swa_sum_.add_(flat_->values());
            ++swa_count_;
          });
      check_finite("swa", e, loss);
      log_epoch("swa", e, epochs, loss, accuracy(predict()), cfg_.swa.lr, start);
      save_checkpoint({Phase::kSwa, e + 1}, &adam);
    }
    torch::NoGradGuard no_grad;
    flat_->values().copy_(swa_sum_ / static_cast<double>(swa_count_));
  }

  samplers::LangevinOptions sampler_options() const {
    return langevin_options(cfg_, partition_.num_batches(), flat_->numel());
  }

  // The configured sampler at anchor_ (x*), where the parameters must be.
  std::unique_ptr<samplers::Sampler> make_sampler(uint64_t seed) {
    return samplers::make_sampler(cfg_.sampler.name, *oracle_, anchor_, sampler_options(), seed);
  }

  // One epoch of `sampler`: a step per batch, after_step(step_loss) after
  // each. Returns the mean training CE per example.
  template <typename AfterStep>
  double sampling_epoch(samplers::Sampler& sampler, const std::string& label, AfterStep after_step) {
    const int64_t n = partition_.num_batches();
    torch::Tensor loss_sum = torch::zeros({}, flat_->values().options());
    Progress progress(label, n);
    for (int64_t i = 0; i < n; ++i) {
      const torch::Tensor step_loss = sampler.step();
      loss_sum += step_loss;
      after_step(step_loss);
      progress.update(i + 1);
    }
    return loss_sum.item<double>() / static_cast<double>(partition_.num_examples());
  }

  // Chain c of Note [Perturbed chains], from x* + rho z.
  ChainLosses run_chain(int64_t c, const ChainOptions& options) {
    const uint64_t chain_seed = samplers::derive_seed(samplers::derive_seed(seed_, kChainStream), c);
    torch::Tensor x = flat_->values();
    {
      torch::NoGradGuard no_grad;
      x.copy_(anchor_);  // the control variate is built at x*
    }
    const auto sampler = make_sampler(samplers::derive_seed(chain_seed, 0));
    {
      torch::NoGradGuard no_grad;
      torch::Tensor z = torch::empty_like(x);
      samplers::ChunkedNormal(z, samplers::derive_seed(chain_seed, 1)).fill(z);
      x.add_(z, options.rho);
    }
    spdlog::info("member {} chain {}: {}, start x* + {:g} N(0, I)", index_, c, sampler->pretty_string(), options.rho);
    const double examples_per_window = static_cast<double>(options.loss_every * partition_.batch_size());
    ChainLosses out;
    out.steps_per_epoch = partition_.num_batches();
    torch::Tensor window = torch::zeros({}, x.options());
    for (int64_t e = 0; e < cfg_.sampler.epochs; ++e) {
      const auto start = Clock::now();
      const double loss = sampling_epoch(
          *sampler, fmt::format("member {} chain {} {}/{}", index_, c, e + 1, cfg_.sampler.epochs),
          [&](const torch::Tensor& step_loss) {
            if (options.loss_every <= 0) return;
            window += step_loss;
            if (sampler->steps_taken() % options.loss_every != 0) return;
            out.window_loss.push_back(window.item<double>() / examples_per_window);
            window.zero_();
          });
      check_finite(fmt::format("chain {} sample", c), e, loss);
      out.epoch_loss.push_back(loss);
      spdlog::info("member {} chain {} epoch {:>3}/{}: loss {:.4f}  {:.1f}s", index_, c, e + 1, cfg_.sampler.epochs,
                   loss, seconds_since(start));
    }
    return out;
  }

  // From SWA's x* (first_epoch 0) or from a restored checkpoint.
  void sampling_phase(int64_t first_epoch) {
    const auto& s = cfg_.sampler;
    const int64_t thin = thin_steps();
    const int64_t burn_steps = s.burn_in * partition_.num_batches();
    if (first_epoch == 0) {
      anchor_ = flat_->values().clone();
      sampler_ = make_sampler(samplers::derive_seed(seed_, kSamplerStream));
      prob_sum_ = torch::zeros({ctx_.data.test.size(), ctx_.data.num_classes},
                               ctx_.data.test.labels.options().dtype(torch::kDouble));
      samples_ = 0;
    }
    spdlog::info("member {}: {}", index_, sampler_->pretty_string());
    for (int64_t e = first_epoch; e < s.epochs; ++e) {
      const auto start = Clock::now();
      torch::Tensor last_probs;
      const double loss = sampling_epoch(*sampler_, fmt::format("member {} sample {}/{}", index_, e + 1, s.epochs),
                                         [&](const torch::Tensor&) {
        const int64_t done = sampler_->steps_taken();
        if (done == kill_at_step_) ::raise(SIGKILL);  // Note [Fault injection]
        if (done > burn_steps && (done - burn_steps) % thin == 0) {
          last_probs = predict();
          prob_sum_ += last_probs;
          ++samples_;
          if (cfg_.evaluation.save_sample_probs) {
            write_npy(std::filesystem::path("samples") / fmt::format("step_{:08d}.npy", done),
                      last_probs.to(torch::kHalf));
          }
          if (keeps_sample_weights()) store_sample(done);
        }
      });
      check_finite("sample", e, loss);
      if (!last_probs.defined() || sampler_->steps_taken() % thin != 0) last_probs = predict();
      log_epoch("sample", e, s.epochs, loss, accuracy(last_probs), sampler_->step_size(), start);
      if (const std::string d = sampler_->diagnostics(); !d.empty()) spdlog::info("member {} sampler: {}", index_, d);
      save_checkpoint({Phase::kSample, e + 1}, nullptr);
    }
    TORCH_CHECK(samples_ > 0, "no samples retained: burn_in ", s.burn_in, " epochs and thin ", thin,
                " steps leave none");
    write_npy("bayes_probs.npy", (prob_sum_ / static_cast<double>(samples_)).to(torch::kFloat));
  }

  // Note [Member checkpoints]: at the end of every epoch of every phase the
  // member writes member_NNN/checkpoint.pt atomically: the phase and epochs
  // done, the parameters and BatchNorm buffers, the optimiser's batch-order
  // generator, the trace, and per phase the Adam state (Adam, SWA), the SWA
  // running sum and count (SWA), or x*, the sampler's checkpoint (Note
  // [Sampler checkpoints]) and the running prediction sum (sampling). The
  // predictions and stored sample weights written so far stay on disk (a
  // resumed member rewrites those after the checkpoint, identically).
  // Restoring rebuilds the sampler at x*, which recomputes the control
  // variate's anchor gradients, then loads its state, so a resumed member
  // continues bit-identically on the same device and thread count. The checkpoint is removed once the member is done.
  std::filesystem::path checkpoint_path() const { return dir_ / "checkpoint.pt"; }

  void save_checkpoint(Position at, torch::optim::Adam* adam) {
    if (!cfg_.run.checkpoint || !writer_) return;
    torch::serialize::OutputArchive a;
    a.write("member.seed", torch::tensor(static_cast<int64_t>(seed_), torch::kLong));
    a.write("member.phase", torch::tensor(static_cast<int64_t>(at.phase), torch::kLong));
    a.write("member.epochs_done", torch::tensor(at.epochs_done, torch::kLong));
    a.write("member.trace", c10::IValue(trace_));
    a.write("model.parameters", flat_->values());
    for (const auto& b : model_->named_buffers()) a.write("model.buffer." + b.key(), b.value());
    samplers::write_generator(a, "member.optimiser_order", order_gen_);
    if (adam != nullptr) {
      torch::serialize::OutputArchive adam_state;
      adam->save(adam_state);
      a.write("adam", adam_state);
    }
    if (at.phase == Phase::kSwa) {
      a.write("swa.sum", swa_sum_);
      a.write("swa.count", torch::tensor(swa_count_, torch::kLong));
    }
    if (at.phase == Phase::kSample) {
      a.write("sample.anchor", anchor_);
      a.write("sample.prob_sum", prob_sum_);
      a.write("sample.count", torch::tensor(samples_, torch::kLong));
      torch::serialize::OutputArchive sampler_state;
      sampler_->save(sampler_state);
      a.write("sampler", sampler_state);
    }
    std::ostringstream bytes;
    a.save_to(bytes);
    io::write_file_atomically(checkpoint_path(), bytes.str());
  }

  Position restore(torch::optim::Adam& adam) {
    const auto path = checkpoint_path();
    torch::serialize::InputArchive a;
    try {
      a.load_from(path.string(), ctx_.device);
    } catch (const c10::Error& e) {
      throw std::runtime_error(fmt::format("{}: not a readable checkpoint ({}); delete it to restart the member",
                                           path.string(), e.what_without_backtrace()));
    }
    auto scalar = [&](const std::string& key) { return samplers::read_tensor(a, key).item<int64_t>(); };
    if (static_cast<uint64_t>(scalar("member.seed")) != seed_) {
      throw std::runtime_error(fmt::format("{} belongs to another member or run seed; delete it to restart",
                                           path.string()));
    }
    const Position at{static_cast<Phase>(scalar("member.phase")), scalar("member.epochs_done")};
    c10::IValue trace;
    a.read("member.trace", trace);
    trace_ = trace.toStringRef();
    torch::NoGradGuard no_grad;
    torch::Tensor values = flat_->values();
    samplers::read_into(a, "model.parameters", values);
    for (auto& b : model_->named_buffers()) samplers::read_into(a, "model.buffer." + b.key(), b.value());
    samplers::read_generator(a, "member.optimiser_order", order_gen_);
    if (at.phase != Phase::kSample) {
      torch::serialize::InputArchive adam_state;
      a.read("adam", adam_state);
      adam.load(adam_state);
    }
    if (at.phase == Phase::kSwa) {
      swa_sum_ = samplers::read_tensor(a, "swa.sum");
      swa_count_ = scalar("swa.count");
    }
    if (at.phase == Phase::kSample) {
      anchor_ = samplers::read_tensor(a, "sample.anchor");
      prob_sum_ = samplers::read_tensor(a, "sample.prob_sum");
      samples_ = scalar("sample.count");
      const torch::Tensor x = values.clone();
      values.copy_(anchor_);  // the control variate is built at x*
      sampler_ = make_sampler(samplers::derive_seed(seed_, kSamplerStream));
      torch::serialize::InputArchive sampler_state;
      a.read("sampler", sampler_state);
      sampler_->load(sampler_state);
      TORCH_CHECK(values.equal(x), "checkpoint: sampler and model parameters disagree");
    }
    spdlog::info("member {}: resuming from {} after {} epoch(s) of {}", index_, path.string(), at.epochs_done,
                 phase_name(at.phase));
    return at;
  }

 private:
  const MemberContext& ctx_;
  const config::Config& cfg_;
  int64_t index_;
  uint64_t seed_;
  std::filesystem::path dir_;
  data_loaders::Partition partition_;
  std::shared_ptr<models::Classifier> model_;
  std::unique_ptr<models::FlatParameters> flat_;
  std::unique_ptr<ModelOracle> model_oracle_;  // this rank's shard of each batch with a process group
  std::unique_ptr<distributed::DataParallelOracle> parallel_oracle_;
  samplers::GradientOracle* oracle_ = nullptr;  // the one that gives full-batch sums
  at::Generator order_gen_;
  std::string trace_;
  int64_t kill_at_step_;
  bool writer_;
  torch::Tensor swa_sum_;  // SWA running sum (double) and count
  int64_t swa_count_ = 0;
  torch::Tensor anchor_;   // x*
  std::unique_ptr<samplers::Sampler> sampler_;
  torch::Tensor prob_sum_;  // sum of retained samples' test probabilities (double)
  int64_t samples_ = 0;
};

void write_status(const std::filesystem::path& dir, const nlohmann::json& status) {
  std::filesystem::create_directories(dir);
  io::write_file_atomically(dir / "status.json", status.dump(2) + "\n");
}

}  // namespace

models::ModelSpec model_spec(const config::Config& config, const data_loaders::Dataset& data) {
  models::ModelSpec spec;
  spec.name = config.model.name;
  spec.input_shape = data.input_shape;
  spec.num_classes = data.num_classes;
  spec.hidden = config.model.hidden;
  spec.batch_norm = config.model.batch_norm;
  return spec;
}

samplers::LangevinOptions langevin_options(const config::Config& config, int64_t num_batches, int64_t num_parameters) {
  const auto& s = config.sampler;
  samplers::LangevinOptions o(s.step_size);
  o.friction(*s.friction).rho(s.rho).rho_max(*s.rho_max).prior_precision(config.prior.precision);
  o.temperature(s.temperature);
  if (s.order != "auto") o.order(samplers::parse_batch_order(s.order));
  if (s.name == "csghmc") o.cycle_length(s.cycle_length > 0 ? s.cycle_length : 4 * num_batches);
  o.mh_block(s.mh_block);
  o.noise_covariance(samplers::parse_noise_covariance(s.nogin_covariance));
  o.estimator(samplers::parse_gradient_estimator(s.gradient));
  if (s.anchor_gradients == "auto") {
    const double bytes = static_cast<double>(num_batches) * num_parameters * 4.0;
    o.anchor_gradients(bytes <= config.sampler.anchor_memory_mb * 1024.0 * 1024.0
                           ? samplers::AnchorGradients::kStored
                           : samplers::AnchorGradients::kRecomputed);
  } else {
    o.anchor_gradients(samplers::parse_anchor_gradients(s.anchor_gradients));
  }
  return o;
}

torch::Tensor predict_test_probabilities(models::Classifier& model, const data_loaders::Partition& partition,
                                         const data_loaders::Split& test, int64_t bn_batches) {
  models::recalibrate_batch_norm(model, partition.first_batches(bn_batches).inputs());
  return models::predict_probabilities(model, test.size(),
                                       [&test](int64_t start, int64_t n) { return test.slice(start, n).inputs(); });
}

std::vector<std::string> point_estimates(const config::Config& config) {
  if (config.map.optimizer == "lbfgs") return {"map"};
  return {"adam", "swa"};
}

std::filesystem::path member_dir(const std::filesystem::path& run_dir, int64_t index) {
  return run_dir / fmt::format("member_{:03d}", index);
}

std::vector<ChainLosses> run_member_chains(const MemberContext& context, int64_t index, const ChainOptions& options) {
  TORCH_CHECK(options.chains >= 1, "perturbed chains: need at least one chain, got ", options.chains);
  TORCH_CHECK(options.rho >= 0 && std::isfinite(options.rho), "perturbed chains: rho must be finite and >= 0, got ",
              options.rho);
  TORCH_CHECK(options.loss_every >= 0, "perturbed chains: loss_every must be >= 0, got ", options.loss_every);
  config::Config config = context.config;
  config.run.checkpoint = false;
  const MemberContext without_checkpoints{config, context.data, context.device, context.run_dir};
  try {
    return Member(without_checkpoints, index).run_chains(options);
  } catch (const NonFiniteError& e) {
    throw std::runtime_error(fmt::format("member {}: {}", index, e.what()));
  }
}

MemberOutcome run_member(const MemberContext& context, int64_t index) {
  const auto start = Clock::now();
  const auto dir = member_dir(context.run_dir, index);
  const bool writer = context.group == nullptr || context.group->rank() == 0;  // Note [Data-parallel member]
  std::error_code ec;
  if (writer) std::filesystem::remove(dir / "status.json", ec);  // a rerun is unfinished until it finishes
  MemberOutcome outcome{index, false, ""};
  nlohmann::json status = {{"member", index}};
  if (context.group != nullptr) status["data_parallel_ranks"] = context.group->world_size();
  try {
    Member member(context, index);
    status["seed"] = member.seed();
    member.run();
    outcome.ok = true;
    status["status"] = "done";
    status["samples"] = member.samples();
    // What `bnn evaluate --burn-in/--thin` needs to select stored samples.
    status["batches_per_epoch"] = member.batches_per_epoch();
    status["thin_steps"] = member.thin_steps();
    status["seconds"] = seconds_since(start);
    if (writer) write_status(dir, status);
    member.discard_checkpoint();
    return outcome;
  } catch (const NonFiniteError& e) {
    outcome.message = e.what();
  } catch (const c10::Error& e) {
    // In a data-parallel member such an error may hit one rank only (say, out
    // of memory): going on to the next member would pair that rank's
    // collectives with the others' current ones. It ends the run instead; a
    // non-finite loss or parameters, found on all ranks at once after their
    // agreement check, fails just the member.
    if (context.group != nullptr) throw;
    outcome.message = e.what_without_backtrace();
  }
  status["status"] = "failed";
  status["error"] = outcome.message;
  spdlog::error("member {} failed: {}", index, outcome.message);
  status["seconds"] = seconds_since(start);
  if (writer) write_status(dir, status);
  return outcome;
}

}  // namespace bnn::pipeline
