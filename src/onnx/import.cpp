// ONNX import: validates a model, then traces its graph into a kiln function
// (one rule per node, src/onnx/import_*.cpp).
#include "onnx/import.h"

#include <algorithm>
#include <set>

#include "kiln/context.h"
#include "kiln/onnx.h"
#include "saved_model/proto_io.h"

namespace kiln::onnx::detail {
namespace {

constexpr int kMaxNodes = 1 << 20;
constexpr int kMaxNesting = 16;       // If/Loop bodies (protobuf stops at 100 messages deep)
constexpr int kMaxValueNames = 4096;  // inputs or outputs of one node

using AP = pb::AttributeProto;

const char* attr_type_name(int t) {
  static const char* names[] = {"UNDEFINED",      "FLOAT",      "INT",        "STRING",
                                "TENSOR",         "GRAPH",      "FLOATS",     "INTS",
                                "STRINGS",        "TENSORS",    "GRAPHS",     "SPARSE_TENSOR",
                                "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
  return t >= 0 && t < 15 ? names[t] : "<unknown>";
}

// The attribute's type: its declared one, else guessed from the field set
// (very old files leave `type` unset).
int type_of(const AP& a) {
  if (a.has_type()) return a.type();
  if (a.has_f()) return AP::FLOAT;
  if (a.has_i()) return AP::INT;
  if (a.has_s()) return AP::STRING;
  if (a.has_t()) return AP::TENSOR;
  if (a.has_g()) return AP::GRAPH;
  if (a.floats_size()) return AP::FLOATS;
  if (a.ints_size()) return AP::INTS;
  if (a.strings_size()) return AP::STRINGS;
  return AP::UNDEFINED;
}

bool has_graph_attr(const pb::NodeProto& n) {
  for (const auto& a : n.attribute())
    if (a.has_g() || a.graphs_size()) return true;
  return false;
}

bool is_default_domain(const std::string& d) {
  return d.empty() || d == "ai.onnx";
}

std::string op_label(const pb::NodeProto& n) {
  return is_default_domain(n.domain()) ? n.op_type() : str_cat(n.domain(), ".", n.op_type());
}

// Op types (with domains) in `g` and its nested graphs that kiln cannot import.
void collect_unsupported(const pb::GraphProto& g, std::set<std::string>& out, int depth,
                         const std::string& where) {
  if (depth > kMaxNesting)
    throw InvalidArgumentError(str_cat(where, ": graphs nest deeper than ", kMaxNesting));
  for (const auto& n : g.node()) {
    if (!is_default_domain(n.domain()) || !find_import_rule(n.op_type())) out.insert(op_label(n));
    for (const auto& a : n.attribute()) {
      if (a.has_g()) collect_unsupported(a.g(), out, depth + 1, where);
      for (const auto& sub : a.graphs()) collect_unsupported(sub, out, depth + 1, where);
    }
  }
}

// A placeholder-safe name: [A-Za-z0-9_.-/] kept, others become '_'.
std::string safe_name(const std::string& s, std::set<std::string>& used) {
  std::string out;
  for (char ch : s) out += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') ? ch : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "input_" + out;
  std::string name = out;
  for (int k = 1; !used.insert(name).second; ++k) name = str_cat(out, "_", k);
  return name;
}

int64_t default_opset(const pb::ModelProto& m, const std::string& where) {
  int64_t opset = -1;
  for (const auto& o : m.opset_import()) {
    if (!is_default_domain(o.domain())) continue;
    if (opset >= 0)
      throw InvalidArgumentError(str_cat(where, ": the default opset is imported twice"));
    opset = o.version();
  }
  if (opset < 0) {
    if (m.ir_version() >= 3)
      throw InvalidArgumentError(str_cat(where, ": the model imports no default-domain opset"));
    opset = 1;
  }
  if (opset < 1 || opset > kMaxOpset)
    throw InvalidArgumentError(
        str_cat(where, ": opset ", opset, " is not one kiln reads (1 to ", kMaxOpset, ")"));
  return opset;
}

}  // namespace

const Tensor* Scope::find_nhwc(const std::string& name) const {
  for (const Scope* s = this; s; s = s->outer_) {
    auto it = s->nhwc_.find(name);
    if (it != s->nhwc_.end()) return &it->second;
  }
  return nullptr;
}

const Tensor* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->outer_) {
    auto it = s->values_.find(name);
    if (it != s->values_.end()) return &it->second;
  }
  return nullptr;
}

