// Functions from Python: kiln._kiln.Function (the trace cache and the call
// hot path, in C++), ConcreteFunction, TensorSpec, and graph views.
#include "kiln/function.h"

#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <atomic>

#include "bindings.h"
#include "convert.h"
#include "kiln/summary.h"
#include "kiln/trace.h"

namespace kiln::py {

Shape to_shape(nb::handle h) {
  if (h.is_none()) return Shape::unknown_rank();
  nb::object dims = nb::borrow(h);
  if (nb::hasattr(h, "_dims")) {
    dims = h.attr("_dims");
    if (dims.is_none()) return Shape::unknown_rank();
  }
  if (PyLong_Check(dims.ptr())) return Shape({nb::cast<int64_t>(dims)});
  std::vector<int64_t> out;
  for (nb::handle d : dims) {
    if (d.is_none()) {
      out.push_back(-1);
    } else {
      int64_t v = nb::cast<int64_t>(nb::int_(d));
      if (v < -1) throw nb::value_error(str_cat("invalid dimension ", v).c_str());
      out.push_back(v);
    }
  }
  return Shape(out);
}

nb::object shape_object(const Shape& s) {
  static nb::object* cls = nullptr;
  if (!cls) cls = new nb::object(nb::module_::import_("kiln.tensor_shape").attr("TensorShape"));
  if (!s.rank_known()) return (*cls)(nb::none());
  nb::list l;
  for (int64_t d : s.dims()) l.append(d < 0 ? nb::none() : nb::object(nb::int_(d)));
  return (*cls)(l);
}

namespace {

std::atomic<bool> g_run_eagerly{false};

// Python warnings for the C++ function layer's warnings.
void install_warning_handler() {
  set_warning_handler([](const std::string& category, const std::string& msg) {
    nb::gil_scoped_acquire gil;
    try {
      nb::module_ w = nb::module_::import_("kiln._warnings");
      w.attr("emit")(category, msg);
    } catch (nb::python_error& e) {
      e.discard_as_unraisable("kiln warning handler");
    }
  });
}

// The user's line for nodes being traced: the innermost Python frame whose
// file is outside the kiln package (TensorFlow keeps the same in each node's
// traceback). Runs at trace time only.
std::string python_location() {
  if (!PyGILState_Check()) return {};
  static std::string* kiln_dir = nullptr;
  if (!kiln_dir) {
    PyObject* mod = PyImport_GetModule(nb::str("kiln").ptr());
    if (!mod) {
      PyErr_Clear();
      return {};
    }
    nb::object file = nb::borrow(nb::handle(mod)).attr("__file__");
    Py_DECREF(mod);
    const std::string f = nb::cast<std::string>(file);
    kiln_dir = new std::string(f.substr(0, f.rfind('/') + 1));
  }
  PyFrameObject* f = PyEval_GetFrame();
  Py_XINCREF(f);
  std::string loc;
  for (int depth = 0; f && depth < 64 && loc.empty(); ++depth) {
    PyCodeObject* code = PyFrame_GetCode(f);
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    if (file && std::string_view(file).rfind(*kiln_dir, 0) != 0 && file[0] != '<')
      loc = str_cat(file, ":", PyFrame_GetLineNumber(f));
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(f);
  if (PyErr_Occurred()) PyErr_Clear();
  return loc;
}

struct GraphView {
  std::shared_ptr<const ConcreteFunction> cf;
  bool optimized;
  const Graph& graph() const { return optimized ? cf->optimized_graph() : cf->graph(); }
};

nb::object node_def(const Node& n) {
  nb::dict d;
  d["name"] = n.name();
  d["op"] = n.op().type_name;
  nb::list inputs;
  for (const Edge& e : n.inputs())
    inputs.append(e.index == 0 ? e.node->name() : str_cat(e.node->name(), ":", e.index));
  for (const Node* c : n.control_inputs()) inputs.append(str_cat("^", c->name()));
  d["input"] = inputs;
  nb::list outs;
  for (const TensorSpec& s : n.outputs())
    outs.append(nb::make_tuple(dtype_object(s.dtype), shape_object(s.shape)));
  d["outputs"] = outs;
  d["location"] = n.location();
  return d;
}

struct PyFunction {
  std::unique_ptr<Function> fn;
  nb::object trace_fn;                  // called with the structured arguments while tracing
  size_t nparams = 0;                   // positional-call fast path when len(args) == nparams
  std::vector<DType> signature_dtypes;  // input_signature: non-tensor args are converted
  // Simple signatures (positional-or-keyword parameters only) are bound in
  // C++: parameter names and defaults (null: none).
  bool simple = false;
  std::vector<nb::object> names, defaults;
};

// One value per parameter for a call of a simple signature (positional
// arguments, then keywords by name, then defaults), or a null object when
// the call needs Python's binder (other signatures, and every error, so the
// TypeError is Python's).
nb::object bind_simple(const PyFunction& f, PyObject* args, PyObject* kwargs) {
  const Py_ssize_t n = static_cast<Py_ssize_t>(f.names.size());
  const Py_ssize_t nargs = PyTuple_GET_SIZE(args);
  if (!f.simple || nargs > n) return {};
  nb::object out = nb::steal(PyTuple_New(n));  // NULL items until set
  if (!out.is_valid()) throw nb::python_error();
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    PyObject* a = PyTuple_GET_ITEM(args, i);
    Py_INCREF(a);
    PyTuple_SET_ITEM(out.ptr(), i, a);
  }
  if (kwargs) {
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &k, &v)) {
      Py_ssize_t j = 0;
      for (; j < n; ++j)
        if (f.names[static_cast<size_t>(j)].ptr() == k) break;
      if (j == n && PyUnicode_Check(k))  // not interned: compare the text
        for (j = 0; j < n; ++j)
          if (PyUnicode_Compare(f.names[static_cast<size_t>(j)].ptr(), k) == 0) break;
      if (PyErr_Occurred()) throw nb::python_error();
      if (j == n || PyTuple_GET_ITEM(out.ptr(), j)) return {};  // unknown or given twice
      Py_INCREF(v);
      PyTuple_SET_ITEM(out.ptr(), j, v);
    }
  }
  for (Py_ssize_t j = nargs; j < n; ++j) {
    if (PyTuple_GET_ITEM(out.ptr(), j)) continue;
    const nb::object& d = f.defaults[static_cast<size_t>(j)];
    if (!d.is_valid()) return {};  // missing argument
    PyTuple_SET_ITEM(out.ptr(), j, d.inc_ref().ptr());
  }
  return out;
}

