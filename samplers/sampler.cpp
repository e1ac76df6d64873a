#include "samplers/sampler.h"

#include <mutex>

namespace bnn::samplers {

torch::Tensor Sampler::step() {
  torch::NoGradGuard no_grad;
  torch::Tensor loss = do_step();
  ++steps_;
  return loss;
}

void Sampler::save(torch::serialize::OutputArchive& archive) const {
  archive.write("sampler.description", c10::IValue(pretty_string()));
  archive.write("sampler.steps", torch::tensor(steps_, torch::kLong));
  save_state(archive);
}

void Sampler::load(torch::serialize::InputArchive& archive) {
  torch::NoGradGuard no_grad;
  c10::IValue description;
  TORCH_CHECK(archive.try_read("sampler.description", description) && description.isString(),
              "sampler checkpoint has no sampler description; not a bnn sampler checkpoint?");
  TORCH_CHECK(description.toStringRef() == pretty_string(), "sampler checkpoint was written by ",
              description.toStringRef(), " but is being loaded into ", pretty_string());
  steps_ = read_tensor(archive, "sampler.steps").item<int64_t>();
  load_state(archive);
}

torch::Tensor read_tensor(torch::serialize::InputArchive& archive, const std::string& key) {
  torch::Tensor t;
  TORCH_CHECK(archive.try_read(key, t), "sampler checkpoint has no entry '", key,
              "' (written by another sampler or version?)");
  return t;
}

void read_into(torch::serialize::InputArchive& archive, const std::string& key, torch::Tensor& dst) {
  const torch::Tensor t = read_tensor(archive, key);
  TORCH_CHECK(t.sizes().equals(dst.sizes()), "sampler checkpoint entry '", key, "' has shape ", t.sizes(),
              " but the sampler expects ", dst.sizes());
  dst.copy_(t);
}

void write_generator(torch::serialize::OutputArchive& archive, const std::string& key, const at::Generator& gen) {
  at::Generator g = gen;  // shares the implementation; get_state is logically const
  std::lock_guard<std::mutex> lock(g.mutex());
  archive.write(key, g.get_state());
}

void read_generator(torch::serialize::InputArchive& archive, const std::string& key, at::Generator& gen) {
  const torch::Tensor state = read_tensor(archive, key);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state.to(torch::kCPU));  // checkpoints may be loaded onto a GPU; states live on the CPU
}

}  // namespace bnn::samplers