ImportContext::ImportContext(const pb::NodeProto& node, int64_t opset, std::vector<Tensor> inputs,
                             std::string where, const Scope& scope)
    : node_(node),
      opset_(opset),
      inputs_(std::move(inputs)),
      where_(std::move(where)),
      scope_(scope) {
  outputs_.resize(static_cast<size_t>(node.output_size()));
}

void ImportContext::fail_message(const std::string& m) const {
  throw InvalidArgumentError(str_cat(where_, ": ", m));
}

const Tensor& ImportContext::input(size_t i) const {
  if (!has_input(i)) fail("input ", i, " is required");
  return inputs_[i];
}

const Tensor* ImportContext::value(size_t i) const {
  if (!has_input(i)) return nullptr;
  const Tensor& t = inputs_[i];
  if (!t.is_symbolic()) return &t;
  return t.symbol()->constant_value(t.output_index());
}

Tensor ImportContext::known_as(size_t i, const char* what, DType dtype) const {
  const Tensor* v = value(i);
  if (!v)
    fail("input '", what, "' must be a constant (an initializer or a Constant node): kiln needs ",
         "its value when the model is loaded");
  if (!is_integer(v->dtype()) && !is_floating(v->dtype()) && v->dtype() != DType::kBool)
    fail("input '", what, "' must be a number, not ", dtype_name(v->dtype()));
  ContextScope eager(EagerContext::instance());  // a value now, not a traced op
  return cast(*v, dtype);
}

std::vector<int64_t> ImportContext::ints(size_t i, const char* what) const {
  const Tensor t = known_as(i, what, DType::kInt64);
  return t.to_vector<int64_t>();
}

std::vector<double> ImportContext::floats(size_t i, const char* what) const {
  const Tensor t = known_as(i, what, DType::kFloat64);
  return t.to_vector<double>();
}

const AP* ImportContext::find(const char* name) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

const AP& ImportContext::get(const char* name, int type) const {
  const AP* a = find(name);
  if (!a) fail("attribute '", name, "' is required");
  if (type_of(*a) != type)
    fail("attribute '", name, "' is ", attr_type_name(type_of(*a)), ", not ", attr_type_name(type));
  return *a;
}

int64_t ImportContext::attr_int(const char* name, std::optional<int64_t> def) const {
  if (def && !find(name)) return *def;
  return get(name, AP::INT).i();
}

double ImportContext::attr_float(const char* name, std::optional<double> def) const {
  if (def && !find(name)) return *def;
  return get(name, AP::FLOAT).f();
}

std::string ImportContext::attr_string(const char* name, std::optional<std::string> def) const {
  if (def && !find(name)) return *def;
  return get(name, AP::STRING).s();
}

std::vector<int64_t> ImportContext::attr_ints(const char* name,
                                              std::optional<std::vector<int64_t>> def) const {
  if (def && !find(name)) return *def;
  const AP& a = get(name, AP::INTS);
  return {a.ints().begin(), a.ints().end()};
}

std::vector<double> ImportContext::attr_floats(const char* name) const {
  const AP& a = get(name, AP::FLOATS);
  return {a.floats().begin(), a.floats().end()};
}

std::vector<std::string> ImportContext::attr_strings(const char* name) const {
  const AP& a = get(name, AP::STRINGS);
  return {a.strings().begin(), a.strings().end()};
}

Tensor ImportContext::attr_tensor(const char* name) const {
  return from_proto(get(name, AP::TENSOR).t(), str_cat(where_, " attribute '", name, "'"));
}

const pb::GraphProto& ImportContext::attr_graph(const char* name) const {
  return get(name, AP::GRAPH).g();
}

