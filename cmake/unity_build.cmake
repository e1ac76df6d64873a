# Note [Unity builds]
# Each target compiles its sources in batches of 4, one translation unit per
# batch (CMake's unity builds). With the precompiled header, parsing LibTorch
# is cheap; what a unit still costs is instantiating and optimising the
# templates it uses (LibTorch's inline operators, fmt, nlohmann::json,
# GoogleTest), and every unit did that again for the same templates. Four of
# the evaluation tests took 78 s compiled one by one and 26 s as one unit;
# docs/performance.md, "Build time", has the whole build's times.
#
# What it asks of the code: a name in an anonymous namespace (or a static
# function) is unique within its target, since the files of a batch share one
# unit. A clash of two definitions is a compile error; two overloads with the
# same name would silently pick each other, so a helper shared by files moves
# to a header (tests/support/ for the tests) and the others get names of
# their own. No `using namespace` at file scope in a source file either.
# Sources with options of their own (the kernels of samplers/, compiled with
# -fno-math-errno -ffp-contract=off) are compiled alone, as CMake does for
# any source with COMPILE_OPTIONS, COMPILE_DEFINITIONS or INCLUDE_DIRECTORIES;
# so are fused_step.cpp and process_group.cpp, which have such options in
# some builds only (the CUDA kernels, c10d), so that switching those on or
# off recompiles the one file and leaves the batches as they are.
#
# A change to one file recompiles its batch: 27 s for a test file with the
# link, here on 2 cores.
# -DCMAKE_UNITY_BUILD=OFF compiles file by file; -DCMAKE_UNITY_BUILD_BATCH_SIZE=N
# changes the batches.
if(NOT DEFINED CMAKE_UNITY_BUILD)
  set(CMAKE_UNITY_BUILD ON)
endif()
if(NOT DEFINED CMAKE_UNITY_BUILD_BATCH_SIZE)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE 4)
endif()