// Runs `call` (the function's C++ call); arguments that do not match an
// input_signature raise TensorFlow's "Python inputs incompatible" text.
template <typename F>
nb::object call_with_signature_errors(nb::handle self, const PyFunction& f, nb::handle call_args,
                                      F&& call) {
  if (f.signature_dtypes.empty()) return from_value(call());
  try {
    return from_value(call());
  } catch (const InvalidArgumentError& e) {
    if (std::string(e.what()).find("incompatible with input_signature") == std::string::npos) throw;
    self.attr("_raise_signature_error")(call_args, e.what());
    throw;
  }
}

PyTypeObject* tensor_type() {
  static PyTypeObject* t = reinterpret_cast<PyTypeObject*>(nb::type<Tensor>().ptr());
  return t;
}

nb::object call_function(nb::handle self, PyObject* args, PyObject* kwargs) {
  PyFunction& f = *nb::inst_ptr<PyFunction>(self);
  if (kwargs && PyDict_GET_SIZE(kwargs) == 0) kwargs = nullptr;
  if (g_run_eagerly.load(std::memory_order_relaxed)) {
    nb::object eager = self.attr("_call_eagerly");
    PyObject* r = PyObject_Call(eager.ptr(), args, kwargs);
    if (!r) throw nb::python_error();
    return nb::steal(r);
  }
  const size_t nargs = static_cast<size_t>(PyTuple_GET_SIZE(args));
  // One value per parameter: the positional arguments as given, or bound.
  nb::object call_args;
  if (!kwargs && nargs == f.nparams) {
    call_args = nb::borrow(args);
  } else {
    call_args = bind_simple(f, args, kwargs);
    if (!call_args.is_valid())
      call_args =
          self.attr("_canonicalize")(nb::handle(args), kwargs ? nb::handle(kwargs) : nb::dict());
  }
  // Fast path: every argument a kiln.Tensor (no Values built).
  constexpr size_t kMaxFast = 8;
  if (PyTuple_CheckExact(call_args.ptr()) && PyTuple_GET_SIZE(call_args.ptr()) <= kMaxFast) {
    const size_t n = static_cast<size_t>(PyTuple_GET_SIZE(call_args.ptr()));
    Tensor ts[kMaxFast];
    size_t i = 0;
    for (; i < n; ++i) {
      PyObject* a = PyTuple_GET_ITEM(call_args.ptr(), i);
      if (Py_TYPE(a) != tensor_type()) break;
      ts[i] = *nb::inst_ptr<Tensor>(a);
    }
    if (i == n)
      return call_with_signature_errors(self, f, call_args, [&] {
        return f.fn->call_tensors({ts, n});
      });
  }
  std::vector<Value> values;
  values.reserve(nb::len(call_args));
  // Simple signatures convert here; others were converted by _canonicalize.
  auto add = [&](nb::handle a, size_t i) {
    if (f.simple && i < f.signature_dtypes.size() && !is_tensor(a) && !is_variable(a) &&
        !nb::isinstance<ArgSpec>(a))
      values.emplace_back(to_tensor(a, f.signature_dtypes[i], "argument"));
    else
      values.push_back(to_value(a));
  };
  try {
    if (PyTuple_Check(call_args.ptr())) {
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(call_args.ptr()); ++i)
        add(PyTuple_GET_ITEM(call_args.ptr(), i), static_cast<size_t>(i));
    } else {
      size_t i = 0;
      for (nb::handle a : call_args) add(a, i++);
    }
  } catch (nb::python_error& e) {
    if (f.signature_dtypes.empty() || !(e.matches(PyExc_TypeError) || e.matches(PyExc_ValueError)))
      throw;
    self.attr("_raise_conversion_error")(call_args, nb::str(e.value()));
    throw;
  } catch (nb::builtin_exception& e) {
    if (f.signature_dtypes.empty()) throw;
    self.attr("_raise_conversion_error")(call_args, e.what());
    throw;
  }
  return call_with_signature_errors(self, f, call_args, [&] { return (*f.fn)(values); });
}

