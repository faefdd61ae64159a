#include <filesystem>
#include <map>
#include <set>

#include "kiln/saved_model.h"
#include "saved_model/graph_def.h"
#include "saved_model/tf_import.h"
#include "saved_model/variables_io.h"

namespace kiln::saved_model {

namespace pb = detail::pb;

namespace {
constexpr size_t kMaxModelBytes = size_t{1} << 31;  // protobuf's own limit
}  // namespace

struct Loader {
  std::string dir, where;
  pb::SavedModel sm;
  const pb::MetaGraphDef* mg = nullptr;
  std::unique_ptr<detail::LibraryReader> lib;
  std::unique_ptr<detail::TfImporter> tf;  // set for SavedModels TensorFlow wrote
  std::map<std::string, std::shared_ptr<const ConcreteFunction>> functions;
  std::shared_ptr<SavedModel> out = std::make_shared<SavedModel>();

  [[noreturn]] void fail(const std::string& msg) const {
    throw InvalidArgumentError(str_cat(where, ": ", msg));
  }

  void parse() {
    where = dir + "/saved_model.pb";
    out->dir_ = dir;
    if (!detail::parse(sm, detail::read_file(where, kMaxModelBytes)))
      throw DataLossError(
          str_cat(where, ": not a valid SavedModel protobuf (truncated or corrupt)"));
    if (sm.kiln_format_version() > kFormatVersion || sm.kiln_format_version() < 0)
      fail(str_cat("export format ", sm.kiln_format_version(), " is newer than this kiln reads (",
                   kFormatVersion, "); load it with a newer kiln"));
    if (sm.saved_model_schema_version() != 1)
      fail(str_cat("SavedModel schema version ", sm.saved_model_schema_version(), " is not 1"));
    if (sm.meta_graphs_size() < 1) fail("no meta graph");
    mg = &sm.meta_graphs(0);
    if (sm.kiln_format_version() == 0) {  // TensorFlow's: its ops are imported
      for (const auto& m : sm.meta_graphs())
        for (const std::string& tag : m.meta_info_def().tags())
          if (tag == "serve") mg = &m;
      tf = std::make_unique<detail::TfImporter>(mg->graph_def().library(), where);
      return;
    }
    if (sm.meta_graphs_size() != 1)
      fail(str_cat(sm.meta_graphs_size(), " meta graphs; a kiln export has one"));
    lib = std::make_unique<detail::LibraryReader>(mg->graph_def().library(), where,
                                                  sm.kiln_format_version());
  }

  void objects() {
    const auto& nodes = mg->object_graph_def().nodes();
    if (nodes.empty()) fail("the object graph has no root");
    out->objects_.resize(static_cast<size_t>(nodes.size()));
    for (int i = 0; i < nodes.size(); ++i) {
      const pb::SavedObject& so = nodes[i];
      LoadedObject& o = out->objects_[static_cast<size_t>(i)];
      std::set<std::string> names;
      for (const auto& c : so.children()) {
        if (c.node_id() < 0 || c.node_id() >= nodes.size() || c.local_name().empty() ||
            !names.insert(c.local_name()).second)
          fail(str_cat("object ", i, " has a bad child '", c.local_name(), "'"));
        o.children.emplace_back(c.local_name(), c.node_id());
      }
      switch (so.kind_case()) {
        case pb::SavedObject::kUserObject:
          o.kind = LoadedObject::Kind::kUser;
          o.identifier = so.user_object().identifier();
          break;
        case pb::SavedObject::kFunction: o.kind = LoadedObject::Kind::kFunction; break;
        case pb::SavedObject::kVariable: o.kind = LoadedObject::Kind::kVariable; break;
        case pb::SavedObject::kBareConcreteFunction: o.kind = LoadedObject::Kind::kSignature; break;
        case pb::SavedObject::kAsset:
          o.kind = LoadedObject::Kind::kAsset;
          o.asset_path = asset_path(so.asset().asset_file_def_index(), i);
          break;
        default:
          // TensorFlow's constants, resources: a plain object to kiln;
          // a function bound to one says so when loaded.
          if (!tf) fail(str_cat("object ", i, " is of a kind kiln does not save"));
          o.kind = LoadedObject::Kind::kUser;
          o.identifier = "_tf_object_kiln_does_not_load";
      }
    }
  }

