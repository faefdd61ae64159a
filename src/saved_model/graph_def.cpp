#include "saved_model/graph_def.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "function/subgraph.h"
#include "graph/subgraph.h"
#include "kiln/context.h"
#include "saved_model/tf_op_signatures.h"

namespace kiln::saved_model::detail {
namespace {

// An argument's name, or TensorFlow's "node:output_arg:index".
std::string edge_name(const Edge& e, const std::set<const Node*>& args) {
  if (args.count(e.node) && e.index == 0) return e.node->name();
  return str_cat(
      e.node->name(), ":",
      tf_output_ref(e.node->op(), e.node->outputs().size(), static_cast<size_t>(e.index)));
}

// TensorFlow's type attributes (T, N, Tin, Tout, ...) of a node, from its
// inputs' and outputs' dtypes; kiln infers them and its reader skips them.
void type_attrs(const TfOpSignature& sig, const std::vector<pb::DataType>& in,
                const std::vector<pb::DataType>& out,
                google::protobuf::Map<std::string, pb::AttrValue>& attrs) {
  auto set_type = [&](const char* name, pb::DataType dt) {
    if (*name && !attrs.count(name)) attrs[name].set_type(dt);
  };
  auto fill = [&](const std::vector<TfArg>& args, const std::vector<pb::DataType>& dts) {
    size_t singles = 0;
    for (const TfArg& a : args) singles += !a.is_list();
    const size_t list_n = dts.size() >= singles ? dts.size() - singles : 0;
    size_t k = 0;
    for (const TfArg& a : args) {
      const size_t n_arg = a.is_list() ? list_n : 1;
      if (k + n_arg > dts.size()) return;  // kiln's form differs (an attribute TF takes as input)
      if (*a.number_attr && !attrs.count(a.number_attr))
        attrs[a.number_attr].set_i(static_cast<int64_t>(n_arg));
      if (n_arg) set_type(a.type_attr, dts[k]);
      if (*a.type_list_attr && !attrs.count(a.type_list_attr)) {
        auto* l = attrs[a.type_list_attr].mutable_list();
        for (size_t j = 0; j < n_arg; ++j) l->add_type(dts[k + j]);
      }
      k += n_arg;
    }
  };
  fill(sig.inputs, in);
  fill(sig.outputs, out);
}

// TensorFlow's type of a value: kiln's TensorLists are resources, TensorFlow's
// are variants.
pb::DataType tf_type(DType dt, bool list) {
  return list && dt == DType::kResource ? pb::DT_VARIANT : to_proto(dt);
}

// Whether TensorFlow's op declares output `k` a variant (a TensorList's handle).
bool variant_output(const TfOpSignature* sig, size_t k) {
  return sig && k < sig->outputs.size() && !sig->outputs[k].is_list() &&
         sig->outputs[k].fixed == pb::DT_VARIANT;
}

// TensorFlow's element_shape input of a TensorList op: the row's attribute
// (-1, a scalar, for an unknown rank), or the items' shape of a tensor to split.
Tensor element_shape_input(const Node& n) {
  std::vector<int64_t> dims;
  if (n.op().attr_index("element_shape") >= 0) {
    if (std::get<bool>(n.attr("unknown_rank"))) return Tensor(int32_t{-1});
    dims = std::get<std::vector<int64_t>>(n.attr("element_shape"));
  } else {
    const Edge& in0 = n.inputs()[0];
    const Shape& s = in0.node->outputs()[static_cast<size_t>(in0.index)].shape;
    if (!s.rank_known() || s.rank() == 0) return Tensor(int32_t{-1});
    dims.assign(s.dims().begin() + 1, s.dims().end());
  }
  std::vector<int32_t> w(dims.begin(), dims.end());
  return Tensor::from_vector(w, Shape{static_cast<int64_t>(w.size())});
}

bool jit_of(const pb::FunctionDef& f) {
  auto it = f.attr().find(kJitAttr);
  return it != f.attr().end() && it->second.b();
}

// The value TensorFlow's form passes as input `a` of node `n` (an int32
// tensor): the attribute; every axis, or the axes reversed for a permutation,
// when it is empty; the outputs' sizes for an equal split; a TensorList's
// element shape.
Tensor attr_input(const Node& n, const OpDef::TfAttrInput& a) {
  if (std::string_view(a.attr) == "element_shape") return element_shape_input(n);
  const AttrValue& v = n.attrs()[n.op().attr_at(a.attr)];
  if (auto* i = std::get_if<int64_t>(&v)) return Tensor(static_cast<int32_t>(*i));
  std::vector<int64_t> l = std::get<std::vector<int64_t>>(v);
  const std::string_view attr = a.attr;
  const Edge& in0 = n.inputs()[0];
  const Shape& in = in0.node->outputs()[static_cast<size_t>(in0.index)].shape;
  if (l.empty() && (a.all_axes_if_empty || attr == "perm")) {
    if (!in.rank_known())
      throw InvalidArgumentError(str_cat("cannot save node '", n.name(),
                                         "' in TensorFlow's form: its input's rank is unknown"));
    for (int64_t k = 0; k < in.rank(); ++k) l.push_back(k);
    if (attr == "perm") std::reverse(l.begin(), l.end());
  }
  if (l.empty() && attr == "size_splits") {
    int64_t axis = std::get<int64_t>(n.attr("axis"));
    for (const TensorSpec& s : n.outputs()) {
      const int64_t ax = s.shape.rank_known() && axis < 0 ? axis + s.shape.rank() : axis;
      l.push_back(s.shape.rank_known() ? s.shape.dim(ax) : -1);
    }
  }
  std::vector<int32_t> w(l.begin(), l.end());
  return Tensor::from_vector(w, Shape{static_cast<int64_t>(w.size())});
}

// A window attribute (strides, dilations, ksize) as TensorFlow's NHWC ops
// need it, four values {1, h, w, 1}; kiln also takes {s} and {h, w}.
std::vector<int64_t> tf_window(const TfOpSignature* sig, const std::string& name,
                               const std::vector<int64_t>& v) {
  if (!sig || !sig->has_attr("data_format") || v.size() > 2 || v.empty() ||
      (name != "strides" && name != "dilations" && name != "ksize"))
    return v;
  const int64_t h = v[0], w = v.size() == 2 ? v[1] : v[0];
  return {1, h, w, 1};
}

}  // namespace

pb::FunctionDef* LibraryWriter::add(const std::string& base, const Graph& g, bool jit,
                                    std::vector<Variable>* captured,
                                    const std::vector<bool>& arg_lists,
                                    std::vector<bool>* out_lists, bool pass_extra_args) {
  std::string name = base;
  for (int k = 1; names_.count(name); ++k) name = str_cat(base, "_", k);
  names_.insert(name);
  pb::FunctionDef* f = lib_->add_function();
  f->mutable_signature()->set_name(name);
  if (jit) (*f->mutable_attr())[kJitAttr].set_b(true);
  std::set<const Node*> args;
  std::map<const Node*, std::vector<bool>> lists;  // which outputs are TensorLists
  auto is_list = [&](const Edge& e) {
    auto it = lists.find(e.node);
    return it != lists.end() && it->second.at(static_cast<size_t>(e.index));
  };
  auto edge_type = [&](const Edge& e) {
    return tf_type(e.node->outputs()[static_cast<size_t>(e.index)].dtype, is_list(e));
  };
  int i = 0;
  auto add_arg = [&](const Node& n) {
    const bool list = static_cast<size_t>(i) < arg_lists.size() && arg_lists[i];
    lists[&n] = {list};
    auto* a = f->mutable_signature()->add_input_arg();
    a->set_name(n.name());
    a->set_type(tf_type(n.outputs()[0].dtype, list));
    auto& shapes =
        (*(*f->mutable_arg_attr())[static_cast<uint32_t>(i++)].mutable_attr())["_output_shapes"];
    to_proto(n.outputs()[0].shape, shapes.mutable_list()->add_shape());
    args.insert(&n);
  };
  for (const Node* p : g.inputs()) add_arg(*p);
  for (const auto& n : g.nodes()) {
    if (!is_resource_const(*n)) continue;
    if (!captured)
      throw InvalidArgumentError(str_cat("cannot save '", g.function_name(), "': its node '",
                                         n->name(), "' captures a resource directly"));
    const Tensor& h = std::get<Tensor>(n->attr("value"));
    captured->push_back(Variable::from_handle(h));  // InvalidArgument for other resources
    add_arg(*n);
  }
  bool stateful = false;
  for (const auto& n : g.nodes()) {
    if (args.count(n.get())) continue;
    stateful |= n->op().has(kStateful);
    std::vector<std::string> ins;
    std::vector<pb::DataType> dts;
    std::vector<bool> in_lists;
    for (const Edge& e : n->inputs()) {
      ins.push_back(edge_name(e, args));
      dts.push_back(edge_type(e));
      in_lists.push_back(is_list(e));
    }
    for (const OpDef::TfAttrInput& a : n->op().tf_attr_inputs) {  // TensorFlow's inputs
      pb::NodeDef* k = f->add_node_def();  // before the node: readers want earlier nodes
      k->set_name(str_cat(n->name(), "/_tf_", a.attr));
      k->set_op("Const");
      (*k->mutable_attr())["dtype"].set_type(pb::DT_INT32);
      to_proto(attr_input(*n, a), (*k->mutable_attr())["value"].mutable_tensor());
      const size_t at =
          std::min(a.position < 0 ? ins.size() : static_cast<size_t>(a.position), ins.size());
      ins.insert(ins.begin() + static_cast<std::ptrdiff_t>(at), k->name() + ":output:0");
      dts.insert(dts.begin() + static_cast<std::ptrdiff_t>(at), pb::DT_INT32);
    }
    pb::NodeDef* nd = f->add_node_def();
    const std::vector<bool>& out_l = lists[n.get()] = write_node(*n, nd, jit, in_lists);
    for (const std::string& s : ins) nd->add_input(s);
    for (const Node* c : n->control_inputs()) nd->add_input(str_cat("^", c->name()));
    std::vector<pb::DataType> outs;
    for (size_t k = 0; k < n->outputs().size(); ++k)
      outs.push_back(tf_type(n->outputs()[k].dtype, out_l[k]));
    if (const TfOpSignature* sig = tf_signature(n->op().type_name))
      type_attrs(*sig, dts, outs, *nd->mutable_attr());
  }
  f->mutable_signature()->set_is_stateful(stateful);
  for (size_t k = 0; k < g.outputs().size(); ++k) {
    const Edge& e = g.outputs()[k];
    auto* o = f->mutable_signature()->add_output_arg();
    o->set_name(str_cat("output_", k));
    o->set_type(edge_type(e));
    (*f->mutable_ret())[o->name()] = edge_name(e, args);
    if (out_lists) out_lists->push_back(is_list(e));
  }
  const auto& sig = f->signature();
  for (int k = sig.output_arg_size(); pass_extra_args && k < sig.input_arg_size(); ++k) {
    auto* o = f->mutable_signature()->add_output_arg();
    o->set_name(str_cat("output_", k));
    o->set_type(sig.input_arg(k).type());
    (*f->mutable_ret())[o->name()] = sig.input_arg(k).name();
  }
  return f;
}

std::vector<bool> LibraryWriter::write_node(const Node& n, pb::NodeDef* nd, bool jit,
                                            const std::vector<bool>& in_lists) {
  const OpDef& op = n.op();
  const TfOpSignature* sig = tf_signature(op.type_name);
  // Which outputs are TensorLists: the resources TensorFlow's op declares
  // variants, a body's (If, While), or a resource passed on from a list.
  std::vector<bool> out(n.outputs().size(), false);
  const bool from_list = std::find(in_lists.begin(), in_lists.end(), true) != in_lists.end();
  for (size_t k = 0; k < out.size(); ++k)
    out[k] = n.outputs()[k].dtype == DType::kResource && (variant_output(sig, k) || from_list);
  nd->set_name(n.name());
  nd->set_op(op.type_name);
  if (n.attrs().size() > op.attrs.size())
    throw InternalError(str_cat("node '", n.name(), "' has more attributes than its op"));
  auto& attrs = *nd->mutable_attr();
  for (size_t k = 0; k < n.attrs().size(); ++k) {
    const AttrValue& v = n.attrs()[k];
    if (std::holds_alternative<std::monostate>(v)) continue;
    // An attribute TensorFlow's op lacks is kiln's: "_"-prefixed names are
    // ones TensorFlow lets through.
    std::string name = op.attrs[k].name;
    for (const auto& [tf_name, kiln_name] : op.tf_attr_names)
      if (name == kiln_name) name = tf_name;
    pb::AttrValue& a = attrs[!sig || sig->has_attr(name) ? name : str_cat(kKilnAttrPrefix, name)];
    if (auto* b = std::get_if<bool>(&v)) {
      a.set_b(*b);
    } else if (auto* i = std::get_if<int64_t>(&v)) {
      a.set_i(*i);
    } else if (auto* d = std::get_if<double>(&v)) {
      a.set_f(static_cast<float>(*d));
      if (static_cast<double>(static_cast<float>(*d)) != *d) a.set_kiln_f64(*d);
    } else if (auto* t = std::get_if<DType>(&v)) {
      a.set_type(to_proto(*t));
    } else if (auto* s = std::get_if<std::string>(&v)) {
      a.set_s(*s);
    } else if (auto* l = std::get_if<std::vector<int64_t>>(&v)) {
      auto* list = a.mutable_list();
      for (int64_t x : tf_window(sig, name, *l)) list->add_i(x);
    } else if (auto* t = std::get_if<Tensor>(&v)) {
      to_proto(*t, a.mutable_tensor());
    } else if (auto* g = std::get_if<Ref<Subgraph>>(&v)) {
      const size_t off = std::min<size_t>(op.body_input_offset, in_lists.size());
      const bool loop_body = op.id == OpId::While && op.attrs[k].name == std::string_view("body");
      const Body& b =
          body(**g, jit, std::vector<bool>(in_lists.begin() + off, in_lists.end()), loop_body);
      a.mutable_func()->set_name(b.name);
      for (size_t j = 0; j < b.out_lists.size() && j < out.size(); ++j)
        out[j] = out[j] || (b.out_lists[j] && n.outputs()[j].dtype == DType::kResource);
    } else if (auto* o = std::get_if<AttrObjectRef>(&v)) {
      throw InternalError(str_cat("node '", n.name(), "' holds ", (*o)->describe(),
                                  ", which a pass made and no file holds"));
    }
  }
  if (op.id == OpId::While && n.inputs().size() > n.outputs().size())
    attrs[kKilnPassedAttr].set_i(static_cast<int64_t>(n.inputs().size() - n.outputs().size()));
  return out;
}

const LibraryWriter::Body& LibraryWriter::body(const Subgraph& s, bool jit,
                                               const std::vector<bool>& arg_lists,
                                               bool pass_extra_args) {
  auto it = bodies_.find({&s, pass_extra_args});
  if (it != bodies_.end()) return it->second;
  const auto* traced = dynamic_cast<const kiln::detail::TracedSubgraph*>(&s);
  if (!traced)
    throw InvalidArgumentError(str_cat(
        "cannot save '", s.name(),
        "': it is a host callback (e.g. kiln.py_function), not a traced graph; a saved model "
        "runs without Python"));
  const Graph& g = traced->traced_graph();
  std::vector<Variable> captured;
  Body b;
  b.name = add(s.name(), g, jit, traced->hoisted().empty() ? nullptr : &captured, arg_lists,
               &b.out_lists, pass_extra_args)
               ->signature()
               .name();
  return bodies_.emplace(std::pair{&s, pass_extra_args}, std::move(b)).first->second;
}

LibraryReader::LibraryReader(const pb::FunctionDefLibrary& lib, std::string where, int64_t format)
    : where_(std::move(where)), format_(format) {
  for (const auto& f : lib.function()) {
    const std::string& n = f.signature().name();
    if (n.empty()) throw InvalidArgumentError(str_cat(where_, ": a function has no name"));
    if (!defs_.emplace(n, &f).second)
      throw InvalidArgumentError(str_cat(where_, ": function '", n, "' is defined twice"));
  }
}

const pb::FunctionDef& LibraryReader::def(const std::string& name) const {
  auto it = defs_.find(name);
  if (it == defs_.end())
    throw InvalidArgumentError(str_cat(where_, ": no function named '", name, "'"));
  return *it->second;
}

std::unique_ptr<Graph> LibraryReader::graph(const std::string& name,
                                            std::span<const Tensor> handles, bool* jit) {
  const pb::FunctionDef& f = def(name);
  if (jit) *jit = jit_of(f);
  return build(f, handles, 0);
}

Ref<Subgraph> LibraryReader::body(const std::string& name, int depth, int64_t drop) {
  auto it = bodies_.find({name, drop});
  if (it != bodies_.end()) return it->second;
  if (depth > kMaxNesting)
    throw InvalidArgumentError(str_cat(where_, ": bodies nest deeper than ", kMaxNesting));
  if (building_.count(name))
    throw InvalidArgumentError(str_cat(where_, ": function '", name, "' calls itself"));
  building_.insert(name);
  const pb::FunctionDef& f = def(name);
  Ref<Subgraph> s;
  try {
    std::unique_ptr<Graph> g = build(f, {}, depth);
    auto& outs = g->outputs();
    const size_t n_in = g->inputs().size();
    if (drop < 0 || static_cast<size_t>(drop) > outs.size() || (drop && outs.size() > n_in))
      throw InvalidArgumentError(
          str_cat(where_, ": function '", name, "' cannot pass ", drop, " of its args through"));
    for (size_t k = outs.size() - static_cast<size_t>(drop); k < outs.size(); ++k)
      if (outs[k].node != g->inputs()[k] || outs[k].index != 0)
        throw InvalidArgumentError(str_cat(where_, ": function '", name, "' output ", k,
                                           " does not pass its arg through"));
    outs.resize(outs.size() - static_cast<size_t>(drop));
    s = kiln::detail::GraphSubgraph::create(std::move(g), jit_of(f));
  } catch (const InternalError& e) {  // a body kiln's own checks refuse
    throw InvalidArgumentError(str_cat(where_, ": function '", name, "': ", e.what()));
  }
  building_.erase(name);
  bodies_.emplace(std::pair{name, drop}, s);
  return s;
}

bool is_resource_const(const Node& n) {
  return n.op().id == OpId::Const && n.outputs()[0].dtype == DType::kResource;
}

bool parse_tensor_name(const std::string& s, std::string& node, std::string& arg, int64_t& index) {
  arg.clear();
  const size_t first = s.find(':');
  const size_t last = s.rfind(':');
  if (first != last) {  // TensorFlow's node:output_arg:index
    arg = s.substr(first + 1, last - first - 1);
    if (arg.empty() || arg.find(':') != std::string::npos) return false;
    std::string rest = s.substr(0, first) + s.substr(last);
    return parse_tensor_name(rest, node, index);
  }
  return parse_tensor_name(s, node, index);
}

bool parse_tensor_name(const std::string& s, std::string& node, int64_t& index) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos) {
    node = s;
    index = 0;
    return !s.empty();
  }
  node = s.substr(0, colon);
  const char* b = s.data() + colon + 1;
  const char* e = s.data() + s.size();
  auto r = std::from_chars(b, e, index);
  return !node.empty() && r.ec == std::errc() && r.ptr == e && b != e && index >= 0;
}

