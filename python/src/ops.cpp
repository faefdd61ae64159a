// Every op of the table as a Python callable: kiln._kiln.raw.<TypeName>
// (inputs positionally, attributes by keyword), plus `execute` by name.
// The TensorFlow-named wrappers (kiln.math.*, kiln.nn.*, ...) are Python.
#include "kiln/ops.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string_view>

#include "bindings.h"
#include "convert.h"
#include "kiln/config.h"
#include "kiln/context.h"
#include "kiln/thread_pool.h"

namespace kiln::py {
namespace {

AttrValue to_attr(const OpDef& op, const AttrDef& def, nb::handle v) {
  auto fail = [&](const char* want) -> AttrValue {
    throw nb::type_error(str_cat(op.type_name, ": attribute '", def.name, "' expects ", want,
                                 ", got ", nb::cast<std::string>(nb::repr(v)))
                             .c_str());
  };
  switch (def.type) {
    case AttrType::kBool:
      if (!PyBool_Check(v.ptr())) return fail("a bool");
      return v.ptr() == Py_True;
    case AttrType::kInt:
      if (PyBool_Check(v.ptr())) return fail("an int");
      if (is_tensor(v)) return nb::cast<int64_t>(v.attr("__index__")());
      if (!PyLong_Check(v.ptr()) && !PyIndex_Check(v.ptr())) return fail("an int");
      return nb::cast<int64_t>(nb::int_(v));
    case AttrType::kFloat: return nb::cast<double>(nb::float_(v));
    case AttrType::kDType: return to_dtype(v);
    case AttrType::kString:
      if (!nb::isinstance<nb::str>(v)) return fail("a str");
      return nb::cast<std::string>(v);
    case AttrType::kInts: {
      std::vector<int64_t> out;
      if (v.is_none()) return out;
      if (PyLong_Check(v.ptr())) return std::vector<int64_t>{nb::cast<int64_t>(v)};
      if (is_tensor(v)) {
        Tensor t = to_tensor(v);
        if (t.is_symbolic())
          return fail("a constant list of ints (this tensor is only known when the function runs)");
        nb::object arr = tensor_numpy(cast(t, DType::kInt64), false).attr("ravel")();
        for (nb::handle x : arr) out.push_back(nb::cast<int64_t>(nb::int_(x)));
        return out;
      }
      for (nb::handle x : v) out.push_back(x.is_none() ? -1 : nb::cast<int64_t>(nb::int_(x)));
      return out;
    }
    case AttrType::kTensor: return to_tensor(v);
    case AttrType::kSubgraph: return fail("a subgraph (internal attribute)");
  }
  return fail("a value");
}

nb::object run_op(const OpDef& op, nb::args args, nb::kwargs kwargs, bool force_list) {
  std::vector<Tensor> inputs;
  inputs.reserve(args.size());
  const bool variadic = op.has(kVariadicInput);
  const size_t fixed = variadic ? op.inputs.size() - 1 : op.inputs.size();
  if (op.has(kElementwise) && args.size() == 2 && !variadic) {
    auto [x, y] = to_tensor_pair(args[0], args[1], op.type_name);
    inputs.push_back(std::move(x));
    inputs.push_back(std::move(y));
  } else {
    for (size_t i = 0; i < args.size(); ++i) {
      nb::handle a = args[i];
      if (variadic && i == fixed && (nb::isinstance<nb::list>(a) || nb::isinstance<nb::tuple>(a))) {
        for (nb::handle x : a) inputs.push_back(to_tensor(x, DType::kInvalid, op.type_name));
      } else {
        inputs.push_back(to_tensor(a, DType::kInvalid, op.type_name));
      }
    }
  }
  Attrs attrs;
  if (kwargs.size() > 0) {
    attrs.resize(op.attrs.size());
    for (auto [k, v] : kwargs) {
      std::string key = nb::cast<std::string>(k);
      if (key == "name") continue;
      int idx = op.attr_index(key);
      if (idx < 0)
        throw nb::type_error(str_cat(op.type_name, ": unknown attribute '", key, "'").c_str());
      attrs[static_cast<size_t>(idx)] = to_attr(op, op.attrs[static_cast<size_t>(idx)], v);
    }
    // Trailing unset attributes are filled with defaults; earlier unset ones
    // must be filled here too.
    for (size_t i = 0; i < attrs.size(); ++i)
      if (std::holds_alternative<std::monostate>(attrs[i])) attrs[i] = op.attrs[i].default_value;
    while (!attrs.empty() && std::holds_alternative<std::monostate>(attrs.back())) attrs.pop_back();
  }
  std::vector<Tensor> outs = call_op(op.id, inputs, std::move(attrs));
  if (outs.empty() && !force_list) return nb::none();
  if (outs.size() == 1 && !force_list) return wrap(std::move(outs[0]));
  nb::list l;
  for (Tensor& t : outs) l.append(wrap(std::move(t)));
  return l;
}

}  // namespace

void bind_ops(nb::module_& m) {
  nb::module_ raw = m.def_submodule("raw", "Every kiln op by its TensorFlow type name.");
  for (const OpDef& op : op_table()) {
    if (op.has(kGraphOnly) || std::string_view(op.type_name).starts_with("_"))
      continue;  // control flow has its own API; passes make fused and "_" ops (TF's convention)
    const OpDef* p = &op;
    std::string doc = str_cat(op.type_name, "(");
    for (size_t i = 0; i < op.inputs.size(); ++i) doc += str_cat(i ? ", " : "", op.inputs[i]);
    for (const AttrDef& a : op.attrs) doc += str_cat(", ", a.name, "=...");
    doc += ")";
    const bool multi = op.has(kVariadicOutput);
    raw.def(
        op.type_name,
        [p, multi](nb::args args, nb::kwargs kwargs) { return run_op(*p, args, kwargs, multi); },
        doc.c_str());
  }
  m.def(
      "execute",
      [](const std::string& type_name, nb::args args, nb::kwargs kwargs) {
        const OpDef* op = find_op(type_name);
        if (!op) throw nb::value_error(str_cat("unknown op type '", type_name, "'").c_str());
        return run_op(*op, args, kwargs, op->has(kVariadicOutput));
      },
      nb::arg("type_name"), nb::arg("args"), nb::arg("kwargs"),
      "Runs (or, while tracing, records) one op by its type name.");
  m.def(
      "executing_eagerly", [] { return !current_context().is_tracing(); },
      "False while a function is being traced.");
  m.def("set_random_seed", &set_random_seed, nb::arg("seed"));
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
}

}  // namespace kiln::py
