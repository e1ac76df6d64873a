#include "src/io/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace bnn::io {

namespace {

// flock(2) on `path` with `operation`: the descriptor, or -1 if LOCK_NB found
// the lock held. Throws naming the path on any other failure.
int lock_file(const std::filesystem::path& path, int operation) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::runtime_error(fmt::format("cannot open lock file {}: {}", path.string(), std::strerror(errno)));
  }
  int result = 0;
  while ((result = ::flock(fd, operation)) != 0 && errno == EINTR) {
  }
  if (result == 0) return fd;
  const int error = errno;
  ::close(fd);
  if (error == EWOULDBLOCK) return -1;
  throw std::runtime_error(fmt::format("cannot lock {}: {}", path.string(), std::strerror(error)));
}

}  // namespace

std::optional<FileLock> FileLock::try_acquire(const std::filesystem::path& path) {
  const int fd = lock_file(path, LOCK_EX | LOCK_NB);
  if (fd < 0) return std::nullopt;
  return FileLock(fd);
}

FileLock FileLock::acquire(const std::filesystem::path& path) { return FileLock(lock_file(path, LOCK_EX)); }

FileLock::FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace bnn::io