Shape arg_shape(const pb::FunctionDef& f, int i, const std::string& where) {
  auto it = f.arg_attr().find(static_cast<uint32_t>(i));
  if (it == f.arg_attr().end()) return Shape::unknown_rank();
  auto s = it->second.attr().find("_output_shapes");
  if (s == it->second.attr().end() || s->second.list().shape_size() != 1)
    return Shape::unknown_rank();
  return from_proto(s->second.list().shape(0), where);
}

std::unique_ptr<Graph> LibraryReader::build(const pb::FunctionDef& f,
                                            std::span<const Tensor> handles, int depth) {
  const std::string& fname = f.signature().name();
  const std::string at = str_cat(where_, ": function '", fname, "'");
  if (f.node_def_size() > kMaxNodes)
    throw InvalidArgumentError(str_cat(at, " has ", f.node_def_size(), " nodes"));
  auto g = std::make_unique<Graph>(fname);
  std::map<std::string, Node*> by_name;
  size_t next_handle = 0;
  for (int i = 0; i < f.signature().input_arg_size(); ++i) {
    const auto& a = f.signature().input_arg(i);
    const std::string arg_at = str_cat(at, " arg '", a.name(), "'");
    const DType dt = from_proto(a.type(), arg_at);
    Node* n;
    if (dt == DType::kResource && next_handle < handles.size()) {
      const Tensor& h = handles[next_handle++];
      n = g->add_node(op_def(OpId::Const), {}, Attrs{h}, {TensorSpec{dt, Shape{}}}, a.name());
    } else {
      const Shape s = dt == DType::kResource ? Shape{} : arg_shape(f, i, arg_at);
      n = g->add_node(
          op_def(OpId::Placeholder), {},
          Attrs{dt, s.rank_known() ? s.to_vector() : std::vector<int64_t>{}, !s.rank_known()},
          {TensorSpec{dt, s}}, a.name());
      g->inputs().push_back(n);
    }
    if (a.name().empty() || n->name() != a.name() || !by_name.emplace(a.name(), n).second)
      throw InvalidArgumentError(str_cat(at, ": input arg ", i, " has a missing or repeated name"));
  }
  if (next_handle != handles.size())
    throw InvalidArgumentError(
        str_cat(at, " takes ", next_handle, " resources, ", handles.size(), " are bound to it"));
  for (const auto& nd : f.node_def()) {
    const std::string node_at = str_cat(at, " node '", nd.name(), "'");
    const OpDef* op = find_op(nd.op());
    if (!op || op->id == OpId::Placeholder || !op->infer)
      throw InvalidArgumentError(str_cat(node_at, ": unknown op '", nd.op(), "'"));
    if (op->has(kPassOnly))
      throw InvalidArgumentError(
          str_cat(node_at, ": op '", nd.op(), "' is made by kiln's optimizer and is never saved"));
    Attrs attrs;
    read_attrs(*op, nd, attrs, depth, node_at);
    auto passed = nd.attr().find(kKilnPassedAttr);
    if (op->id == OpId::While && passed != nd.attr().end()) {
      auto b = nd.attr().find("body");
      attrs[op->attr_at("body")] = body(b->second.func().name(), depth + 1, passed->second.i());
    }
    std::vector<Edge> edges;
    std::vector<Node*> control;
    std::vector<Tensor> symbolic;
    for (const std::string& in : nd.input()) {
      const bool ctrl = !in.empty() && in[0] == '^';
      std::string src, arg;
      int64_t index = 0;
      if (!parse_tensor_name(ctrl ? in.substr(1) : in, src, arg, index) || (ctrl && index != 0) ||
          (!ctrl && !control.empty()))
        throw InvalidArgumentError(str_cat(node_at, ": malformed input '", in, "'"));
      auto it = by_name.find(src);
      if (it == by_name.end())
        throw InvalidArgumentError(
            str_cat(node_at, ": input '", in, "' names no earlier node or argument"));
      Node* s = it->second;
      if (ctrl) {
        control.push_back(s);
        continue;
      }
      if (!arg.empty()) index = tf_flat_output(s->op(), s->outputs().size(), arg, index);
      if (index < 0 || index >= static_cast<int64_t>(s->outputs().size()))
        throw InvalidArgumentError(str_cat(node_at, ": input '", in, "' names output ", index,
                                           " of a node with ", s->outputs().size()));
      edges.push_back({s, static_cast<int32_t>(index)});
      symbolic.push_back(s->output(static_cast<int32_t>(index)));
    }
    // TensorFlow's inputs standing for kiln's attributes (also _kiln_ attrs);
    // files before TensorLists had a TensorFlow form wrote them in kiln's.
    const bool tf_form =
        format_ >= 2 && (op->has(kVariadicInput) || edges.size() > op->inputs.size());
    if (tf_form)
      for (auto a = op->tf_attr_inputs.rbegin(); a != op->tf_attr_inputs.rend(); ++a) {
        const size_t at = a->position < 0 ? edges.size() - 1 : static_cast<size_t>(a->position);
        if (edges.empty() || at >= edges.size())
          throw InvalidArgumentError(str_cat(node_at, ": lacks its '", a->attr, "' input"));
        edges.erase(edges.begin() + static_cast<std::ptrdiff_t>(at));
        symbolic.erase(symbolic.begin() + static_cast<std::ptrdiff_t>(at));
      }
    std::vector<TensorSpec> specs;
    try {
      check_op_inputs(*op, symbolic);
      InferContext ic(*op, symbolic, attrs);
      op->infer(ic);
      specs.assign(ic.outputs().begin(), ic.outputs().end());
    } catch (const Error& e) {
      throw InvalidArgumentError(str_cat(node_at, ": ", e.what()));
    }
    if (nd.name().empty() || by_name.count(nd.name()))
      throw InvalidArgumentError(str_cat(node_at, ": a missing or repeated node name"));
    Node* n = g->add_node(*op, std::move(edges), std::move(attrs), std::move(specs), nd.name());
    for (Node* c : control) n->add_control_input(c);
    by_name.emplace(nd.name(), n);
  }
  for (int k = 0; k < f.signature().output_arg_size(); ++k) {
    const std::string& oname = f.signature().output_arg(k).name();
    auto r = f.ret().find(oname);
    std::string src, arg;
    int64_t index = 0;
    const bool ok =
        r != f.ret().end() && parse_tensor_name(r->second, src, arg, index) && by_name.count(src);
    if (ok && !arg.empty())
      index = tf_flat_output(by_name[src]->op(), by_name[src]->outputs().size(), arg, index);
    if (!ok || index < 0 || index >= static_cast<int64_t>(by_name[src]->outputs().size()))
      throw InvalidArgumentError(
          str_cat(at, ": output '", oname, "' does not name a node's output"));
    g->outputs().push_back({by_name[src], static_cast<int32_t>(index)});
  }
  return g;
}

