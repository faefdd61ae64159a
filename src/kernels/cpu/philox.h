// Philox4x32-10, the counter-based generator of Salmon et al., "Parallel
// random numbers: as easy as 1, 2, 3" (Random123), plus the process-wide
// seed state the random ops draw their streams from.
#pragma once
#include <array>
#include <cstdint>

#include "kiln/op.h"

namespace kiln::cpu {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

/// One Philox4x32 evaluation with 10 rounds: 4 random words per counter.
inline PhiloxCounter philox4x32_10(PhiloxCounter ctr, PhiloxKey key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kW0;
      key[1] += kW1;
    }
    const uint64_t p0 = uint64_t{kM0} * ctr[0];
    const uint64_t p1 = uint64_t{kM1} * ctr[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
  }
  return ctr;
}

/// Where one op call draws from: block b of the call uses counter
/// {lo(first_block + b), hi(first_block + b), stream_lo, stream_hi} and `key`.
struct PhiloxStream {
  PhiloxKey key{};
  uint64_t first_block = 0;
  uint64_t stream = 0;

  PhiloxCounter block(uint64_t b) const {
    const uint64_t c = first_block + b;
    return philox4x32_10({static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32),
                          static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)},
                         key);
  }
};

/// Reserves `num_blocks` consecutive counter blocks for one call of `op` with
/// op-level seed `seed` (-1 = none). With a seed, successive calls continue
/// the stream of (op, seed); without one, each call gets a fresh stream that
/// is reproducible after set_random_seed and nondeterministic otherwise.
PhiloxStream reserve_philox_stream(OpId op, int64_t seed, uint64_t num_blocks);

}  // namespace kiln::cpu