const Tensor* ImportContext::nhwc_input(size_t i) const {
  if (!has_input(i) || i >= static_cast<size_t>(node_.input_size())) return nullptr;
  return scope_.find_nhwc(node_.input(static_cast<int>(i)));
}

void ImportContext::set_nhwc_output(size_t i, Tensor t) {
  if (i >= outputs_.size()) return;
  nhwc_outputs_.resize(outputs_.size());
  nhwc_outputs_[i] = std::move(t);
}

void ImportContext::set_output(size_t i, Tensor t) {
  if (i >= outputs_.size()) return;  // an optional output the model does not take
  outputs_[i] = std::move(t);
}

int64_t normalize_axis(const ImportContext& c, int64_t a, int64_t rank) {
  if (a < -rank || a >= std::max<int64_t>(rank, 1) || (rank == 0 && a != 0 && a != -1))
    c.fail("axis ", a, " is out of range for rank ", rank);
  return a < 0 ? a + rank : a;
}

int64_t known_rank(const ImportContext& c, size_t i) {
  const Tensor& t = c.input(i);
  if (!t.shape().rank_known()) c.fail("input ", i, " needs a known rank");
  return t.rank();
}

const ImportRule* find_import_rule(const std::string& op_type) {
  static const std::map<std::string, const ImportRule*> table = [] {
    std::map<std::string, const ImportRule*> m;
    for (auto family : {elementwise_import_rules(), shape_import_rules(), nn_import_rules(),
                        control_import_rules()})
      for (const ImportRule& r : family)
        if (!m.emplace(r.op_type, &r).second)
          throw InternalError(str_cat("ONNX import rule for ", r.op_type, " defined twice"));
    return m;
  }();
  auto it = table.find(op_type);
  return it == table.end() ? nullptr : it->second;
}

std::vector<const ImportRule*> import_rules() {
  std::vector<const ImportRule*> out;
  for (auto family : {elementwise_import_rules(), shape_import_rules(), nn_import_rules(),
                      control_import_rules()})
    for (const ImportRule& r : family) out.push_back(&r);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) {
    return std::string_view(a->op_type) < std::string_view(b->op_type);
  });
  return out;
}

namespace {

bool is_elementwise(const ImportRule* r) {
  const auto rules = elementwise_import_rules();
  return r >= rules.data() && r < rules.data() + rules.size();
}

// An elementwise node run again on its inputs' NHWC twins (when every rank-4
// input that is not a constant has one), for twins of its rank-4 outputs.
// Lower-rank inputs broadcast from the right against NCHW: they get leading
// 1s and the same transpose.
std::vector<Tensor> channels_last_twins(const ImportRule& rule, const ImportContext& c,
                                        const Scope& scope) {
  std::vector<Tensor> twin_inputs;
  bool any = false;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.has_input(i)) {
      twin_inputs.emplace_back();
      continue;
    }
    const Tensor& t = c.inputs()[i];
    if (!t.shape().rank_known() || t.rank() > 4) return {};
    if (const Tensor* tw = c.nhwc_input(i)) {
      twin_inputs.push_back(*tw);
      any = true;
    } else if (t.rank() == 0) {
      twin_inputs.push_back(t);
    } else if (t.rank() == 4 && !c.value(i)) {
      return {};  // a channels-first activation: no cheaper than now
    } else {
      Tensor p = t;
      while (p.rank() < 4) p = expand_dims(p, 0);
      twin_inputs.push_back(transpose(p, {0, 2, 3, 1}));
    }
  }
  if (!any) return {};
  ImportContext tc(c.node(), c.opset(), std::move(twin_inputs), c.where(), scope);
  tc.set_channels_last(true);
  rule.fn(tc);
  std::vector<Tensor> out = tc.outputs();
  for (size_t o = 0; o < out.size(); ++o)
    if (out[o].defined() && (!out[o].shape().rank_known() || out[o].rank() != 4 ||
                             !c.outputs()[o].shape().rank_known() || c.outputs()[o].rank() != 4))
      out[o] = Tensor();
  return out;
}

}  // namespace

