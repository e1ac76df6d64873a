// The gradient scale (docs/design.md §2): the oracle returns the batch *sum* of
// per-example gradients, so the batch gradients add up to the full-data
// gradient of sum_i CE_i, and N_m times one batch estimates it without bias.
#include "src/pipeline/model_oracle.h"

#include <gtest/gtest.h>

#include "models/registry.h"

namespace bnn::pipeline {
namespace {

TEST(ModelOracle, BatchGradientsSumToTheFullDataGradient) {
  data_loaders::Split train;
  train.images = torch::randn({60, 1, 28, 28});
  train.labels = torch::randint(10, {60}, torch::kLong);
  const data_loaders::Partition partition(train, /*batch_size=*/20, /*seed=*/1);
  models::ModelSpec spec;
  spec.hidden = {16};
  auto model = models::make_model(spec, 2);
  models::FlatParameters flat(*model);
  ModelOracle oracle(*model, flat, partition);

  torch::Tensor sum = torch::zeros_like(flat.values());
  double loss = 0;
  for (int64_t b = 0; b < oracle.num_batches(); ++b) {
    loss += oracle.evaluate(b).item<double>();
    sum += oracle.gradient();
  }
  // Reference: autograd of the summed loss over all used examples at once.
  const data_loaders::Split all = partition.first_batches(oracle.num_batches());
  flat.zero_grad();
  const torch::Tensor full = torch::nn::functional::cross_entropy(
      model->forward(all.images), all.labels,
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  full.backward();
  EXPECT_NEAR(loss, full.item<double>(), 1e-3);
  EXPECT_TRUE(torch::allclose(sum, flat.grads(), 1e-4, 1e-5));
}

// Reference per-example rows: the whole batch forward in train mode, then
// one backward pass per example's loss through that graph.
torch::Tensor whole_graph_rows(models::Classifier& model, models::FlatParameters& flat,
                               const data_loaders::Split& batch) {
  model.train();
  const torch::Tensor losses = torch::nn::functional::cross_entropy(
      model.forward(batch.images), batch.labels,
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  std::vector<torch::Tensor> rows;
  for (int64_t i = 0; i < losses.size(0); ++i) {
    flat.zero_grad();
    losses[i].backward({}, /*retain_graph=*/true);
    rows.push_back(flat.grads().clone());
  }
  return torch::stack(rows);
}

// Per-example rows (for nogin) sum to evaluate()'s batch gradient, and row i
// is the gradient of example i's loss. Without BatchNorm the oracle computes
// each row from the example alone; it must equal the row taken through the
// whole batch's graph. With BatchNorm the rows go through the batch
// statistics (the whole-graph path).
TEST(ModelOracle, PerExampleGradientsSumToTheBatchGradient) {
  for (const bool batch_norm : {false, true}) {
    SCOPED_TRACE(batch_norm ? "with BatchNorm" : "without BatchNorm");
    data_loaders::Split train;
    train.images = torch::randn({12, 1, 28, 28});
    train.labels = torch::randint(10, {12}, torch::kLong);
    const data_loaders::Partition partition(train, /*batch_size=*/6, /*seed=*/1);
    models::ModelSpec spec;
    spec.hidden = {8};
    spec.batch_norm = batch_norm;
    auto model = models::make_model(spec, 2);
    models::FlatParameters flat(*model);
    ModelOracle oracle(*model, flat, partition);
    ASSERT_TRUE(oracle.has_per_example_gradients());

    const double batch_loss = oracle.evaluate(1).item<double>();
    const torch::Tensor batch_grad = oracle.gradient().clone();
    const double loss = oracle.evaluate_per_example(1).item<double>();
    const torch::Tensor rows = oracle.per_example_gradients().clone();
    ASSERT_EQ(rows.size(0), 6);
    ASSERT_EQ(rows.size(1), flat.numel());
    EXPECT_NEAR(loss, batch_loss, 1e-4);
    EXPECT_TRUE(torch::allclose(oracle.gradient(), batch_grad, 1e-4, 1e-6));
    EXPECT_TRUE(torch::allclose(rows.sum(0), batch_grad, 1e-4, 1e-6));
    const torch::Tensor reference = whole_graph_rows(*model, flat, partition.batch(1));
    EXPECT_TRUE(torch::allclose(rows, reference, 1e-4, 1e-6))
        << "max difference " << (rows - reference).abs().max().item<double>();
    if (!batch_norm) {  // and the gradient of the example's loss alone
      const data_loaders::Split batch = partition.batch(1);
      flat.zero_grad();
      torch::nn::functional::cross_entropy(model->forward(batch.images.narrow(0, 2, 1)), batch.labels.narrow(0, 2, 1),
                                           torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
          .backward();
      EXPECT_TRUE(torch::allclose(rows[2], flat.grads(), 1e-4, 1e-6));
    }
  }
}

}  // namespace
}  // namespace bnn::pipeline