  // The file of asset_file_def[index], which must name a file in assets/.
  std::string asset_path(int index, int object) {
    if (index < 0 || index >= mg->asset_file_def_size())
      fail(str_cat("asset object ", object, " names asset file ", index, " of ",
                   mg->asset_file_def_size()));
    const std::string& name = mg->asset_file_def(index).filename();
    const std::filesystem::path rel(name);
    bool inside = !name.empty() && rel.is_relative();
    for (const auto& part : rel) inside = inside && part != ".." && part != ".";
    if (!inside) fail(str_cat("asset file '", name, "' is not a file name inside assets/"));
    std::string path = str_cat(dir, "/assets/", name);
    std::error_code ec;  // a name the filesystem refuses (too long) is missing too
    if (!std::filesystem::is_regular_file(path, ec))
      fail(str_cat("asset file '", name, "' is missing from ", dir, "/assets"));
    return path;
  }

  void variables() {
    const auto& nodes = mg->object_graph_def().nodes();
    std::vector<bool> seen(static_cast<size_t>(nodes.size()));
    detail::Edges edges;
    for (const auto& n : nodes) {
      edges.emplace_back();
      for (const auto& c : n.children()) edges.back().emplace_back(c.local_name(), c.node_id());
    }
    for (auto& [id, value] : detail::read_variables(dir, edges)) {
      const std::string at = str_cat(dir, "/variables: the value of object ", id);
      if (id < 0 || id >= nodes.size() || !nodes[id].has_variable() ||
          seen[static_cast<size_t>(id)])
        throw InvalidArgumentError(str_cat(at, " belongs to no variable, or to one twice"));
      const pb::SavedVariable& sv = nodes[id].variable();
      const DType dt = detail::from_proto(sv.dtype(), at);
      const Shape shape = detail::from_proto(sv.shape(), at);
      if (dt != value.dtype() || !shape.is_compatible_with(value.shape()))
        throw InvalidArgumentError(str_cat(at, " is ", dtype_name(value.dtype()),
                                           value.shape().to_string(), ", the variable ",
                                           dtype_name(dt), shape.to_string()));
      std::string name = sv.name();
      if (name.size() > 2 && name.compare(name.size() - 2, 2, ":0") == 0)
        name.resize(name.size() - 2);
      out->objects_[static_cast<size_t>(id)].variable =
          Variable(value, name.empty() ? "Variable" : name, sv.trainable());
      seen[static_cast<size_t>(id)] = true;
    }
    for (int i = 0; i < nodes.size(); ++i)
      if (nodes[i].has_variable() && !seen[static_cast<size_t>(i)])
        fail(str_cat("variable object ", i, " has no saved value"));
  }

