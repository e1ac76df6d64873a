// Note [Checkpoint integrity]
// A member checkpoint is LibTorch's archive format, a zip file whose entries
// are stored uncompressed, each with the CRC-32 of its data in the archive's
// central directory. LibTorch's reader does not check those CRCs, so a
// checkpoint with flipped bits (a failing disk, a bad copy between
// filesystems) loaded without complaint and the member went on from a
// corrupted state: a resumed run that no longer matched an uninterrupted
// one, or a running sum of probabilities that was no longer probabilities.
// bnn checks every entry's CRC-32 before it loads a checkpoint, and a damaged
// one is an error naming the file and the entry, as an unreadable one is.
// Checking reads the file once more, a megabyte at a time (about 3 s for a
// 1 GB checkpoint, at about 330 MB/s of CRC); it happens only on resume, as
// `bnn run --resume` starts (the checkpoint of every member not finished and
// not locked by another process, before any member trains) and as each
// member loads its own.
// Entries LibTorch compresses (its code/ files) are not checked: a damaged
// one fails LibTorch's own load.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace bnn::io {

// The CRC-32 of `bytes` (the zip and PNG polynomial, 0xEDB88320 reflected),
// continuing from `crc` (0 to start).
uint32_t crc32(std::string_view bytes, uint32_t crc = 0);

// What is wrong with the zip archive `bytes`, or "" when every stored entry's
// data matches the CRC-32 its central directory records. Entries compressed
// with another method than "stored" are not checked. Reads zip64 records.
std::string zip_damage(std::string_view bytes);

// zip_damage of the file at `path`, read piece by piece. Throws
// std::runtime_error naming the path if it cannot be opened.
std::string zip_file_damage(const std::filesystem::path& path);

}  // namespace bnn::io
