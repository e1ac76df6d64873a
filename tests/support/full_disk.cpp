// A full disk for the resume tests, loaded with LD_PRELOAD into a bnn
// process: write(2) to any file whose path contains the text of the
// environment variable BNN_FULL_DISK_MATCH fails with ENOSPC, as on a file
// system with no space left; every other write goes through. bnn's outputs
// are all written by io::write_file_atomically, which calls write(2) through
// the PLT, so this reaches exactly the code path a real full disk takes.
#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" ssize_t write(int fd, const void* buf, size_t count) {
  using Write = ssize_t (*)(int, const void*, size_t);
  static const Write real = reinterpret_cast<Write>(dlsym(RTLD_NEXT, "write"));
  const char* match = std::getenv("BNN_FULL_DISK_MATCH");
  if (match != nullptr && *match != '\0' && fd > 2) {
    char link[64];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    char target[PATH_MAX];
    const ssize_t n = ::readlink(link, target, sizeof target - 1);
    if (n > 0) {
      target[n] = '\0';
      if (std::strstr(target, match) != nullptr) {
        errno = ENOSPC;
        return -1;
      }
    }
  }
  return real(fd, buf, count);
}
