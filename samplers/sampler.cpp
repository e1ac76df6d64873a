#include "samplers/sampler.h"

#include <cmath>
#include <mutex>

#include <fmt/format.h>

namespace bnn::samplers {

torch::Tensor Sampler::step() {
  torch::NoGradGuard no_grad;
  torch::Tensor loss = do_step();
  ++steps_;
  return loss;
}

namespace {

std::string joined_names(const std::vector<std::pair<std::string, double>>& values) {
  std::string names;
  for (const auto& [name, value] : values) names += (names.empty() ? "" : ",") + name;
  return names;
}

}  // namespace

void Sampler::save(torch::serialize::OutputArchive& archive) const {
  archive.write("sampler.description", c10::IValue(pretty_string()));
  const auto options = option_values();
  std::vector<double> values;
  for (const auto& [name, value] : options) values.push_back(value);
  archive.write("sampler.option_names", c10::IValue(joined_names(options)));
  archive.write("sampler.option_values", torch::tensor(values, torch::kDouble));
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
  // The description prints values to 6 digits; the options must agree exactly.
  const auto options = option_values();
  c10::IValue names;
  torch::Tensor values;
  if (archive.try_read("sampler.option_names", names) && archive.try_read("sampler.option_values", values)) {
    TORCH_CHECK(names.isString() && names.toStringRef() == joined_names(options),
                "sampler checkpoint records the options ", names.isString() ? names.toStringRef() : "?",
                " but this sampler has ", joined_names(options), " (written by ", description.toStringRef(), ")");
    values = values.to(torch::kCPU, torch::kDouble);
    TORCH_CHECK(values.numel() == static_cast<int64_t>(options.size()), "sampler checkpoint records ",
                values.numel(), " option values for ", options.size(), " options");
    for (size_t i = 0; i < options.size(); ++i) {
      const double saved = values[static_cast<int64_t>(i)].item<double>();
      TORCH_CHECK(saved == options[i].second || (std::isnan(saved) && std::isnan(options[i].second)),
                  "sampler checkpoint was written with ", options[i].first, " = ", fmt::format("{:.17g}", saved),
                  " but this sampler has ", options[i].first, " = ", fmt::format("{:.17g}", options[i].second),
                  "; resume with the options of the run that wrote it");
    }
  }
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