void LibraryReader::read_attrs(const OpDef& op, const pb::NodeDef& nd, Attrs& attrs, int depth,
                               const std::string& at) {
  attrs.assign(op.attrs.size(), AttrValue{});
  using C = pb::AttrValue;
  const TfOpSignature* sig = tf_signature(op.type_name);
  for (const auto& [tf_name, a] : nd.attr()) {
    if (tf_name == kKilnPassedAttr && op.id == OpId::While) continue;  // build() reads it
    const bool kilns = tf_name.rfind(kKilnAttrPrefix, 0) == 0;
    std::string name = kilns ? tf_name.substr(std::strlen(kKilnAttrPrefix)) : tf_name;
    for (const auto& [tf, kiln] : op.tf_attr_names)
      if (name == tf) name = kiln;
    const int k = op.attr_index(name);
    if (k < 0 && !kilns && sig && sig->has_attr(name)) continue;  // TensorFlow's type attributes
    if (k < 0) throw InvalidArgumentError(str_cat(at, ": unknown attribute '", name, "'"));
    const std::string attr_at = str_cat(at, " attribute '", name, "'");
    AttrValue& v = attrs[static_cast<size_t>(k)];
    bool ok = true;
    switch (op.attrs[static_cast<size_t>(k)].type) {
      case AttrType::kBool:
        ok = a.value_case() == C::kB;
        v = a.b();
        break;
      case AttrType::kInt:
        ok = a.value_case() == C::kI;
        v = static_cast<int64_t>(a.i());
        break;
      case AttrType::kFloat:
        ok = a.value_case() == C::kF;
        v = a.has_kiln_f64() ? a.kiln_f64() : static_cast<double>(a.f());
        break;
      case AttrType::kDType:
        ok = a.value_case() == C::kType;
        if (ok) v = from_proto(a.type(), attr_at);
        break;
      case AttrType::kString:
        ok = a.value_case() == C::kS;
        v = a.s();
        break;
      case AttrType::kInts:
        ok = a.value_case() == C::kList;
        v = std::vector<int64_t>(a.list().i().begin(), a.list().i().end());
        break;
      case AttrType::kTensor:
        ok = a.value_case() == C::kTensor;
        if (ok) v = from_proto(a.tensor(), attr_at);
        break;
      case AttrType::kSubgraph:
        ok = a.value_case() == C::kFunc;
        if (ok) v = body(a.func().name(), depth + 1);
        break;
      case AttrType::kObject:  // only passes make them (pass-only ops are refused before)
        throw InvalidArgumentError(str_cat(attr_at, " is made by kiln's passes, not read"));
    }
    if (!ok) throw InvalidArgumentError(str_cat(attr_at, " has the wrong type"));
  }
  try {
    complete_attrs(op, attrs);
  } catch (const Error& e) {
    throw InvalidArgumentError(str_cat(at, ": ", e.what()));
  }
}

}  // namespace kiln::saved_model::detail
