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
# A function, so that its variables stay its own; the list it keeps is set
# in the caller's scope.
function(bnn_leave_out_foreign_cuda_link_dirs)
  set(cxx_link_dirs "")
  foreach(dir IN LISTS CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
    get_filename_component(real "${dir}" REALPATH)
    list(APPEND cxx_link_dirs "${real}")
  endforeach()
  set(cxx_major "")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    string(REGEX MATCH "^[0-9]+" cxx_major "${CMAKE_CXX_COMPILER_VERSION}")
  endif()
  set(kept "")
  set(left_out "")
  foreach(dir IN LISTS CMAKE_CUDA_IMPLICIT_LINK_DIRECTORIES)
    get_filename_component(real "${dir}" REALPATH)
    file(GLOB runtime_files "${real}/libstdc++.so" "${real}/libstdc++.a" "${real}/libgcc.a")
    list(FIND cxx_link_dirs "${real}" cxx_index)  # not IN_LIST: script mode sets no policies
    if(NOT runtime_files OR NOT cxx_index EQUAL -1)
      list(APPEND kept "${dir}")
      continue()
    endif()
    file(GLOB cuda_runtime_files "${real}/libcudart*" "${real}/libcudadevrt*")
    set(reason "")
    if(cuda_runtime_files)
      set(reason "it holds CUDA's runtime too")
    elseif(cxx_major AND real MATCHES "/gcc/[^/]+/([0-9]+)[0-9.]*$" AND CMAKE_MATCH_1 GREATER cxx_major)
      set(reason "a newer GCC than the C++ compiler's ${CMAKE_CXX_COMPILER_VERSION}")
    endif()
    if(reason)
      message(STATUS "bnn: CUDA link folder kept though it holds another compiler's C++ runtime (${reason}): ${dir}")
      list(APPEND kept "${dir}")
    else()
      list(APPEND left_out "${dir}")
    endif()
  endforeach()
  string(REPLACE ";" ", " left_out "${left_out}")
  if(NOT left_out)
    set(left_out none)
  endif()
  message(STATUS "bnn: CUDA link folders left out (another compiler's C++ runtime): ${left_out}")
  if(CMAKE_SCRIPT_MODE_FILE)
    string(REPLACE ";" ", " shown "${kept}")
    message(STATUS "bnn: CUDA link folders kept: ${shown}")
  endif()
  set(CMAKE_CUDA_IMPLICIT_LINK_DIRECTORIES "${kept}" PARENT_SCOPE)
endfunction()
bnn_leave_out_foreign_cuda_link_dirs()
