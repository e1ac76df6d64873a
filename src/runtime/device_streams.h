// Several members on one device.
//
// Note [Members per device]: a member's chain is a sequence of small
// kernels (fmnist_cnn at batch 200 keeps an H100 far from busy: about 25
// TFLOP/s of its several hundred), so a GPU runs more member-epochs per second
// when several members train at once. `bnn run --members-per-device K` starts
// K worker threads per device, each taking the next unfinished member from
// the run's queue, and each thread queues its kernels on a CUDA stream of its
// own (LibTorch's stream pool), so the kernels of different members may run
// side by side on the device instead of in one queue. The members share the
// process, the data set on the device and LibTorch's caching allocator;
// everything that makes a member's result (model, seeds, batch order,
// noise generators, checkpoint, output files) is the member's own, so a
// member computes the same whichever worker runs it and whatever runs beside
// it: bit-identical on the CPU (tests/src/pipeline/devices_test.cpp), and on a GPU up
// to the run-to-run nondeterminism that cuDNN and atomics have anyway.
//
// `--member-design stacked` is the other way to share a device: the K
// members' gradients evaluated by one stacked model, its workers on the
// device's default stream (Note [Stacked members in a run] in
// src/pipeline/stacked_group.h). The measurements to choose between them, and against
// separate processes per member, are in docs/performance.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <torch/torch.h>

namespace bnn::runtime {

// For the lifetime of the object, the calling thread queues its work for a
// CUDA `device` on a stream of its own, taken from LibTorch's pool; on
// destruction it waits for that stream and restores the thread's previous
// stream. Does nothing for the CPU. Built against a LibTorch without
// c10/cuda (cmake/c10_cuda.cmake) it does nothing either: workers then share
// the device's default stream, which is correct but serialises their kernels.
class WorkerStream {
 public:
  // With own_stream false the thread keeps the device's default stream
  // (the members of a stacked group share it: Note [Stacked members in a
  // run] in src/pipeline/stacked_group.h) and only makes `device` current.
  explicit WorkerStream(torch::Device device, bool own_stream = true);
  ~WorkerStream();
  WorkerStream(const WorkerStream&) = delete;
  WorkerStream& operator=(const WorkerStream&) = delete;

  // True if this worker has a stream of its own.
  bool own_stream() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether this build can give workers their own CUDA streams.
bool has_worker_streams();

struct DeviceMemory {
  int64_t free_bytes = 0;
  int64_t total_bytes = 0;
};

// Free and total memory of CUDA `device` as the driver reports them
// (LibTorch's cached blocks count as used). nullopt for the CPU, or where
// this build cannot ask (no c10/cuda).
std::optional<DeviceMemory> device_memory(torch::Device device);

// Memory this process may still take on the host, in bytes: the kernel's
// MemAvailable, or less where the memory limit of its cgroup or of one of
// the cgroup's ancestors leaves less (a container, a Slurm job, a systemd
// slice; cgroup v2 and v1). nullopt where neither can be read.
std::optional<int64_t> host_available_memory();

// MemAvailable of /proc/meminfo's `text`, in bytes; nullopt if absent.
std::optional<int64_t> parse_mem_available(const std::string& text);

// Waits until every stream of `device` has finished its queued work (for
// data that the main thread put on the device before workers read it).
void synchronize_device(torch::Device device);

// A CUDA device's model and compute capability, "NVIDIA H100 80GB HBM3
// (sm_90)" (Note [Arithmetic platform] in src/runtime/linkage.h); "cuda"
// without an index is the current device. nullopt for a CPU, without
// c10/cuda, or when CUDA does not answer.
std::optional<std::string> device_model(torch::Device device);

}  // namespace bnn::runtime
