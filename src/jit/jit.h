// The JIT driver: fuse a graph's clusters, emit one translation unit, find it
// in the disk cache or compile it, load it, and point the graph's JitKernel
// nodes at the loaded code. Any failure to compile leaves the graph as it
// was (it still runs, through the executor) and says why.
#pragma once
#include <memory>
#include <string>

#include "kiln/graph.h"

namespace kiln::jit {

/// What compile_jit did, for experimental_get_compiler_ir and reports.
struct JitResult {
  std::string hlo;            ///< the kernels' IR as lowered
  std::string optimized_hlo;  ///< after the kernel passes (what runs)
  std::string source;         ///< the generated C++ ("" when no kernel)
  size_t kernels = 0;         ///< kernels in the graph now (0 when not compiled)
  bool cache_hit = false;     ///< loaded from the disk cache, no compiler run
  std::string warning;        ///< set when kernels were formed but not compiled
};

/// Compiles the fusible clusters of `graph` (already optimized); on success
/// `graph` is replaced by the rewritten one.
JitResult compile_jit(std::unique_ptr<Graph>& graph);

/// Throws InvalidArgumentError listing every node of `g` whose op cannot run
/// in a jit_compile=True function (kNoJit rows, string values), with the
/// user's line that created it.
void check_jit_supported(const Graph& g);

}  // namespace kiln::jit
