// Internal: the one pipeline every traced graph goes through before it runs
// (a function's graph, cond branches, while bodies, backward functions).
#pragma once
#include <memory>
#include <set>
#include <string>

#include "jit/jit.h"
#include "kiln/executor.h"
#include "kiln/graph.h"
#include "kiln/passes.h"

namespace kiln::detail {

struct CompileOptions {
  bool optimize = true;                   ///< false: run the graph as traced
  std::set<std::string> disabled_passes;  ///< see OptimizeOptions::disabled
  /// jit_compile=True: unsupported ops are an error, fusible clusters become
  /// compiled kernels (src/jit/) instead of the interpreter's fused nodes.
  bool jit = false;
};

/// What compile_graph made: the optimized graph (what runs), what each pass
/// did, and the compiled plan.
struct CompiledGraph {
  std::unique_ptr<Graph> graph;
  OptimizeReport report;
  std::unique_ptr<Plan> plan;
  jit::JitResult jit;  ///< what the JIT did (empty when not asked for)
};

/// Verifies `graph` (when config().verify_graphs), optimizes it (fusion off
/// while config().check_numerics, so an error names the op that made the
/// NaN), compiles its fused kernels when options.jit, and compiles its Plan.
CompiledGraph compile_graph(std::unique_ptr<Graph> graph, const CompileOptions& options = {});

/// Passes a warning ("JitWarning", "RetraceLog", ...) to the warning handler.
void warn(const std::string& category, const std::string& msg);

}  // namespace kiln::detail
