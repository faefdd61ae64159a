// A traced graph as TensorBoard's graph plugin reads it: a GraphDef of the
// graph's nodes (names, op types, data and control inputs, output dtypes and
// shapes). Constants' values and bodies of If/While are left out: the plugin
// draws structure, not values.
#include <map>

#include "graph.pb.h"
#include "kiln/graph.h"
#include "kiln/summary.h"
#include "saved_model/proto_io.h"

namespace kiln::summary {

namespace {
namespace sd = saved_model::detail;

void add_nodes(const Graph& g, const std::string& prefix, sd::pb::GraphDef& out) {
  for (const auto& ref : g.nodes()) {
    const Node& n = *ref;
    sd::pb::NodeDef* nd = out.add_node();
    nd->set_name(prefix + n.name());
    nd->set_op(n.op().type_name);
    for (const Edge& e : n.inputs()) {
      const std::string src = prefix + e.node->name();
      nd->add_input(e.index == 0 ? src : str_cat(src, ":", e.index));
    }
    for (const Node* c : n.control_inputs()) nd->add_input(str_cat("^", prefix, c->name()));
    auto& attrs = *nd->mutable_attr();
    if (n.outputs().size() == 1 && n.outputs()[0].dtype != DType::kInvalid)
      attrs["T"].set_type(sd::to_proto(n.outputs()[0].dtype));
    auto* shapes = attrs["_output_shapes"].mutable_list();
    for (const TensorSpec& s : n.outputs()) sd::to_proto(s.shape, shapes->add_shape());
  }
}

}  // namespace

std::string graph_def(const Graph& g) {
  return graph_def(std::vector<const Graph*>{&g});
}

std::string graph_def(const std::vector<const Graph*>& graphs) {
  sd::pb::GraphDef out;
  std::map<std::string, int> seen;
  for (const Graph* g : graphs) {
    if (graphs.size() == 1) {
      add_nodes(*g, "", out);
      break;
    }
    std::string scope = g->function_name().empty() ? "function" : g->function_name();
    if (const int n = seen[scope]++; n > 0) scope = str_cat(scope, "_", n);
    add_nodes(*g, scope + "/", out);
  }
  return out.SerializeAsString();
}

}  // namespace kiln::summary
