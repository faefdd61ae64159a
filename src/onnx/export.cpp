// ONNX export: a ConcreteFunction's graph, optimized without fusion, written
// node by node through the op rows' ONNX rules (OpDef::onnx / onnx_type).
// Constants and variables become initializers of the main graph, If/While
// bodies nested graphs (src/ops/onnx_export.h is what a rule sees).
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "graph/subgraph.h"
#include "kiln/onnx.h"
#include "kiln/passes.h"
#include "kiln/variable.h"
#include "onnx/onnx_io.h"
#include "ops/onnx_export.h"
#include "saved_model/graph_def.h"
#include "saved_model/proto_io.h"

namespace kiln::onnx {

/// A nested graph built by begin_graph/end_graph.
struct GraphValue {
  detail::pb::GraphProto graph;
};

namespace {

namespace pb = detail::pb;

/// A rule's unsupported(): caught per node, collected, reported at the end.
struct Unsupported {
  std::string why;
};

/// ONNX's IR version for an opset of the default domain (onnx.helper's
/// VERSION_TABLE).
int64_t ir_version_for(int opset) {
  struct Row {
    int opset;
    int64_t ir;
  };
  constexpr Row kTable[] = {{8, 3},  {9, 4},   {10, 5},  {11, 6},  {14, 7},  {18, 8},
                            {20, 9}, {22, 10}, {23, 11}, {24, 12}, {27, 13}, {28, 14}};
  for (const Row& r : kTable)
    if (opset <= r.opset) return r.ir;
  return 14;
}

OptimizeOptions export_optimize_options() {
  OptimizeOptions o;
  o.disabled = {"fuse"};
  return o;
}

void set_attr(const std::string& name, const Attr& value, pb::AttributeProto* a) {
  a->set_name(name);
  using AP = pb::AttributeProto;
  if (auto* i = std::get_if<int64_t>(&value)) {
    a->set_type(AP::INT);
    a->set_i(*i);
  } else if (auto* f = std::get_if<double>(&value)) {
    a->set_type(AP::FLOAT);
    a->set_f(static_cast<float>(*f));
  } else if (auto* s = std::get_if<std::string>(&value)) {
    a->set_type(AP::STRING);
    a->set_s(*s);
  } else if (auto* is = std::get_if<std::vector<int64_t>>(&value)) {
    a->set_type(AP::INTS);
    for (int64_t x : *is) a->add_ints(x);
  } else if (auto* fs = std::get_if<std::vector<double>>(&value)) {
    a->set_type(AP::FLOATS);
    for (double x : *fs) a->add_floats(static_cast<float>(x));
  } else if (auto* t = std::get_if<Tensor>(&value)) {
    a->set_type(AP::TENSOR);
    detail::to_proto(*t, a->mutable_t());
  } else if (auto* g = std::get_if<std::shared_ptr<const GraphValue>>(&value)) {
    a->set_type(AP::GRAPH);
    *a->mutable_g() = (*g)->graph;
  }
}

class NodeContext;

/// Builds one model: the graph stack, value names, initializers, errors.
class Exporter {
 public:
  explicit Exporter(const ExportOptions& options) : options_(options) {}

  std::string run(const ConcreteFunction& cf);

  int opset() const { return options_.opset; }
  /// A value name not used yet anywhere in the model, derived from `base`.
  std::string fresh(std::string_view base);
  std::string constant(const Tensor& value, std::string_view base);
  std::vector<std::string> node(std::string_view op_type, std::vector<std::string> inputs,
                                NamedAttrs attrs, std::vector<std::string> outputs,
                                size_t num_outputs);
  /// Emits the nodes of `g` with its placeholders bound to `inputs`;
  /// returns the names of its outputs.
  std::vector<std::string> walk(const Graph& g, const std::vector<std::string>& inputs);
  std::vector<std::string> inline_body(const Subgraph& body,
                                       const std::vector<std::string>& inputs);
  std::vector<std::string> begin_graph(
      const std::vector<std::pair<std::string, TensorSpec>>& inputs);
  std::shared_ptr<const GraphValue> end_graph(
      const std::vector<std::pair<std::string, TensorSpec>>& outputs);
  void set_sequence(const std::string& value, const TensorSpec& element) {
    sequences_[value] = element;
  }
  const TensorSpec* sequence(const std::string& value) const {
    auto it = sequences_.find(value);
    return it == sequences_.end() ? nullptr : &it->second;
  }

