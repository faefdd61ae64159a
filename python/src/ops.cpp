// Every op of the table as a Python callable: kiln._kiln.raw.<TypeName>
// (inputs positionally, attributes by keyword), plus `execute` by name.
// The TensorFlow-named wrappers (kiln.math.*, kiln.nn.*, ...) are Python.
//
// The raw callables are plain CPython vectorcall functions (METH_FASTCALL)
// rather than nanobind functions: eager code calls them once per op, and
// nanobind's *args/**kwargs path builds a tuple and a dict per call.
#include "kiln/ops.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <exception>
#include <string_view>
#include <utility>

#include "bindings.h"
#include "convert.h"
#include "kiln/config.h"
#include "kiln/context.h"
#include "kiln/thread_pool.h"

namespace kiln::py {
namespace {

// One op as Python calls it: its row, its attribute names as interned Python
// strings (keywords written in source compare by pointer) and the CPython
// function definition (which must outlive the function object).
struct RawOp {
  const OpDef* op = nullptr;
  bool force_list = false;  // kVariadicOutput: always a list
  bool single = false;      // exactly one output: call_op1
  std::vector<nb::object> attr_names;
  std::string doc;
  PyMethodDef def{};
};

// Indexed by OpId; built once by bind_ops, alive as long as the process.
std::vector<RawOp*>& raw_ops() {
  static auto* v = new std::vector<RawOp*>();
  return *v;
}

// The inputs of one call, without a heap allocation for up to kInline.
class Inputs {
 public:
  void push(Tensor t) {
    if (heap_.empty() && n_ < kInline) {
      inline_[n_++] = std::move(t);
      return;
    }
    if (heap_.empty())
      for (size_t i = 0; i < n_; ++i) heap_.push_back(std::move(inline_[i]));
    heap_.push_back(std::move(t));
  }
  std::span<const Tensor> span() const {
    if (!heap_.empty()) return heap_;
    return {inline_.data(), n_};
  }

 private:
  static constexpr size_t kInline = 6;
  std::array<Tensor, kInline> inline_;
  size_t n_ = 0;
  std::vector<Tensor> heap_;
};

// An exact Python int that fits int64 (the common attribute value).
bool small_int(PyObject* v, int64_t& out) {
  if (!PyLong_CheckExact(v)) return false;
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
  if (overflow) return false;
  out = x;
  return true;
}

// A list or tuple of exact ints and Nones (-1) read without the iterator
// protocol; false (out cleared) when an item needs Python's int conversion.
bool plain_ints(nb::handle v, std::vector<int64_t>& out) {
  if (!PyList_CheckExact(v.ptr()) && !PyTuple_CheckExact(v.ptr())) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(v.ptr());
  PyObject** items = PySequence_Fast_ITEMS(v.ptr());
  out.reserve(static_cast<size_t>(n));
  int64_t x = 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (small_int(items[i], x)) {
      out.push_back(x);
    } else if (items[i] == Py_None) {
      out.push_back(-1);
    } else {
      out.clear();
      return false;
    }
  }
  return true;
}

// v through Python's int(); a ValueError naming the attribute when it does
// not fit in int64 (nanobind would raise a bare std::bad_cast).
int64_t int64_attr(const OpDef& op, const AttrDef& def, nb::handle v) {
  nb::int_ i(v);
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow)
    throw nb::value_error(str_cat(op.type_name, ": attribute '", def.name, "' value ",
                                  nb::cast<std::string>(nb::repr(v)), " does not fit in int64")
                              .c_str());
  if (x == -1 && PyErr_Occurred()) throw nb::python_error();
  return x;
}

std::vector<int64_t> ints_attr(const OpDef& op, const AttrDef& def, nb::handle v) {
  std::vector<int64_t> out;
  if (plain_ints(v, out)) return out;
  for (nb::handle item : v) out.push_back(item.is_none() ? -1 : int64_attr(op, def, item));
  return out;
}

