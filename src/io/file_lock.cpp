#include "src/io/file_lock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "src/io/atomic_file.h"

namespace bnn::io {

namespace {

// flock(2) on `path` with `operation`: the descriptor, or -1 if LOCK_NB found
// the lock held. Throws naming the path on any other failure.
int lock_file(const std::filesystem::path& path, int operation) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int error = errno;
    if (storage_failure(error)) throw WriteError(path, error);  // no free inode or quota left: exit 74
    throw std::runtime_error(fmt::format("cannot open lock file {}: {}", path.string(), std::strerror(error)));
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
  return FileLock(fd, path);
}

FileLock FileLock::acquire(const std::filesystem::path& path) { return FileLock(lock_file(path, LOCK_EX), path); }

FileLock::FileLock(FileLock&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) { other.fd_ = -1; }

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

void FileLock::check_still_held() const {
  struct stat held {};
  struct stat named {};
  if (::fstat(fd_, &held) != 0) {
    throw std::runtime_error(fmt::format("cannot check lock file {}: {}", path_.string(), std::strerror(errno)));
  }
  if (::stat(path_.c_str(), &named) != 0) {
    if (errno != ENOENT) {
      throw std::runtime_error(fmt::format("cannot check lock file {}: {}", path_.string(), std::strerror(errno)));
    }
    throw LockLost(fmt::format("{} was deleted while this process held it", path_.string()));
  }
  if (named.st_dev != held.st_dev || named.st_ino != held.st_ino) {
    throw LockLost(fmt::format("{} was replaced by another file while this process held it", path_.string()));
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace bnn::io
