// The only translation unit that includes c10d headers (process_group.h).
//
// Note [c10d across LibTorch releases]: what is used here is the part of the
// c10d C++ API that LibTorch 1.13 and 2.x share:
//   - TCPStore(host, TCPStoreOptions), filling the options field by field
//     (2.x adds fields, e.g. useLibUV, and makes numWorkers a std::optional;
//     assignment compiles against either). From 2.4 useLibUV is on by
//     default, and a LibTorch built without libuv (Debian's 2.x) refuses to
//     start the store; the store is then started again on its older backend,
//     the only one 1.13 has (start_store);
//   - ProcessGroupGloo::Options::create(timeout), its `devices` vector and
//     createDeviceForHostname / createDeviceForInterface / createDefaultDevice
//     (2.x adds a defaulted lazyInit argument);
//   - ProcessGroupGloo(store, rank, size, options) and, for CUDA,
//     ProcessGroupNCCL(store, rank, size, options) (1.13 derives them from
//     ProcessGroup, 2.x from Backend: both are used through their own class
//     and `auto`, never through the base);
//   - allreduce(std::vector<at::Tensor>&, AllreduceOptions) -> Work::wait().
// The headers are guarded by USE_C10D_GLOO / USE_C10D_NCCL, which not every
// LibTorch CMake config defines; CMake (cmake/c10d.cmake) probes that they
// compile and link and then defines them, with BNN_HAVE_C10D, for this file.
#include "src/distributed/process_group.h"

#include <cstdlib>
#include <functional>

#include <fmt/format.h>

#ifdef BNN_HAVE_C10D
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef BNN_HAVE_C10D_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef BNN_HAVE_C10D_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#endif

