// Atomic file output: every file bnn writes goes through here, so a crash or a
// full disk never leaves a half-written result in place of a good one.
// Note [Atomic writes]: the bytes go to a temporary file in the same
// directory, "<path>.tmp.<pid>.<16 hex digits>.<n>", made with O_EXCL, are
// flushed and fsync'ed, and the temporary file is renamed over `path`.
// rename(2) within one filesystem is atomic; on any failure the temporary file
// is removed and the previous `path` is left untouched. The pid alone would not
// do: processes in separate containers share a run folder and often a pid (each
// its container's pid 1), and threads share theirs; two writers of one path
// would then write one temporary file, and one of them would lose its rename or
// publish the other's half-written bytes. The hex digits are drawn once per
// process; n counts the process's writes. A writer killed between its
// temporary file and the rename leaves the temporary behind; `bnn run`
// removes those in a member's folder when it next locks the member
// (remove_temporary_files); elsewhere they stay, harmless.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bnn::io {

// EX_IOERR (sysexits.h): bnn's exit code when the machine's storage failed a
// write (see WriteError::storage), distinct from 2, bad input: the command
// was right, and can be run again once there is room (a run continues with
// `bnn run --resume`).
inline constexpr int kExitStorage = 74;

// Whether errno `error` is the storage's failure rather than the path's: a
// full disk or quota (ENOSPC, EDQUOT), a file-size limit (EFBIG) or a device
// error (EIO). A missing folder or a permission is the path's (exit 2).
bool storage_failure(int error) noexcept;

// A write that failed: "cannot write PATH: REASON", with errno's value.
class WriteError : public std::runtime_error {
 public:
  WriteError(const std::filesystem::path& path, int error);
  int error() const noexcept { return error_; }
  bool storage() const noexcept { return storage_failure(error_); }

 private:
  int error_;
};

// The exit code of a failure `e`: kExitStorage for the storage's (a
// WriteError that storage() says is, or a std::filesystem error of a full
// disk or quota: only a lack of space is surely a write's), else 2.
int exit_code_of(const std::exception& e) noexcept;

// Writes `contents` to `path` atomically. Throws WriteError naming the path
// and the OS error on failure.
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

// As write_file_atomically, but only if no file named `path` exists: returns
// false, writing nothing, if one does (another process's, say). Exclusive
// through link(2) of the temporary file; on a filesystem without hard links
// (EPERM, ENOTSUP), atomic but not exclusive. Throws as write_file_atomically.
bool create_file_atomically(const std::filesystem::path& path, std::string_view contents);

// Note [Staged writes]: a set of files that should change together (an
// evaluation's figures, tables and reports). stage() writes each to its temporary
// file; commit() then renames them all, which needs no space: a disk that
// fills, or any other failed write, fails a stage() before any file of the
// set is replaced, and the temporaries are removed. (A process killed during
// the renames still leaves the set part old, part new.)
class StagedFiles {
 public:
  StagedFiles() = default;
  StagedFiles(const StagedFiles&) = delete;
  StagedFiles& operator=(const StagedFiles&) = delete;
  ~StagedFiles();
  // Throws as write_file_atomically, replacing nothing.
  void stage(const std::filesystem::path& path, std::string_view contents);
  // Takes `temporary`, a whole file already written beside `path` (a
  // figure gnuplot drew), as the staged contents of `path`.
  void adopt(const std::filesystem::path& temporary, const std::filesystem::path& path);
  // Where the staged contents of `path` are until commit(), if staged.
  std::optional<std::filesystem::path> staged_as(const std::filesystem::path& path) const;
  // Renames every staged file into place, in the order staged.
  void commit();

 private:
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> staged_;  // temporary, final
};

// A fresh temporary name for an atomic write of `path`, in its directory.
std::filesystem::path temporary_path(const std::filesystem::path& path);

// Whether a file name is that of an atomic write in flight (or cut off):
// "<name>.tmp.<pid>.<16 hex>.<n>", or "<name>.tmp.<pid>" as bnn wrote before.
bool is_temporary_name(const std::string& filename);

// Removes the files under `dir` (and its subfolders) whose names are those
// of atomic writes (is_temporary_name): what a writer killed between its
// temporary file and the rename leaves behind. Only for a folder no other
// process can be writing in (a member's, with its lock held). Returns how
// many it removed; files it cannot remove are left.
int64_t remove_temporary_files(const std::filesystem::path& dir);

// Reads a whole file. Throws std::runtime_error naming the path if it cannot.
std::string read_file(const std::filesystem::path& path);

}  // namespace bnn::io
