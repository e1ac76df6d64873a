# Note [The CUDA host compiler's runtime]
# A C++ program that links CUDA objects (bnn's kernels, Note [CUDA kernels])
# is linked with the CUDA compiler's implicit link folders as -L options. nvcc
# compiles host code with a GCC of its own choosing, which need not be the C++
# compiler: Debian 13's nvcc 12.4 takes g++-13 where g++ is 14. Its folder
# /usr/lib/gcc/x86_64-linux-gnu/13 holds GCC 13's libstdc++.so and libgcc.a,
# and a -L comes before the folders the C++ driver adds itself, so -lstdc++
# (Note [libstdc++ before LibTorch]) found GCC 13's libstdc++ and every program
# failed to link: GCC 14's objects, and OpenCV built by it, need
# __cxa_call_terminate@CXXABI_1.3.15. The programs must link the C++
# compiler's runtime; so a CUDA link folder that holds a C++ runtime
# (libstdc++ or libgcc) and is not one of the C++ compiler's own folders is
# left out. The toolkit's folders (cudart, cudadevrt) hold neither and stay.
# A folder that holds both (a conda environment's lib/ can) stays, since the
# programs need CUDA's runtime from it, and configure says so.
# Tested in script mode, with the three lists given by -D:
#   cmake -DCMAKE_CUDA_IMPLICIT_LINK_DIRECTORIES=... -DCMAKE_CXX_IMPLICIT_LINK_DIRECTORIES=... -P cmake/cuda_link_dirs.cmake
set(bnn_cxx_link_dirs "")
foreach(dir IN LISTS CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
  get_filename_component(real "${dir}" REALPATH)
  list(APPEND bnn_cxx_link_dirs "${real}")
endforeach()
set(bnn_cuda_link_dirs "")
set(bnn_cuda_link_dirs_left_out "")
foreach(dir IN LISTS CMAKE_CUDA_IMPLICIT_LINK_DIRECTORIES)
  get_filename_component(real "${dir}" REALPATH)
  file(GLOB bnn_runtime_files "${real}/libstdc++.so" "${real}/libstdc++.a" "${real}/libgcc.a")
  list(FIND bnn_cxx_link_dirs "${real}" bnn_cxx_index)  # not IN_LIST: script mode sets no policies
  file(GLOB bnn_cuda_runtime_files "${real}/libcudart*" "${real}/libcudadevrt*")
  if(bnn_runtime_files AND bnn_cxx_index EQUAL -1 AND bnn_cuda_runtime_files)
    message(STATUS "bnn: CUDA link folder kept though it holds another compiler's C++ runtime "
                   "(it holds CUDA's runtime too): ${dir}")
    list(APPEND bnn_cuda_link_dirs "${dir}")
  elseif(bnn_runtime_files AND bnn_cxx_index EQUAL -1)
    list(APPEND bnn_cuda_link_dirs_left_out "${dir}")
  else()
    list(APPEND bnn_cuda_link_dirs "${dir}")
  endif()
endforeach()
set(CMAKE_CUDA_IMPLICIT_LINK_DIRECTORIES "${bnn_cuda_link_dirs}")
string(REPLACE ";" ", " bnn_left_out "${bnn_cuda_link_dirs_left_out}")
if(NOT bnn_left_out)
  set(bnn_left_out none)
endif()
message(STATUS "bnn: CUDA link folders left out (another compiler's C++ runtime): ${bnn_left_out}")
if(CMAKE_SCRIPT_MODE_FILE)
  string(REPLACE ";" ", " bnn_kept "${CMAKE_CUDA_IMPLICIT_LINK_DIRECTORIES}")
  message(STATUS "bnn: CUDA link folders kept: ${bnn_kept}")
endif()