namespace bnn::distributed {
namespace {

std::optional<std::string> getenv_value(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

// An integer environment variable in [lo, hi]; throws naming it.
int integer_variable(const std::function<std::optional<std::string>(const std::string&)>& lookup,
                     const std::string& name, int lo, int hi, const std::string& range) {
  const std::optional<std::string> text = lookup(name);
  if (!text) {
    throw std::invalid_argument(fmt::format(
        "environment variable {} is not set (a distributed run needs MASTER_ADDR, MASTER_PORT, RANK and "
        "WORLD_SIZE, as torchrun sets them)",
        name));
  }
  size_t used = 0;
  long value = 0;
  try {
    value = std::stol(*text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text->size() || value < lo || value > hi) {
    throw std::invalid_argument(fmt::format("environment variable {}='{}' is not valid: expected {}", name, *text,
                                            range));
  }
  return static_cast<int>(value);
}

}  // namespace

Rendezvous rendezvous_from_environment(
    const std::function<std::optional<std::string>(const std::string&)>& lookup_or_empty) {
  const auto lookup = lookup_or_empty ? lookup_or_empty : getenv_value;
  Rendezvous r;
  const std::optional<std::string> addr = lookup("MASTER_ADDR");
  if (!addr || addr->empty()) {
    throw std::invalid_argument(fmt::format(
        "environment variable MASTER_ADDR is {} (a distributed run needs MASTER_ADDR, MASTER_PORT, RANK and "
        "WORLD_SIZE, as torchrun sets them)",
        addr ? "empty" : "not set"));
  }
  r.master_addr = *addr;
  r.master_port = integer_variable(lookup, "MASTER_PORT", 1, 65535, "a TCP port, 1-65535");
  r.world_size = integer_variable(lookup, "WORLD_SIZE", 1, 1 << 20, "the number of processes, at least 1");
  r.rank = integer_variable(lookup, "RANK", 0, r.world_size - 1,
                            fmt::format("a rank in 0-{} (WORLD_SIZE={})", r.world_size - 1, r.world_size));
  r.local_rank = lookup("LOCAL_RANK") ? integer_variable(lookup, "LOCAL_RANK", 0, 1 << 20, "an index >= 0")
                                      : r.rank;
  // Note [torchrun's agent store].
  r.agent_store = lookup("TORCHELASTIC_USE_AGENT_STORE").value_or("") == "True";
  if (r.agent_store) {
    r.store_prefix = fmt::format("/worker/attempt_{}", lookup("TORCHELASTIC_RESTART_COUNT").value_or("0"));
  }
  return r;
}

#ifdef BNN_HAVE_C10D

bool available() { return true; }

#ifdef BNN_HAVE_C10D_GLOO
bool gloo_available() { return true; }
#else
bool gloo_available() { return false; }
#endif

#ifdef BNN_HAVE_C10D_NCCL
bool nccl_available() { return true; }
#else
bool nccl_available() { return false; }
#endif

namespace {

using AllReduce = std::function<void(std::vector<at::Tensor>&, const c10d::AllreduceOptions&)>;

// A blocking all-reduce of the concrete group (Gloo or NCCL), which the
// closure owns.
template <typename Group>
AllReduce blocking_all_reduce(c10::intrusive_ptr<Group> group) {
  return [group](std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& options) {
    group->allreduce(tensors, options)->wait();
  };
}

#ifdef BNN_HAVE_C10D_GLOO
bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

// Gloo's network device: loopback when the rendezvous is on this host,
// GLOO_SOCKET_IFNAME when set (as torch.distributed honours it), else the
// address this host's name resolves to.
std::shared_ptr<::gloo::transport::Device> gloo_device(const Rendezvous& r) {
  if (is_loopback(r.master_addr)) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  if (const auto ifname = getenv_value("GLOO_SOCKET_IFNAME"); ifname && !ifname->empty()) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(*ifname);
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}
#endif

// Turns TCPStoreOptions::useLibUV off where the field exists and is on; says
// whether it did. The second overload is LibTorch 1.13's, which has no field.
template <typename Options>
auto turn_libuv_off(Options& options, int) -> decltype(options.useLibUV = false, bool()) {
  if (!options.useLibUV) return false;
  options.useLibUV = false;
  return true;
}
template <typename Options>
bool turn_libuv_off(Options&, long) {
  return false;
}

c10::intrusive_ptr<c10d::Store> start_store(const std::string& host, c10d::TCPStoreOptions options) {
  try {
    return c10::make_intrusive<c10d::TCPStore>(host, options);
  } catch (const c10::Error& e) {
    const bool without_libuv = std::string(e.what()).find("libuv") != std::string::npos;
    if (!without_libuv || !turn_libuv_off(options, 0)) throw;
  }
  return c10::make_intrusive<c10d::TCPStore>(host, options);
}

}  // namespace

struct ProcessGroup::Impl {
  const char* backend = "";
  c10::intrusive_ptr<c10d::Store> store;
  AllReduce allreduce;  // destroyed first: the group before its store
};

namespace {

std::string rendezvous_failure(const Rendezvous& r, const std::string& what, std::chrono::milliseconds timeout) {
  return fmt::format("rendezvous at {}:{} as rank {} of {} failed: {} (a timeout is {} s: did every rank start, with "
                     "the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE? A rank that stopped on an error of its own "
                     "says so in its output)",
                     r.master_addr, r.master_port, r.rank, r.world_size, what,
                     std::chrono::duration_cast<std::chrono::seconds>(timeout).count());
}

}  // namespace

ProcessGroup::ProcessGroup(const Rendezvous& r, torch::Device device, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()), rank_(r.rank), world_size_(r.world_size), device_(device) {
  if (device.is_cuda() && !nccl_available()) {
    throw std::runtime_error("this LibTorch was built without NCCL support for torch.distributed (or bnn found no "
                             "nccl.h, cmake/c10d.cmake): a distributed run on a CUDA device needs it");
  }
  if (!device.is_cuda() && !gloo_available()) {
    throw std::runtime_error("this LibTorch was built without Gloo support for torch.distributed (or bnn found no "
                             "Gloo headers, cmake/c10d.cmake): a distributed run on the CPU needs it");
  }
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<std::uint16_t>(r.master_port);
    store_options.isServer = r.rank == 0 && !r.agent_store;  // Note [torchrun's agent store]
    store_options.numWorkers = static_cast<std::size_t>(r.world_size);
    store_options.waitWorkers = true;
    store_options.timeout = timeout;
    impl_->store = start_store(r.master_addr, store_options);
    if (r.agent_store) impl_->store = c10::make_intrusive<c10d::PrefixStore>(r.store_prefix, impl_->store);
    if (device.is_cuda()) {
#ifdef BNN_HAVE_C10D_NCCL
      c10::cuda::set_device(device.has_index() ? device.index() : 0);
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout;
      impl_->backend = "nccl";
      impl_->allreduce = blocking_all_reduce(
          c10::make_intrusive<c10d::ProcessGroupNCCL>(impl_->store, r.rank, r.world_size, options));
#endif
    } else {
#ifdef BNN_HAVE_C10D_GLOO
      auto options = c10d::ProcessGroupGloo::Options::create(timeout);
      options->devices.push_back(gloo_device(r));
      impl_->backend = "gloo";
      impl_->allreduce = blocking_all_reduce(
          c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, r.rank, r.world_size, options));
#endif
    }
  } catch (const c10::Error& e) {
    throw CommunicationError(rendezvous_failure(r, e.what_without_backtrace(), timeout));
  } catch (const std::exception& e) {
    throw CommunicationError(rendezvous_failure(r, e.what(), timeout));
  }
}

void ProcessGroup::all_reduce(torch::Tensor& t, Op op) {
  TORCH_CHECK(t.is_contiguous(), "all_reduce needs a contiguous tensor");
  torch::Tensor flat = t.device() == device_ ? t.view({-1}) : t.to(device_).view({-1});
  std::vector<at::Tensor> tensors{flat};
  c10d::AllreduceOptions options;
  options.reduceOp = op == Op::kSum ? c10d::ReduceOp::SUM : op == Op::kMax ? c10d::ReduceOp::MAX : c10d::ReduceOp::MIN;
  try {
    impl_->allreduce(tensors, options);
  } catch (const c10::Error& e) {
    throw CommunicationError(fmt::format("{} all-reduce as rank {} of {} failed: {}", impl_->backend, rank_,
                                         world_size_, e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw CommunicationError(
        fmt::format("{} all-reduce as rank {} of {} failed: {}", impl_->backend, rank_, world_size_, e.what()));
  }
  if (t.device() != device_) t.copy_(flat.view(t.sizes()));
}

#else  // !BNN_HAVE_C10D

bool available() { return false; }
bool gloo_available() { return false; }
bool nccl_available() { return false; }

struct ProcessGroup::Impl {
  const char* backend = "none";
};

ProcessGroup::ProcessGroup(const Rendezvous& r, torch::Device device, std::chrono::milliseconds)
    : rank_(r.rank), world_size_(r.world_size), device_(device) {
  throw std::runtime_error(
      "this LibTorch was built without distributed support (torch.distributed's c10d with Gloo), or bnn was "
      "configured without it (see cmake/c10d.cmake): bnn run --distributed is not available");
}

void ProcessGroup::all_reduce(torch::Tensor&, Op) { TORCH_CHECK(false, "no distributed support"); }

#endif  // BNN_HAVE_C10D

ProcessGroup::~ProcessGroup() = default;

const char* ProcessGroup::backend() const { return impl_ ? impl_->backend : "none"; }

void ProcessGroup::all_reduce_sum(torch::Tensor& t) { all_reduce(t, Op::kSum); }

bool ProcessGroup::identical_on_all_ranks(const torch::Tensor& t) {
  torch::NoGradGuard no_grad;
  torch::Tensor hi = t.detach().contiguous().clone();
  torch::Tensor lo = hi.clone();
  all_reduce(hi, Op::kMax);
  all_reduce(lo, Op::kMin);
  // NaN compares unequal to itself; a NaN anywhere is reported by the callers'
  // finiteness checks, so it counts as "identical" here.
  return hi.eq(lo).logical_or(hi.isnan()).all().item<bool>();
}

bool ProcessGroup::any_rank(bool value) {
  torch::NoGradGuard no_grad;
  torch::Tensor flag = torch::full({1}, value ? 1.0 : 0.0, torch::TensorOptions().device(device_));
  all_reduce(flag, Op::kMax);
  return flag.item<double>() > 0.5;
}

int64_t ProcessGroup::from_rank_zero(int64_t value) {
  torch::NoGradGuard no_grad;
  // In double: exact for the small integers it carries, on every backend.
  const double mine = rank_ == 0 ? static_cast<double>(value) : 0.0;
  torch::Tensor sum = torch::full({1}, mine, torch::TensorOptions().dtype(torch::kDouble).device(device_));
  all_reduce(sum, Op::kSum);
  return static_cast<int64_t>(sum.item<double>());
}

void ProcessGroup::stop_if_rank_zero_failed(const std::exception_ptr& error, int exit_code, const std::string& when) {
  // A failure's code is never 0: 2 stands for one that names none.
  const int64_t code = from_rank_zero(error ? (exit_code != 0 ? exit_code : 2) : 0);
  if (code == 0) return;
  if (rank_ == 0 && error) std::rethrow_exception(error);
  throw StoppedWithRankZero(rank_, when, static_cast<int>(code));
}

StoppedWithRankZero::StoppedWithRankZero(int rank, const std::string& when, int exit_code)
    : std::runtime_error(fmt::format("rank 0 of this distributed run stopped {}, for the reason its log gives; rank {} "
                                     "stops with it",
                                     when, rank)),
      exit_code_(exit_code) {}

}  // namespace bnn::distributed