AttrValue to_attr(const OpDef& op, const AttrDef& def, nb::handle v) {
  auto fail = [&](const char* want) -> AttrValue {
    throw nb::type_error(str_cat(op.type_name, ": attribute '", def.name, "' expects ", want,
                                 ", got ", nb::cast<std::string>(nb::repr(v)))
                             .c_str());
  };
  int64_t x = 0;
  switch (def.type) {
    case AttrType::kBool:
      if (!PyBool_Check(v.ptr())) return fail("a bool");
      return v.ptr() == Py_True;
    case AttrType::kInt:
      if (small_int(v.ptr(), x)) return x;
      if (PyBool_Check(v.ptr())) return fail("an int");
      if (is_tensor(v)) return int64_attr(op, def, v.attr("__index__")());
      if (!PyLong_Check(v.ptr()) && !PyIndex_Check(v.ptr())) return fail("an int");
      return int64_attr(op, def, v);
    case AttrType::kFloat:
      if (PyFloat_CheckExact(v.ptr())) return PyFloat_AS_DOUBLE(v.ptr());
      return nb::cast<double>(nb::float_(v));
    case AttrType::kDType: return to_dtype(v);
    case AttrType::kString:
      if (!nb::isinstance<nb::str>(v)) return fail("a str");
      return nb::cast<std::string>(v);
    case AttrType::kInts: {
      if (v.is_none()) return std::vector<int64_t>{};
      if (PyLong_Check(v.ptr())) return std::vector<int64_t>{int64_attr(op, def, v)};
      if (is_tensor(v)) {
        Tensor t = to_tensor(v);
        if (t.is_symbolic())
          return fail("a constant list of ints (this tensor is only known when the function runs)");
        std::vector<int64_t> out;
        nb::object arr = tensor_numpy(cast(t, DType::kInt64), false).attr("ravel")();
        for (nb::handle e : arr) out.push_back(nb::cast<int64_t>(nb::int_(e)));
        return out;
      }
      return ints_attr(op, def, v);
    }
    case AttrType::kTensor: return to_tensor(v);
    case AttrType::kSubgraph: return fail("a subgraph (internal attribute)");
    case AttrType::kObject: return fail("an object (internal attribute)");
  }
  return fail("a value");
}

// The slot of keyword `key` in the op's attributes; -1 for `name` (TensorFlow
// wrappers pass it; kiln ignores it). Interned names match by pointer.
int attr_slot(const RawOp& r, PyObject* key) {
  for (size_t i = 0; i < r.attr_names.size(); ++i)
    if (r.attr_names[i].ptr() == key) return static_cast<int>(i);
  Py_ssize_t len = 0;
  const char* s = PyUnicode_AsUTF8AndSize(key, &len);
  if (!s) throw nb::python_error();
  const std::string_view k(s, static_cast<size_t>(len));
  if (k == "name") return -1;
  const int idx = r.op->attr_index(k);
  if (idx < 0)
    throw nb::type_error(str_cat(r.op->type_name, ": unknown attribute '", k, "'").c_str());
  return idx;
}

void convert_inputs(const OpDef& op, PyObject* const* args, size_t nargs, Inputs& inputs) {
  const bool variadic = op.has(kVariadicInput);
  const size_t fixed = variadic ? op.inputs.size() - 1 : op.inputs.size();
  if (op.has(kElementwise) && nargs == 2 && !variadic) {
    auto [x, y] = to_tensor_pair(args[0], args[1], op.type_name);
    inputs.push(std::move(x));
    inputs.push(std::move(y));
    return;
  }
  for (size_t i = 0; i < nargs; ++i) {
    nb::handle a = args[i];
    if (variadic && i == fixed && (nb::isinstance<nb::list>(a) || nb::isinstance<nb::tuple>(a))) {
      for (nb::handle x : a) inputs.push(to_tensor(x, DType::kInvalid, op.type_name));
    } else {
      inputs.push(to_tensor(a, DType::kInvalid, op.type_name));
    }
  }
}

