// Advisory locks between processes that share a run directory.
//
// Note [Member locks]: a process trains member NNN only while it holds an
// exclusive flock(2) on member_NNN/lock, taken without waiting. The kernel
// drops the lock when the holder closes the file or dies in any way (SIGKILL,
// OOM killer, a pre-empted node's process), so no stale lock is ever left
// behind and a killed member can be resumed at once. A second process that
// finds the lock held skips the member with a log line; two `bnn run`s
// started together into one directory thereby split the members between
// them. Limits: flock is advisory (only bnn takes it); on NFS, Linux clients
// (2.6.12 and later) emulate flock with byte-range fcntl locks, which work
// across hosts with NFSv4 or NFSv3 with a running lock manager (lockd), but
// not on mounts with `nolock` or `local_lock=flock`, where the lock is seen
// by one host only. Lustre needs the `flock` mount option, and GPFS/Spectrum
// Scale supports it natively.
//
// A lock lives on the file's inode, not its name: a user who deletes a held
// lock file (or replaces it) lets the next process lock a new file under the
// same name while the first goes on. check_still_held() finds that out: the
// holder of a member's lock calls it before each write, and stops rather than
// write over the member the other process now owns (a data-parallel run's
// ranks, which could not stop together, do not check; nor do the holders of
// evaluate.lock and rhat.lock).
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <utility>

namespace bnn::io {

class FileLock {
 public:
  // The lock on `path` (created if missing), or nullopt if another open file
  // holds it. Throws std::runtime_error naming the path if the file cannot
  // be opened or the lock fails for another reason.
  static std::optional<FileLock> try_acquire(const std::filesystem::path& path);

  // The lock on `path` (created if missing), waiting for as long as another
  // open file holds it. Throws as try_acquire does.
  static FileLock acquire(const std::filesystem::path& path);

  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();  // releases the lock

  const std::filesystem::path& path() const { return path_; }

  // Throws LockLost naming the path unless the path still names the file this
  // lock is on (it was deleted, renamed away or replaced otherwise).
  void check_still_held() const;

 private:
  FileLock(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::filesystem::path path_;
};

// The lock file a process holds was deleted or replaced under it.
class LockLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace bnn::io
