# Is this a CUDA LibTorch whose c10/cuda headers, c10_cuda library and CUDA
# toolkit headers are all at hand? Sets BNN_HAVE_C10_CUDA. Code that uses
# c10/cuda (CUDA streams, free device memory, the sync debug mode) compiles
# its CUDA branch only then, with bnn_use_c10_cuda(target-or-sources); the CPU
# LibTorch (Debian's libtorch-dev) builds the other branch.
find_path(BNN_C10_CUDA_HEADERS c10/cuda/CUDAFunctions.h PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
set(BNN_HAVE_C10_CUDA OFF)
if(BNN_C10_CUDA_HEADERS AND C10_CUDA_LIBRARY)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(BNN_HAVE_C10_CUDA ON)
  endif()
endif()
message(STATUS "bnn: c10/cuda with CUDA toolkit headers: ${BNN_HAVE_C10_CUDA}")

# Compiles `target` with BNN_HAVE_C10_CUDA=1 and links c10_cuda and the CUDA
# runtime, where BNN_HAVE_C10_CUDA; does nothing otherwise.
function(bnn_use_c10_cuda target)
  if(BNN_HAVE_C10_CUDA)
    target_compile_definitions(${target} PRIVATE BNN_HAVE_C10_CUDA=1)
    target_include_directories(${target} PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
    target_link_libraries(${target} PRIVATE ${C10_CUDA_LIBRARY} CUDA::cudart)
  endif()
endfunction()
