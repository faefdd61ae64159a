// How a fused kernel walks its iteration space: the inputs' broadcast
// strides, with adjacent dims merged where every input allows it, so most
// kernels run as one long inner loop. The runtime and the emitter (which
// predicts the inner loop's shape from static dims) share this code.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kiln/small_vector.h"

namespace kiln::jit {

/// Generated code and layouts handle at most this many dims.
inline constexpr int kMaxDims = 16;

/// A collapsed iteration space: `shape` (rank >= 1) and, per input k, one
/// stride per dim at strides[k * rank + d] (0 where the input is broadcast).
/// Fixed storage: the runtime builds one per call without allocating.
struct Layout {
  int rank = 0;
  int64_t shape[kMaxDims];
  SmallVec<int64_t, 8 * kMaxDims> strides;  ///< per input, per dim (inline: no allocation)

  int64_t rows() const;  ///< product of all dims but the last
  int64_t cols() const { return shape[rank - 1]; }
  /// Input k's stride along the last dim (0, 1, or another for a transposed read).
  int64_t inner(size_t k) const { return strides[k * static_cast<size_t>(rank) + rank - 1]; }
  /// Per input: its stride along the last dim as 0, 1, or 2 (any other).
  std::vector<uint8_t> inner_pattern() const;
};

/// Row-major strides of `rank` dims into `out` (an input read as it is).
inline void contiguous_strides(const int64_t* dims, size_t rank, int64_t* out) {
  int64_t acc = 1;
  for (size_t j = rank; j-- > 0; acc *= dims[j]) out[j] = acc;
}

/// The layout for `n_in` inputs over the iteration dims `dims` (rank <=
/// kMaxDims). `in_dims` holds input k's dims right-aligned to rank (1 =
/// broadcast) at [k * rank, (k + 1) * rank). `strides` is reused storage.
/// `in_strides` (same layout as in_dims; nullptr: each input contiguous in
/// its dims' order) gives inputs read through an index map (a transpose).
/// `split_at` (> 0): dims before it never merge with dims from it on.
void collapse(std::span<const int64_t> dims, size_t n_in, const int64_t* in_dims, Layout& out,
              bool keep_last = false, const int64_t* in_strides = nullptr, int split_at = -1);
/// The layout of a reduction kernel: the last `reduced` dims become one last
/// dim (their product; each input has all of them or none), never merged
/// with the row dims before it. `scratch` holds n_in * 2 * (kMaxDims + 1)
/// values. `in_strides` as for collapse(). False when an input's reduced
/// dims are not one contiguous run of values (a view of part of each row).
bool collapse_rows(std::span<const int64_t> dims, int reduced, size_t n_in, const int64_t* in_dims,
                   int64_t* scratch, Layout& out, const int64_t* in_strides = nullptr);
/// The same over per-input dim vectors (each right-aligned; missing leading
/// dims are broadcast), for the emitter's static prediction. `strides` (per
/// input, aligned to the dims; empty: contiguous) give inputs read through views.
Layout collapse(std::span<const int64_t> dims, std::span<const std::vector<int64_t>> inputs,
                int reduced = 0, std::span<const std::vector<int64_t>> strides = {});

}  // namespace kiln::jit
