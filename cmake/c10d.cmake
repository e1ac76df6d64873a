# Does this LibTorch carry torch.distributed's C++ side (c10d)? Sets
#   BNN_HAVE_C10D       Gloo process groups and TCPStore compile and link
#   BNN_HAVE_C10D_NCCL  ProcessGroupNCCL too (CUDA builds with NCCL headers)
# Each probe compiles and links a small program against the `torch` target.
# The c10d headers are guarded by USE_C10D_GLOO / USE_C10D_NCCL, which not
# every LibTorch CMake config puts on the torch target (Debian's defines
# USE_C10D_GLOO), so the probes (and src/distributed/process_group.cpp)
# define them. Gloo's own headers are needed
# (Debian: libgloo-dev), and for NCCL nccl.h; when a LibTorch package keeps
# them outside its include directories (e.g. pip's
# site-packages/nvidia/nccl/include), pass -DBNN_C10D_INCLUDE_DIRS="dir;dir".
# The results are cached: after installing headers, delete the build
# directory's CMakeCache.txt (or the BNN_C10D_* entries) and reconfigure.
# Set -DBNN_DISTRIBUTED=OFF to skip both.
include(CheckCXXSourceCompiles)

option(BNN_DISTRIBUTED "Data-parallel chains with torch.distributed (c10d), if LibTorch has it" ON)
set(BNN_C10D_INCLUDE_DIRS "" CACHE STRING "Directories with gloo/ or nccl.h headers that LibTorch's include directories lack")

set(BNN_HAVE_C10D OFF)
set(BNN_HAVE_C10D_NCCL OFF)
if(BNN_DISTRIBUTED)
  set(CMAKE_REQUIRED_LIBRARIES torch)
  set(CMAKE_REQUIRED_FLAGS "-std=c++17")
  set(CMAKE_REQUIRED_DEFINITIONS -DUSE_C10D_GLOO)
  set(CMAKE_REQUIRED_QUIET ON)
  set(CMAKE_REQUIRED_INCLUDES ${BNN_C10D_INCLUDE_DIRS})
  check_cxx_source_compiles([=[
    #include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
    #include <torch/csrc/distributed/c10d/TCPStore.hpp>
    int main() {
      c10d::TCPStoreOptions store_options;
      store_options.port = 29500;
      store_options.numWorkers = 2;
      auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", store_options);
      auto options = c10d::ProcessGroupGloo::Options::create();
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, 0, 2, options);
      std::vector<at::Tensor> tensors{at::ones({1})};
      return group->allreduce(tensors)->wait() ? 0 : 1;
    }]=] BNN_C10D_GLOO_COMPILES)
  if(BNN_C10D_GLOO_COMPILES)
    set(BNN_HAVE_C10D ON)
    set(CMAKE_REQUIRED_DEFINITIONS -DUSE_C10D_GLOO -DUSE_C10D_NCCL)
    check_cxx_source_compiles([=[
      #include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
      int main() {
        c10::intrusive_ptr<c10d::Store> store;
        auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, 0, 2,
                                                                 c10d::ProcessGroupNCCL::Options::create());
        return group ? 0 : 1;
      }]=] BNN_C10D_NCCL_COMPILES)
    if(BNN_C10D_NCCL_COMPILES)
      set(BNN_HAVE_C10D_NCCL ON)
    endif()
  endif()
  unset(CMAKE_REQUIRED_LIBRARIES)
  unset(CMAKE_REQUIRED_FLAGS)
  unset(CMAKE_REQUIRED_DEFINITIONS)
  unset(CMAKE_REQUIRED_INCLUDES)
  unset(CMAKE_REQUIRED_QUIET)
endif()
if(BNN_HAVE_C10D)
  message(STATUS "torch.distributed (c10d): Gloo yes, NCCL ${BNN_HAVE_C10D_NCCL}")
else()
  message(STATUS "torch.distributed (c10d): not available; bnn run --distributed will refuse to start "
                 "(Debian: install libgloo-dev)")
endif()
