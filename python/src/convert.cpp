#include "convert.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <unordered_map>

#include "kiln/ops.h"

namespace kiln::py {

nb::module_& numpy() {
  static nb::module_* np = new nb::module_(nb::module_::import_("numpy"));
  return *np;
}

std::string error_class_name(Code c) {
  return str_cat(code_name(c), "Error");
}

Code error_code_from_class_name(std::string_view name) {
  for (int c = static_cast<int>(Code::kInvalidArgument);
       c <= static_cast<int>(Code::kDeadlineExceeded); ++c)
    if (error_class_name(static_cast<Code>(c)) == name) return static_cast<Code>(c);
  return Code::kOk;
}

namespace {

[[noreturn]] void type_error(const std::string& msg) {
  throw nb::type_error(msg.c_str());
}

std::string py_repr(nb::handle h) {
  return nb::cast<std::string>(nb::repr(h));
}

DType dtype_from_numpy_name(const std::string& n) {
  if (n == "bool") return DType::kBool;
  if (n == "int8") return DType::kInt8;
  if (n == "uint8") return DType::kUInt8;
  if (n == "int32") return DType::kInt32;
  if (n == "int64") return DType::kInt64;
  if (n == "float32") return DType::kFloat32;
  if (n == "float64") return DType::kFloat64;
  if (n == "float16") return DType::kFloat16;
  if (n == "bfloat16") return DType::kBFloat16;
  if (n == "complex64") return DType::kComplex64;
  if (n == "complex128") return DType::kComplex128;
  if (n == "object" || n.rfind("str", 0) == 0 || n.rfind("bytes", 0) == 0) return DType::kString;
  return DType::kInvalid;
}

const char* numpy_name(DType dt) {
  switch (dt) {
    case DType::kBool: return "bool";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kComplex64: return "complex64";
    case DType::kComplex128: return "complex128";
    default: return "object";
  }
}

// A string tensor from a NumPy array of str/bytes/objects.
Tensor string_tensor_from_numpy(nb::handle arr, const Shape& shape) {
  Tensor t = Tensor::empty(DType::kString, shape);
  std::string* out = t.mutable_data<std::string>();
  nb::object flat = arr.attr("ravel")();
  const int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    nb::object item = flat[nb::int_(i)];
    if (nb::isinstance<nb::bytes>(item)) {
      nb::bytes b = nb::borrow<nb::bytes>(item);
      out[i].assign(b.c_str(), b.size());
    } else if (nb::isinstance<nb::str>(item)) {
      out[i] = nb::cast<std::string>(item);
    } else {
      type_error("Failed to convert elements of " + py_repr(arr) + " to Tensor of dtype string");
    }
  }
  return t;
}

// Copies a NumPy array (any layout) into a new tensor of the array's dtype.
Tensor tensor_from_numpy(nb::handle array) {
  // asarray(order="C") keeps 0-d arrays 0-d (ascontiguousarray makes them 1-d).
  nb::object arr = numpy().attr("asarray")(array, nb::arg("order") = "C");
  const std::string name = nb::cast<std::string>(arr.attr("dtype").attr("name"));
  DType dt = dtype_from_numpy_name(name);
  std::vector<int64_t> dims;
  for (nb::handle d : nb::borrow<nb::tuple>(arr.attr("shape")))
    dims.push_back(nb::cast<int64_t>(d));
  Shape shape(dims);
  if (dt == DType::kInvalid) {
    if (name == "int16" || name == "uint16" || name == "uint32") {
      arr = arr.attr("astype")(name == "uint32" ? "int64" : "int32");
      dt = name == "uint32" ? DType::kInt64 : DType::kInt32;
    } else {
      type_error("Cannot convert a NumPy array of dtype " + name + " to a kiln Tensor");
    }
  }
  if (dt == DType::kString) return string_tensor_from_numpy(arr, shape);
  if (is_half(dt)) arr = arr.attr("view")("uint16");  // the bits (nanobind knows no bfloat16)
  Tensor t = Tensor::empty(dt, shape);
  if (t.num_elements() == 0) return t;
  nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu> view =
      nb::cast<nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>>(arr);
  std::memcpy(t.mutable_raw_data(), view.data(), t.nbytes());
  return t;
}

bool contains_tensor(nb::handle h) {
  if (is_tensor(h) || is_variable(h)) return true;
  if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h))
    for (nb::handle x : h)
      if (contains_tensor(x)) return true;
  return false;
}

