#include "src/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace bnn::io {

WriteError::WriteError(const std::filesystem::path& path, int error)
    : std::runtime_error(fmt::format("cannot write {}: {}", path.string(), std::strerror(error))), error_(error) {}

bool storage_failure(int error) noexcept {
  return error == ENOSPC || error == EDQUOT || error == EFBIG || error == EIO;
}

int exit_code_of(const std::exception& e) noexcept {
  if (const auto* write = dynamic_cast<const WriteError*>(&e)) return write->storage() ? kExitStorage : 2;
  if (const auto* fs = dynamic_cast<const std::filesystem::filesystem_error*>(&e)) {
    const int error = fs->code().value();
    return error == ENOSPC || error == EDQUOT ? kExitStorage : 2;
  }
  return 2;
}

std::filesystem::path temporary_path(const std::filesystem::path& path) {
  static const uint64_t nonce = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  static std::atomic<uint64_t> writes{0};
  return path.string() + fmt::format(".tmp.{}.{:016x}.{}", ::getpid(), nonce, writes++);
}

bool is_temporary_name(const std::string& filename) {
  static const std::regex temporary(R"(.+\.tmp\.\d+(\.[0-9a-f]{16}\.\d+)?)");
  return std::regex_match(filename, temporary);
}

int64_t remove_temporary_files(const std::filesystem::path& dir) {
  std::error_code error;
  std::vector<std::filesystem::path> found;
  for (std::filesystem::recursive_directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (it->is_regular_file(error) && is_temporary_name(it->path().filename().string())) found.push_back(it->path());
  }
  int64_t removed = 0;
  for (const auto& path : found) removed += std::filesystem::remove(path, error) ? 1 : 0;
  return removed;
}

namespace {

// `contents` in a fresh temporary file of `path`, flushed to disk; its name.
// Throws as write_file_atomically does, leaving no temporary behind.
std::filesystem::path write_temporary(const std::filesystem::path& path, std::string_view contents) {
  std::filesystem::path tmp;
  int fd = -1;
  do {  // O_EXCL: a name another process happens to hold is passed over
    tmp = temporary_path(path);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EEXIST);
  if (fd < 0) {
    throw WriteError(path, errno);
  }
  const char* data = contents.data();
  size_t left = contents.size();
  int err = 0;
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    throw WriteError(path, err);
  }
  return tmp;
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  const std::filesystem::path tmp = write_temporary(path, contents);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw WriteError(path, err);
  }
}

StagedFiles::~StagedFiles() {
  for (const auto& [tmp, path] : staged_) ::unlink(tmp.c_str());
}

void StagedFiles::stage(const std::filesystem::path& path, std::string_view contents) {
  staged_.emplace_back(write_temporary(path, contents), path);
}

void StagedFiles::adopt(const std::filesystem::path& temporary, const std::filesystem::path& path) {
  staged_.emplace_back(temporary, path);
}

std::optional<std::filesystem::path> StagedFiles::staged_as(const std::filesystem::path& path) const {
  for (const auto& [tmp, final] : staged_) {
    if (final == path) return tmp;
  }
  return std::nullopt;
}

void StagedFiles::commit() {
  while (!staged_.empty()) {
    const auto [tmp, path] = staged_.front();
    if (::rename(tmp.c_str(), path.c_str()) != 0) throw WriteError(path, errno);  // the rest unlinked by the destructor
    staged_.erase(staged_.begin());
  }
}

bool create_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  const std::filesystem::path tmp = write_temporary(path, contents);
  // link(2) publishes the whole file under `path` only if no file has that name.
  int err = ::link(tmp.c_str(), path.c_str()) == 0 ? 0 : errno;
  if (err == EPERM || err == ENOTSUP || err == EOPNOTSUPP || err == EXDEV) {
    // No hard links on this filesystem: an atomic but not exclusive rename.
    err = ::rename(tmp.c_str(), path.c_str()) == 0 ? 0 : errno;
    if (err == 0) return true;
  }
  ::unlink(tmp.c_str());
  if (err == EEXIST) return false;
  if (err != 0) throw WriteError(path, err);
  return true;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace bnn::io
