// How a fused kernel walks its iteration space: the inputs' broadcast
// strides, with adjacent dims merged where every input allows it, so most
// kernels run as one long inner loop. The runtime and the emitter (which
// predicts the inner loop's shape from static dims) share this code.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace kiln::jit {

/// A collapsed iteration space: `shape` (rank >= 1) and, per input, one
/// stride per dim (0 where the input is broadcast).
struct Layout {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> strides;

  int64_t rows() const;  ///< product of all dims but the last
  int64_t cols() const { return shape.back(); }
  /// Per input: its stride along the last dim (0 or 1).
  std::vector<uint8_t> inner_pattern() const;
};

/// The layout for inputs of the given dims (each right-aligned to `dims`'
/// rank; missing leading dims are broadcast) over the iteration dims `dims`.
Layout collapse(std::span<const int64_t> dims, std::span<const std::vector<int64_t>> inputs);

}  // namespace kiln::jit