bool is_integral_dtype(DType dt) {
  return is_integer(dt);
}

// Whether every item of an object array is a str or bytes (a string tensor).
bool all_strings(nb::handle arr) {
  for (nb::handle x : arr.attr("flat"))
    if (!PyUnicode_Check(x.ptr()) && !PyBytes_Check(x.ptr())) return false;
  return true;
}

// NumPy conversion of a Python list/tuple with TensorFlow's default dtypes.
Tensor tensor_from_sequence(nb::handle seq, DType dtype) {
  if (contains_tensor(seq)) {
    // Auto-packing (tf.stack of the elements), as TensorFlow does.
    // Python numbers take the dtype of the first tensor element.
    DType hint = dtype;
    for (nb::handle x : seq) {
      if (hint != DType::kInvalid) break;
      if (is_tensor(x)) hint = nb::cast<const Tensor&>(x).dtype();
      if (is_variable(x)) hint = nb::cast<const Variable&>(x).dtype();
    }
    std::vector<Tensor> parts;
    for (nb::handle x : seq) parts.push_back(to_tensor(x, hint));
    return stack(parts, 0);
  }
  nb::object arr;
  nb::dict as_object;
  as_object["dtype"] = "object";
  try {
    arr = numpy().attr("asarray")(seq);
  } catch (nb::python_error& e) {
    // str mixed with bytes that are not ASCII: NumPy cannot pick a string type.
    const std::string why = e.what();
    if (!e.matches(PyExc_UnicodeDecodeError))
      type_error("Can't convert non-rectangular (ragged) Python sequence " + py_repr(seq) +
                 " to a Tensor: " + why);
    try {
      arr = numpy().attr("array")(seq, **as_object);
    } catch (nb::python_error&) {
      type_error("Can't convert non-rectangular (ragged) Python sequence " + py_repr(seq) +
                 " to a Tensor: " + why);
    }
  }
  std::string name = nb::cast<std::string>(arr.attr("dtype").attr("name"));
  if (name == "object" && all_strings(arr)) {
    name = "bytes";
  } else if (name == "object") {
    type_error("Cannot convert " + py_repr(seq) +
               " to a Tensor: the nested lists are ragged or mix incompatible types");
  }
  if (name.rfind("bytes", 0) == 0 || name.rfind("str", 0) == 0) {
    // NumPy's fixed-width strings drop trailing NUL bytes; keep every byte.
    arr = numpy().attr("array")(seq, **as_object);
  }
  if (dtype == DType::kInvalid) {
    if (name == "float64") {
      arr = arr.attr("astype")("float32");
    } else if (name == "int64") {
      nb::object info = numpy().attr("iinfo")("int32");
      bool fits = nb::cast<int64_t>(arr.attr("size")) == 0 ||
                  (arr.attr("min")() >= info.attr("min") && arr.attr("max")() <= info.attr("max"));
      if (fits) arr = arr.attr("astype")("int32");
    } else if (nb::cast<int64_t>(arr.attr("size")) == 0) {
      arr = arr.attr("astype")("float32");  // tf.constant([]) is float32
    }
    return tensor_from_numpy(arr);
  }
  DType have = dtype_from_numpy_name(name);
  if (is_integral_dtype(dtype) && is_floating(have)) {
    int integral = PyObject_IsTrue(
        numpy().attr("all")(numpy().attr("equal")(arr, numpy().attr("floor")(arr))).ptr());
    if (integral < 0) throw nb::python_error();
    if (!integral)
      type_error("Cannot convert " + py_repr(seq) + " to EagerTensor of dtype " +
                 std::string(dtype_name(dtype)));
  }
  if (dtype == DType::kString && have != DType::kString &&
      nb::cast<int64_t>(arr.attr("size")) == 0)  // tf.constant([], tf.string)
    return tensor_from_numpy(arr.attr("astype")("object"));
  if (dtype == DType::kString && have != DType::kString)
    type_error("Cannot convert " + py_repr(seq) + " to EagerTensor of dtype string");
  if (dtype != DType::kString && have == DType::kString)
    type_error("Cannot convert " + py_repr(seq) + " to EagerTensor of dtype " +
               std::string(dtype_name(dtype)));
  if (is_half(dtype) && have != dtype)  // rounded by kiln's cast (NumPy may lack bfloat16)
    return cast(tensor_from_numpy(arr.attr("astype")("float32")), dtype);
  if (have != dtype && dtype != DType::kString) arr = arr.attr("astype")(numpy_name(dtype));
  return tensor_from_numpy(arr);
}