// A C++ exception escaping a raw slot: raised as Python error through a
// nanobind function, so the registered translators (kiln.errors) apply.
thread_local std::exception_ptr t_pending;
PyObject* raise_pending(std::exception_ptr p) {
  static nb::object* rethrow =
      new nb::object(nb::cpp_function([] { std::rethrow_exception(t_pending); }));
  t_pending = std::move(p);
  PyObject* r = PyObject_CallNoArgs(rethrow->ptr());
  t_pending = nullptr;
  Py_XDECREF(r);
  return nullptr;
}

// tp_call of _Function (and of kiln.Function, which inherits it): no
// argument tuple or dict is rebuilt, no overload dispatch.
PyObject* function_tp_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  if (!nb::inst_ready(self)) {
    PyErr_SetString(PyExc_TypeError, "kiln.function object is not initialized");
    return nullptr;
  }
  try {
    return call_function(self, args, kwargs).release().ptr();
  } catch (nb::python_error& e) {
    e.restore();
    return nullptr;
  } catch (...) {
    return raise_pending(std::current_exception());
  }
}

// Cyclic GC: a function stored on the object its Python callable refers to
// (self.f = kiln.function(lambda x: self.g(x))) forms a cycle through the
// C++ side; visiting the Python objects it holds lets the collector free it.
// (kiln.Function, the Python subclass, adds the instance dict.)
int function_tp_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  const PyFunction& f = *nb::inst_ptr<PyFunction>(self);
  Py_VISIT(f.trace_fn.ptr());
  for (const nb::object& o : f.names) Py_VISIT(o.ptr());
  for (const nb::object& o : f.defaults) Py_VISIT(o.ptr());
  return 0;
}

int function_tp_clear(PyObject* self) {
  if (!nb::inst_ready(self)) return 0;
  PyFunction& f = *nb::inst_ptr<PyFunction>(self);
  nb::object drop = std::move(f.trace_fn);
  std::vector<nb::object> names = std::move(f.names), defaults = std::move(f.defaults);
  f.simple = false;
  return 0;
}

