// Internal: how a convolution runs as blocks on kiln's pool (conv.cpp).
// A large convolution runs as blocks, each a single-threaded primitive, taken
// dynamically by kiln's pool: a thread the OS deschedules (a busy machine) delays
// only its own block, where OpenMP's static split holds every thread at its barrier.
// Blocks are output rows of one image; where an image has too few pixels for row
// blocks that keep oneDNN's kernels efficient (EfficientNet's and ResNet's 7x7
// stages), output channels, each such block writing a dense buffer copied into
// its channels.

#pragma once
#include <cstdint>

#include "conv_util.h"

namespace kiln::cpu {

// Blocks of `rows` output rows, `per_image` of them per image, each split into
// blocks of `oc_block` output channels (0: not split by channels); rows == 0: no
// split. split_of splits by rows or by channels; conv_blocks runs either.
struct Split {
  int64_t rows = 0, per_image = 0, oc_block = 0;
};

/// How `g` runs on the pool: row blocks of enough pixels; else, when they are
/// fewer than the threads (or the filter is large), channel blocks (they read
/// slices of the filter, kept packed by the buffer's version); else row blocks
/// below that size; else no split.
Split split_of(const ConvGeom& g, bool versioned_filter);

/// Winograd's blocks (ConvGeom::winograd): row blocks of whole tiles and enough
/// pixels, else channel blocks over whole images; rows == 0 where neither keeps
/// every thread busy.
Split winograd_split(const ConvGeom& g, bool versioned_filter);

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
inline int64_t round_up(int64_t a, int64_t b) {
  return ceil_div(a, b) * b;
}

}  // namespace kiln::cpu
