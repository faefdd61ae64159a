// Loop fusion for jit_compile: groups connected nodes that have a JIT
// lowering (OpDef::jit) and one iteration space into clusters, lowers each to
// the fused-kernel IR and replaces it by one JitKernel node.
#pragma once
#include <string>
#include <vector>

#include "jit/ir/jit_ir.h"
#include "kiln/graph.h"

namespace kiln::jit {

/// The kernels `form_clusters` made; kernel i is the `kernel_nodes[i]` node.
struct Clusters {
  std::vector<Kernel> kernels;  ///< as lowered
  std::vector<Node*> kernel_nodes;
  std::vector<std::string> fused;  ///< per kernel: "n ops: Exp, Add, ..."
};

/// Rewrites `g` in place (kernel names get `prefix`); nodes that become
/// kernel outputs other than the last turn into Identity of the kernel's
/// output (they keep their names), the others are removed.
Clusters form_clusters(Graph& g, const std::string& prefix, size_t min_ops = 2);

/// The kernels as they run: each kernel node's program's (optimize_kernel's
/// result, with the outputs fold_reductions added).
std::vector<Kernel> compiled_kernels(const Clusters& cl);

/// Drops instructions no output needs and merges identical ones; with
/// `excess_precision`, a float value rounded to a half type and widened back
/// to its own type is the value itself (Config::jit_excess_precision).
Kernel optimize_kernel(const Kernel& k, bool excess_precision = false);

}  // namespace kiln::jit
