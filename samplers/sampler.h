// The stepper interface every sampler implements.
//
// Like torch::optim::LRScheduler, the public step() is not virtual: it holds a
// NoGradGuard and the bookkeeping (step counter) and calls the protected
// do_step() hook that a sampler overrides. A sampler owns its state (velocity,
// anchor x*, generators, batch order, step counter) and moves the oracle's
// flat parameter vector in place.
//
// Note [Sampler checkpoints]: save() writes everything a chain needs to go on
// bit-identically: the parameters, the velocity, every generator's state, the
// batch order's position, the step count and the sampler's own state (cached
// end-of-step force, thermostat, Metropolis-Hastings block). load() expects a
// sampler constructed like the saved one (same oracle, anchor, options and
// seed); the control variate's anchor gradients are recomputed by that
// constructor rather than stored, so checkpoints stay O(d). The options are
// stored as exact values (option_values()) and must match bit for bit: a
// step size that differs in the 10th digit is another chain (checkpoints
// written before bnn stored them are matched by their description alone).
//
// Thread-safety: a sampler is used by one thread at a time.
// Reproducibility: same seed, same device, same thread count -> identical
// chains (Note [RNG streams] in samplers/random.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace bnn::samplers {

class Sampler {
 public:
  virtual ~Sampler() = default;

  // One step. Returns the summed cross-entropy of the minibatch that the step
  // evaluated (0-dim tensor on device; reading it synchronises, so callers
  // accumulate and read once per epoch); OBABO with Metropolis-Hastings
  // returns the chain's state's instead (samplers/obabo.h).
  torch::Tensor step();

  int64_t steps_taken() const { return steps_; }
  // The step size of the last step (cyclical samplers vary it).
  virtual double step_size() const = 0;
  virtual std::string pretty_string() const = 0;
  // Velocity (for diagnostics and tests); zero for SGLD, which has none.
  virtual const torch::Tensor& velocity() const = 0;
  // A short line of sampler-specific diagnostics for the epoch log (e.g. the
  // acceptance rate or the thermostat); empty if none. May synchronise.
  virtual std::string diagnostics() const { return {}; }
  // A line to warn the user with when sampling ends, about samples that are
  // not what they seem (OBABO's test rejecting nearly every block); empty if
  // none. May synchronise.
  virtual std::string warning() const { return {}; }

  // The sampler's options as exact values, by name (step_size, friction,
  // ...): a checkpoint records them and load() requires the same bits.
  virtual std::vector<std::pair<std::string, double>> option_values() const { return {}; }

  // Note [Sampler checkpoints].
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 protected:
  virtual torch::Tensor do_step() = 0;
  virtual void save_state(torch::serialize::OutputArchive& archive) const = 0;
  virtual void load_state(torch::serialize::InputArchive& archive) = 0;

 private:
  int64_t steps_ = 0;
};

// Checkpoint helpers: a tensor read from `archive` under `key` (an error
// naming the key if absent) and copied into `dst` in place, so views such as
// a model's flat parameters stay views.
torch::Tensor read_tensor(torch::serialize::InputArchive& archive, const std::string& key);
void read_into(torch::serialize::InputArchive& archive, const std::string& key, torch::Tensor& dst);
void write_generator(torch::serialize::OutputArchive& archive, const std::string& key, const at::Generator& gen);
void read_generator(torch::serialize::InputArchive& archive, const std::string& key, at::Generator& gen);

}  // namespace bnn::samplers