  std::shared_ptr<const ConcreteFunction> function(const std::string& name) {
    auto it = functions.find(name);
    if (it != functions.end()) return it->second;
    const auto& cfs = mg->object_graph_def().concrete_functions();
    auto sc = cfs.find(name);
    if (sc == cfs.end()) fail(str_cat("function '", name, "' has no saved signature"));
    const std::string at = str_cat("function '", name, "'");
    std::vector<Tensor> handles;
    for (int b : sc->second.bound_inputs()) {
      const bool ok = b >= 0 && static_cast<size_t>(b) < out->objects_.size();
      const auto kind = ok ? out->objects_[static_cast<size_t>(b)].kind : LoadedObject::Kind::kUser;
      if (kind == LoadedObject::Kind::kAsset && tf) continue;
      if (kind != LoadedObject::Kind::kVariable)
        fail(str_cat(at, " is bound to object ", b, ", which is not a variable",
                     tf ? " or an asset" : ""));
      handles.push_back(out->objects_[static_cast<size_t>(b)].variable.handle());
    }
    FunctionOptions options;
    std::unique_ptr<Graph> g;
    if (!tf) g = lib->graph(name, handles, &options.jit_compile);
    // Arguments: ((positional...), {keyword: ...}) as TensorFlow canonicalizes
    // them; kiln writes no keywords, TensorFlow's signatures take only those.
    const pb::StructuredValue& in = sc->second.canonicalized_input_signature();
    if (!in.has_tuple_value() || in.tuple_value().values_size() != 2 ||
        !in.tuple_value().values(0).has_tuple_value() ||
        !in.tuple_value().values(1).has_dict_value() ||
        (!tf && in.tuple_value().values(1).dict_value().fields_size() != 0))
      fail(str_cat(at, ": its input signature is not ((arguments...), {})"));
    std::vector<Value> inputs;
    auto variable_of = [&](int64_t id) {
      if (id < 0 || static_cast<size_t>(id) >= out->objects_.size() ||
          out->objects_[static_cast<size_t>(id)].kind != LoadedObject::Kind::kVariable)
        fail(str_cat(at, ": an argument names object ", id, ", which is not a variable"));
      return out->objects_[static_cast<size_t>(id)].variable;
    };
    for (const auto& v : in.tuple_value().values(0).tuple_value().values())
      inputs.push_back(detail::from_proto(v, str_cat(where, ": ", at), variable_of));
    std::vector<std::string> arg_names;
    // Keywords follow the positional arguments, sorted (TensorFlow's flat order).
    const auto& kw = in.tuple_value().values(1).dict_value().fields();
    std::map<std::string, const pb::StructuredValue*> keywords;
    for (const auto& [k, v] : kw) keywords[k] = &v;
    for (const auto& [k, v] : keywords) {
      inputs.push_back(detail::from_proto(*v, str_cat(where, ": ", at), variable_of));
      arg_names.push_back(k);
    }
    Value outputs = detail::from_proto(sc->second.output_signature(), str_cat(where, ": ", at));
    std::string fname = name.rfind("__inference_", 0) == 0 ? name.substr(12) : name;
    options.name = fname;
    if (tf) return tf_function(name, at, inputs, outputs, options);
    const pb::FunctionDef& def = lib->def(name);
    if (sc->second.kiln_arg_names_size())
      arg_names.assign(sc->second.kiln_arg_names().begin(), sc->second.kiln_arg_names().end());
    else if (auto a = def.attr().find("_kiln_arg_names"); a != def.attr().end())  // format 1
      arg_names.assign(a->second.list().s().begin(), a->second.list().s().end());
    try {
      auto cf = ConcreteFunction::from_graph(std::move(g), std::move(inputs), std::move(arg_names),
                                             std::move(outputs), options);
      functions.emplace(name, cf);
      return cf;
    } catch (const InvalidArgumentError& e) {
      fail(e.what());
    } catch (const InternalError& e) {  // a graph kiln's own checks refuse
      fail(str_cat(at, ": ", e.what()));
    }
  }

  // A function TensorFlow wrote: its nodes traced through kiln's ops.
  std::shared_ptr<const ConcreteFunction> tf_function(const std::string& name,
                                                      const std::string& at,
                                                      const std::vector<Value>& inputs,
                                                      const Value& outputs,
                                                      FunctionOptions options) {
    const auto& sc = mg->object_graph_def().concrete_functions().at(name);
    std::vector<Value> captured;  // variables, and assets' paths
    for (int b : sc.bound_inputs()) {
      const LoadedObject& o = out->objects_[static_cast<size_t>(b)];
      captured.push_back(o.kind == LoadedObject::Kind::kAsset ? Value(Tensor(o.asset_path))
                                                              : Value(o.variable));
    }
    options.jit_compile = tf->jit(name);
    for (const Value& v : inputs)
      if (v.kind() == Value::Kind::kSpec) options.arg_names.push_back(v.spec().name);
    try {
      auto cf = tf->concrete(name, inputs, captured, outputs, options);
      functions.emplace(name, cf);
      return cf;
    } catch (const InvalidArgumentError&) {
      throw;  // the importer's messages name the file, function and node
    } catch (const InternalError& e) {
      fail(str_cat(at, ": ", e.what()));
    }
  }