 private:
  /// A value info for `name`: a tensor of `spec`, or (kResource) the
  /// sequence `source` is.
  void value_info(const std::string& name, const std::string& source, const TensorSpec& spec,
                  pb::ValueInfoProto* out);
  /// The values of one walked graph: output names and constant values
  /// (a Const's initializer is made when a node first reads its name).
  struct Scope {
    std::unordered_map<const Node*, std::vector<std::string>> names;
    std::unordered_map<const Node*, const Tensor*> values;
  };
  /// The name of the value `e`, making a Const's initializer on first use.
  std::string name_of(Scope& scope, const Edge& e);
  void export_node(const Node& n, Scope& scope);
  std::string variable(const Node& read, Scope& scope);
  pb::GraphProto& current() { return *stack_.back(); }

  const ExportOptions& options_;
  pb::ModelProto model_;
  std::vector<pb::GraphProto*> stack_;
  std::vector<std::shared_ptr<GraphValue>> nested_;
  std::unordered_set<std::string> used_;
  std::unordered_map<int64_t, std::string> variables_;     // variable id -> initializer
  std::unordered_map<std::string, TensorSpec> sequences_;  // sequence value -> element
  std::unordered_map<std::string, Tensor> handles_;        // resource name -> handle
  std::vector<std::string> errors_;
};

/// What one kiln node's rule sees.
class NodeContext final : public ExportContext {
 public:
  /// `in(i)` calls in_name(i), which names input i on first use.
  NodeContext(Exporter& ex, const Node& n, std::function<std::string(size_t)> in_name,
              std::vector<std::string> outs, std::vector<const Tensor*> values)
      : ExportContext(n.op(), n.attrs()),
        ex_(ex),
        node_(n),
        in_name_(std::move(in_name)),
        outs_(std::move(outs)),
        values_(std::move(values)) {
    for (const Edge& e : n.inputs()) in_specs_.push_back(e.node->outputs()[e.index]);
  }

  size_t num_inputs() const override { return in_specs_.size(); }
  const TensorSpec& input_spec(size_t i) const override { return in_specs_.at(i); }
  size_t num_outputs() const override { return outs_.size(); }
  const TensorSpec& output_spec(size_t i) const override { return node_.outputs()[i]; }
  const Tensor* input_value(size_t i) const override { return values_.at(i); }
  std::string in(size_t i) const override {
    if (i >= in_specs_.size()) throw InternalError(str_cat("onnx export: no input ", i));
    return in_name_(i);
  }
  std::string out(size_t i) const override { return outs_.at(i); }
  int opset() const override { return ex_.opset(); }
  std::string constant(const Tensor& value) override {
    return ex_.constant(value, node_.name() + "/const");
  }
  std::vector<std::string> node(std::string_view op_type, std::vector<std::string> inputs,
                                NamedAttrs attrs, std::vector<std::string> outputs,
                                size_t num_outputs) override {
    if (outputs.empty())
      for (size_t i = 0; i < num_outputs; ++i)
        outputs.push_back(ex_.fresh(str_cat(node_.name(), "/", op_type)));
    return ex_.node(op_type, std::move(inputs), std::move(attrs), std::move(outputs), 0);
  }
  std::vector<std::string> inline_body(const Subgraph& body,
                                       const std::vector<std::string>& inputs) override {
    return ex_.inline_body(body, inputs);
  }
  std::vector<std::string> begin_graph(
      const std::vector<std::pair<std::string, TensorSpec>>& inputs) override {
    return ex_.begin_graph(inputs);
  }
  std::shared_ptr<const GraphValue> end_graph(
      const std::vector<std::pair<std::string, TensorSpec>>& outputs) override {
    return ex_.end_graph(outputs);
  }
  void set_sequence(const std::string& value, const TensorSpec& element) override {
    ex_.set_sequence(value, element);
  }
  const TensorSpec* sequence(const std::string& value) const override {
    return ex_.sequence(value);
  }
  [[noreturn]] void unsupported(std::string_view why) const override {
    throw Unsupported{std::string(why)};
  }