Tensor check_dtype(Tensor t, DType dtype, const char* what) {
  if (dtype != DType::kInvalid && t.dtype() != dtype)
    throw nb::value_error(str_cat("Tensor conversion requested dtype ", dtype_name(dtype),
                                  " for Tensor with dtype ", dtype_name(t.dtype()), " (", what, ")")
                              .c_str());
  return t;
}

}  // namespace

DType to_dtype_or_none(nb::handle h) {
  if (h.is_none()) return DType::kInvalid;
  return to_dtype(h);
}

DType to_dtype(nb::handle h) {
  if (nb::isinstance<PyDType>(h)) return nb::cast<PyDType&>(h).dtype;
  if (nb::isinstance<nb::str>(h)) {
    std::string n = nb::cast<std::string>(h);
    DType dt = dtype_from_name(n);
    if (dt == DType::kInvalid || dt == DType::kResource)
      type_error("Unknown dtype name '" + n + "'");
    return dt;
  }
  try {
    nb::object d = numpy().attr("dtype")(h);
    DType dt = dtype_from_numpy_name(nb::cast<std::string>(d.attr("name")));
    if (dt != DType::kInvalid) return dt;
  } catch (nb::python_error&) {
  }
  type_error("Cannot convert " + py_repr(h) + " to a kiln DType");
}

bool is_tensor(nb::handle h) {
  return nb::isinstance<Tensor>(h);
}
bool is_variable(nb::handle h) {
  return nb::isinstance<Variable>(h);
}

