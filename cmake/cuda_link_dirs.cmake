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
# Two such folders stay, and configure says so: one that also holds CUDA's
# runtime (a conda environment's lib/ can), which the programs need; and the
# folder of a GCC newer than the C++ compiler (.../gcc/TRIPLE/N, N above
# the GNU C++ compiler's major version), whose libstdc++ its host objects may
# need and which serves the C++ compiler's objects as well.
# Tested in script mode, with the two lists (and the C++ compiler) given by -D:
#   cmake -DCMAKE_CUDA_IMPLICIT_LINK_DIRECTORIES=... -DCMAKE_CXX_IMPLICIT_LINK_DIRECTORIES=...
#         -DCMAKE_CXX_COMPILER_ID=GNU -DCMAKE_CXX_COMPILER_VERSION=14.2.0 -P cmake/cuda_link_dirs.cmake
set(bnn_cxx_link_dirs "")
foreach(bnn_dir IN LISTS CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
  get_filename_component(bnn_real "${bnn_dir}" REALPATH)
  list(APPEND bnn_cxx_link_dirs "${bnn_real}")
endforeach()
set(bnn_cxx_major "")
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  string(REGEX MATCH "^[0-9]+" bnn_cxx_major "${CMAKE_CXX_COMPILER_VERSION}")
endif()
set(bnn_cuda_link_dirs "")
set(bnn_cuda_link_dirs_left_out "")
foreach(bnn_dir IN LISTS CMAKE_CUDA_IMPLICIT_LINK_DIRECTORIES)
  get_filename_component(bnn_real "${bnn_dir}" REALPATH)
  file(GLOB bnn_runtime_files "${bnn_real}/libstdc++.so" "${bnn_real}/libstdc++.a" "${bnn_real}/libgcc.a")
  list(FIND bnn_cxx_link_dirs "${bnn_real}" bnn_cxx_index)  # not IN_LIST: script mode sets no policies
  file(GLOB bnn_cuda_runtime_files "${bnn_real}/libcudart*" "${bnn_real}/libcudadevrt*")
  set(bnn_newer_gcc OFF)
  if(bnn_cxx_major AND bnn_real MATCHES "/gcc/[^/]+/([0-9]+)[0-9.]*$" AND CMAKE_MATCH_1 GREATER bnn_cxx_major)
    set(bnn_newer_gcc ON)
  endif()
  if(NOT bnn_runtime_files OR NOT bnn_cxx_index EQUAL -1)
    list(APPEND bnn_cuda_link_dirs "${bnn_dir}")
  elseif(bnn_cuda_runtime_files)
    message(STATUS "bnn: CUDA link folder kept though it holds another compiler's C++ runtime "
                   "(it holds CUDA's runtime too): ${bnn_dir}")
    list(APPEND bnn_cuda_link_dirs "${bnn_dir}")
  elseif(bnn_newer_gcc)
    message(STATUS "bnn: CUDA link folder kept though it holds another compiler's C++ runtime "
                   "(a newer GCC than the C++ compiler's ${CMAKE_CXX_COMPILER_VERSION}): ${bnn_dir}")
    list(APPEND bnn_cuda_link_dirs "${bnn_dir}")
  else()
    list(APPEND bnn_cuda_link_dirs_left_out "${bnn_dir}")
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
# This file's own variables do not reach the subdirectories.
unset(bnn_cxx_link_dirs)
unset(bnn_cxx_major)
unset(bnn_cuda_link_dirs)
unset(bnn_cuda_link_dirs_left_out)
unset(bnn_dir)
unset(bnn_real)
unset(bnn_runtime_files)
unset(bnn_cxx_index)
unset(bnn_cuda_runtime_files)
unset(bnn_newer_gcc)
unset(bnn_left_out)
unset(bnn_kept)
