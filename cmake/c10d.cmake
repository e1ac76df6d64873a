# Does this LibTorch carry torch.distributed's C++ side (c10d)? Sets
#   BNN_HAVE_C10D_GLOO  c10d's TCPStore and Gloo headers found (CPU)
#   BNN_HAVE_C10D_NCCL  c10d's headers and nccl.h found in a CUDA LibTorch
#   BNN_HAVE_C10D       either of them
# These are header checks, not compile probes: check_cxx_source_compiles
# against the imported `torch` target fails the whole configure step with
# CMake 4 and pip's LibTorch (its link interface names targets a try_compile
# project lacks). Whether the API matches is decided by compiling
# src/distributed/process_group.cpp, the only file that includes c10d
# headers; it needs USE_C10D_GLOO / USE_C10D_NCCL, which not every LibTorch
# CMake config puts on the torch target, so src/CMakeLists.txt defines them
# for that file. Gloo's own headers are needed (Debian: libgloo-dev; pip's
# LibTorch ships none, Gloo being linked into libtorch_cpu), and for NCCL
# nccl.h; pass directories LibTorch's include directories lack with
# -DBNN_C10D_INCLUDE_DIRS="dir;dir" (pip: site-packages/nvidia/nccl/include).
# The results are cached: after installing headers, delete the build
# directory's CMakeCache.txt and reconfigure. -DBNN_DISTRIBUTED=OFF skips all.
option(BNN_DISTRIBUTED "Data-parallel chains with torch.distributed (c10d), if LibTorch has it" ON)
set(BNN_C10D_INCLUDE_DIRS "" CACHE STRING "Directories with gloo/ or nccl.h headers that LibTorch's include directories lack")

set(BNN_HAVE_C10D_GLOO OFF)
set(BNN_HAVE_C10D_NCCL OFF)
if(BNN_DISTRIBUTED)
  find_path(BNN_C10D_HEADERS torch/csrc/distributed/c10d/TCPStore.hpp PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
  find_path(BNN_GLOO_HEADERS gloo/algorithm.h PATHS ${BNN_C10D_INCLUDE_DIRS} ${TORCH_INCLUDE_DIRS})
  find_path(BNN_NCCL_HEADERS nccl.h PATHS ${BNN_C10D_INCLUDE_DIRS} ${TORCH_INCLUDE_DIRS})
  if(BNN_C10D_HEADERS AND BNN_GLOO_HEADERS
     AND EXISTS "${BNN_C10D_HEADERS}/torch/csrc/distributed/c10d/ProcessGroupGloo.hpp")
    set(BNN_HAVE_C10D_GLOO ON)
  endif()
  if(BNN_C10D_HEADERS AND BNN_NCCL_HEADERS AND C10_CUDA_LIBRARY
     AND EXISTS "${BNN_C10D_HEADERS}/torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp")
    set(BNN_HAVE_C10D_NCCL ON)
  endif()
endif()
if(BNN_HAVE_C10D_GLOO OR BNN_HAVE_C10D_NCCL)
  set(BNN_HAVE_C10D ON)
else()
  set(BNN_HAVE_C10D OFF)
endif()
message(STATUS "torch.distributed (c10d): Gloo ${BNN_HAVE_C10D_GLOO} (CPU; Debian needs libgloo-dev), "
               "NCCL ${BNN_HAVE_C10D_NCCL} (CUDA)")
