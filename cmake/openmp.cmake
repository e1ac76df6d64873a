# Note [Parallel loops in bnn's code]
# at::parallel_for is a header template. With LibTorch's OpenMP backend (Debian's
# libtorch and the pip wheels) it runs its body under `#pragma omp parallel`,
# and that pragma only takes effect in a translation unit compiled with
# OpenMP: compiled without it, at::parallel_for in bnn's own code (the noise
# chunks, the fused sampler passes, the channel statistics) ran on one thread
# whatever --threads said, while LibTorch's own kernels used them all. So
# every bnn target compiles with OpenMP and links the OpenMP runtime LibTorch
# itself uses, so that both drive one thread pool:
# - a pip wheel ships its own libgomp (lib/libgomp-<hash>.so.1) next to
#   libtorch_cpu.so; bnn links that file, not the compiler's libgomp, or the
#   process would hold two OpenMP runtimes with a pool each;
# - otherwise (Debian's libtorch links the system libgomp) the compiler's.
# runtime::parallel_loop_threads() measures the threads a loop in bnn's code
# gets; `bnn version` prints it and Threads.ParallelLoopsInBnnCodeUseEveryThread
# tests it.
find_package(OpenMP COMPONENTS CXX)
set(BNN_OPENMP_LINK "")
if(OpenMP_CXX_FOUND)
  get_filename_component(BNN_TORCH_LIBRARY_DIR "${TORCH_LIBRARY}" DIRECTORY)
  file(GLOB BNN_TORCH_GOMP "${BNN_TORCH_LIBRARY_DIR}/libgomp*.so*" "${BNN_TORCH_LIBRARY_DIR}/libiomp5*.so")
  target_compile_options(bnn_pch PUBLIC ${OpenMP_CXX_FLAGS})
  if(BNN_TORCH_GOMP)
    list(GET BNN_TORCH_GOMP 0 BNN_OPENMP_LINK)
  else()
    set(BNN_OPENMP_LINK OpenMP::OpenMP_CXX)
  endif()
  target_link_libraries(bnn_pch PUBLIC ${BNN_OPENMP_LINK})
else()
  message(WARNING "bnn: no OpenMP for ${CMAKE_CXX_COMPILER_ID}; bnn's own parallel loops (noise, fused sampler "
                  "passes) will run on one thread")
endif()
message(STATUS "bnn: OpenMP for bnn's parallel loops: ${OpenMP_CXX_FLAGS} ${BNN_OPENMP_LINK}")