 private:
  Exporter& ex_;
  const Node& node_;
  std::function<std::string(size_t)> in_name_;
  std::vector<std::string> outs_;
  std::vector<const Tensor*> values_;
  std::vector<TensorSpec> in_specs_;
};

std::string Exporter::fresh(std::string_view base) {
  std::string name(base);
  for (int k = 1; !used_.insert(name).second; ++k) name = str_cat(base, "_", k);
  return name;
}

std::string Exporter::constant(const Tensor& value, std::string_view base) {
  std::string name = fresh(base);
  pb::TensorProto* t = model_.mutable_graph()->add_initializer();
  detail::to_proto(value, t);
  t->set_name(name);
  return name;
}

std::vector<std::string> Exporter::node(std::string_view op_type, std::vector<std::string> inputs,
                                        NamedAttrs attrs, std::vector<std::string> outputs,
                                        size_t num_outputs) {
  for (size_t i = outputs.size(); i < num_outputs; ++i) outputs.push_back(fresh(op_type));
  pb::NodeProto* n = current().add_node();
  n->set_op_type(std::string(op_type));
  n->set_name(fresh(str_cat(outputs.empty() ? std::string(op_type) : outputs[0], "/node")));
  for (const std::string& i : inputs) n->add_input(i);
  for (const std::string& o : outputs) n->add_output(o);
  for (const auto& [name, value] : attrs) set_attr(name, value, n->add_attribute());
  if (op_type == "Identity" && !inputs.empty())
    if (const TensorSpec* e = sequence(inputs[0])) sequences_[outputs.at(0)] = *e;
  return outputs;
}

std::string Exporter::variable(const Node& read, Scope& scope) {
  auto h = handles_.find(name_of(scope, read.inputs()[0]));
  if (h == handles_.end()) throw Unsupported{"it reads a resource that is not a variable"};
  Variable v = Variable::from_handle(h->second);
  auto it = variables_.find(v.id());
  if (it != variables_.end()) return it->second;
  std::string base = v.name().empty() ? "variable" : v.name();
  if (auto colon = base.rfind(':');
      colon != std::string::npos && colon + 1 < base.size() &&
      base.find_first_not_of("0123456789", colon + 1) == std::string::npos)
    base.resize(colon);  // "kernel:0" -> "kernel"
  std::string name = constant(v.read_value(), base);
  variables_.emplace(v.id(), name);
  return name;
}

void Exporter::export_node(const Node& n, Scope& scope) {
  const OpDef& op = n.op();
  std::vector<std::string> outs;
  for (size_t i = 0; i < n.outputs().size(); ++i)
    outs.push_back(fresh(i == 0 ? n.name() : str_cat(n.name(), ":", i)));
  auto& names = scope.names[&n];
  const size_t depth = stack_.size();
  try {
    if (op.id == OpId::ReadVariable) {
      names = {variable(n, scope)};
      return;
    }
    std::vector<const Tensor*> values;
    for (const Edge& e : n.inputs()) {
      auto v = scope.values.find(e.node);
      values.push_back(v != scope.values.end() ? v->second : nullptr);
    }
    names = outs;
    auto in_name = [&](size_t i) { return name_of(scope, n.inputs()[i]); };
    NodeContext ctx(*this, n, in_name, outs, std::move(values));
    if (op.onnx) {
      op.onnx(ctx);
    } else if (op.onnx_type) {
      std::vector<std::string> all;
      for (size_t i = 0; i < ctx.num_inputs(); ++i) all.push_back(ctx.in(i));
      ctx.emit(op.onnx_type, std::move(all));
    } else {
      throw Unsupported{};
    }
  } catch (const Unsupported& u) {
    errors_.push_back(str_cat(op.type_name, " (node '", n.name(), "'",
                              u.why.empty() ? std::string() : str_cat(": ", u.why), ")"));
    names = outs;
    stack_.resize(depth);  // a rule that failed inside a nested graph
    nested_.resize(depth - 1);
  }
}

std::vector<std::string> Exporter::walk(const Graph& g, const std::vector<std::string>& inputs) {
  Scope scope;
  for (size_t i = 0; i < g.inputs().size(); ++i) scope.names[g.inputs()[i]] = {inputs.at(i)};
  for (const auto& ref : g.nodes()) {
    const Node& n = *ref;
    if (scope.names.count(&n)) continue;
    if (n.op().id == OpId::Placeholder)
      throw InternalError(str_cat("onnx export: placeholder '", n.name(), "' is not an input"));
    if (n.op().id == OpId::Const) {
      scope.names[&n] = {std::string()};
      scope.values[&n] = &std::get<Tensor>(n.attr("value"));
      continue;
    }
    export_node(n, scope);
  }
  std::vector<std::string> outs;
  for (const Edge& e : g.outputs()) {
    try {
      outs.push_back(name_of(scope, e));
    } catch (const Unsupported& u) {
      errors_.push_back(str_cat("output of '", g.function_name(), "': ", u.why));
      outs.push_back(fresh("unsupported"));
    }
  }
  return outs;
}

std::string Exporter::name_of(Scope& scope, const Edge& e) {
  std::string& name = scope.names.at(e.node).at(static_cast<size_t>(e.index));
  if (!name.empty()) return name;
  if (e.node->op().id != OpId::Const)
    throw Unsupported{str_cat("it reads '", e.node->name(), "', a value ONNX has no type for")};
  if (saved_model::detail::is_resource_const(
          *e.node)) {  // a name for ReadVariable, never a model value
    name = fresh(str_cat("resource/", e.node->name()));
    handles_[name] = *scope.values.at(e.node);
  } else {
    name = constant(*scope.values.at(e.node), e.node->name());
  }
  return name;
}

std::vector<std::string> Exporter::inline_body(const Subgraph& body,
                                               const std::vector<std::string>& inputs) {
  const auto* traced = dynamic_cast<const kiln::detail::TracedSubgraph*>(&body);
  if (!traced)
    throw Unsupported{str_cat("its body '", body.name(), "' is a host callback, not a graph")};
  std::unique_ptr<Graph> g = traced->traced_graph().clone();
  optimize(*g, export_optimize_options());
  return walk(*g, inputs);
}

std::vector<std::string> Exporter::begin_graph(
    const std::vector<std::pair<std::string, TensorSpec>>& inputs) {
  auto gv = std::make_shared<GraphValue>();
  gv->graph.set_name(fresh("subgraph"));
  std::vector<std::string> names;
  for (const auto& [base, spec] : inputs) {
    names.push_back(fresh(base));
    value_info(names.back(), base, spec, gv->graph.add_input());
  }
  nested_.push_back(gv);
  stack_.push_back(&gv->graph);
  return names;
}

void Exporter::value_info(const std::string& name, const std::string& source,
                          const TensorSpec& spec, pb::ValueInfoProto* out) {
  if (spec.dtype != DType::kResource) return detail::to_proto(name, spec, out);
  const TensorSpec* e = sequence(source);
  if (!e) throw Unsupported{str_cat("a resource value ('", source, "') crosses a graph boundary")};
  sequences_[name] = *e;
  out->set_name(name);
  out->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(detail::to_proto(e->dtype));
}

std::shared_ptr<const GraphValue> Exporter::end_graph(
    const std::vector<std::pair<std::string, TensorSpec>>& outputs) {
  if (nested_.empty()) throw InternalError("onnx export: end_graph without begin_graph");
  std::shared_ptr<GraphValue> gv = nested_.back();
  for (const auto& [name, spec] : outputs) value_info(name, name, spec, gv->graph.add_output());
  nested_.pop_back();
  stack_.pop_back();
  return gv;
}

std::string Exporter::run(const ConcreteFunction& cf) {
  const int opset = options_.opset;
  if (opset < kMinOpset || opset > kMaxOpset)
    throw InvalidArgumentError(str_cat("onnx export: opset ", opset, " is outside the range ",
                                       kMinOpset, "..", kMaxOpset, " kiln writes"));
  std::unique_ptr<Graph> g = cf.graph().clone();
  optimize(*g, export_optimize_options());
  const size_t n_out = g->outputs().size();
  if (!options_.output_names.empty() && options_.output_names.size() != n_out)
    throw InvalidArgumentError(str_cat("onnx export: ", options_.output_names.size(),
                                       " output names given for '", cf.name(), "', which has ",
                                       n_out, " outputs"));
  std::vector<std::string> out_names;
  for (size_t k = 0; k < n_out; ++k) {
    out_names.push_back(options_.output_names.empty() ? str_cat("output_", k)
                                                      : options_.output_names[k]);
    if (!used_.insert(out_names.back()).second)
      throw InvalidArgumentError(
          str_cat("onnx export: output name '", out_names.back(), "' is given twice"));
  }
  model_.set_ir_version(ir_version_for(opset));
  auto* imp = model_.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  model_.set_producer_name("kiln");
  model_.set_producer_version(KILN_VERSION);
  pb::GraphProto* graph = model_.mutable_graph();
  graph->set_name(options_.graph_name.empty() ? cf.name() : options_.graph_name);
  stack_.push_back(graph);
  std::vector<std::string> in_names;
  for (const Node* p : g->inputs()) {
    in_names.push_back(fresh(p->name()));
    detail::to_proto(in_names.back(), p->outputs()[0], graph->add_input());
  }
  std::vector<std::string> outs = walk(*g, in_names);
  if (!errors_.empty()) {
    std::string list;
    std::unordered_set<std::string> seen;  // bodies walked twice (Loop's cond)
    for (const std::string& e : errors_)
      if (seen.insert(e).second) list += str_cat(list.empty() ? "" : "; ", e);
    throw InvalidArgumentError(str_cat("cannot export '", cf.name(), "' to ONNX opset ", opset,
                                       ": ", seen.size(), " op(s) have no ONNX mapping: ", list));
  }
  for (size_t k = 0; k < n_out; ++k) {
    node("Identity", {outs[k]}, {}, {out_names[k]}, 0);
    const Edge& e = g->outputs()[k];
    detail::to_proto(out_names[k], e.node->outputs()[e.index], graph->add_output());
  }
  return model_.SerializeAsString();
}

}  // namespace

int64_t ExportContext::onnx_dtype(DType t) {
  return detail::to_proto(t);
}

std::string ExportContext::cast(const std::string& v, DType from, DType to) {
  if (from == to) return v;
  return node1("Cast", {v}, {{"to", int64_t{detail::to_proto(to)}}});
}

std::string ExportContext::scalar(double v, DType dtype) {
  if (is_floating(dtype)) return constant(Tensor(Scalar(v), dtype));
  if (dtype == DType::kBool) return constant(Tensor(v != 0));
  return constant(Tensor(Scalar(static_cast<int64_t>(v)), dtype));
}

std::string export_bytes(const ConcreteFunction& cf, const ExportOptions& options) {
  return Exporter(options).run(cf);
}

void export_function(const ConcreteFunction& cf, const std::string& path,
                     const ExportOptions& options) {
  saved_model::detail::write_file(path, export_bytes(cf, options));
}

}  // namespace kiln::onnx
