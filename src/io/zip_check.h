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
// Checking reads the file once more (about a second for a 1 GB checkpoint);
// it happens only on resume.
#pragma once

#include <cstdint>
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

}  // namespace bnn::io