PyType_Slot g_function_slots[] = {{Py_tp_call, reinterpret_cast<void*>(function_tp_call)},
                                  {Py_tp_traverse, reinterpret_cast<void*>(function_tp_traverse)},
                                  {Py_tp_clear, reinterpret_cast<void*>(function_tp_clear)},
                                  {0, nullptr}};

std::vector<Value> to_values(nb::handle args) {
  std::vector<Value> v;
  v.reserve(nb::len(args));
  for (nb::handle a : args) v.push_back(to_value(a));
  return v;
}

nb::object concrete_object(std::shared_ptr<const ConcreteFunction> cf) {
  return nb::cast(std::move(cf));
}

std::vector<ArgSpec> to_input_signature(nb::handle input_signature) {
  std::vector<ArgSpec> sig;
  for (nb::handle s : input_signature) {
    if (!nb::isinstance<ArgSpec>(s))
      throw nb::type_error(str_cat("input_signature must be a sequence of TensorSpec, got ",
                                   nb::cast<std::string>(nb::repr(s)))
                               .c_str());
    sig.push_back(nb::cast<ArgSpec>(s));
  }
  return sig;
}

// _Function.__init__: the options, the fast-path binding data and the C++
// Function whose body calls `trace_fn`.
void init_py_function(PyFunction* self, nb::object trace_fn, const std::string& name,
                      std::vector<std::string> arg_names, nb::handle input_signature,
                      bool reduce_retracing, bool jit_compile, size_t nparams, nb::handle defaults,
                      nb::handle no_default, std::vector<std::string> disabled_passes) {
  FunctionOptions o;
  o.name = name;
  o.disabled_passes.insert(disabled_passes.begin(), disabled_passes.end());
  o.arg_names = std::move(arg_names);
  if (!input_signature.is_none()) o.input_signature = to_input_signature(input_signature);
  std::vector<DType> sig_dtypes;
  if (o.input_signature)
    for (const ArgSpec& a : *o.input_signature) sig_dtypes.push_back(a.dtype);
  o.reduce_retracing = reduce_retracing;
  o.jit_compile = jit_compile;
  new (self) PyFunction();
  self->trace_fn = trace_fn;
  self->nparams = nparams;
  self->signature_dtypes = std::move(sig_dtypes);
  // defaults: one per parameter (no_default where it has none).
  self->simple =
      !defaults.is_none() && nparams == o.arg_names.size() && nb::len(defaults) == nparams;
  if (self->simple)
    for (size_t i = 0; i < nparams; ++i) {
      PyObject* name = PyUnicode_FromString(o.arg_names[i].c_str());
      if (!name) throw nb::python_error();
      PyUnicode_InternInPlace(&name);
      self->names.push_back(nb::steal(name));
      nb::object d = nb::borrow(defaults[i]);
      self->defaults.push_back(d.is(no_default) ? nb::object() : d);
    }
  PyFunction* raw = self;
  self->fn = std::make_unique<Function>(
      [raw](const std::vector<Value>& args) -> Value {
        nb::list py_args;
        for (const Value& a : args) py_args.append(from_value(a));
        if (!raw->trace_fn.is_valid())
          throw nb::attribute_error("this kiln.function was cleared by the garbage collector");
        nb::object result = raw->trace_fn(*nb::tuple(py_args));
        return to_value(result);
      },
      std::move(o));
}

