# Note [CUDA kernels]
# bnn's own CUDA kernels (the buffered sampler passes, samplers/buffered_passes.cu,
# Note [Buffered passes]) are built where LibTorch has CUDA (BNN_HAVE_C10_CUDA,
# cmake/c10_cuda.cmake) and CMake finds a CUDA compiler. Without them a chain on
# a GPU runs its steps as tensor operations, with the same maths.
#   -DBNN_CUDA_KERNELS=AUTO (default) build them where they can be built;
#                      ON   fail where they cannot (a CUDA LibTorch without nvcc);
#                      OFF  never.
# The kernel file includes no LibTorch header and is compiled in an object
# library of its own, without the C++ targets' flags (OpenMP, the precompiled
# header). Architectures (BNN_CUDA_ARCHITECTURES, set on that target):
# CMAKE_CUDA_ARCHITECTURES where the user set it, else every major one the
# compiler knows (CMake >= 3.23), else 75, 80 and 90. A pip LibTorch's CMake
# config enables CUDA itself, sets CMAKE_CUDA_ARCHITECTURES to OFF and adds
# its own -gencode flags (TORCH_CUDA_ARCH_LIST, by default the visible GPU's)
# to CMAKE_CUDA_FLAGS; those apply too.
set(BNN_CUDA_KERNELS AUTO CACHE STRING "Build bnn's CUDA kernels: AUTO, ON or OFF")
set_property(CACHE BNN_CUDA_KERNELS PROPERTY STRINGS AUTO ON OFF)
if(NOT BNN_CUDA_KERNELS MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "BNN_CUDA_KERNELS: '${BNN_CUDA_KERNELS}' is not AUTO, ON or OFF")
endif()
set(BNN_WITH_CUDA_KERNELS OFF)
if(BNN_CUDA_KERNELS STREQUAL "ON" OR (BNN_CUDA_KERNELS STREQUAL "AUTO" AND BNN_HAVE_C10_CUDA))
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(CMAKE_CUDA_ARCHITECTURES)  # neither unset nor OFF
      set(BNN_CUDA_ARCHITECTURES ${CMAKE_CUDA_ARCHITECTURES})
    elseif(CMAKE_VERSION VERSION_GREATER_EQUAL 3.23)
      set(BNN_CUDA_ARCHITECTURES all-major)
    else()
      set(BNN_CUDA_ARCHITECTURES 75 80 90)
    endif()
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES ${BNN_CUDA_ARCHITECTURES})  # enable_language's own check needs one
    endif()
    # The kernels' launches go through the shared CUDA runtime that LibTorch
    # loads, not CMake's default for targets with CUDA objects, the static
    # one: two runtimes in one process each keep their own state (the last
    # error, the registered kernels), and the link line carried both.
    if(NOT DEFINED CMAKE_CUDA_RUNTIME_LIBRARY)
      set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    endif()
    enable_language(CUDA)
    include(${CMAKE_CURRENT_LIST_DIR}/cuda_link_dirs.cmake)  # Note [The CUDA host compiler's runtime]
    set(BNN_WITH_CUDA_KERNELS ON)
  elseif(BNN_CUDA_KERNELS STREQUAL "ON")
    message(FATAL_ERROR "BNN_CUDA_KERNELS=ON, but CMake found no CUDA compiler: set CMAKE_CUDA_COMPILER "
                        "(e.g. /usr/local/cuda/bin/nvcc) or put nvcc on the PATH")
  endif()
endif()
if(BNN_WITH_CUDA_KERNELS AND NOT BNN_HAVE_C10_CUDA)
  message(STATUS "bnn: CUDA kernels compiled, but LibTorch has no CUDA: chains cannot reach them")
endif()
if(BNN_WITH_CUDA_KERNELS)
  message(STATUS "bnn: CUDA kernels: ON (architectures ${BNN_CUDA_ARCHITECTURES}; CMAKE_CUDA_FLAGS: ${CMAKE_CUDA_FLAGS})")
else()
  message(STATUS "bnn: CUDA kernels: OFF")
endif()
