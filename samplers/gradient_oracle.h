// The interface between a sampler and the model it moves.
//
// A sampler never sees a network or a dataset: it sees one flat parameter
// vector x, one flat gradient buffer, a mask saying which coordinates carry the
// Gaussian prior, and a way to fill the gradient buffer with the summed
// minibatch gradient at the current x. The sampler decides which minibatch each
// evaluation uses (symmetric sweeps need that; see ensmallen's Evaluate(x,
// begin, batchSize) for the same idea), so the oracle is indexed by batch.
#pragma once

#include <torch/torch.h>

namespace bnn::samplers {

class GradientOracle {
 public:
  virtual ~GradientOracle() = default;

  // Flat parameter vector x (1-D, contiguous). Samplers update it in place;
  // implementations backed by a network have the module parameters as views.
  virtual torch::Tensor parameters() = 0;

  // Flat gradient buffer, same shape as parameters(); written by evaluate().
  virtual torch::Tensor gradient() = 0;

  // 1 where the Gaussian prior applies (weights), 0 elsewhere (biases).
  virtual torch::Tensor prior_mask() = 0;

  // Number of fixed minibatches N_m.
  virtual int64_t num_batches() const = 0;

  // Overwrites gradient() with sum_{i in batch b} grad CE_i(x) at the current
  // x (a sum over the batch, not a mean) and returns the summed batch loss as
  // a 0-dim tensor on the parameters' device (no host synchronisation).
  virtual torch::Tensor evaluate(int64_t b) = 0;

  // The summed loss of batch b at the current x, without a gradient (0-dim,
  // on the parameters' device). Samplers with a Metropolis-Hastings correction
  // sum it over all batches for the exact potential. The default calls
  // evaluate(b), which also overwrites gradient(); oracles override it with a
  // forward pass only.
  virtual torch::Tensor loss(int64_t b) { return evaluate(b); }

  // The sampler's batch order begins its cycle `cycle` (0, 1, ...: see
  // samplers/batch_order.h); called before the cycle's first evaluation, and
  // again with the current cycle when a sampler checkpoint is loaded. An
  // oracle that cuts its batches afresh in every cycle does it here (Note
  // [Redrawn batches] in data_loaders/dataset.h); the others ignore it.
  // Returns whether the sum of the batch losses is now another function of x
  // (batches redrawn for a model whose examples share their batch's
  // statistics, as BatchNorm's in train mode): the sampler then recomputes
  // what it summed over the batches (the control variate's S*).
  virtual bool begin_cycle(int64_t cycle) {
    (void)cycle;
    return false;
  }

  // Optional: per-example gradients, for samplers that estimate the
  // covariance of the minibatch gradient (NOGIN, samplers/nogin.h).
  virtual bool has_per_example_gradients() const { return false; }

  // Like evaluate(b) (gradient() is overwritten with the batch sum and the
  // summed batch loss is returned), and also fills per_example_gradients()
  // with one row per example of batch b: row i = grad CE_i(x), so the rows sum
  // to gradient(). The default throws: the oracle has no per-example gradients.
  virtual torch::Tensor evaluate_per_example(int64_t b) {
    (void)b;
    TORCH_CHECK(false, "this gradient oracle has no per-example gradients (has_per_example_gradients() is "
                       "false); samplers that need them (nogin) cannot run on it");
  }

  // N_b x d rows written by the last evaluate_per_example(). The buffer is the
  // oracle's scratch: a caller may overwrite it until the next call.
  virtual torch::Tensor per_example_gradients() {
    TORCH_CHECK(false, "this gradient oracle has no per-example gradients");
  }
};

}  // namespace bnn::samplers
