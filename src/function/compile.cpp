#include "compile.h"

#include "kiln/config.h"

namespace kiln::detail {

CompiledGraph compile_graph(std::unique_ptr<Graph> graph, const CompileOptions& options) {
  CompiledGraph c;
  if (config().verify_graphs) graph->verify();
  if (options.optimize) {
    OptimizeOptions oo;
    oo.disabled = options.disabled_passes;
    if (config().check_numerics) oo.disabled.insert("fuse");
    oo.verify = config().verify_graphs;
    c.report = optimize(*graph, oo);
  }
  c.plan = Plan::compile(*graph);
  c.graph = std::move(graph);
  return c;
}

}  // namespace kiln::detail