Tensor to_tensor(nb::handle h, DType dtype, const char* what) {
  if (nb::isinstance<Tensor>(h)) return check_dtype(nb::cast<const Tensor&>(h), dtype, what);
  if (nb::isinstance<Variable>(h))
    return check_dtype(nb::cast<const Variable&>(h).read_value(), dtype, what);
  PyObject* o = h.ptr();
  if (PyFloat_Check(o) && !PyFloat_CheckExact(o) && nb::isinstance(h, numpy().attr("float64")))
    return to_tensor(numpy().attr("asarray")(h), dtype, what);  // NumPy's dtype, as TensorFlow
  if (PyBool_Check(o)) {
    bool b = o == Py_True;
    if (dtype == DType::kInvalid || dtype == DType::kBool) return Tensor(b);
    type_error(str_cat("Cannot convert ", b ? "True" : "False", " to EagerTensor of dtype ",
                       dtype_name(dtype)));
  }
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) type_error("Cannot convert " + py_repr(h) + " to a Tensor: out of int64 range");
    if (dtype == DType::kInvalid) {
      if (v >= INT32_MIN && v <= INT32_MAX) return Tensor(static_cast<int32_t>(v));
      return Tensor(static_cast<int64_t>(v));
    }
    if (dtype == DType::kString || dtype == DType::kResource)
      type_error(str_cat("Cannot convert ", v, " to EagerTensor of dtype ", dtype_name(dtype)));
    try {
      return Tensor(Scalar(static_cast<int64_t>(v)), dtype);
    } catch (const Error&) {
      type_error(str_cat("Cannot convert ", v, " to EagerTensor of dtype ", dtype_name(dtype)));
    }
  }
  if (PyFloat_Check(o)) {
    double v = PyFloat_AsDouble(o);
    if (dtype == DType::kInvalid) return Tensor(static_cast<float>(v));
    if (dtype == DType::kString || dtype == DType::kResource || dtype == DType::kBool)
      type_error(
          str_cat("Cannot convert ", py_repr(h), " to EagerTensor of dtype ", dtype_name(dtype)));
    try {
      return Tensor(Scalar(v), dtype);
    } catch (const Error&) {
      type_error(
          str_cat("Cannot convert ", py_repr(h), " to EagerTensor of dtype ", dtype_name(dtype)));
    }
  }
  if (PyComplex_Check(o)) {  // complex128 by default, as TensorFlow
    Tensor t = tensor_from_numpy(numpy().attr("asarray")(h));
    if (dtype == DType::kInvalid || dtype == t.dtype()) return t;
    if (!is_complex(dtype))
      type_error(
          str_cat("Cannot convert ", py_repr(h), " to EagerTensor of dtype ", dtype_name(dtype)));
    return cast(t, dtype);
  }
  if (nb::isinstance<nb::str>(h) || nb::isinstance<nb::bytes>(h)) {
    if (dtype != DType::kInvalid && dtype != DType::kString)
      type_error(
          str_cat("Cannot convert ", py_repr(h), " to EagerTensor of dtype ", dtype_name(dtype)));
    if (nb::isinstance<nb::bytes>(h)) {
      nb::bytes b = nb::borrow<nb::bytes>(h);
      return Tensor(std::string(b.c_str(), b.size()));
    }
    return Tensor(nb::cast<std::string>(h));
  }
  if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h))
    return tensor_from_sequence(h, dtype);
  if (nb::hasattr(h, "__array_interface__") || nb::hasattr(h, "__array__")) {
    nb::object arr = numpy().attr("asarray")(h);
    Tensor t = tensor_from_numpy(arr);
    if (dtype != DType::kInvalid && t.dtype() != dtype) {
      if (is_integral_dtype(dtype) && is_floating(t.dtype()))
        return tensor_from_sequence(arr.attr("tolist")(), dtype);
      t = cast(t, dtype);
    }
    return t;
  }
  if (h.is_none())
    type_error(
        str_cat("Attempt to convert a value (None) with an unsupported "
                "type (<class 'NoneType'>) to a Tensor (",
                what, ")"));
  type_error(str_cat("Attempt to convert a value (", py_repr(h), ") with an unsupported type (",
                     py_repr(h.type()), ") to a Tensor (", what, ")"));
}

std::pair<Tensor, Tensor> to_tensor_pair(nb::handle a, nb::handle b, const char* op) {
  const bool ta = is_tensor(a) || is_variable(a), tb = is_tensor(b) || is_variable(b);
  if (ta && !tb) {
    Tensor x = to_tensor(a, DType::kInvalid, op);
    return {x, to_tensor(b, x.dtype(), op)};
  }
  if (tb && !ta) {
    Tensor y = to_tensor(b, DType::kInvalid, op);
    return {to_tensor(a, y.dtype(), op), y};
  }
  return {to_tensor(a, DType::kInvalid, op), to_tensor(b, DType::kInvalid, op)};
}

nb::object wrap(Tensor t) {
  return nb::cast(std::move(t));
}

// ---- opaque objects: process-unique ids, held weakly where possible ----

