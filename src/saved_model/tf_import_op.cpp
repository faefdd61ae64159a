// One TensorFlow node through kiln's op table (OpDef::tf_direct / tf_import)
// or a composite rule (tf_import_ops.cpp): tf_import::Context over a NodeDef.
#include "kiln/context.h"
#include "kiln/ops.h"
#include "saved_model/tf_import_node.h"

namespace kiln::saved_model::detail {
namespace {

using C = pb::AttrValue;

class NodeContext final : public tf_import::Context {
 public:
  NodeContext(const pb::NodeDef& n, std::vector<Tensor> in, std::string where)
      : n_(n), in_(std::move(in)), where_(std::move(where)) {}

  const std::string& op_type() const override { return n_.op(); }
  size_t num_inputs() const override { return in_.size(); }
  const Tensor& input(size_t i) const override {
    if (i >= in_.size()) fail(str_cat("has no input ", i));
    return in_[i];
  }
  std::vector<int64_t> ints(size_t i, const char* what) const override {
    const Tensor& t = input(i);
    const Tensor* v = t.is_symbolic() ? t.symbol()->constant_value(t.output_index()) : &t;
    if (!v || !is_integer(v->dtype()))
      fail(str_cat("its ", what, " must be an integer constant: kiln needs it when loading"));
    ContextScope eager(EagerContext::instance());  // a value now, not a traced op
    return cast(*v, DType::kInt64).to_vector<int64_t>();
  }

  bool has_attr(const std::string& name) const override { return find(name) != nullptr; }
  int64_t attr_int(const std::string& name, std::optional<int64_t> def) const override {
    const C* a = get(name, def.has_value(), C::kI);
    return a ? a->i() : *def;
  }
  bool attr_bool(const std::string& name, std::optional<bool> def) const override {
    const C* a = get(name, def.has_value(), C::kB);
    return a ? a->b() : *def;
  }
  double attr_float(const std::string& name, std::optional<double> def) const override {
    const C* a = get(name, def.has_value(), C::kF);
    return a ? a->f() : *def;
  }
  std::string attr_string(const std::string& name, std::optional<std::string> def) const override {
    const C* a = get(name, def.has_value(), C::kS);
    return a ? a->s() : *def;
  }
  DType attr_type(const std::string& name) const override {
    return from_proto(get(name, false, C::kType)->type(), str_cat(where_, " attribute ", name));
  }
  std::vector<int64_t> attr_ints(const std::string& name,
                                 std::optional<std::vector<int64_t>> def) const override {
    const C* a = get(name, def.has_value(), C::kList);
    return a ? std::vector<int64_t>(a->list().i().begin(), a->list().i().end()) : *def;
  }

  void set_outputs(std::vector<Tensor> outputs) override { out_ = std::move(outputs); }
  [[noreturn]] void fail(const std::string& message) const override {
    throw InvalidArgumentError(str_cat(where_, " (", n_.op(), "): ", message));
  }

  std::vector<Tensor>& outputs() { return out_; }
  const C* find(const std::string& name) const {
    auto it = n_.attr().find(name);
    return it == n_.attr().end() ? nullptr : &it->second;
  }

 private:
  const C* get(const std::string& name, bool optional, C::ValueCase want) const {
    const C* a = find(name);
    if (!a) {
      if (optional) return nullptr;
      fail(str_cat("has no attribute '", name, "'"));
    }
    if (a->value_case() != want) fail(str_cat("its attribute '", name, "' has the wrong type"));
    return a;
  }

