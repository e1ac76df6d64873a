#include "models/flat_parameters.h"

namespace bnn::models {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

FlatParameters::FlatParameters(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  const auto named = module.named_parameters(/*recurse=*/true);
  TORCH_CHECK(named.size() > 0, "module has no parameters");
  int64_t total = 0;
  for (const auto& item : named) total += item.value().numel();
  const auto options = named[0].value().options();
  values_ = torch::empty({total}, options);
  grads_ = torch::zeros({total}, options);
  prior_mask_ = torch::empty({total}, options);
  int64_t offset = 0;
  for (const auto& item : named) {
    torch::Tensor p = item.value();
    TORCH_CHECK(p.options().dtype() == options.dtype() && p.device() == options.device(),
                "all parameters must share dtype and device; ", item.key(), " differs");
    const int64_t n = p.numel();
    torch::Tensor slot = values_.narrow(0, offset, n);
    slot.copy_(p.reshape({n}));
    p.set_data(slot.view(p.sizes()));
    p.mutable_grad() = grads_.narrow(0, offset, n).view(p.sizes());
    prior_mask_.narrow(0, offset, n).fill_(ends_with(item.key(), "bias") ? 0.0 : 1.0);
    offset += n;
  }
}

}  // namespace bnn::models
