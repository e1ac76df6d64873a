#include "models/registry.h"

#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/mlp.h"
#include "models/paper_cnns.h"

namespace bnn::models {

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = {"mlp", "fmnist_cnn"};
  return names;
}

std::shared_ptr<Classifier> make_model(const ModelSpec& spec, uint64_t seed) {
  TORCH_CHECK(spec.input_shape.size() == 3, "model input shape must be {C, H, W}, got ", spec.input_shape.size(),
              " dimensions");
  static std::mutex construction;
  std::lock_guard<std::mutex> lock(construction);
  torch::manual_seed(seed);
  if (spec.name == "mlp") {
    MlpOptions o;
    o.input_shape = spec.input_shape;
    o.hidden = spec.hidden;
    o.num_classes = spec.num_classes;
    o.batch_norm = spec.batch_norm;
    return std::make_shared<Mlp>(o);
  }
  if (spec.name == "fmnist_cnn") {
    TORCH_CHECK(spec.input_shape[1] == spec.input_shape[2], "fmnist_cnn needs square images, got ",
                spec.input_shape[1], "x", spec.input_shape[2]);
    PaperCnnOptions o;
    o.in_channels = spec.input_shape[0];
    o.image_size = spec.input_shape[1];
    o.num_classes = spec.num_classes;
    return std::make_shared<FmnistCnn>(o);
  }
  TORCH_CHECK(false, "unknown model '", spec.name, "'; valid: ", fmt::format("{}", fmt::join(model_names(), ", ")));
}

}  // namespace bnn::models
