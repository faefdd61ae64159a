// Reductions over leading dims (a batch norm's statistics over N, H, W), over
// middle dims (a global average pool's H, W, the rows of each N apart), or
// over every dim (a loss's mean), folded into the kernel that computes their
// input: the kernel's output goes to a small block in cache, and the runtime
// folds each block into per-column accumulators (16 lanes for a fold over
// every dim), so the full value never reaches memory.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "jit/codegen/emit_cpp.h"
#include "jit/fusion/cluster.h"
#include "jit/runtime/layout.h"
#include "kiln/graph.h"
#include "kiln/op.h"

namespace kiln::jit {

/// Whether `r` is a reduction a kernel can compute as one combining op
/// (float32/64, int32/64; Sum, Mean, Max, Min, Prod: read from the row's own
/// lowering), over any dims: sets `reduced` (per input dim) and `f` (but
/// `output` and `outer`).
bool reduction_form(const Node* r, std::vector<bool>& reduced, Fold& f);

/// Whether `r` is a reduction that a kernel can fold (float32/64,
/// int32/64; Sum, Mean, Max, Min, Prod: read from the row's own lowering),
/// and how: over one run of its input's dims that is not the trailing dims
/// alone (leading dims, or middle ones such as a global average pool's H,
/// W). No axes, or all of them, fold every dim.
bool fold_of(const Node* r, Fold& f);

/// Folds into the kernels `cl` made (JitKernel nodes of `g`, elementwise)
/// each reduction of one of their outputs that fold_of accepts. An output
/// that nothing else reads becomes the fold; one read elsewhere too stays,
/// and the kernel gets a copy of it to fold (in `cl`'s IR and the node's).
/// The reduction becomes an Identity of the folded output. Returns one line
/// per fold for the IR listing.
std::vector<std::string> fold_reductions(Graph& g, Clusters& cl);

/// Runs kernel `fn` over layout `l` of the space `dims` (collapsed without
/// merging across the folded dims), writing each folded output a block of
/// rows (of points, for a fold over every dim) at a time into a scratch block
/// and folding it into per-column accumulators (per-lane ones), then into the
/// node's (small) outputs. `out` holds the other
/// outputs' pointers (args.out is it).
void run_folded(KernelContext& c, const std::vector<Fold>& folds, KernelFn fn,
                const KernelArgs& args, std::span<void*> out, std::span<const int64_t> dims,
                const Layout& l);

}  // namespace kiln::jit
