// Internal: CRC-32C (Castagnoli), the checksum TensorFlow's files carry
// (checkpoint tables, TFRecord framing, event files), and TensorFlow's
// masking of a CRC stored next to the data it covers.
#pragma once
#include <cstddef>
#include <cstdint>

namespace kiln::detail {

/// CRC-32C of `n` bytes continuing `crc` (SSE4.2's crc32 instruction where
/// the CPU has it, a table otherwise; the same values either way).
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);

inline uint32_t mask_crc(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
inline uint32_t unmask_crc(uint32_t masked) {
  const uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

/// The table path alone (tests compare it with the hardware path).
uint32_t crc32c_portable(const void* data, size_t n, uint32_t crc = 0);

}  // namespace kiln::detail
