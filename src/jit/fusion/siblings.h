// jit_compile's sibling (horizontal) fusion: groups of ops the cluster pass
// formed in one space (elementwise, or rows of one row kernel) that read one full-size value, none
// of them reaching another, become one kernel with the outputs of all, so the value is read once
// and the pool is entered once. Lone ops (too small for a kernel of their own) count as groups:
// `abs(w)` and `cast(w, f64)` become one kernel. XLA calls this sibling multi-output fusion. A
// group that reads a value another group computes (a consumer its cluster left outside) joins that
// group the same way.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kiln/graph.h"

namespace kiln::jit {

/// One group the cluster pass made, or a lone op.
struct Sibling {
  std::vector<Node*> members;
  Shape shape;       ///< its iteration space
  bool open = true;  ///< may merge (no product or relabelling)
  /// The fold its outputs' reductions ask for (0: none; -1: several kinds),
  /// so that a merged kernel keeps every fold: groups merge when at most one
  /// asks for a fold, or both ask for the same.
  int64_t fold = 0;
  size_t outputs = 1;  ///< its values read outside it (the kernel's outputs)
  int reduced = 0;     ///< the trailing dims its rows reduce (0: elementwise)
  /// A row kernel's outputs include values at every point (softmax's), not
  /// only per-row values: two such do not merge, since a kernel whose first
  /// pass writes points no longer pipelines its rows.
  bool writes_points = false;
};

/// The most outputs a merged kernel gets: compile time grows with them (a
/// kernel of 16 float outputs compiles in about 0.25 s, one of 140 in 6 s).
inline constexpr size_t kMaxSiblingOutputs = 16;
/// The most inputs and outputs together a merged kernel gets (each input is
/// a pointer and a row offset the kernel carries).
inline constexpr size_t kMaxSiblingOperands = 40;

/// Which groups become one kernel: lists of indices into `groups` (each in
/// exactly one list, the lowest first). `nodes` is the graph in order. Two
/// groups merge when both are open, in one space (shape and reduced dims:
/// two row kernels over the same rows merge too, unless both write values at
/// every point), read a value of that shape
/// directly, their folds agree, they have at most kMaxSiblingOutputs
/// outputs and kMaxSiblingOperands inputs and outputs together, and no path
/// leads from one to the other (other groups count as one node each, as
/// their kernels will be). A group reading a value of another's joins it
/// when no path through other nodes leads between them and no view in it
/// reads the other's values.
std::vector<std::vector<size_t>> merge_siblings(std::span<Node* const> nodes,
                                                const std::vector<Sibling>& groups);

}  // namespace kiln::jit
