// Atomic file output: every file bnn writes goes through here, so a crash or a
// full disk never leaves a half-written result in place of a good one.
// Note [Atomic writes]: the bytes go to "<path>.tmp.<pid>" in the same
// directory, are flushed and fsync'ed, and the temp file is renamed over
// `path`. rename(2) within one filesystem is atomic; on any failure the temp
// file is removed and the previous `path` is left untouched.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace bnn::io {

// Writes `contents` to `path` atomically. Throws std::runtime_error naming the
// path and the OS error on failure.
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

// Reads a whole file. Throws std::runtime_error naming the path if it cannot.
std::string read_file(const std::filesystem::path& path);

}  // namespace bnn::io