  // Every op the functions to load use must import: one error naming them all.
  void check_tf_ops() const {
    std::vector<std::string> roots;  // what objects call (not TF's save/restore functions)
    for (const auto& n : mg->object_graph_def().nodes()) {
      for (const std::string& f : n.function().concrete_functions()) roots.push_back(f);
      if (n.has_bare_concrete_function())
        roots.push_back(n.bare_concrete_function().concrete_function_name());
    }
    const std::vector<std::string> missing = tf->missing_ops(roots);
    if (missing.empty()) return;
    std::map<std::string, std::vector<std::string>> by_op;
    for (const std::string& m : missing) by_op[m.substr(0, m.find(':'))].push_back(m);
    std::string msg = str_cat(where, ": kiln cannot import ", by_op.size(),
                              " of TensorFlow's ops this SavedModel uses:");
    for (const auto& [op, uses] : by_op)
      msg += str_cat("\n  ", uses[0],
                     uses.size() > 1 ? str_cat(" (and ", uses.size() - 1, " more)") : "");
    throw UnimplementedError(msg);
  }

  void functions_and_signatures() {
    if (tf) check_tf_ops();
    const auto& nodes = mg->object_graph_def().nodes();
    for (int i = 0; i < nodes.size(); ++i) {
      LoadedObject& o = out->objects_[static_cast<size_t>(i)];
      if (o.kind == LoadedObject::Kind::kFunction)
        for (const std::string& n : nodes[i].function().concrete_functions())
          o.functions.push_back(function(n));
    }
    std::map<std::string, const pb::NodeDef*> graph_nodes;
    for (const auto& n : mg->graph_def().node()) graph_nodes[n.name()] = &n;
    for (const auto& [key, sd] : mg->signature_def())
      if (!tf || key != "__saved_model_init_op") signature(key, sd, graph_nodes);
    // root.signatures.<key>: each names its signature_def and calls its function.
    for (const LoadedObject& m : out->objects_) {
      if (m.kind != LoadedObject::Kind::kUser || m.identifier != "signature_map") continue;
      for (const auto& [key, id] : m.children) {
        LoadedObject& o = out->objects_[static_cast<size_t>(id)];
        auto sig = out->signatures_.find(key);
        const auto& b = nodes[id].bare_concrete_function();
        if (o.kind != LoadedObject::Kind::kSignature || sig == out->signatures_.end() ||
            function(b.concrete_function_name()) != sig->second.fn_)
          fail(str_cat("signature object '", key, "' does not call its signature_def's function"));
        o.signature = key;
        o.functions = {sig->second.fn_};
      }
    }
  }

  // "name:3" -> (name, 3)
  std::pair<std::string, int64_t> tensor_ref(const std::string& s, const std::string& at) const {
    std::pair<std::string, int64_t> r;
    if (!detail::parse_tensor_name(s, r.first, r.second))
      fail(str_cat(at, ": '", s, "' is not a tensor name"));
    return r;
  }