// TensorSpec.
void bind_tensor_spec(nb::module_& m) {
  nb::class_<ArgSpec>(m, "TensorSpec",
                      "Describes a tensor argument: dtype, shape (None for unknown dims) and an "
                      "optional name (tf.TensorSpec).")
      .def(
          "__init__",
          [](ArgSpec* self, nb::handle shape, nb::handle dtype, nb::handle name) {
            new (self) ArgSpec{dtype.is_none() ? DType::kFloat32 : to_dtype(dtype), to_shape(shape),
                               name.is_none() ? std::string() : nb::cast<std::string>(name)};
          },
          nb::arg("shape").none(), nb::arg("dtype").none() = nb::none(),
          nb::arg("name").none() = nb::none())
      .def_prop_ro("dtype", [](const ArgSpec& s) { return dtype_object(s.dtype); })
      .def_prop_ro("shape", [](const ArgSpec& s) { return shape_object(s.shape); })
      .def_prop_ro("name",
                   [](const ArgSpec& s) -> nb::object {
                     return s.name.empty() ? nb::none() : nb::object(nb::str(s.name.c_str()));
                   })
      .def_static(
          "from_tensor",
          [](nb::handle t, nb::handle name) {
            Tensor x = to_tensor(t);
            return ArgSpec{x.dtype(), x.shape(),
                           name.is_none() ? std::string() : nb::cast<std::string>(name)};
          },
          nb::arg("tensor"), nb::arg("name").none() = nb::none())
      .def("is_compatible_with",
           [](const ArgSpec& s, nb::handle o) {
             if (nb::isinstance<ArgSpec>(o)) {
               const ArgSpec& b = nb::cast<const ArgSpec&>(o);
               return s.dtype == b.dtype && s.shape.is_compatible_with(b.shape);
             }
             Tensor t = to_tensor(o);
             return s.dtype == t.dtype() && s.shape.is_compatible_with(t.shape());
           })
      .def("__repr__", &ArgSpec::to_string)
      .def("__eq__",
           [](const ArgSpec& a, nb::handle o) {
             if (!nb::isinstance<ArgSpec>(o)) return false;
             const ArgSpec& b = nb::cast<const ArgSpec&>(o);
             return a.dtype == b.dtype && a.shape == b.shape && a.name == b.name;
           })
      .def("__hash__", [](const ArgSpec& a) {
        size_t h = std::hash<std::string>()(a.name) ^ static_cast<size_t>(a.dtype);
        for (int64_t d : a.shape.dims()) h = h * 31 + static_cast<size_t>(d);
        return h;
      });
}

// The graph of a concrete function, read-only.
void bind_graph_view(nb::module_& m) {
  nb::class_<GraphView>(m, "_Graph")
      .def_prop_ro("name", [](const GraphView& g) { return g.graph().function_name(); })
      // TensorBoard's GraphDef of the graph (tf.summary.graph).
      .def("_tensorboard_graph_def",
           [](const GraphView& g) {
             const std::string s = summary::graph_def(g.graph());
             return nb::bytes(s.data(), s.size());
           })
      .def("_nodes",
           [](const GraphView& g) {
             nb::list l;
             for (const auto& n : g.graph().nodes()) l.append(node_def(*n));
             return l;
           })
      .def("_inputs",
           [](const GraphView& g) {
             nb::list l;
             for (const Node* n : g.graph().inputs()) l.append(n->name());
             return l;
           })
      .def("_outputs",
           [](const GraphView& g) {
             nb::list l;
             for (const Edge& e : g.graph().outputs()) l.append(e.node->tensor_name(e.index));
             return l;
           })
      .def(
          "listing", [](const GraphView& g) { return g.graph().listing(); },
          "One line per node: \"['a', 'a'] -> add\".")
      .def(
          "debug_listing", [](const GraphView& g) { return g.graph().debug_listing(); },
          "Readable listing with ops, dtypes and shapes.")
      .def(
          "to_dot", [](const GraphView& g) { return g.graph().to_dot(); }, "Graphviz DOT text.");
}

