// Members that train at once on one device, evaluated as one stacked model.
//
// Note [Stacked members in a run]: `bnn run --member-design stacked` runs
// the K members that train at once on a device (Note [Members per device]
// in src/runtime/device_streams.h) through one StackedMembers model
// (Note [Stacked members] in models/stacked_members.h): every gradient evaluation
// of those members is one grouped forward and backward pass for all K, so
// the device sees one set of kernels per step instead of K.
//
// Everything else stays each member's own: its worker thread, model, flat
// parameters, seeds, batch order, noise, sampler, checkpoint and files. A
// member's gradient oracle (StackedOracle) hands its parameters and batch to
// the group and waits; when every member in the group has handed in its
// next evaluation, the last to arrive runs the stacked pass and gives each
// member its gradient and loss. Members need not be in the same phase or at
// the same batch, only to evaluate their gradients in turn; a member doing
// something else (predicting the test set, writing a checkpoint) holds the
// others up until its next evaluation. A member joins the rounds at its
// first evaluation (not while it restores its checkpoint) and leaves when
// it has sampled its last step or fails, its slot zeroed. Forward passes without a gradient
// (the loss of a Metropolis-Hastings test, BatchNorm recalibration,
// predictions) and per-example gradients use the member's own model.
//
// What a member computes is the same arithmetic as alone, not the same
// bits: the grouped convolutions and batched products sum in their own
// order. A member's results depend on its own inputs only (nothing in the
// stacked pass mixes members), and on its slot and K only through the
// shapes; so a stacked run gives the same bits whenever it is repeated or
// resumed on the CPU (tests/src/pipeline/devices_test.cpp). There, from two
// slots up, K makes no difference to the bits either (measured on
// fmnist_cnn: 2 and 3 slots alike), but one slot does (a grouped pass of one
// group is the member's own model's arithmetic): one member at a time runs
// in two slots, one free (src/pipeline/run.cpp), so that the last member of
// a stacked run resumed alone keeps its bits. On a GPU, cuBLAS and cuDNN
// may choose their kernels by K, and a resume under another K says so
// (same_arithmetic in src/pipeline/member_checkpoint.h). One thing the
// stacked pass does not do is count BatchNorm's num_batches_tracked in the
// member's model, which a BatchNorm with a momentum (bnn's models) does not
// use: it stays as it was in the member's checkpoints.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include <torch/torch.h>

#include "data_loaders/dataset.h"
#include "models/classifier.h"
#include "models/flat_parameters.h"
#include "models/stacked_members.h"
#include "samplers/gradient_oracle.h"
#include "src/pipeline/model_oracle.h"

namespace bnn::pipeline {

class StackedOracle;

class StackedGroup {
 public:
  // `templates`: one model per slot, of the members' architecture, on their
  // device (their weights do not matter). Throws std::invalid_argument
  // naming the layer if the architecture cannot be stacked.
  explicit StackedGroup(const std::vector<std::shared_ptr<models::Classifier>>& templates);
  StackedGroup(const StackedGroup&) = delete;
  StackedGroup& operator=(const StackedGroup&) = delete;

  int64_t slots() const { return stacked_.members(); }
  // Stacked passes run so far, and the member evaluations they made (the
  // mean members per pass is their ratio).
  int64_t rounds() const;
  int64_t evaluations() const;

  // A member takes `slot` (0 <= slot < slots(), free) with its model, flat
  // parameters and batches, all of which must outlive the oracle. The model's
  // BatchNorm running statistics are moved into one flat buffer
  // (Note [Stacked flat buffers]). The oracle frees the slot when destroyed.
  std::unique_ptr<StackedOracle> join(int64_t slot, models::Classifier& model, models::FlatParameters& flat,
                                      const data_loaders::Partition& partition);

 private:
  friend class StackedOracle;
  struct Request {
    int64_t slot = 0;
    torch::Tensor values, grads, stats;  // the member's flat vectors (stats undefined without BatchNorm)
    torch::Tensor inputs, labels;        // its batch
    torch::Tensor loss;                  // out: the summed batch loss, 0-dim on the device
    std::exception_ptr error;            // out: the round's failure
    bool done = false;
  };

  // Hands in `request` and returns when its round has been evaluated; the
  // first call of a member (joined false) enters it into the rounds.
  void evaluate(Request& request, bool& joined);
  void enter(bool& joined);
  // Takes a joined member out of the rounds; nothing if it is not joined.
  void leave(int64_t slot, bool& joined);
  // Reserves a free slot (throws std::invalid_argument naming it otherwise), and frees it.
  void take(int64_t slot);
  void release(int64_t slot);
  // With the lock held and every member in pending_: runs the round
  // (releasing the lock meanwhile) and wakes its members.
  void lead(std::unique_lock<std::mutex>& lock);
  void run_round(const std::vector<Request*>& round);

  models::StackedMembers stacked_;
  mutable std::mutex mutex_;
  std::condition_variable done_;
  std::vector<bool> taken_;
  int64_t active_ = 0;
  int64_t rounds_ = 0;
  int64_t evaluations_ = 0;
  std::vector<Request*> pending_;
  std::mutex compute_;  // the stacked model's tensors: a round, or a slot being cleared
};

// A member's oracle in a StackedGroup: evaluate() goes through the group,
// everything else to the member's own ModelOracle.
class StackedOracle : public samplers::GradientOracle {
 public:
  StackedOracle(StackedGroup& group, int64_t slot, models::Classifier& model, models::FlatParameters& flat,
                const data_loaders::Partition& partition);
  ~StackedOracle() override;
  StackedOracle(const StackedOracle&) = delete;
  // Out of the group's rounds until the next evaluate(): a member that has
  // finished sampling does not hold the others up while it writes its
  // results.
  void leave_group() { group_.leave(slot_, joined_); }
  // Into the group's rounds now rather than at the first evaluate(): the
  // next pass then waits for this member too (for tests that need members
  // in one pass).
  void enter_group() { group_.enter(joined_); }
  StackedOracle& operator=(const StackedOracle&) = delete;

  torch::Tensor parameters() override { return own_.parameters(); }
  torch::Tensor gradient() override { return own_.gradient(); }
  torch::Tensor prior_mask() override { return own_.prior_mask(); }
  int64_t num_batches() const override { return own_.num_batches(); }
  torch::Tensor evaluate(int64_t b) override;
  torch::Tensor loss(int64_t b) override { return own_.loss(b); }
  bool has_per_example_gradients() const override { return own_.has_per_example_gradients(); }
  torch::Tensor evaluate_per_example(int64_t b) override { return own_.evaluate_per_example(b); }
  torch::Tensor per_example_gradients() override { return own_.per_example_gradients(); }
  // Note [Redrawn batches], as ModelOracle's.
  void redraw_batches_each_cycle(uint64_t seed) { own_.redraw_batches_each_cycle(seed); }
  bool begin_cycle(int64_t cycle) override { return own_.begin_cycle(cycle); }

 private:
  StackedGroup& group_;
  int64_t slot_;
  bool joined_ = false;
  models::Classifier& model_;
  torch::Tensor stats_;
  ModelOracle own_;
};

}  // namespace bnn::pipeline