std::vector<Tensor> import_nodes(const pb::GraphProto& g, int64_t opset, Scope& scope,
                                 const std::string& where, int depth) {
  if (depth > kMaxNesting)
    throw InvalidArgumentError(str_cat(where, ": graphs nest deeper than ", kMaxNesting));
  if (g.node_size() > kMaxNodes)
    throw InvalidArgumentError(
        str_cat(where, ": ", g.node_size(), " nodes (at most ", kMaxNodes, ")"));
  for (int k = 0; k < g.node_size(); ++k) {
    const pb::NodeProto& n = g.node(k);
    const std::string at = str_cat(where, ": node ", k, " '", n.name(), "' (", op_label(n), ")");
    if (n.input_size() > kMaxValueNames || n.output_size() > kMaxValueNames)
      throw InvalidArgumentError(str_cat(at, " has too many inputs or outputs"));
    const ImportRule* rule =
        is_default_domain(n.domain()) ? find_import_rule(n.op_type()) : nullptr;
    if (!rule) throw InvalidArgumentError(str_cat(at, ": unsupported op"));
    std::vector<Tensor> inputs;
    for (const std::string& in : n.input()) {
      if (in.empty()) {
        inputs.emplace_back();
        continue;
      }
      const Tensor* t = scope.find(in);
      if (!t)
        throw InvalidArgumentError(
            str_cat(at, ": input '", in,
                    "' is not produced by an earlier node, an input or an initializer"));
      inputs.push_back(*t);
    }
    while (!inputs.empty() && !inputs.back().defined()) inputs.pop_back();
    // Nodes whose inputs are all known run now (import-time folding), so
    // shapes and axes computed from constants stay known to later rules.
    bool known = !inputs.empty() && !has_graph_attr(n);
    for (const Tensor& t : inputs) known &= !t.defined() || !t.is_symbolic();
    ImportContext c(n, opset, std::move(inputs), at, scope);
    try {
      std::optional<ContextScope> eager;
      if (known) eager.emplace(EagerContext::instance());
      rule->fn(c);
    } catch (const InvalidArgumentError&) {
      throw;
    } catch (const Error& e) {
      throw InvalidArgumentError(str_cat(at, ": ", e.what()));
    }
    std::vector<Tensor> twins = c.nhwc_outputs();
    if (!known && twins.empty() && is_elementwise(rule))
      twins = channels_last_twins(*rule, c, scope);
    for (int o = 0; o < n.output_size(); ++o) {
      const std::string& name = n.output(o);
      if (name.empty()) continue;
      const Tensor& t = c.outputs()[static_cast<size_t>(o)];
      if (!t.defined())
        throw InvalidArgumentError(str_cat(at, ": output ", o, " is not supported"));
      if (scope.find(name))
        throw InvalidArgumentError(str_cat(at, ": value '", name, "' is defined twice"));
      scope.set(name, t);
      if (static_cast<size_t>(o) < twins.size() && twins[o].defined())
        scope.set_nhwc(name, twins[o]);
    }
  }
  std::vector<Tensor> outs;
  for (const auto& o : g.output()) {
    const Tensor* t = scope.find(o.name());
    if (!t)
      throw InvalidArgumentError(
          str_cat(where, ": graph output '", o.name(), "' is never produced"));
    outs.push_back(*t);
  }
  return outs;
}

void collect_value_inputs(const pb::GraphProto& g, const std::set<std::string>& inputs,
                          std::set<std::string>& out, int depth) {
  if (depth > kMaxNesting) return;  // refused later, with its message
  for (const auto& n : g.node()) {
    const ImportRule* r = is_default_domain(n.domain()) ? find_import_rule(n.op_type()) : nullptr;
    for (int i = 0; r && i < n.input_size() && i < 32; ++i)
      if ((r->value_inputs >> i & 1u) && inputs.count(n.input(i))) out.insert(n.input(i));
    for (const auto& a : n.attribute())
      if (a.has_g()) collect_value_inputs(a.g(), inputs, out, depth + 1);
  }
}