// Runs (or records) one op: inputs positionally, then each (keyword, value)
// that for_each_kwarg yields as an attribute; unset attributes take defaults.
template <typename ForEachKwarg>
nb::object run_op(const RawOp& r, PyObject* const* args, size_t nargs,
                  ForEachKwarg for_each_kwarg) {
  const OpDef& op = *r.op;
  Inputs inputs;
  convert_inputs(op, args, nargs, inputs);
  Attrs attrs(op.attrs.size());
  for_each_kwarg([&](PyObject* key, PyObject* value) {
    const int slot = attr_slot(r, key);
    if (slot >= 0) {
      const auto i = static_cast<size_t>(slot);
      attrs[i] = to_attr(op, op.attrs[i], value);
    }
  });
  complete_attrs(op, attrs);
  if (r.single) return wrap(call_op1(op.id, inputs.span(), attrs));
  std::vector<Tensor> outs = call_op(op.id, inputs.span(), std::move(attrs));
  if (outs.empty() && !r.force_list) return nb::none();
  if (outs.size() == 1 && !r.force_list) return wrap(std::move(outs[0]));
  nb::list l;
  for (Tensor& t : outs) l.append(wrap(std::move(t)));
  return l;
}

// C++ exceptions leave a raw call through nanobind's translators (kiln errors
// become kiln.errors classes): a nanobind function rethrows the exception.
thread_local std::exception_ptr t_pending;
PyObject* g_rethrow = nullptr;  // set by bind_ops

PyObject* raise_current_exception() noexcept {
  t_pending = std::current_exception();
  PyObject* r = PyObject_CallNoArgs(g_rethrow);
  Py_XDECREF(r);
  return nullptr;
}

void rethrow_pending() {
  std::exception_ptr e = std::exchange(t_pending, nullptr);
  if (!e) throw nb::type_error("no pending exception");
  std::rethrow_exception(e);
}

// The METH_FASTCALL | METH_KEYWORDS entry point of raw.<TypeName>; `self` is a
// capsule holding the RawOp.
PyObject* raw_call(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                   PyObject* kwnames) noexcept {
  const auto& r = *static_cast<const RawOp*>(PyCapsule_GetPointer(self, nullptr));
  try {
    const auto n = static_cast<size_t>(nargs);
    auto kwargs = [&](auto&& f) {
      if (!kwnames) return;
      const Py_ssize_t k = PyTuple_GET_SIZE(kwnames);
      for (Py_ssize_t i = 0; i < k; ++i) f(PyTuple_GET_ITEM(kwnames, i), args[nargs + i]);
    };
    return run_op(r, args, n, kwargs).release().ptr();
  } catch (...) {
    return raise_current_exception();
  }
}

RawOp* make_raw_op(const OpDef& op) {
  auto* r = new RawOp;
  r->op = &op;
  r->force_list = op.has(kVariadicOutput);
  r->single = op.outputs.size() == 1 && !r->force_list;
  for (const AttrDef& a : op.attrs)
    r->attr_names.push_back(nb::steal(PyUnicode_InternFromString(a.name)));
  r->doc = str_cat(op.type_name, "(");
  for (size_t i = 0; i < op.inputs.size(); ++i) r->doc += str_cat(i ? ", " : "", op.inputs[i]);
  for (const AttrDef& a : op.attrs) r->doc += str_cat(", ", a.name, "=...");
  r->doc += ")";
  r->def.ml_name = op.type_name;
  r->def.ml_meth = reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&raw_call));
  r->def.ml_flags = METH_FASTCALL | METH_KEYWORDS;
  r->def.ml_doc = r->doc.c_str();
  return r;
}

}  // namespace