// ConcreteFunction.
void bind_concrete_function(nb::module_& m) {
  nb::class_<ConcreteFunction>(m, "_ConcreteFunction")
      .def_prop_ro("name", &ConcreteFunction::name)
      .def("pretty_signature", &ConcreteFunction::pretty_signature)
      .def_prop_ro("_structured_input_signature",
                   [](const ConcreteFunction& cf) {
                     nb::list l;
                     for (const Value& v : cf.structured_input_signature()) l.append(from_value(v));
                     return nb::tuple(l);
                   })
      .def_prop_ro("_structured_outputs",
                   [](const ConcreteFunction& cf) { return from_value(cf.structured_outputs()); })
      .def_prop_ro("pruned_ops",
                   [](const ConcreteFunction& cf) {
                     nb::list l;
                     for (const auto& [n, t] : cf.pruned_ops()) l.append(nb::make_tuple(n, t));
                     return l;
                   })
      .def_prop_ro("optimize_report",
                   [](const ConcreteFunction& cf) { return cf.optimize_report().to_string(); })
      .def("_compiler_ir", [](const ConcreteFunction& cf,
                              const std::string& stage) { return cf.compiler_ir(stage); })
      .def_prop_ro("_jit_kernels", &ConcreteFunction::jit_kernels)
      .def_prop_ro("_arg_names", &ConcreteFunction::arg_names)
      .def_prop_ro("_jit_compile", &ConcreteFunction::jit_compile)
      .def("_call", [](const ConcreteFunction& cf,
                       nb::handle args) { return from_value(cf(to_values(args))); })
      .def("call_flat", [](const ConcreteFunction& cf, nb::handle tensors) {
        std::vector<Tensor> in;
        for (nb::handle t : tensors) in.push_back(to_tensor(t));
        nb::list l;
        for (Tensor& t : cf.call_flat(in)) l.append(wrap(std::move(t)));
        return l;
      });
  m.def("_graph_of", [](std::shared_ptr<const ConcreteFunction> cf, bool optimized) {
    return GraphView{std::move(cf), optimized};
  });
}

// kiln.function's C++ side.
void bind_py_function(nb::module_& m) {
  nb::class_<PyFunction>(m, "_Function", nb::type_slots(g_function_slots),
                         "The C++ side of kiln.function: trace cache and call path. Calling "
                         "it traces on a cache miss, then runs the graph.")
      .def("__init__", &init_py_function, nb::arg("trace_fn"), nb::arg("name"),
           nb::arg("arg_names"), nb::arg("input_signature").none(), nb::arg("reduce_retracing"),
           nb::arg("jit_compile"), nb::arg("nparams"), nb::arg("defaults").none() = nb::none(),
           nb::arg("no_default").none() = nb::none(),
           nb::arg("disabled_passes") = std::vector<std::string>())
      .def(
          "_get_concrete",
          [](PyFunction& f, nb::handle args) {
            return concrete_object(f.fn->get_concrete_function(to_values(args)));
          },
          "The concrete function for canonicalized arguments (tensors or TensorSpecs).")
      .def(
          "experimental_get_tracing_count",
          [](const PyFunction& f) { return f.fn->tracing_count(); },
          "How many times the function has been traced.")
      .def("_concrete_functions", [](const PyFunction& f) { return f.fn->concrete_functions(); })
      .def("pretty_printed_concrete_signatures",
           [](const PyFunction& f) { return f.fn->pretty_printed_concrete_signatures(); })
      .def("_retrace_reasons", [](const PyFunction& f) {
        nb::list l;
        for (const RetraceReason& r : f.fn->retrace_reasons())
          l.append(nb::make_tuple(r.argument, r.before, r.after, r.to_string()));
        return l;
      });
}

// init_scope, name_scope and run_functions_eagerly.
void bind_scopes(nb::module_& m) {
  m.def("_enter_init_scope", [] { return reinterpret_cast<uintptr_t>(new InitScope()); });
  m.def("_exit_init_scope", [](uintptr_t token) { delete reinterpret_cast<InitScope*>(token); });
  m.def(
      "_enter_name_scope",
      [](const std::string& name) {
        auto* s = new NameScope(name);
        return nb::make_tuple(reinterpret_cast<uintptr_t>(s), s->scope());
      },
      "Enters a name scope (kiln.name_scope); returns (token, full scope or '' eagerly).");
  m.def("_exit_name_scope", [](uintptr_t token) { delete reinterpret_cast<NameScope*>(token); });
  m.def("_set_run_eagerly", [](bool on) { g_run_eagerly.store(on); });
  m.def("_run_eagerly", [] { return g_run_eagerly.load(); });
}

}  // namespace

void bind_function(nb::module_& m) {
  install_warning_handler();
  TracingContext::set_location_provider(python_location);
  bind_tensor_spec(m);
  bind_graph_view(m);
  bind_concrete_function(m);
  bind_py_function(m);
  bind_scopes(m);
}

}  // namespace kiln::py
