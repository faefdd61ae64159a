// What the op table says about one graph node under jit_compile: whether it
// lowers to the fused-kernel IR, and how a view row reads its input. Shared
// by the cluster pass and the pass that moves views ahead of the ops they
// read (sink_views.h).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "jit/ir/jit_ir.h"
#include "kiln/graph.h"

namespace kiln::jit {

/// Lowers `n` into `body` with its inputs as `in`; false when it cannot be.
/// `reduced`: the trailing dims its reductions fold (0: none).
bool lower_node(const Node* n, std::span<const int32_t> in, std::vector<Instr>& body,
                std::vector<int32_t>& results, int* reduced = nullptr);

/// Lowers `n` over a load of each of its inputs, into a fresh `body`: whether
/// it lowers at all (a trial), and how (`results`, `reduced`).
bool trial_lower(const Node* n, std::vector<Instr>& body, std::vector<int32_t>& results,
                 int& reduced);

/// A reshape-like row (JitIndexMap::kRelabel).
inline bool is_relabel(const Node* n) {
  return n->op().jit_index_map == JitIndexMap::kRelabel;
}
/// A view row (OpDef::jit_view): Transpose, the slices, Split, Unstack.
inline bool reads_in_place(const Node* n) {
  return n->op().jit_view != nullptr;
}

/// Whether `n` is a matrix product a kernel can compute (OpDef::jit_product).
bool product_of(const Node* n, Product& p);

/// The view output `i` of a view row reads its input 0 through.
bool view_of(const Node* n, size_t i, View& v);

/// The view output `i` of view row `n` reads `n`'s input through, composed
/// through the view rows before it that `through` accepts (a slice of a
/// transpose); `src` is the value read.
template <typename Through>
bool chained_view(const Node* n, size_t i, View& v, Edge& src, Through through) {
  if (!view_of(n, i, v)) return false;
  src = n->inputs()[0];
  while (reads_in_place(src.node) && through(src.node)) {
    View inner;
    if (!view_of(src.node, static_cast<size_t>(src.index), inner) ||
        inner.dims.size() != v.start.size() || !composes(inner, v))
      break;
    v = compose(inner, v);
    src = src.node->inputs()[0];
  }
  return true;
}

/// How many trailing dims of the view read one run of its source's values:
/// they walk the source's last dims in order, in steps of 1, all of each
/// but the outermost. At least 1 when the innermost dim walked is the
/// source's last in steps of 1 (rows stay contiguous).
int contiguous_tail(const View& v, int64_t src_rank);

/// Whether graph mode serves the view without a copy (one run of values).
bool one_run(const View& v, int64_t src_rank);

/// Whether a view whose rows are not one run of values can still be read
/// well. Of its dims of more than one value, adjacent ones that walk
/// adjacent source dims in order taken as one (the layout merges them: H, W
/// of an NHWC source read as NCHW): the one before the last walks the
/// source's last dim in steps of 1 (a swap of the inner dims, read in tiles
/// of rows), or the dims walk ever later source dims from outermost to
/// innermost (x[:, ::2], x[..., 0]): each row then reads past the lines the
/// last one read, as graph mode's strided copy does. ([2, 1, 0] would come
/// back to each line once per row with nothing to tile.)
bool strided_ok(const View& v, const Shape& src);

/// Whether an elementwise kernel reads the view in place (contiguous rows,
/// or `strided_ok`).
inline bool reads_well(const View& v, const Shape& src) {
  return contiguous_tail(v, src.rank()) > 0 || strided_ok(v, src);
}

}  // namespace kiln::jit
