// Prints the CPU normal kernel's digest (Note [CPU normal kernel];
// testing::normal_kernel_digest in normal_kernel_digest.h). Built from
// samplers/normal_kernel.cpp with other compiler flags (tests/CMakeLists.txt)
// so that a test can check that every build gives the same bits.
#include <cstdio>

#include "tests/support/normal_kernel_digest.h"

int main() {
  std::printf("%016llx\n", static_cast<unsigned long long>(bnn::testing::normal_kernel_digest()));
  return 0;
}
