#include "src/pipeline/stacked_group.h"

#include <stdexcept>

#include <fmt/format.h>

namespace bnn::pipeline {

StackedGroup::StackedGroup(const std::vector<std::shared_ptr<models::Classifier>>& templates)
    : stacked_(templates), taken_(templates.size(), false) {
  stacked_.use_flat_buffers();
  for (int64_t k = 0; k < stacked_.members(); ++k) stacked_.clear_member(k);
  stacked_.train(true);
}

int64_t StackedGroup::rounds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return rounds_;
}

int64_t StackedGroup::evaluations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return evaluations_;
}

std::unique_ptr<StackedOracle> StackedGroup::join(int64_t slot, models::Classifier& model,
                                                  models::FlatParameters& flat,
                                                  const data_loaders::Partition& partition) {
  return std::make_unique<StackedOracle>(*this, slot, model, flat, partition);
}

void StackedGroup::take(int64_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (slot < 0 || slot >= slots()) {
    throw std::invalid_argument(fmt::format("stacked members: slot {} of {}", slot, slots()));
  }
  if (taken_[static_cast<size_t>(slot)]) {
    throw std::invalid_argument(fmt::format("stacked members: slot {} is taken", slot));
  }
  taken_[static_cast<size_t>(slot)] = true;
}

void StackedGroup::enter(bool& joined) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (joined) return;
  ++active_;
  joined = true;
}

void StackedGroup::evaluate(Request& request, bool& joined) {
  enter(joined);
  std::unique_lock<std::mutex> lock(mutex_);
  pending_.push_back(&request);
  ++evaluations_;
  if (static_cast<int64_t>(pending_.size()) == active_) {
    lead(lock);
  } else {
    done_.wait(lock, [&] { return request.done; });
  }
  if (request.error) std::rethrow_exception(request.error);
}

void StackedGroup::leave(int64_t slot, bool& joined) {
  if (!joined) return;
  try {
    std::lock_guard<std::mutex> compute(compute_);
    stacked_.clear_member(slot);  // no stale (perhaps non-finite) weights in the slot
  } catch (...) {
    // A device error: the next round fails with it, if it persists.
  }
  std::unique_lock<std::mutex> lock(mutex_);
  joined = false;
  --active_;
  // The others may all be waiting for this member.
  if (!pending_.empty() && static_cast<int64_t>(pending_.size()) == active_) lead(lock);
}

void StackedGroup::release(int64_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  taken_[static_cast<size_t>(slot)] = false;
}

void StackedGroup::lead(std::unique_lock<std::mutex>& lock) {
  std::vector<Request*> round;
  round.swap(pending_);
  ++rounds_;
  lock.unlock();
  std::exception_ptr error;
  try {
    run_round(round);
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  for (Request* r : round) {
    r->error = error;
    r->done = true;
  }
  done_.notify_all();
}

void StackedGroup::run_round(const std::vector<Request*>& round) {
  std::lock_guard<std::mutex> compute(compute_);
  const int64_t K = stacked_.members();
  const torch::Tensor& first = round.front()->inputs;
  for (const Request* r : round) {
    TORCH_CHECK(r->inputs.sizes() == first.sizes(), "stacked members: member batches of shapes ", r->inputs.sizes(),
                " and ", first.sizes(), " cannot be evaluated together");
  }
  // K x B x (input shape), and K x B labels; a free slot gets zeros.
  torch::Tensor images, labels;
  if (static_cast<int64_t>(round.size()) == K) {
    std::vector<torch::Tensor> inputs(static_cast<size_t>(K)), targets(static_cast<size_t>(K));
    for (const Request* r : round) {
      inputs[static_cast<size_t>(r->slot)] = r->inputs;
      targets[static_cast<size_t>(r->slot)] = r->labels;
    }
    images = torch::stack(inputs);
    labels = torch::stack(targets);
  } else {
    std::vector<int64_t> shape = {K};
    shape.insert(shape.end(), first.sizes().begin(), first.sizes().end());
    images = torch::zeros(shape, first.options());
    labels = torch::zeros({K, first.size(0)}, round.front()->labels.options());
    for (const Request* r : round) {
      images[r->slot].copy_(r->inputs);
      labels[r->slot].copy_(r->labels);
    }
  }
  for (const Request* r : round) {
    stacked_.load_member(r->slot, r->values);
    if (!stacked_.replaces_running_stats() && r->stats.defined()) stacked_.load_member_stats(r->slot, r->stats);
  }
  torch::AutoGradMode grad_mode(/*enabled=*/true);
  const torch::Tensor logits = stacked_.forward(images);
  // Summed over each member's batch, as ModelOracle does (a sum, not a mean).
  const torch::Tensor losses =
      torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(2)}), labels.reshape({-1}),
                                           torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone))
          .view({K, -1})
          .sum(1);
  stacked_.zero_grad();
  // A free slot's loss is finite (zero weights, zero images) and its
  // gradient stays in its own part of the stacked parameters.
  losses.sum().backward();
  const torch::Tensor detached = losses.detach();
  for (Request* r : round) {
    stacked_.read_member_gradient(r->slot, r->grads);
    if (r->stats.defined()) stacked_.read_member_stats(r->slot, r->stats);
    r->loss = detached[r->slot];
  }
}

StackedOracle::StackedOracle(StackedGroup& group, int64_t slot, models::Classifier& model,
                             models::FlatParameters& flat, const data_loaders::Partition& partition)
    : group_(group), slot_(slot), model_(model), own_(model, flat, partition) {
  group_.take(slot);
  try {
    stats_ = models::StackedMembers::flatten_running_stats(model);
  } catch (...) {
    group_.release(slot);
    throw;
  }
}

StackedOracle::~StackedOracle() {
  group_.leave(slot_, joined_);
  group_.release(slot_);
}

torch::Tensor StackedOracle::evaluate(int64_t b) {
  const data_loaders::Split batch = own_.batch(b);
  model_.train();  // as ModelOracle leaves it
  StackedGroup::Request request;
  request.slot = slot_;
  request.values = own_.parameters();
  request.grads = own_.gradient();
  request.stats = stats_;
  request.inputs = batch.inputs();
  request.labels = batch.labels;
  group_.evaluate(request, joined_);
  return request.loss;
}

}  // namespace bnn::pipeline
