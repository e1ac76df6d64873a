// A stand-in for the CUDA runtime library in the CUDA linkage tests (Note
// [Why no CUDA], src/runtime/linkage.h): preloaded into bnn, it answers the
// two version queries bnn makes, with the versions the test sets in
// BNN_FAKE_CUDA_RUNTIME and BNN_FAKE_CUDA_DRIVER (CUDART_VERSION form:
// 13000 is 13.0). It defines nothing else, so in a real CUDA process every
// other runtime call still reaches the real library.
#include <cstdlib>

namespace {
int version_from(const char* variable) {
  const char* text = std::getenv(variable);
  return text == nullptr ? 0 : std::atoi(text);
}
}  // namespace

extern "C" int cudaRuntimeGetVersion(int* version) {
  *version = version_from("BNN_FAKE_CUDA_RUNTIME");
  return 0;
}

extern "C" int cudaDriverGetVersion(int* version) {
  *version = version_from("BNN_FAKE_CUDA_DRIVER");
  return 0;
}