void bind_ops(nb::module_& m) {
  nb::module_ raw = m.def_submodule("raw", "Every kiln op by its TensorFlow type name.");
  nb::object module_name = raw.attr("__name__");
  g_rethrow = nb::cpp_function(&rethrow_pending).release().ptr();
  for (const OpDef& op : op_table()) {
    RawOp* r = make_raw_op(op);
    raw_ops().push_back(r);
    if (op.has(kGraphOnly) || std::string_view(op.type_name).starts_with("_"))
      continue;  // control flow has its own API; passes make fused and "_" ops (TF's convention)
    nb::object self = nb::steal(PyCapsule_New(r, nullptr, nullptr));
    nb::object fn = nb::steal(PyCFunction_NewEx(&r->def, self.ptr(), module_name.ptr()));
    if (!fn.is_valid()) throw nb::python_error();
    raw.attr(op.type_name) = fn;
  }
  m.def(
      "execute",
      [](const std::string& type_name, nb::args args, nb::kwargs kwargs) {
        const OpDef* op = find_op(type_name);
        if (!op) throw nb::value_error(str_cat("unknown op type '", type_name, "'").c_str());
        const RawOp& r = *raw_ops()[static_cast<size_t>(op->id)];
        auto each = [&](auto&& f) {
          for (auto [k, v] : kwargs) f(k.ptr(), v.ptr());
        };
        PyObject* const* items = args.size() ? &PyTuple_GET_ITEM(args.ptr(), 0) : nullptr;
        return run_op(r, items, args.size(), each);
      },
      nb::arg("type_name"), nb::arg("args"), nb::arg("kwargs"),
      "Runs (or, while tracing, records) one op by its type name.");
  m.def(
      "executing_eagerly", [] { return !current_context().is_tracing(); },
      "False while a function is being traced.");
  m.def("set_random_seed", &set_random_seed, nb::arg("seed"));
  m.def(
      "_einsum",
      [](const std::string& equation, const std::vector<Tensor>& inputs) {
        return einsum(equation, inputs);
      },
      nb::arg("equation"), nb::arg("inputs"), "kiln's einsum (src/ops/einsum.cpp).");
  m.def("_set_check_numerics", [](bool on) { config().check_numerics = on; });
  m.def("_set_num_threads", [](int n) {
    const int now = ThreadPool::global_started() ? ThreadPool::global().num_threads() : 0;
    if (now && n != config().num_threads && !(n <= 0 && config().num_threads <= 0))
      throw nb::value_error(  // RuntimeError in TensorFlow; mapped in kiln.config
          str_cat("Intra op parallelism cannot be modified after initialization (the pool "
                  "already runs ",
                  now, " threads)")
              .c_str());
    config().num_threads = n;
  });
  m.def("_num_threads", [] { return config().num_threads; });
  m.def(
      "_pool_threads", [] { return ThreadPool::global().num_threads(); },
      "kiln's thread budget in effect (starts the pool).");
  m.def("_set_parallel_branches", [](bool on) { config().parallel_branches = on; });
  m.def("_parallel_branches", [] { return config().parallel_branches; });
  m.def("_set_memoize_variable_values", [](bool on) { config().memoize_variable_values = on; });
  m.def("_memoize_variable_values", [] { return config().memoize_variable_values; });
  m.def("_set_flush_denormals", [](bool on) { config().flush_denormals = on; });
  m.def("_flush_denormals", [] { return config().flush_denormals; });
  m.def("_set_jit_excess_precision", [](bool on) { config().jit_excess_precision = on; });
  m.def("_jit_excess_precision", [] { return config().jit_excess_precision; });
  m.def("_set_tensor_float_32", [](bool on) { config().tensor_float_32 = on; });
  m.def("_tensor_float_32", [] { return config().tensor_float_32; });
  m.def(
      "_cpu_kernels",
      [] {
        const CpuKernels k = cpu_kernels();
        nb::dict d;
        d["winograd"] = k.winograd;
        d["bf16_products"] = k.bf16_products;
        d["bf16_convolutions"] = k.bf16_convolutions;
        d["f32_onednn_products"] = k.f32_onednn_products;
        return d;
      },
      "What this CPU gives kiln's kernels (kiln::cpu_kernels, kiln/config.h).");
}

}  // namespace kiln::py