namespace {
struct OpaqueEntry {
  uint64_t id;
  nb::object ref;  // a weakref, or the object itself when it cannot be weakly referenced
  bool weak;
};
std::unordered_map<PyObject*, OpaqueEntry>& by_ptr() {
  static auto* m = new std::unordered_map<PyObject*, OpaqueEntry>();
  return *m;
}
std::unordered_map<uint64_t, PyObject*>& by_id() {
  static auto* m = new std::unordered_map<uint64_t, PyObject*>();
  return *m;
}
uint64_t g_next_id = 1;

nb::object entry_object(const OpaqueEntry& e) {
  if (!e.weak) return e.ref;
  nb::object o = nb::borrow(PyWeakref_GetObject(e.ref.ptr()));
  return o;
}

uint64_t opaque_id(nb::handle h) {
  auto& m = by_ptr();
  auto it = m.find(h.ptr());
  if (it != m.end()) {
    nb::object o = entry_object(it->second);
    if (o.ptr() == h.ptr()) return it->second.id;
    by_id().erase(it->second.id);
    m.erase(it);
  }
  const uint64_t id = g_next_id++;
  OpaqueEntry e{id, nb::object(), true};
  PyObject* ptr = h.ptr();
  nb::object callback = nb::cpp_function([ptr, id](nb::handle) {
    auto& mm = by_ptr();
    auto f = mm.find(ptr);
    if (f != mm.end() && f->second.id == id) mm.erase(f);
    by_id().erase(id);
  });
  PyObject* w = PyWeakref_NewRef(ptr, callback.ptr());
  if (w) {
    e.ref = nb::steal(w);
  } else {
    PyErr_Clear();
    e.ref = nb::borrow(h);  // not weakly referenceable: kept alive
    e.weak = false;
  }
  m.emplace(ptr, std::move(e));
  by_id()[id] = ptr;
  return id;
}

nb::object opaque_object(uint64_t id) {
  auto it = by_id().find(id);
  if (it == by_id().end()) throw nb::value_error("a traced Python argument no longer exists");
  auto e = by_ptr().find(it->second);
  nb::object o = entry_object(e->second);
  if (o.is_none() && e->second.weak)
    throw nb::value_error("a traced Python argument no longer exists");
  return o;
}

// Objects with __tf_tracing_type__ (TensorFlow's tracing protocol) are keyed
// by their TraceType: equal types share one id, and so one trace, which runs
// with the type's placeholder_value. The types are kept for the process.
struct TraceTypes {
  nb::dict ids;                                    // TraceType -> id
  std::unordered_map<uint64_t, nb::object> types;  // id -> TraceType
};
TraceTypes& trace_types() {
  static auto* t = new TraceTypes();
  return *t;
}

Value trace_type_value(nb::handle h) {
  nb::object type = h.attr("__tf_tracing_type__")(nb::none());
  TraceTypes& t = trace_types();
  PyObject* found = PyDict_GetItemWithError(t.ids.ptr(), type.ptr());  // borrowed
  if (!found && PyErr_Occurred()) throw nb::python_error();
  uint64_t id;
  if (found) {
    id = nb::cast<uint64_t>(nb::handle(found));
  } else {
    id = g_next_id++;
    t.ids[type] = id;
    t.types.emplace(id, type);
  }
  return Value::opaque(id, py_repr(h));
}

const char* kNamedTupleKey = "<namedtuple>";

bool is_namedtuple(nb::handle h) {
  return nb::isinstance<nb::tuple>(h) && !nb::isinstance<nb::tuple>(h.type()) &&
         h.type().ptr() != reinterpret_cast<PyObject*>(&PyTuple_Type) &&
         nb::hasattr(h.type(), "_fields");
}
}  // namespace

