#include "compile.h"

#include "kiln/config.h"

namespace kiln::detail {

CompiledGraph compile_graph(std::unique_ptr<Graph> graph, const CompileOptions& options) {
  CompiledGraph c;
  if (config().verify_graphs) graph->verify();
  if (options.optimize) {
    OptimizeOptions oo;
    oo.disabled = options.disabled_passes;
    // The JIT compiles what the interpreter's fusion would take. "fuse"
    // skips fuse_conv too: a convolution's epilogue then compiles as a kernel
    // of its own, faster than oneDNN's post-ops (EfficientNetV2-S 83.3 vs
    // 86.5 ms; docs/BENCHMARKS.md, session 22).
    if (config().check_numerics || options.jit) oo.disabled.insert("fuse");
    oo.verify = config().verify_graphs;
    c.report = optimize(*graph, oo);
  }
  // After inlining, so nested functions' ops are checked too.
  if (options.jit) jit::check_jit_supported(*graph);
  if (options.jit && !config().check_numerics) {
    c.jit = jit::compile_jit(graph);
    if (config().verify_graphs) graph->verify();
  }
  c.plan = Plan::compile(*graph);
  c.graph = std::move(graph);
  return c;
}

}  // namespace kiln::detail
