// Internal: the pieces of TensorFlow's bundle format shared by the writer and
// the reader (src/saved_model/bundle.cpp): shapes, string tensors' layout.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::checkpoint {

/// Elements of `shape` (rank <= 64, dims >= 0, at most 2^58 elements);
/// InvalidArgumentError naming `key` otherwise.
int64_t element_count(const std::vector<int64_t>& shape, const std::string& key);

/// A string tensor as stored: its lengths as varints, their masked CRC-32C,
/// then the bytes. `crc` receives the entry's (unmasked) checksum: over the
/// lengths as 32-bit integers (64-bit past 4 GiB), the stored length CRC and
/// the bytes, as TensorFlow computes it.
std::string encode_strings(const std::vector<std::string>& values, uint32_t* crc);

/// The `n` strings of stored bytes, every length and both checksums checked
/// against `crc` (the entry's unmasked checksum); DataLossError naming `where`.
std::vector<std::string> decode_strings(std::string_view stored, int64_t n, uint32_t crc,
                                        const std::string& where);

}  // namespace kiln::checkpoint