Tracer::Tracer(std::shared_ptr<const pb::ModelProto> model, std::map<std::string, Tensor> inits,
               std::vector<std::string> inputs, std::vector<ArgSpec> specs,
               std::vector<bool> by_value, int64_t opset, std::string where,
               const LoadOptions& options)
    : model_(std::move(model)),
      inits_(std::move(inits)),
      inputs_(std::move(inputs)),
      specs_(std::move(specs)),
      by_value_(std::move(by_value)),
      opset_(opset),
      where_(std::move(where)) {
  FunctionOptions opts;
  std::set<std::string> fn_names;
  const std::string& gname = model_->graph().name();
  opts.name = !options.name.empty() ? options.name
                                    : safe_name(gname.empty() ? "onnx_model" : gname, fn_names);
  for (const ArgSpec& s : specs_) opts.arg_names.push_back(s.name);
  opts.jit_compile = options.jit_compile;
  fn_ = std::make_unique<Function>([this](const std::vector<Value>& args) { return body(args); },
                                   opts);
}

bool Tracer::has_value_inputs() const {
  return std::find(by_value_.begin(), by_value_.end(), true) != by_value_.end();
}

// A value input travels as (dtype, dims, values): a value bound at trace time.
Value Tracer::body(const std::vector<Value>& args) const {
  Scope scope;
  for (const auto& [k, t] : inits_) scope.set(k, t);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (!by_value_[i]) {
      scope.set(inputs_[i], args[i].tensor());
      continue;
    }
    const auto& parts = args[i].items();
    const DType dt = static_cast<DType>(parts[0].as_int());
    Shape shape;
    for (const Value& d : parts[1].items()) shape.push_back(d.as_int());
    ContextScope eager(EagerContext::instance());  // a concrete value, not a traced op
    if (is_floating(dt)) {
      std::vector<double> values;
      for (const Value& v : parts[2].items()) values.push_back(v.as_float());
      scope.set(inputs_[i], cast(Tensor::from_vector(values, shape), dt));
    } else {
      std::vector<int64_t> values;
      for (const Value& v : parts[2].items()) values.push_back(v.as_int());
      scope.set(inputs_[i], cast(Tensor::from_vector(values, shape), dt));
    }
  }
  std::vector<Tensor> outs = import_nodes(model_->graph(), opset_, scope, where_, 0);
  std::vector<Value> items;
  for (Tensor& t : outs) items.emplace_back(identity(t));
  return Value::list(std::move(items));
}

std::shared_ptr<const ConcreteFunction> Tracer::trace(std::span<const Tensor> inputs) const {
  std::vector<Value> args;
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (!by_value_[i]) {
      args.emplace_back(specs_[i]);
      continue;
    }
    if (i >= inputs.size() || !inputs[i].defined() || inputs[i].is_symbolic())
      throw InvalidArgumentError(str_cat(where_, ": input '", inputs_[i],
                                         "' is read by value: call with a concrete tensor"));
    const Tensor& t = inputs[i];
    if (!is_integer(t.dtype()) && !is_floating(t.dtype()) && t.dtype() != DType::kBool)
      throw InvalidArgumentError(str_cat(where_, ": input '", inputs_[i],
                                         "' is read by value and must be a number, not ",
                                         dtype_name(t.dtype())));
    if (t.num_elements() > 4096)
      throw InvalidArgumentError(str_cat(where_, ": input '", inputs_[i], "' holds ",
                                         t.num_elements(), " values (at most 4096 by value)"));
    std::vector<Value> dims, values;
    for (int64_t d : t.shape().dims()) dims.emplace_back(d);
    if (is_floating(t.dtype())) {
      const Tensor v = cast(t, DType::kFloat64);
      for (int64_t k = 0; k < v.num_elements(); ++k) values.emplace_back(v.data<double>()[k]);
    } else {
      const Tensor v = cast(t, DType::kInt64);
      for (int64_t k = 0; k < v.num_elements(); ++k) values.emplace_back(v.data<int64_t>()[k]);
    }
    args.push_back(Value::tuple(
        {Value(static_cast<int64_t>(t.dtype())), Value::list(dims), Value::list(values)}));
  }
  return fn_->get_concrete_function(args);
}

}  // namespace kiln::onnx::detail

