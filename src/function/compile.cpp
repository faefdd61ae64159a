#include "compile.h"

#include "kiln/config.h"

namespace kiln::detail {

CompiledGraph compile_graph(std::unique_ptr<Graph> graph, const CompileOptions& options) {
  CompiledGraph c;
  if (config().verify_graphs) graph->verify();
  if (options.optimize) {
    OptimizeOptions oo;
    oo.disabled = options.disabled_passes;
    // The JIT compiles what the interpreter's elementwise fusion would take;
    // convolutions still take their epilogues as oneDNN post-ops (fuse_conv:
    // a batch norm folded into the filter, a residual add, hard swish), then
    // 0.84x the compiled epilogues on MobileNetV3Small, 0.93x on ResNet50
    // (docs/BENCHMARKS.md, seventeenth session). check_numerics turns all
    // fusion off, so that errors name the unfused op.
    if (config().check_numerics) oo.disabled.insert("fuse");
    if (options.jit) oo.elementwise_fusion = false;
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
