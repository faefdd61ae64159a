#include "saved_model/tf_import_node.h"

#include <deque>
#include <optional>

#include "kiln/context.h"
#include "kiln/control_flow.h"
#include "kiln/ops.h"
#include "saved_model/graph_def.h"

namespace kiln::saved_model::detail {
namespace {

// "node:out:2" -> {"node", "out", 2}; "arg" -> {"arg", "", -1}.
struct Ref {
  std::string node, arg;
  int64_t index = -1;
};

Ref parse_ref(const std::string& s, const std::string& where) {
  Ref r;
  const size_t a = s.find(':');
  if (a == std::string::npos) {
    r.node = s;
    return r;
  }
  r.node = s.substr(0, a);
  const size_t b = s.find(':', a + 1);
  const std::string idx = b == std::string::npos ? s.substr(a + 1) : s.substr(b + 1);
  if (b != std::string::npos) r.arg = s.substr(a + 1, b - a - 1);
  try {
    size_t used = 0;
    r.index = std::stoll(idx, &used);
    if (used != idx.size() || r.index < 0) throw std::invalid_argument(idx);
  } catch (const std::exception&) {
    throw InvalidArgumentError(str_cat(where, ": '", s, "' is not a tensor name"));
  }
  return r;
}

std::string node_of(const std::string& input) {
  const std::string s = input[0] == '^' ? input.substr(1) : input;
  return s.substr(0, s.find(':'));
}

Tensor tensor_of(const TfValue& v, const std::string& where) {
  if (v.is_variable())
    throw InvalidArgumentError(str_cat(where, ": takes a variable where kiln needs a tensor"));
  return v.tensor;
}

std::vector<Tensor> tensors(const std::vector<TfValue>& v, size_t from, const std::string& where) {
  std::vector<Tensor> out;
  for (size_t i = from; i < v.size(); ++i) out.push_back(tensor_of(v[i], where));
  return out;
}

std::vector<TfValue> values(std::vector<Tensor> ts) {
  std::vector<TfValue> out;
  for (Tensor& t : ts) out.push_back(TfValue{std::move(t), Variable()});
  return out;
}

}  // namespace

FunctionBody::FunctionBody(const TfImporter& importer, const pb::FunctionDef& f, std::string where,
                           int depth)
    : imp_(importer), f_(f), where_(std::move(where)), depth_(depth) {}

void FunctionBody::bind_arg(const std::string& name, TfValue v) {
  args_[name] = std::move(v);
}

void FunctionBody::fail(const pb::NodeDef& n, const std::string& msg) const {
  throw InvalidArgumentError(str_cat(where_, ", node '", n.name(), "' (", n.op(), "): ", msg));
}

std::vector<const pb::NodeDef*> FunctionBody::order() const {
  std::map<std::string, const pb::NodeDef*> by_name;
  for (const auto& n : f_.node_def())
    if (!by_name.emplace(n.name(), &n).second)
      throw InvalidArgumentError(str_cat(where_, ": two nodes are named '", n.name(), "'"));
  if (by_name.size() > static_cast<size_t>(kMaxNodes))
    throw InvalidArgumentError(str_cat(where_, ": more than ", kMaxNodes, " nodes"));
  std::map<std::string, int> waiting;
  std::map<std::string, std::vector<std::string>> readers;
  for (const auto& [name, n] : by_name) {
    int deps = 0;
    for (const std::string& in : n->input()) {
      if (in.empty()) fail(*n, "an empty input name");
      const std::string src = node_of(in);
      if (by_name.count(src)) {
        ++deps;
        readers[src].push_back(name);
      } else if (!args_.count(src)) {
        fail(*n, str_cat("reads '", in, "', which is neither a node nor an argument"));
      }
    }
    waiting[name] = deps;
  }
  std::deque<std::string> ready;
  for (const auto& [name, d] : waiting)
    if (d == 0) ready.push_back(name);
  std::vector<const pb::NodeDef*> out;
  while (!ready.empty()) {
    const std::string name = ready.front();
    ready.pop_front();
    out.push_back(by_name[name]);
    for (const std::string& r : readers[name])
      if (--waiting[r] == 0) ready.push_back(r);
  }
  if (out.size() != by_name.size())
    throw InvalidArgumentError(str_cat(where_, ": its nodes read each other in a cycle"));
  return out;
}

void FunctionBody::run() {
  for (const pb::NodeDef* n : order()) import_node(*n);
}

TfValue FunctionBody::value(const std::string& ref) const {
  const Ref r = parse_ref(ref, where_);
  if (r.index < 0) {
    auto a = args_.find(r.node);
    if (a != args_.end()) return a->second;
  }
  auto it = nodes_.find(r.node);
  if (it == nodes_.end())
    throw InvalidArgumentError(str_cat(where_, ": '", ref, "' names no node or argument"));
  const Done& d = it->second;
  size_t flat = static_cast<size_t>(std::max<int64_t>(r.index, 0));
  if (!r.arg.empty() && d.args.size() > 1) {
    size_t offset = 0;
    bool found = false;
    for (const auto& [name, count] : d.args) {
      if (name == r.arg) {
        found = true;
        break;
      }
      offset += count;
    }
    if (!found)
      throw InvalidArgumentError(
          str_cat(where_, ": '", ref, "': node '", r.node, "' has no output '", r.arg, "'"));
    flat += offset;
  }
  if (flat >= d.outs.size())
    throw InvalidArgumentError(
        str_cat(where_, ": '", ref, "': node '", r.node, "' has ", d.outs.size(), " outputs"));
  return d.outs[flat];
}

std::string FunctionBody::func_attr(const pb::NodeDef& n, const char* name) const {
  auto it = n.attr().find(name);
  if (it == n.attr().end() || !it->second.has_func())
    fail(n, str_cat("its '", name, "' attribute names no function"));
  return it->second.func().name();
}

void FunctionBody::import_node(const pb::NodeDef& n) {
  std::vector<TfValue> in;
  for (const std::string& s : n.input())
    if (s[0] != '^') in.push_back(value(s));
  Done d;
  try {
    std::optional<std::vector<TfValue>> s = structural(n, in);
    d.outs =
        s ? std::move(*s) : import_op(n, in, str_cat(where_, ", node '", n.name(), "'"), &d.args);
  } catch (const InvalidArgumentError&) {
    throw;
  } catch (const Error& e) {
    fail(n, e.what());
  }
  if (d.args.empty()) d.args.emplace_back("", d.outs.size());
  nodes_[n.name()] = std::move(d);
}

std::optional<std::vector<TfValue>> FunctionBody::structural(const pb::NodeDef& n,
                                                             const std::vector<TfValue>& in) {
  const std::string& op = n.op();
  const std::string at = str_cat(where_, ", node '", n.name(), "'");
  auto var = [&](size_t i) {
    if (i >= in.size() || !in[i].is_variable()) fail(n, "its input is not a variable");
    return in[i].variable;
  };
  if (op == "Const") {
    auto v = n.attr().find("value");
    if (v == n.attr().end() || !v->second.has_tensor()) fail(n, "a constant without a value");
    return values({constant(from_proto(v->second.tensor(), at))});
  }
  if (op == "Identity" || op == "Snapshot" || op == "IdentityN") return in;
  if (op == "ReadVariableOp") return values({var(0).read_value()});
  if (op == "NoOp") return std::vector<TfValue>{};
  if (op == "AssignVariableOp" || op == "AssignAddVariableOp" || op == "AssignSubVariableOp") {
    if (in.size() != 2) fail(n, "takes a variable and a value");
    Variable v = var(0);
    const Tensor t = tensor_of(in[1], at);
    if (op == "AssignVariableOp")
      v.assign(t);
    else if (op == "AssignAddVariableOp")
      v.assign_add(t);
    else
      v.assign_sub(t);
    return std::vector<TfValue>{};
  }
  if (op == "VarIsInitializedOp") return values({constant(true, DType::kBool)});
  if (op == "StatefulPartitionedCall" || op == "PartitionedCall")
    return imp_.call(func_attr(n, "f"), in, depth_ + 1);
  if (op == "If" || op == "StatelessIf") return call_if(n, in);
  if (op == "While" || op == "StatelessWhile") return call_while(n, in);
  return std::nullopt;
}

std::vector<TfValue> FunctionBody::call_if(const pb::NodeDef& n, const std::vector<TfValue>& in) {
  const std::string at = str_cat(where_, ", node '", n.name(), "'");
  if (in.empty()) fail(n, "no condition");
  Tensor pred = tensor_of(in[0], at);
  if (pred.dtype() != DType::kBool) pred = cast(pred, DType::kBool);  // TF's truthiness
  pred = reshape(pred, std::vector<int64_t>{});
  const std::vector<TfValue> args(in.begin() + 1, in.end());
  const std::string then_f = func_attr(n, "then_branch"), else_f = func_attr(n, "else_branch");
  auto branch = [&](const std::string& f) {
    return [&, f] { return tensors(imp_.call(f, args, depth_ + 1), 0, at); };
  };
  return values(cond(pred, branch(then_f), branch(else_f), n.name()));
}

std::vector<TfValue> FunctionBody::call_while(const pb::NodeDef& n,
                                              const std::vector<TfValue>& in) {
  const std::string at = str_cat(where_, ", node '", n.name(), "'");
  const std::string cond_f = func_attr(n, "cond"), body_f = func_attr(n, "body");
  // Variables ride along unchanged; kiln's loop carries the tensors.
  std::vector<size_t> carried;
  std::vector<Tensor> init;
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i].is_variable()) {
      carried.push_back(i);
      init.push_back(in[i].tensor);
    }
  auto full = [&](const std::vector<Tensor>& vars) {
    std::vector<TfValue> all = in;
    for (size_t k = 0; k < carried.size(); ++k) all[carried[k]] = TfValue{vars[k], Variable()};
    return all;
  };
  WhileOptions opts;
  opts.name = n.name();
  auto shapes = n.attr().find("output_shapes");
  if (shapes != n.attr().end() && shapes->second.list().shape_size() == static_cast<int>(in.size()))
    for (size_t i : carried)
      opts.shape_invariants.push_back(
          from_proto(shapes->second.list().shape(static_cast<int>(i)), at));
  std::vector<Tensor> out = while_loop(
      [&](const std::vector<Tensor>& vars) {
        std::vector<TfValue> r = imp_.call(cond_f, full(vars), depth_ + 1);
        if (r.size() != 1) fail(n, "its condition does not return one value");
        Tensor c = tensor_of(r[0], at);
        if (c.dtype() != DType::kBool) c = cast(c, DType::kBool);
        return reshape(c, std::vector<int64_t>{});
      },
      [&](const std::vector<Tensor>& vars) {
        std::vector<TfValue> r = imp_.call(body_f, full(vars), depth_ + 1);
        if (r.size() != in.size()) fail(n, "its body returns another number of values");
        std::vector<Tensor> next;
        for (size_t i : carried) next.push_back(tensor_of(r[i], at));
        return next;
      },
      init, opts);
  return full(out);
}

}  // namespace kiln::saved_model::detail