namespace kiln::onnx {

using namespace detail;

std::vector<std::string> supported_import_ops() {
  std::vector<std::string> out;
  for (const ImportRule* r : import_rules()) out.push_back(r->op_type);
  return out;
}

Model load(const std::string& path, const LoadOptions& options) {
  return load_bytes(saved_model::detail::read_file(path, kMaxModelBytes), path, options);
}

Model load_bytes(const std::string& bytes, const std::string& where, const LoadOptions& options) {
  auto m = std::make_shared<pb::ModelProto>();
  if (!saved_model::detail::parse(*m, bytes))
    throw InvalidArgumentError(str_cat(where, ": not an ONNX model (the bytes do not parse)"));
  if (!m->has_graph()) throw InvalidArgumentError(str_cat(where, ": the model has no graph"));
  Model out;
  out.ir_version = m->ir_version();
  out.opset = default_opset(*m, where);
  out.producer_name = m->producer_name();
  const pb::GraphProto& g = m->graph();
  std::set<std::string> unsupported;
  collect_unsupported(g, unsupported, 0, where);
  if (!unsupported.empty()) {
    std::string list;
    for (const auto& u : unsupported) list += (list.empty() ? "" : ", ") + u;
    throw InvalidArgumentError(str_cat(where, ": kiln cannot import these ops: ", list,
                                       " (kiln.onnx.supported_ops() lists the ones it can)"));
  }
  // Initializers (validated now), then the inputs they do not cover.
  std::map<std::string, Tensor> inits;
  for (const auto& t : g.initializer()) {
    if (t.name().empty() || inits.count(t.name()))
      throw InvalidArgumentError(str_cat(where, ": an initializer has a missing or repeated name"));
    inits[t.name()] = from_proto(t, str_cat(where, " initializer '", t.name(), "'"));
  }
  std::vector<ArgSpec> specs;
  std::set<std::string> used, seen;
  for (const auto& v : g.input()) {
    if (!seen.insert(v.name()).second || v.name().empty())
      throw InvalidArgumentError(
          str_cat(where, ": graph input '", v.name(), "' is repeated or unnamed"));
    if (inits.count(v.name())) continue;
    const TensorSpec s = from_proto(v, where);
    out.input_names.push_back(v.name());
    specs.push_back(ArgSpec{s.dtype, s.shape, safe_name(v.name(), used)});
  }
  for (const auto& o : g.output()) out.output_names.push_back(o.name());
  if (out.output_names.empty())
    throw InvalidArgumentError(str_cat(where, ": the graph has no outputs"));
  std::set<std::string> by_value;
  collect_value_inputs(g, std::set<std::string>(out.input_names.begin(), out.input_names.end()),
                       by_value, 0);
  std::vector<bool> flags;
  for (const auto& n : out.input_names) {
    flags.push_back(by_value.count(n) > 0);
    if (flags.back()) out.value_inputs.push_back(n);
  }
  out.tracer = std::make_shared<Tracer>(m, std::move(inits), out.input_names, specs, flags,
                                        out.opset, where, options);
  if (!out.tracer->has_value_inputs()) out.function = out.tracer->trace({});
  return out;
}

std::shared_ptr<const ConcreteFunction> Model::concrete_function(
    std::span<const Tensor> inputs) const {
  if (function) return function;
  if (!tracer) throw FailedPreconditionError("an empty kiln::onnx::Model");
  return tracer->trace(inputs);
}

std::vector<Tensor> Model::operator()(std::span<const Tensor> inputs) const {
  if (inputs.size() != input_names.size())
    throw InvalidArgumentError(
        str_cat("the model takes ", input_names.size(), " inputs, got ", inputs.size()));
  auto cf = concrete_function(inputs);
  std::vector<Tensor> flat;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (std::find(value_inputs.begin(), value_inputs.end(), input_names[i]) == value_inputs.end())
      flat.push_back(inputs[i]);
  std::vector<Tensor> outs = cf->call_flat(flat);
  return outs;
}

}  // namespace kiln::onnx
