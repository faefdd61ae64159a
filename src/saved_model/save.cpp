#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "kiln/saved_model.h"
#include "saved_model/graph_def.h"
#include "saved_model/variables_io.h"

namespace kiln::saved_model {

using detail::pb::SavedObject;
namespace pb = detail::pb;

struct Exporter::Impl {
  using Object = LoadedObject;  // what load gives back, before it is written
  struct Sig {
    std::string key;
    std::shared_ptr<const ConcreteFunction> fn;
    std::vector<std::string> inputs, outputs;
  };
  std::vector<Object> objects;
  std::map<const VariableResource*, int> variable_nodes;
  std::vector<Sig> signatures;

  int add(Object o) {
    objects.push_back(std::move(o));
    return static_cast<int>(objects.size()) - 1;
  }
  int add_variable(const Variable& v) {
    if (!v.defined()) throw InvalidArgumentError("Exporter: an undefined variable");
    auto it = variable_nodes.find(v.resource());
    if (it != variable_nodes.end()) return it->second;
    Object o;
    o.kind = LoadedObject::Kind::kVariable;
    o.variable = v;
    const int id = add(std::move(o));
    variable_nodes.emplace(v.resource(), id);
    return id;
  }
  void add_child(int parent, const std::string& name, int child) {
    check(parent);
    check(child);
    if (name.empty()) throw InvalidArgumentError("Exporter: a child needs a name");
    for (const auto& [n, c] : objects[static_cast<size_t>(parent)].children)
      if (n == name)
        throw InvalidArgumentError(
            str_cat("Exporter: object ", parent, " already has '", name, "'"));
    objects[static_cast<size_t>(parent)].children.emplace_back(name, child);
  }
  void check(int node) const {
    if (node < 0 || static_cast<size_t>(node) >= objects.size())
      throw InvalidArgumentError(str_cat("Exporter: no object ", node));
  }
};

namespace {

// TensorFlow's FunctionSpec of a function: FullArgSpec(args=<its argument
// names>, no varargs, keywords or defaults), which TensorFlow's loader
// needs to call it.
void function_spec(const ConcreteFunction& f, pb::SavedFunction* out) {
  pb::FunctionSpec* spec = out->mutable_function_spec();
  pb::NamedTupleValue* t = spec->mutable_fullargspec()->mutable_named_tuple_value();
  t->set_name("FullArgSpec");
  auto add = [&](const char* key) {
    pb::PairValue* p = t->add_values();
    p->set_key(key);
    return p->mutable_value();
  };
  auto* args = add("args")->mutable_list_value();
  for (const std::string& n : f.arg_names()) args->add_values()->set_string_value(n);
  add("varargs")->mutable_none_value();
  add("varkw")->mutable_none_value();
  add("defaults")->mutable_none_value();
  add("kwonlyargs")->mutable_list_value();
  add("kwonlydefaults")->mutable_none_value();
  add("annotations")->mutable_dict_value();
  spec->mutable_input_signature()->mutable_none_value();
  if (f.jit_compile()) spec->set_jit_compile(pb::FunctionSpec::ON);
}

struct Written {
  std::string name;        // the FunctionDef
  std::vector<int> bound;  // variable nodes of its resource args
};

// The folder and any missing parents (as TensorFlow's save makes them).
void ensure_dir(const std::string& d) {
  std::error_code ec;
  std::filesystem::create_directories(d, ec);
  if (!std::filesystem::is_directory(d))
    throw FailedPreconditionError(
        str_cat(d, ": cannot create directory: ", ec ? ec.message() : "a file is in the way"));
}

// TensorFlow's signature functions return a dict: a wrapper FunctionDef
// calling `w`'s function, its outputs keyed by the signature's output keys
// (kiln inlines the call when loading).
Written signature_wrapper(pb::FunctionDefLibrary& lib, pb::SavedObjectGraph& og, const Written& w,
                          const ConcreteFunction& fn, const std::vector<std::string>& out_keys) {
  const pb::FunctionDef* orig = nullptr;
  std::set<std::string> names;
  for (const auto& f : lib.function()) {
    names.insert(f.signature().name());
    if (f.signature().name() == w.name) orig = &f;
  }
  Written out{str_cat("__inference_signature_wrapper_", fn.name()), w.bound};
  for (int k = 1; names.count(out.name); ++k)
    out.name = str_cat("__inference_signature_wrapper_", fn.name(), "_", k);
  pb::FunctionDef* f = lib.add_function();
  f->mutable_signature()->set_name(out.name);
  f->mutable_signature()->set_is_stateful(true);
  *f->mutable_signature()->mutable_input_arg() = orig->signature().input_arg();
  *f->mutable_arg_attr() = orig->arg_attr();
  pb::NodeDef* call = f->add_node_def();
  call->set_name("StatefulPartitionedCall");
  call->set_op("StatefulPartitionedCall");
  (*call->mutable_attr())["f"].mutable_func()->set_name(w.name);
  auto* tin = (*call->mutable_attr())["Tin"].mutable_list();
  for (const auto& a : orig->signature().input_arg()) {
    call->add_input(a.name());
    tin->add_type(a.type());
  }
  auto* tout = (*call->mutable_attr())["Tout"].mutable_list();
  std::vector<std::pair<std::string, Value>> specs;
  for (int k = 0; k < orig->signature().output_arg_size(); ++k) {
    const auto& a = orig->signature().output_arg(k);
    tout->add_type(a.type());
    *f->mutable_signature()->add_output_arg() = a;
    (*f->mutable_ret())[a.name()] = str_cat("StatefulPartitionedCall:output:", k);
    const TensorSpec& s =
        fn.graph().outputs()[static_cast<size_t>(k)].node->outputs()[static_cast<size_t>(
            fn.graph().outputs()[static_cast<size_t>(k)].index)];
    specs.emplace_back(out_keys[static_cast<size_t>(k)],
                       Value(ArgSpec{s.dtype, s.shape, out_keys[static_cast<size_t>(k)]}));
  }
  pb::SavedConcreteFunction sc = og.concrete_functions().at(w.name);
  sc.clear_output_signature();
  detail::to_proto(Value::dict(std::move(specs)), sc.mutable_output_signature(),
                   str_cat("signature of '", fn.name(), "'"));
  (*og.mutable_concrete_functions())[out.name] = std::move(sc);
  return out;
}

// The main graph TensorFlow's tools read a signature from: its inputs as
// placeholders, the variables as handles, one call of the function.
void write_signature_graph(pb::MetaGraphDef& mg, const std::string& key, const Written& w,
                           const ConcreteFunction& fn, const std::vector<std::string>& in_keys,
                           const std::vector<std::string>& out_keys, int call_index) {
  pb::GraphDef* g = mg.mutable_graph_def();
  pb::SignatureDef& sd = (*mg.mutable_signature_def())[key];
  sd.set_method_name(kPredictMethod);
  const std::string call = call_index ? str_cat("StatefulPartitionedCall_", call_index)
                                      : std::string("StatefulPartitionedCall");
  std::vector<std::string> inputs;
  const auto& specs = fn.graph().inputs();
  for (size_t i = 0; i < in_keys.size(); ++i) {
    pb::NodeDef* p = g->add_node();
    p->set_name(str_cat(key, "_", in_keys[i]));
    p->set_op("Placeholder");
    const TensorSpec& s = specs[i]->outputs()[0];
    (*p->mutable_attr())["dtype"].set_type(detail::to_proto(s.dtype));
    detail::to_proto(s.shape, (*p->mutable_attr())["shape"].mutable_shape());
    pb::TensorInfo& ti = (*sd.mutable_inputs())[in_keys[i]];
    ti.set_name(p->name() + ":0");
    ti.set_dtype(detail::to_proto(s.dtype));
    detail::to_proto(s.shape, ti.mutable_tensor_shape());
    inputs.push_back(p->name());
  }
  for (int v : w.bound) {
    const pb::SavedVariable& sv = mg.object_graph_def().nodes(v).variable();
    const std::string name = str_cat(key, "_variable_", v);
    pb::NodeDef* h = g->add_node();
    h->set_name(name);
    h->set_op("VarHandleOp");
    (*h->mutable_attr())["dtype"].set_type(sv.dtype());
    *(*h->mutable_attr())["shape"].mutable_shape() = sv.shape();
    (*h->mutable_attr())["shared_name"].set_s(sv.name());
    inputs.push_back(name);
  }
  pb::NodeDef* c = g->add_node();
  c->set_name(call);
  c->set_op("StatefulPartitionedCall");
  for (const std::string& in : inputs) c->add_input(in);
  (*c->mutable_attr())["f"].mutable_func()->set_name(w.name);
  auto* tout = (*c->mutable_attr())["Tout"].mutable_list();
  const auto& outs = fn.graph().outputs();
  for (size_t k = 0; k < out_keys.size(); ++k) {
    const TensorSpec& s = outs[k].node->outputs()[static_cast<size_t>(outs[k].index)];
    tout->add_type(detail::to_proto(s.dtype));
    pb::TensorInfo& ti = (*sd.mutable_outputs())[out_keys[k]];
    ti.set_name(str_cat(call, ":", k));
    ti.set_dtype(detail::to_proto(s.dtype));
    detail::to_proto(s.shape, ti.mutable_tensor_shape());
  }
}

void check_keys(const std::string& what, const std::vector<std::string>& keys, size_t want) {
  if (keys.size() != want)
    throw InvalidArgumentError(str_cat(what, ": ", keys.size(), " names for ", want, " tensors"));
  std::set<std::string> seen;
  for (const std::string& k : keys)
    if (k.empty() || !seen.insert(k).second)
      throw InvalidArgumentError(str_cat(what, ": the name '", k, "' is empty or repeated"));
}

}  // namespace

Exporter::Exporter() : impl_(std::make_unique<Impl>()) {
  impl_->add({});
}
Exporter::~Exporter() = default;

int Exporter::add_object(const std::string& identifier) {
  Impl::Object o;
  o.identifier = identifier;
  return impl_->add(std::move(o));
}

int Exporter::add_variable(const Variable& v) {
  return impl_->add_variable(v);
}

int Exporter::add_function(std::vector<std::shared_ptr<const ConcreteFunction>> concrete) {
  for (const auto& f : concrete)
    if (!f) throw InvalidArgumentError("Exporter: a null concrete function");
  Impl::Object o;
  o.kind = LoadedObject::Kind::kFunction;
  o.functions = std::move(concrete);
  return impl_->add(std::move(o));
}

void Exporter::add_child(int parent, const std::string& name, int child) {
  impl_->add_child(parent, name, child);
}

void Exporter::add_signature(const std::string& key, std::shared_ptr<const ConcreteFunction> fn,
                             std::vector<std::string> input_keys,
                             std::vector<std::string> output_keys) {
  if (!fn) throw InvalidArgumentError("Exporter: a null signature function");
  for (const auto& s : impl_->signatures)
    if (s.key == key) throw InvalidArgumentError(str_cat("signature '", key, "' is given twice"));
  check_keys(str_cat("signature '", key, "' inputs"), input_keys, fn->graph().inputs().size());
  check_keys(str_cat("signature '", key, "' outputs"), output_keys, fn->graph().outputs().size());
  impl_->signatures.push_back({key, std::move(fn), std::move(input_keys), std::move(output_keys)});
}

void Exporter::save(const std::string& dir) const {
  Impl im = *impl_;  // saving adds captured variables and signature objects to a copy
  pb::SavedModel sm;
  sm.set_saved_model_schema_version(1);
  sm.set_kiln_format_version(kFormatVersion);
  pb::MetaGraphDef& mg = *sm.add_meta_graphs();
  mg.mutable_meta_info_def()->add_tags("serve");
  mg.mutable_meta_info_def()->set_tensorflow_version(str_cat("kiln ", KILN_VERSION));
  mg.mutable_graph_def()->mutable_versions()->set_producer(1);
  detail::LibraryWriter lib(mg.mutable_graph_def()->mutable_library());
  pb::SavedObjectGraph& og = *mg.mutable_object_graph_def();

  // Functions first: they may add the variables they capture.
  std::map<const ConcreteFunction*, Written> written;
  auto write_fn = [&](const std::shared_ptr<const ConcreteFunction>& f) -> const Written& {
    auto it = written.find(f.get());
    if (it != written.end()) return it->second;
    std::vector<Variable> captured;
    Written w;
    pb::FunctionDef* def =
        lib.add(str_cat("__inference_", f->name()), f->graph(), f->jit_compile(), &captured);
    w.name = def->signature().name();
    for (const Variable& v : captured) w.bound.push_back(im.add_variable(v));
    pb::SavedConcreteFunction& sc = (*og.mutable_concrete_functions())[w.name];
    for (const std::string& n : f->arg_names()) sc.add_kiln_arg_names(n);
    for (int b : w.bound) sc.add_bound_inputs(b);
    const std::string what = str_cat("function '", f->name(), "'");
    auto* args =
        sc.mutable_canonicalized_input_signature()->mutable_tuple_value()->mutable_values();
    auto* positional = args->Add()->mutable_tuple_value()->mutable_values();
    for (const Value& v : f->structured_input_signature())
      detail::to_proto(v, positional->Add(), what + "'s arguments",
                       [&](const Variable& var) { return im.add_variable(var); });
    args->Add()->mutable_dict_value();
    detail::to_proto(f->structured_outputs(), sc.mutable_output_signature(), what + "'s result");
    return written.emplace(f.get(), std::move(w)).first->second;
  };
  for (size_t i = 0; i < im.objects.size(); ++i)
    for (const auto& f : im.objects[i].functions) write_fn(f);
  std::map<std::string, Written> wrappers;  // per signature key
  for (const auto& s : im.signatures)
    wrappers.emplace(s.key, signature_wrapper(*mg.mutable_graph_def()->mutable_library(), og,
                                              write_fn(s.fn), *s.fn, s.outputs));

  // Signatures: root.signatures.<key>, each a bare concrete function.
  int sig_map = -1;
  for (const auto& s : im.signatures) {
    if (sig_map < 0) {
      Impl::Object m;
      m.identifier = "signature_map";
      sig_map = im.add(std::move(m));
      im.add_child(kRoot, "signatures", sig_map);
    }
    Impl::Object o;
    o.kind = LoadedObject::Kind::kSignature;
    o.signature = s.key;
    im.add_child(sig_map, s.key, im.add(std::move(o)));
  }

  std::vector<std::pair<int, Tensor>> values;
  for (size_t i = 0; i < im.objects.size(); ++i) {
    const Impl::Object& o = im.objects[i];
    SavedObject* so = og.add_nodes();
    for (const auto& [name, child] : o.children) {
      auto* ref = so->add_children();
      ref->set_node_id(child);
      ref->set_local_name(name);
    }
    switch (o.kind) {
      case LoadedObject::Kind::kUser:
        so->mutable_user_object()->set_identifier(o.identifier.empty() ? "_generic_user_object"
                                                                       : o.identifier);
        if (o.identifier == "signature_map" || o.identifier == "trackable_list_wrapper" ||
            o.identifier == "trackable_dict_wrapper") {  // TensorFlow revives them by version
          so->mutable_user_object()->mutable_version()->set_producer(1);
          so->mutable_user_object()->mutable_version()->set_min_consumer(1);
        }
        break;
      case LoadedObject::Kind::kFunction:
        for (const auto& f : o.functions)
          so->mutable_function()->add_concrete_functions(written.at(f.get()).name);
        if (!o.functions.empty()) function_spec(*o.functions[0], so->mutable_function());
        break;
      case LoadedObject::Kind::kVariable: {
        pb::SavedVariable* v = so->mutable_variable();
        const Variable& var = o.variable;
        v->set_dtype(detail::to_proto(var.dtype()));
        detail::to_proto(var.shape(), v->mutable_shape());
        v->set_trainable(var.trainable());
        v->set_name(var.name());
        values.emplace_back(static_cast<int>(i), var.read_value());
        break;
      }
      case LoadedObject::Kind::kSignature: {
        const Impl::Sig* sig = nullptr;
        for (const auto& s : im.signatures)
          if (s.key == o.signature) sig = &s;
        auto* b = so->mutable_bare_concrete_function();
        b->set_concrete_function_name(wrappers.at(sig->key).name);
        for (const std::string& k : sig->inputs) b->add_argument_keywords(k);
        break;
      }
      case LoadedObject::Kind::kAsset:
        throw UnimplementedError(
            "saving assets (files a loaded SavedModel carries) is not "
            "supported: save the model without them");
    }
  }
  int call_index = 0;
  for (const auto& s : im.signatures)
    write_signature_graph(mg, s.key, wrappers.at(s.key), *s.fn, s.inputs, s.outputs, call_index++);

  ensure_dir(dir);
  ensure_dir(dir + "/variables");
  detail::Edges edges;
  for (const Impl::Object& o : im.objects) edges.push_back(o.children);
  detail::write_variables(dir, edges, values);
  detail::write_file(dir + "/saved_model.pb", sm.SerializeAsString());
}

}  // namespace kiln::saved_model
