// Reductions over leading dims (a batch norm's statistics over N, H, W)
// folded into the kernel that computes their input: the kernel's output goes
// to a small block in cache, and the runtime folds each block into per-column
// accumulators, so the full value never reaches memory.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "emit_cpp.h"
#include "kiln/graph.h"
#include "kiln/op.h"
#include "layout.h"

namespace kiln::jit {

/// Whether `r` is a reduction over the leading dims of its input that a
/// kernel can fold (float32/64, int32/64; Sum, Mean, Max, Min, Prod: read
/// from the row's own lowering), and how.
bool leading_fold(const Node* r, Fold& f);

/// Folds into `kernels` (JitKernel nodes of `g`, elementwise) each reduction
/// over the leading dims of one of their outputs that nothing else reads;
/// the reduction becomes an Identity of the kernel's output. Returns one line
/// per fold for the IR listing.
std::vector<std::string> fold_reductions(Graph& g, const std::vector<Node*>& kernels);

/// Runs kernel `fn` over layout `l` of the space `dims` (collapsed without
/// merging across the folded dims), writing each folded output a block of
/// rows at a time into a scratch block and folding it into per-column
/// accumulators, then into the node's (small) outputs. `out` holds the other
/// outputs' pointers (args.out is it).
void run_folded(KernelContext& c, const std::vector<Fold>& folds, KernelFn fn,
                const KernelArgs& args, std::span<void*> out, std::span<const int64_t> dims,
                const Layout& l);

}  // namespace kiln::jit