  void signature(const std::string& key, const pb::SignatureDef& sd,
                 const std::map<std::string, const pb::NodeDef*>& graph_nodes) {
    const std::string at = str_cat("signature '", key, "'");
    // Every output names the same call node; its inputs order the signature's.
    std::string call;
    std::vector<std::string> out_keys(static_cast<size_t>(sd.outputs_size()));
    for (const auto& [k, ti] : sd.outputs()) {
      auto [node, index] = tensor_ref(ti.name(), at);
      if (!call.empty() && node != call) fail(str_cat(at, ": outputs of several calls"));
      call = node;
      if (static_cast<size_t>(index) >= out_keys.size())
        fail(str_cat(at, ": output '", k, "' names output ", index));
      if (!out_keys[static_cast<size_t>(index)].empty())
        fail(str_cat(at, ": two outputs name ", ti.name()));
      out_keys[static_cast<size_t>(index)] = k;
    }
    auto c = graph_nodes.find(call);
    if (call.empty() || c == graph_nodes.end() ||
        (c->second->op() != "StatefulPartitionedCall" &&
         (!tf || c->second->op() != "PartitionedCall")))  // TF's stateless functions
      fail(str_cat(at, ": its outputs do not name a function call"));
    auto f = c->second->attr().find("f");
    if (f == c->second->attr().end() || !f->second.has_func())
      fail(str_cat(at, ": its call names no function"));
    Signature s;
    s.key_ = key;
    s.fn_ = function(f->second.func().name());
    const size_t n_in = s.fn_->graph().inputs().size();
    if (s.fn_->graph().outputs().size() != out_keys.size())
      fail(str_cat(at, ": ", out_keys.size(), " outputs, its function returns ",
                   s.fn_->graph().outputs().size()));
    std::map<std::string, std::string> by_placeholder;
    for (const auto& [k, ti] : sd.inputs()) {
      auto [node, index] = tensor_ref(ti.name(), at);
      if (index != 0 || !by_placeholder.emplace(node, k).second)
        fail(str_cat(at, ": input '", k, "' names ", ti.name()));
    }
    const auto& call_inputs = c->second->input();
    if (static_cast<size_t>(call_inputs.size()) < n_in || by_placeholder.size() != n_in)
      fail(str_cat(at, ": ", by_placeholder.size(), " inputs, its function takes ", n_in));
    for (size_t i = 0; i < n_in; ++i) {
      auto k = by_placeholder.find(call_inputs[static_cast<int>(i)]);
      if (k == by_placeholder.end())
        fail(str_cat(at, ": call input ", i, " is not one of its inputs"));
      s.inputs_.push_back(k->second);
      const TensorSpec& spec = s.fn_->graph().inputs()[i]->outputs()[0];
      s.specs_.push_back({spec.dtype, spec.shape, k->second});
    }
    s.outputs_ = std::move(out_keys);
    out->signatures_.emplace(key, std::move(s));
  }
};

std::shared_ptr<const SavedModel> load(const std::string& dir) {
  Loader l;
  l.dir = dir;
  l.parse();
  l.objects();
  l.variables();
  l.functions_and_signatures();
  return l.out;
}

const Signature& SavedModel::signature(const std::string& key) const {
  auto it = signatures_.find(key);
  if (it != signatures_.end()) return it->second;
  std::string have;
  for (const auto& [k, s] : signatures_) have += str_cat(have.empty() ? "" : ", ", k);
  throw NotFoundError(str_cat("no signature '", key, "' in ", dir_,
                              " (it has: ", have.empty() ? "none" : have, ")"));
}

std::vector<Variable> SavedModel::variables() const {
  std::vector<Variable> v;
  for (const auto& o : objects_)
    if (o.kind == LoadedObject::Kind::kVariable) v.push_back(o.variable);
  return v;
}

std::map<std::string, Tensor> Signature::operator()(
    const std::map<std::string, Tensor>& inputs) const {
  std::vector<Tensor> flat;
  for (const std::string& k : inputs_) {
    auto it = inputs.find(k);
    if (it == inputs.end())
      throw InvalidArgumentError(str_cat("signature '", key_, "': missing input '", k, "'"));
    flat.push_back(it->second);
  }
  if (inputs.size() != inputs_.size())
    for (const auto& [k, t] : inputs)
      if (std::find(inputs_.begin(), inputs_.end(), k) == inputs_.end())
        throw InvalidArgumentError(str_cat("signature '", key_, "': unknown input '", k,
                                           "' (it takes: ", to_string(), ")"));
  std::vector<Tensor> out = fn_->call_flat(flat);
  std::map<std::string, Tensor> result;
  for (size_t i = 0; i < out.size(); ++i) result.emplace(outputs_[i], std::move(out[i]));
  return result;
}

std::string Signature::to_string() const {
  std::string s = str_cat(key_, "(");
  for (size_t i = 0; i < inputs_.size(); ++i)
    s += str_cat(i ? ", " : "", inputs_[i], ": ", dtype_name(specs_[i].dtype),
                 specs_[i].shape.to_string());
  s += ") -> (";
  const auto& outs = fn_->graph().outputs();
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const TensorSpec& t = outs[i].node->outputs()[static_cast<size_t>(outs[i].index)];
    s += str_cat(i ? ", " : "", outputs_[i], ": ", dtype_name(t.dtype), t.shape.to_string());
  }
  return s + ")";
}

}  // namespace kiln::saved_model
