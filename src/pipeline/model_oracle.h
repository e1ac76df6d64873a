// A GradientOracle backed by a network and a fixed minibatch partition: the
// summed cross-entropy gradient of batch b at the network's current weights,
// written straight into the flat gradient buffer (models/flat_parameters.h).
#pragma once

#include "data_loaders/dataset.h"
#include "models/classifier.h"
#include "models/flat_parameters.h"
#include "samplers/gradient_oracle.h"

namespace bnn::pipeline {

class ModelOracle : public samplers::GradientOracle {
 public:
  // All three must outlive the oracle. The model is put in train mode (batch
  // statistics, Note [BatchNorm]) for every evaluation.
  ModelOracle(models::Classifier& model, models::FlatParameters& flat, const data_loaders::Partition& partition);

  torch::Tensor parameters() override { return flat_.values(); }
  torch::Tensor gradient() override { return flat_.grads(); }
  torch::Tensor prior_mask() override { return flat_.prior_mask(); }
  int64_t num_batches() const override { return partition_.num_batches(); }
  torch::Tensor evaluate(int64_t b) override;
  // Forward only, in train mode like evaluate() (the same batch statistics).
  torch::Tensor loss(int64_t b) override;

 private:
  models::Classifier& model_;
  models::FlatParameters& flat_;
  const data_loaders::Partition& partition_;
};

}  // namespace bnn::pipeline
