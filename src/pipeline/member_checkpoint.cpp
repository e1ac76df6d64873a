#include "src/pipeline/member_checkpoint.h"

#include <regex>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "samplers/random.h"
#include "src/io/atomic_file.h"
#include "src/io/zip_check.h"

namespace bnn::pipeline {

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kAdam: return "adam";
    case Phase::kSwa: return "swa";
    case Phase::kSample: return "sampling";
    case Phase::kMap: return "map";
  }
  throw std::runtime_error("checkpoint: unknown phase");
}

bool is_flat_adam(const torch::optim::Adam& adam) {
  return adam.param_groups().size() == 1 && adam.param_groups().front().params().size() == 1;
}

void save_member_checkpoint(const std::filesystem::path& path, uint64_t seed, Position at, const MemberState& state,
                            const torch::Tensor& parameters, models::Classifier& model, torch::optim::Adam* adam) {
  torch::serialize::OutputArchive a;
  a.write("member.seed", torch::tensor(static_cast<int64_t>(seed), torch::kLong));
  a.write("member.phase", torch::tensor(static_cast<int64_t>(at.phase), torch::kLong));
  a.write("member.epochs_done", torch::tensor(at.epochs_done, torch::kLong));
  a.write("member.trace", c10::IValue(state.trace));
  a.write("member.arithmetic", c10::IValue(fmt::format("{}", fmt::join(state.arithmetic, "\n"))));
  a.write("model.parameters", parameters);
  for (const auto& b : model.named_buffers()) a.write("model.buffer." + b.key(), b.value());
  samplers::write_generator(a, "member.optimiser_order", state.order_gen);
  if (adam != nullptr) {
    torch::serialize::OutputArchive adam_state;
    adam->save(adam_state);
    a.write("adam", adam_state);
    // Note [Flat Adam]: the per-tensor layout writes no mark, as before it.
    if (is_flat_adam(*adam)) a.write("adam.flat", torch::tensor(1, torch::kLong));
  }
  if (at.phase == Phase::kSwa) {
    a.write("swa.sum", state.swa_sum);
    a.write("swa.count", torch::tensor(state.swa_count, torch::kLong));
  }
  if (at.phase == Phase::kSample) {
    a.write("sample.anchor", state.anchor);
    a.write("sample.prob_sum", state.prob_sum);
    a.write("sample.count", torch::tensor(state.samples, torch::kLong));
    torch::serialize::OutputArchive sampler_state;
    state.sampler->save(sampler_state);
    a.write("sampler", sampler_state);
  }
  std::ostringstream bytes;
  a.save_to(bytes);
  io::write_file_atomically(path, bytes.str());
}

Position restore_member_checkpoint(const std::filesystem::path& path, torch::Device device, uint64_t seed,
                                   MemberState& state, torch::Tensor parameters, models::Classifier& model,
                                   const std::function<torch::optim::Adam&(bool flat_layout)>& make_adam,
                                   const std::function<std::unique_ptr<samplers::Sampler>()>& make_sampler) {
  torch::serialize::InputArchive a;
  try {
    // Note [Checkpoint integrity]: every entry's CRC-32 before it is loaded.
    if (const std::string damage = io::zip_file_damage(path); !damage.empty()) {
      throw std::runtime_error(damaged_checkpoint(path, damage));
    }
    a.load_from(path.string(), device);
  } catch (const c10::Error& e) {
    throw std::runtime_error(fmt::format("{}: not a readable checkpoint ({}); delete it to restart the member",
                                         path.string(), e.what_without_backtrace()));
  }
  auto scalar = [&](const std::string& key) { return samplers::read_tensor(a, key).item<int64_t>(); };
  if (static_cast<uint64_t>(scalar("member.seed")) != seed) {
    throw std::runtime_error(fmt::format("{} belongs to another member or run seed; delete it to restart",
                                         path.string()));
  }
  const Position at{static_cast<Phase>(scalar("member.phase")), scalar("member.epochs_done")};
  c10::IValue trace;
  a.read("member.trace", trace);
  state.trace = trace.toStringRef();
  c10::IValue arithmetic;  // absent before 2026-11-25
  state.arithmetic.clear();
  if (a.try_read("member.arithmetic", arithmetic) && arithmetic.isString()) {
    std::istringstream lines(arithmetic.toStringRef());
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) state.arithmetic.push_back(line);
    }
  }
  torch::NoGradGuard no_grad;
  samplers::read_into(a, "model.parameters", parameters);
  for (auto& b : model.named_buffers()) samplers::read_into(a, "model.buffer." + b.key(), b.value());
  samplers::read_generator(a, "member.optimiser_order", state.order_gen);
  if (at.phase != Phase::kSample) {
    torch::serialize::InputArchive adam_state;
    a.read("adam", adam_state);
    torch::Tensor flat;  // absent before Note [Flat Adam]: the per-tensor layout
    const bool flat_layout = a.try_read("adam.flat", flat) && flat.item<int64_t>() != 0;
    make_adam(flat_layout).load(adam_state);
  }
  if (at.phase == Phase::kSwa) {
    state.swa_sum = samplers::read_tensor(a, "swa.sum");
    state.swa_count = scalar("swa.count");
  }
  if (at.phase == Phase::kSample) {
    state.anchor = samplers::read_tensor(a, "sample.anchor");
    state.prob_sum = samplers::read_tensor(a, "sample.prob_sum");
    state.samples = scalar("sample.count");
    const torch::Tensor x = parameters.clone();
    parameters.copy_(state.anchor);  // the control variate is built at x*
    state.sampler = make_sampler();
    torch::serialize::InputArchive sampler_state;
    a.read("sampler", sampler_state);
    state.sampler->load(sampler_state);
    TORCH_CHECK(parameters.equal(x), "checkpoint: sampler and model parameters disagree");
  }
  return at;
}

std::string damaged_checkpoint(const std::filesystem::path& path, const std::string& damage) {
  return fmt::format("{}: a damaged checkpoint ({}); delete it to restart the member", path.string(), damage);
}

bool same_arithmetic(const std::string& recorded, const std::string& now) {
  // On the CPU, where that was measured; a GPU's batched and grouped kernels
  // may choose by the group's size.
  static const std::regex slots(", stacked in [0-9]+ slots");  // 2 or more: a group has no fewer
  const bool cpu = recorded.rfind("cpu,", 0) == 0 && now.rfind("cpu,", 0) == 0;
  const std::string a = cpu ? std::regex_replace(recorded, slots, ", stacked") : recorded;
  const std::string b = cpu ? std::regex_replace(now, slots, ", stacked") : now;
  if (a.find(" [") != std::string::npos) return a == b;
  return a == b.substr(0, b.find(" ["));
}

}  // namespace bnn::pipeline