  const pb::NodeDef& n_;
  std::vector<Tensor> in_;
  std::string where_;
  std::vector<Tensor> out_;
};

// A row's attribute from TensorFlow's attribute of the same name.
AttrValue row_attr(const C& a, AttrType type, NodeContext& c, const std::string& name) {
  auto want = [&](bool ok) {
    if (!ok) c.fail(str_cat("its attribute '", name, "' has the wrong type"));
  };
  switch (type) {
    case AttrType::kBool: want(a.value_case() == C::kB); return a.b();
    case AttrType::kInt: want(a.value_case() == C::kI); return static_cast<int64_t>(a.i());
    case AttrType::kFloat: want(a.value_case() == C::kF); return static_cast<double>(a.f());
    case AttrType::kDType: want(a.value_case() == C::kType); return c.attr_type(name);
    case AttrType::kString: want(a.value_case() == C::kS); return a.s();
    case AttrType::kInts:
      want(a.value_case() == C::kList);
      return std::vector<int64_t>(a.list().i().begin(), a.list().i().end());
    case AttrType::kTensor:
      want(a.value_case() == C::kTensor);
      return from_proto(a.tensor(), str_cat("attribute ", name));
    default: break;
  }
  c.fail(str_cat("its attribute '", name, "' is of a kind kiln does not import"));
}

// A row's attribute from TensorFlow's input `a.position` (OpDef::tf_form):
// a list, or one integer; nullopt for an empty list meaning every axis in
// kiln but none in TensorFlow.
std::optional<AttrValue> attr_from_input(const OpDef& row, const OpDef::TfAttrInput& a,
                                         size_t position, NodeContext& c) {
  std::vector<int64_t> v = c.ints(position, a.attr);
  if (row.attrs[row.attr_at(a.attr)].type == AttrType::kInts) {
    if (v.empty() && a.all_axes_if_empty) return std::nullopt;
    return v;
  }
  if (v.size() != 1) c.fail(str_cat("its ", a.attr, " must be one integer"));
  return v[0];
}

// The row called with the node's inputs and the attributes kiln's row shares
// with TensorFlow's (its type attributes are inferred); the inputs TensorFlow
// takes for kiln's attributes (OpDef::tf_form) become those attributes.
std::vector<Tensor> direct(const OpDef& row, NodeContext& c) {
  Attrs attrs(row.attrs.size());
  for (size_t i = 0; i < row.attrs.size(); ++i) {
    std::string tf_name = row.attrs[i].name;
    for (const auto& [tf, kiln] : row.tf_attr_names)
      if (tf_name == kiln) tf_name = tf;
    if (const C* a = c.find(tf_name)) attrs[i] = row_attr(*a, row.attrs[i].type, c, tf_name);
  }
  std::vector<bool> taken(c.num_inputs(), false);
  for (const OpDef::TfAttrInput& a : row.tf_attr_inputs) {
    if (c.num_inputs() == 0) c.fail(str_cat("lacks its ", a.attr, " input"));
    const size_t at = a.position < 0 ? c.num_inputs() - 1 : static_cast<size_t>(a.position);
    if (at >= c.num_inputs()) c.fail(str_cat("lacks its ", a.attr, " input"));
    taken[at] = true;
    std::optional<AttrValue> v = attr_from_input(row, a, at, c);
    if (!v) return {identity(c.input(0))};  // reduced over no axis
    attrs[row.attr_at(a.attr)] = std::move(*v);
  }
  try {
    complete_attrs(row, attrs);
  } catch (const Error& e) {
    c.fail(e.what());
  }
  std::vector<Tensor> in;
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (!taken[i]) in.push_back(c.input(i));
  return call_op(row.id, in, std::move(attrs));
}

// Runs the node's rule on `c` (its row's, directly, or a composite's).
void run_rule(const OpDef* row, const TfComposite* comp, NodeContext& c) {
  if (row && row->tf_import) return row->tf_import(c);
  if (row && row->tf_direct) return c.set_outputs(direct(*row, c));
  comp->fn(c);
}

// A value known while loading: a concrete tensor, a Const, or folded.
const Tensor* known(const Tensor& t) {
  return t.is_symbolic() ? t.symbol()->constant_value(t.output_index()) : &t;
}

// Nodes whose inputs are all known (or, for shape-only ops, whose shapes are)
// are computed now and enter the graph as constants, so the ops reading them
// as attributes (axes, permutations, element shapes) find their values.
bool fold(const OpDef* row, const TfComposite* comp, const pb::NodeDef& n,
          const std::vector<Tensor>& in, const std::string& where, std::vector<Tensor>* out) {
  if (in.empty() || (row && (row->has(kStateful) || row->has(kRandom)))) return false;
  const bool shape_only = row && row->has(kShapeOnly);
  std::vector<Tensor> values;
  for (const Tensor& t : in) {
    if (const Tensor* v = known(t)) {
      values.push_back(*v);
    } else if (shape_only && t.shape().is_fully_defined() &&
               (is_integer(t.dtype()) || is_floating(t.dtype()) || t.dtype() == DType::kBool)) {
      ContextScope eager(EagerContext::instance());
      values.push_back(zeros(t.shape(), t.dtype()));
    } else {
      return false;
    }
  }
  std::vector<Tensor> got;
  {
    ContextScope eager(EagerContext::instance());  // values now, not traced ops
    NodeContext c(n, std::move(values), where);
    run_rule(row, comp, c);
    got = std::move(c.outputs());
  }
  for (const Tensor& t : got)
    if (!t.defined() || t.dtype() == DType::kResource) return false;
  for (Tensor& t : got) out->push_back(constant(t));
  return true;
}

}  // namespace

std::vector<TfValue> import_op(const pb::NodeDef& n, const std::vector<TfValue>& in,
                               const std::string& where,
                               std::vector<std::pair<std::string, size_t>>* args) {
  std::vector<Tensor> tensors;
  for (const TfValue& v : in) {
    if (v.is_variable())
      throw InvalidArgumentError(str_cat(where, " (", n.op(),
                                         "): takes a variable; kiln reads "
                                         "variables with ReadVariableOp only"));
    tensors.push_back(v.tensor);
  }
  const OpDef* row = find_op(n.op());
  if (row && !row->tf_import && !row->tf_direct) row = nullptr;
  const TfComposite* comp = row ? nullptr : find_tf_composite(n.op());
  if (!row && !comp)
    throw UnimplementedError(str_cat(where, ": kiln cannot import TensorFlow's op ", n.op()));
  std::vector<Tensor> results;
  if (!fold(row, comp, n, tensors, where, &results)) {
    NodeContext c(n, std::move(tensors), where);
    run_rule(row, comp, c);
    results = std::move(c.outputs());
  }
  std::vector<TfValue> out;
  for (Tensor& t : results) out.push_back(TfValue{std::move(t), Variable()});
  if (comp) {
    for (const char* name : comp->outputs) args->emplace_back(name, 1);
  } else if (row && row->outputs.size() > 1 && !row->has(kVariadicOutput)) {
    for (const char* name : row->outputs) args->emplace_back(name, 1);
  }
  if (!args->empty() && args->size() != out.size())
    throw InternalError(str_cat(where, ": ", n.op(), "'s rule made ", out.size(), " outputs for ",
                                args->size(), " output args"));
  return out;
}

}  // namespace kiln::saved_model::detail