Value to_value(nb::handle h) {
  // Exact types first: a pointer compare instead of nanobind's type lookup.
  static PyTypeObject* const tensor_type =
      reinterpret_cast<PyTypeObject*>(nb::type<Tensor>().ptr());
  static PyTypeObject* const variable_type =
      reinterpret_cast<PyTypeObject*>(nb::type<Variable>().ptr());
  if (Py_TYPE(h.ptr()) == tensor_type) return Value(*nb::inst_ptr<Tensor>(h));
  if (Py_TYPE(h.ptr()) == variable_type) return Value(*nb::inst_ptr<Variable>(h));
  if (nb::isinstance<Tensor>(h)) return Value(nb::cast<Tensor>(h));
  if (nb::isinstance<Variable>(h)) return Value(nb::cast<Variable>(h));
  if (nb::isinstance<ArgSpec>(h)) return Value(nb::cast<ArgSpec>(h));
  PyObject* o = h.ptr();
  if (o == Py_None) return Value();
  if (PyBool_Check(o)) return Value(o == Py_True);
  if (PyLong_CheckExact(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (!overflow) return Value(static_cast<int64_t>(v));
  }
  if (PyFloat_CheckExact(o)) return Value(PyFloat_AsDouble(o));
  if (PyUnicode_CheckExact(o)) return Value(nb::cast<std::string>(h));
  if (PyList_Check(o)) {
    std::vector<Value> items;
    for (nb::handle x : h) items.push_back(to_value(x));
    return Value::list(std::move(items));
  }
  if (PyTuple_Check(o)) {
    if (is_namedtuple(h)) {
      std::vector<std::pair<std::string, Value>> items;
      items.emplace_back(kNamedTupleKey, Value::opaque(opaque_id(h.type()), py_repr(h.type())));
      nb::tuple fields = nb::borrow<nb::tuple>(h.type().attr("_fields"));
      for (size_t i = 0; i < fields.size(); ++i)
        items.emplace_back(nb::cast<std::string>(fields[i]), to_value(nb::borrow<nb::tuple>(h)[i]));
      return Value::dict(std::move(items));
    }
    std::vector<Value> items;
    for (nb::handle x : h) items.push_back(to_value(x));
    return Value::tuple(std::move(items));
  }
  if (PyDict_Check(o)) {
    std::vector<std::pair<std::string, Value>> items;
    for (auto [k, v] : nb::borrow<nb::dict>(h)) {
      if (!nb::isinstance<nb::str>(k))
        type_error("kiln.function: dict arguments must have str keys, got key " + py_repr(k));
      items.emplace_back(nb::cast<std::string>(k), to_value(v));
    }
    return Value::dict(std::move(items));
  }
  if (nb::hasattr(h, "__array_interface__") && nb::hasattr(h, "shape") &&
      !nb::isinstance(h, numpy().attr("generic")))
    return Value(to_tensor(h));
  if (nb::isinstance(h, numpy().attr("generic"))) {
    // NumPy numbers and bools are traced as tensors (TensorFlow's rule);
    // NumPy strings and bytes as the Python values they hold.
    if (nb::isinstance(h, numpy().attr("number")) || nb::isinstance(h, numpy().attr("bool_")))
      return Value(to_tensor(h));
    return to_value(h.attr("item")());
  }
  if (!PyType_Check(o) && nb::hasattr(h, "__tf_tracing_type__")) return trace_type_value(h);
  return Value::opaque(opaque_id(h), py_repr(h));
}

nb::object from_value(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNone: return nb::none();
    case Value::Kind::kTensor: return wrap(v.tensor());
    case Value::Kind::kSpec: return nb::cast(v.spec());
    case Value::Kind::kVariable: return nb::cast(v.variable());
    case Value::Kind::kBool: return nb::bool_(v.as_bool());
    case Value::Kind::kInt: return nb::int_(v.as_int());
    case Value::Kind::kFloat: return nb::float_(v.as_float());
    case Value::Kind::kString: return nb::str(v.as_string().c_str(), v.as_string().size());
    case Value::Kind::kOpaque: {
      auto& types = trace_types().types;
      auto it = types.find(v.opaque_id());
      if (it != types.end()) return it->second.attr("placeholder_value")(nb::none());
      return opaque_object(v.opaque_id());
    }
    case Value::Kind::kList: {
      nb::list l;
      for (const Value& x : v.items()) l.append(from_value(x));
      return l;
    }
    case Value::Kind::kTuple: {
      nb::list l;
      for (const Value& x : v.items()) l.append(from_value(x));
      return nb::tuple(l);
    }
    case Value::Kind::kDict: {
      const auto& keys = v.keys();
      for (size_t i = 0; i < keys.size(); ++i)
        if (keys[i] == kNamedTupleKey && v.items()[i].kind() == Value::Kind::kOpaque) {
          nb::object type = opaque_object(v.items()[i].opaque_id());
          nb::dict kw;
          for (size_t j = 0; j < keys.size(); ++j)
            if (j != i) kw[nb::str(keys[j].c_str())] = from_value(v.items()[j]);
          return type(**kw);
        }
      nb::dict d;
      for (size_t i : v.insertion_order()) d[nb::str(keys[i].c_str())] = from_value(v.items()[i]);
      return d;
    }
  }
  return nb::none();
}

}  // namespace kiln::py
