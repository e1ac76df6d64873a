# The C++ standard of the whole build, from the LibTorch that
# find_package(Torch) found (Torch_VERSION). bnn's sources are C++17 and also
# compile as C++20. LibTorch 2.14 and newer refuse any standard below C++20
# (an #error in ATen.h and torch/all.h); older ones are built as C++17, the
# standard they are tested with. A standard given with -DCMAKE_CXX_STANDARD
# is kept where LibTorch accepts it, and raised (saying so) where it does not.
# Tested in script mode: cmake -DTorch_VERSION=2.14.1 -P cmake/cxx_standard.cmake
if(Torch_VERSION VERSION_GREATER_EQUAL 2.14)
  set(bnn_min_cxx_standard 20)
else()
  set(bnn_min_cxx_standard 17)
endif()
set(bnn_cxx_standard_note "")
if(NOT CMAKE_CXX_STANDARD)
  set(CMAKE_CXX_STANDARD ${bnn_min_cxx_standard})
elseif(CMAKE_CXX_STANDARD LESS bnn_min_cxx_standard)
  set(bnn_cxx_standard_note
      "; CMAKE_CXX_STANDARD=${CMAKE_CXX_STANDARD} raised, LibTorch ${Torch_VERSION} needs C++${bnn_min_cxx_standard}")
  set(CMAKE_CXX_STANDARD ${bnn_min_cxx_standard})
endif()
message(STATUS "bnn: C++${CMAKE_CXX_STANDARD} (LibTorch ${Torch_VERSION}${bnn_cxx_standard_note})")
