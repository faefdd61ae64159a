#include "saved_model/tf_import.h"

#include <deque>
#include <set>

#include "kiln/context.h"
#include "kiln/control_flow.h"
#include "kiln/ops.h"
#include "saved_model/tf_import_node.h"

namespace kiln::saved_model::detail {
// TensorFlow's structural ops, imported here rather than by op rows.
const std::set<std::string>& structural_ops() {
  static const std::set<std::string> ops = {"Const",
                                            "Identity",
                                            "IdentityN",
                                            "NoOp",
                                            "StatefulPartitionedCall",
                                            "PartitionedCall",
                                            "If",
                                            "StatelessIf",
                                            "While",
                                            "StatelessWhile",
                                            "ReadVariableOp",
                                            "AssignVariableOp",
                                            "AssignAddVariableOp",
                                            "AssignSubVariableOp",
                                            "VarIsInitializedOp",
                                            "Snapshot"};
  return ops;
}

namespace {

constexpr int kMaxDepth = 64;

bool importable(const std::string& op) {
  if (structural_ops().count(op) || find_tf_composite(op)) return true;
  const OpDef* row = find_op(op);
  return row && (row->tf_direct || row->tf_import);
}

// The function names a node's attributes call (bodies, branches, callees).
std::vector<std::string> callees(const pb::NodeDef& n) {
  std::vector<std::string> out;
  for (const auto& [k, a] : n.attr())
    if (a.has_func()) out.push_back(a.func().name());
  return out;
}

}  // namespace

TfImporter::TfImporter(const pb::FunctionDefLibrary& lib, std::string where)
    : where_(std::move(where)) {
  for (const auto& f : lib.function())
    if (!defs_.emplace(f.signature().name(), &f).second)
      throw InvalidArgumentError(
          str_cat(where_, ": two library functions are named '", f.signature().name(), "'"));
}

const pb::FunctionDef& TfImporter::def(const std::string& name) const {
  auto it = defs_.find(name);
  if (it == defs_.end())
    throw InvalidArgumentError(str_cat(where_, ": no library function '", name, "'"));
  return *it->second;
}

bool TfImporter::jit(const std::string& name) const {
  const auto& attrs = def(name).attr();
  auto it = attrs.find("_XlaMustCompile");
  return it != attrs.end() && it->second.value_case() == pb::AttrValue::kB && it->second.b();
}

std::vector<std::string> TfImporter::missing_ops(const std::vector<std::string>& roots) const {
  std::vector<std::string> out;
  std::set<std::string> seen;
  std::deque<std::string> todo(roots.begin(), roots.end());
  while (!todo.empty()) {
    const std::string name = todo.front();
    todo.pop_front();
    if (!seen.insert(name).second) continue;
    for (const auto& n : def(name).node_def()) {
      if (!importable(n.op()))
        out.push_back(str_cat(n.op(), ": function '", name, "', node '", n.name(), "'"));
      for (std::string& c : callees(n)) todo.push_back(std::move(c));
    }
  }
  return out;
}

std::vector<TfValue> TfImporter::call(const std::string& name, const std::vector<TfValue>& args,
                                      int depth) const {
  if (depth > kMaxDepth)
    throw InvalidArgumentError(
        str_cat(where_, ": functions nest deeper than ", kMaxDepth, " at '", name, "'"));
  const pb::FunctionDef& f = def(name);
  const auto& sig = f.signature();
  if (static_cast<size_t>(sig.input_arg_size()) != args.size())
    throw InvalidArgumentError(str_cat(where_, ": function '", name, "' takes ",
                                       sig.input_arg_size(), " args, called with ", args.size()));
  FunctionBody body(*this, f, str_cat(where_, ": function '", name, "'"), depth);
  for (int i = 0; i < sig.input_arg_size(); ++i) body.bind_arg(sig.input_arg(i).name(), args[i]);
  body.run();
  std::vector<TfValue> out;
  for (const auto& a : sig.output_arg()) {
    auto r = f.ret().find(a.name());
    if (r == f.ret().end())
      throw InvalidArgumentError(
          str_cat(where_, ": function '", name, "' returns no value for '", a.name(), "'"));
    out.push_back(body.value(r->second));
  }
  return out;
}

namespace {

void flatten(const Value& v, std::vector<Value>& out) {
  switch (v.kind()) {
    case Value::Kind::kList:
    case Value::Kind::kTuple:
    case Value::Kind::kDict:
      for (const Value& x : v.items()) flatten(x, out);
      return;
    case Value::Kind::kTensor:
    case Value::Kind::kVariable:
    case Value::Kind::kSpec: out.push_back(v); return;
    default: return;  // Python values bound at trace time: not arguments
  }
}

// `structure` with its TensorSpec leaves replaced by `flat`, in order.
Value pack(const Value& structure, const std::vector<TfValue>& flat, size_t& next,
           const std::string& where) {
  switch (structure.kind()) {
    case Value::Kind::kList:
    case Value::Kind::kTuple: {
      std::vector<Value> items;
      for (const Value& x : structure.items()) items.push_back(pack(x, flat, next, where));
      return structure.kind() == Value::Kind::kList ? Value::list(std::move(items))
                                                    : Value::tuple(std::move(items));
    }
    case Value::Kind::kDict: {
      std::vector<std::pair<std::string, Value>> items;
      for (size_t i = 0; i < structure.items().size(); ++i)
        items.emplace_back(structure.keys()[i], pack(structure.items()[i], flat, next, where));
      return Value::dict(std::move(items));
    }
    case Value::Kind::kSpec:
    case Value::Kind::kTensor: {
      if (next >= flat.size())
        throw InvalidArgumentError(str_cat(where, ": fewer outputs than its output signature"));
      const TfValue& v = flat[next++];
      if (v.is_variable()) return Value(v.variable);
      return Value(identity(v.tensor));
    }
    default: return structure;
  }
}

}  // namespace

std::shared_ptr<const ConcreteFunction> TfImporter::concrete(const std::string& name,
                                                             const std::vector<Value>& inputs,
                                                             const std::vector<Value>& captured,
                                                             const Value& outputs,
                                                             FunctionOptions options) const {
  const std::string at = str_cat(where_, ": function '", name, "'");
  auto body = [this, name, captured, outputs, at](const std::vector<Value>& args) {
    std::vector<Value> flat;
    for (const Value& a : args) flatten(a, flat);
    std::vector<TfValue> bound;
    for (const Value& v : flat) {
      TfValue t;
      if (v.kind() == Value::Kind::kVariable)
        t.variable = v.variable();
      else
        t.tensor = v.tensor();
      bound.push_back(std::move(t));
    }
    for (const Value& v : captured)
      bound.push_back(v.kind() == Value::Kind::kVariable ? TfValue{Tensor(), v.variable()}
                                                         : TfValue{v.tensor(), Variable()});
    const std::vector<TfValue> outs = call(name, bound, 0);
    size_t next = 0;
    Value packed = pack(outputs, outs, next, at);
    if (next != outs.size())
      throw InvalidArgumentError(
          str_cat(at, ": returns ", outs.size(), " values, its output signature holds ", next));
    return packed;
  };
  Function fn(body, options);
  return fn.get_concrete_function(inputs);
}

}  // namespace kiln::saved_model::detail

namespace kiln::saved_model {

std::vector<std::pair<std::string, std::string>> tf_import_coverage() {
  std::map<std::string, std::string> out;
  for (const std::string& op : detail::structural_ops()) out[op] = "structural";
  for (const OpDef& row : op_table())
    if (row.tf_import || row.tf_direct)
      out[row.type_name] = row.tf_import                ? "row rule"
                           : row.tf_attr_inputs.empty() ? "row"
                                                        : "row form";
  for (const detail::TfComposite& c : detail::tf_composites()) out[c.op_type] = "composite";
  return {out.begin(), out.end()};
}

}  // namespace kiln::saved_model
