// jit_compile's view sinking: a view row (Transpose, a slice, Split) of an
// elementwise value that nothing else reads moves ahead of the op that
// computes the value, onto the op's operands: transpose(tanh(x) * 2) becomes
// tanh(transpose(x)) * 2. The cluster pass then reads x in place through the
// view (in tiles, or strided) inside one kernel, where the value would
// otherwise be written out and read back (and a slice computes only the
// points it keeps). XLA gets the same by indexing a fusion's producers
// through the consumer's index map.
#pragma once
#include <cstddef>

#include "kiln/graph.h"

namespace kiln::jit {

/// Rewrites `g` until no view can move further; returns the views moved.
/// A view moves over op `p` when `p` is elementwise with a JIT lowering (or
/// a bias add, whose moved copies are Adds) and the view is its only reader. An operand of `p`'s
/// shape gets a copy of the view node; a single value of no higher rank than the view is read as it
/// is; any other operand that broadcasts to `p`'s shape (a bias) is read
/// through a JitView node per view output (its dims that broadcast become new
/// dims of one value). A dim of unknown size must be read whole, since it may
/// broadcast at run time. Each output the view's readers read gets its own
/// copy of `p`. A view the cluster pass could not read in place (reads_well)
/// stays where it is.
size_t sink_views(Graph& g);

}  // namespace kiln::jit
