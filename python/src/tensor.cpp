// kiln.Tensor and kiln.DType: construction, NumPy / DLPack export, printing,
// Python protocols (bool, index, len, iter), operators and basic indexing.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "bindings.h"
#include "convert.h"
#include "kiln/config.h"
#include "kiln/context.h"
#include "kiln/ops.h"

namespace kiln::py {
namespace {

std::vector<PyDType>& dtype_singletons() {
  static auto* v = [] {
    auto* out = new std::vector<PyDType>();
    for (size_t i = 0; i < static_cast<size_t>(DType::kNumDTypes); ++i)
      out->push_back(PyDType{static_cast<DType>(i)});
    return out;
  }();
  return *v;
}

std::string symbolic_where(const Tensor& t) {
  return t.symbol()->describe();
}

[[noreturn]] void graph_error(const Tensor& t, const std::string& what, const std::string& fix) {
  nb::object cls = nb::module_::import_("kiln.errors").attr("OperatorNotAllowedInGraphError");
  std::string msg =
      str_cat(what, " on a symbolic tensor (", symbolic_where(t),
              ") is not allowed: its value is only known when the function runs. ", fix);
  PyErr_SetString(cls.ptr(), msg.c_str());
  throw nb::python_error();
}

template <typename T>
nb::object numpy_of(const Tensor& t) {
  std::vector<size_t> shape;
  for (int64_t d : t.shape().dims()) shape.push_back(static_cast<size_t>(d));
  Tensor* keep = new Tensor(t);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  nb::ndarray<nb::numpy, T, nb::ro> arr(const_cast<T*>(t.data<T>()), shape.size(), shape.data(),
                                        owner);
  return nb::cast(arr, nb::rv_policy::reference);
}

// float16 / bfloat16: the bits as uint16, viewed as NumPy's float16 or
// ml_dtypes' bfloat16 (TensorFlow's NumPy type for it).
nb::object numpy_16bit(const Tensor& t) {
  std::vector<size_t> shape;
  for (int64_t d : t.shape().dims()) shape.push_back(static_cast<size_t>(d));
  Tensor* keep = new Tensor(t);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  const auto* bits = static_cast<const uint16_t*>(t.raw_data());
  nb::ndarray<nb::numpy, uint16_t, nb::ro> arr(const_cast<uint16_t*>(bits), shape.size(),
                                               shape.data(), owner);
  nb::object a = nb::cast(arr, nb::rv_policy::reference);
  if (t.dtype() == DType::kFloat16) return a.attr("view")(numpy().attr("float16"));
  nb::object ml_dtypes;
  try {
    ml_dtypes = nb::module_::import_("ml_dtypes");
  } catch (nb::python_error&) {
    throw nb::type_error(
        "a bfloat16 tensor's NumPy value needs the ml_dtypes package (pip install ml_dtypes), "
        "or cast it to float32 first");
  }
  return a.attr("view")(ml_dtypes.attr("bfloat16"));
}

nb::object strings_numpy(const Tensor& t) {
  const std::string* p = t.data<std::string>();
  const int64_t n = t.num_elements();
  nb::list items;
  for (int64_t i = 0; i < n; ++i) items.append(nb::bytes(p[i].data(), p[i].size()));
  nb::object arr = numpy().attr("empty")(n, "object");
  for (int64_t i = 0; i < n; ++i) arr[nb::int_(i)] = items[i];
  nb::list dims;
  for (int64_t d : t.shape().dims()) dims.append(d);
  return arr.attr("reshape")(nb::tuple(dims));
}

}  // namespace

nb::object dtype_object(DType dt) {
  return nb::cast(&dtype_singletons()[static_cast<size_t>(dt)], nb::rv_policy::reference);
}

nb::object tensor_numpy(const Tensor& t, bool scalar_as_item) {
  if (t.is_symbolic()) {
    std::string msg =
        str_cat("'Tensor' object has no attribute 'numpy': ", t.to_string(),
                " is a symbolic tensor (", symbolic_where(t),
                "), which has no value while the function is traced. Return it from the function "
                "and read the result, or use kiln.print inside the function.");
    throw nb::attribute_error(msg.c_str());
  }
  nb::object arr;
  switch (t.dtype()) {
    case DType::kBool: arr = numpy_of<bool>(t); break;
    case DType::kInt8: arr = numpy_of<int8_t>(t); break;
    case DType::kUInt8: arr = numpy_of<uint8_t>(t); break;
    case DType::kInt32: arr = numpy_of<int32_t>(t); break;
    case DType::kInt64: arr = numpy_of<int64_t>(t); break;
    case DType::kFloat32: arr = numpy_of<float>(t); break;
    case DType::kFloat64: arr = numpy_of<double>(t); break;
    case DType::kFloat16:
    case DType::kBFloat16: arr = numpy_16bit(t); break;
    case DType::kComplex64: arr = numpy_of<std::complex<float>>(t); break;
    case DType::kComplex128: arr = numpy_of<std::complex<double>>(t); break;
    case DType::kString: arr = strings_numpy(t); break;
    default: throw nb::type_error("a resource tensor has no NumPy value");
  }
  if (scalar_as_item && t.rank() == 0) return arr[nb::tuple()];
  return arr;
}

namespace {

// Basic indexing without tensors: ints, slices, None, Ellipsis.
bool basic_index(nb::handle key, std::vector<IndexItem>& items) {
  auto one = [&](nb::handle k) -> bool {
    if (PyBool_Check(k.ptr())) return false;
    if (PyLong_Check(k.ptr())) {
      int overflow = 0;
      const long long i = PyLong_AsLongLongAndOverflow(k.ptr(), &overflow);
      if (overflow)
        throw nb::index_error(
            str_cat("index ", nb::cast<std::string>(nb::repr(k)), " is out of range").c_str());
      items.emplace_back(static_cast<int64_t>(i));
      return true;
    }
    if (k.is_none()) {
      items.emplace_back(kNewAxis);
      return true;
    }
    if (k.ptr() == Py_Ellipsis) {
      items.emplace_back(kEllipsis);
      return true;
    }
    if (PySlice_Check(k.ptr())) {
      auto part = [](nb::handle p, std::optional<int64_t>& out) -> bool {
        if (p.is_none()) return true;
        if (!PyLong_Check(p.ptr()) || PyBool_Check(p.ptr())) return false;
        int overflow = 0;  // beyond int64: past either end, as Python clamps
        const long long v = PyLong_AsLongLongAndOverflow(p.ptr(), &overflow);
        out = overflow > 0   ? std::numeric_limits<int64_t>::max()
              : overflow < 0 ? std::numeric_limits<int64_t>::min()
                             : static_cast<int64_t>(v);
        return true;
      };
      // The slice's fields directly (an attribute lookup by name each cost ~0.3 us).
      const auto* sl = reinterpret_cast<const PySliceObject*>(k.ptr());
      Slice s;
      if (!part(sl->start, s.start_) || !part(sl->stop, s.stop_) || !part(sl->step, s.step_))
        return false;
      items.emplace_back(s);
      return true;
    }
    return false;
  };
  if (PyTuple_Check(key.ptr())) {
    for (nb::handle k : key)
      if (!one(k)) return false;
    return true;
  }
  return one(key);
}

// The value of a concrete scalar int32/int64 tensor used as the whole key while
// executing eagerly (x[i] in an eager loop over kiln.range): the int fast path
// applies. Symbolic keys, or any while tracing, build a slice in kiln._indexing.
std::optional<int64_t> eager_int_key(nb::handle key) {
  if (!nb::isinstance<Tensor>(key)) return std::nullopt;
  const Tensor& k = *nb::inst_ptr<Tensor>(key);
  if (k.is_symbolic() || k.rank() != 0 || current_context().is_tracing()) return std::nullopt;
  if (k.dtype() == DType::kInt32) return k.data<int32_t>()[0];
  if (k.dtype() == DType::kInt64) return k.data<int64_t>()[0];
  return std::nullopt;
}

// Whether unstacking `t` now runs eagerly with no one to see the Unpack op:
// no trace records it, no tape (or other observer) watches, and
// check_numerics, which would check its float outputs, is off or moot.
bool unseen_eager_unstack(const Tensor& t) {
  if (t.is_symbolic() || current_context().is_tracing() || op_observer()) return false;
  switch (t.dtype()) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt32:
    case DType::kInt64: return true;
    case DType::kFloat32:
    case DType::kFloat64: return !config().check_numerics;
    default: return false;
  }
}

// iter() over the elements of a 1-D tensor as scalar tensors, copied here
// in one go: what Unpack's outputs hold, without the op (see above).
nb::object iterate_scalars(const Tensor& t) {
  const int64_t n = t.dim(0);
  const size_t size = dtype_size(t.dtype());
  const auto* data = static_cast<const char*>(t.raw_data());
  nb::object items = nb::steal(PyTuple_New(n));
  if (!items.is_valid()) throw nb::python_error();
  for (int64_t i = 0; i < n; ++i) {
    Tensor x = Tensor::empty(t.dtype(), Shape());
    std::memcpy(x.mutable_raw_data(), data + static_cast<size_t>(i) * size, size);
    PyTuple_SET_ITEM(items.ptr(), i, wrap(std::move(x)).release().ptr());
  }
  return nb::steal(PyObject_GetIter(items.ptr()));
}

nb::object getitem(nb::handle self, nb::handle key) {
  Tensor t = to_tensor(self);
  if (std::optional<int64_t> i = eager_int_key(key)) return wrap(index(t, {IndexItem(*i)}));
  if (PyLong_CheckExact(key.ptr())) {
    int overflow = 0;
    const long long i = PyLong_AsLongLongAndOverflow(key.ptr(), &overflow);
    if (!overflow) return wrap(index(t, {IndexItem(static_cast<int64_t>(i))}));
  }
  std::vector<IndexItem> items;
  if (basic_index(key, items)) return wrap(index(t, items));
  // Tensor indices, or anything else: the Python slicing helper.
  return nb::module_::import_("kiln._indexing").attr("getitem")(self, key);
}

using Binary = Tensor (*)(const Tensor&, const Tensor&);

template <Binary F>
nb::object binop(nb::handle a, nb::handle b) {
  auto [x, y] = to_tensor_pair(a, b, "binary operator");
  return wrap(F(x, y));
}
template <Binary F>
nb::object rbinop(nb::handle a, nb::handle b) {
  auto [y, x] = to_tensor_pair(b, a, "binary operator");
  return wrap(F(y, x));
}

Tensor logical_or_bitwise_and(const Tensor& a, const Tensor& b) {
  return a.dtype() == DType::kBool ? logical_and(a, b) : bitwise_and(a, b);
}
Tensor logical_or_bitwise_or(const Tensor& a, const Tensor& b) {
  return a.dtype() == DType::kBool ? logical_or(a, b) : bitwise_or(a, b);
}
Tensor logical_or_bitwise_xor(const Tensor& a, const Tensor& b) {
  return a.dtype() == DType::kBool ? logical_xor(a, b) : bitwise_xor(a, b);
}
Tensor matmul2(const Tensor& a, const Tensor& b) {
  return matmul(a, b);
}
Tensor pow2(const Tensor& a, const Tensor& b) {
  return pow(a, b);
}

nb::object eq_op(nb::handle a, nb::handle b, bool ne) {
  if (b.is_none()) return nb::bool_(ne);
  if (!is_tensor(b) && !is_variable(b) && !PyNumber_Check(b.ptr()) &&
      !nb::isinstance<nb::list>(b) && !nb::isinstance<nb::tuple>(b) &&
      !nb::isinstance<nb::str>(b) && !nb::isinstance<nb::bytes>(b) && !nb::hasattr(b, "__array__"))
    return nb::bool_(ne);
  Tensor x, y;
  try {
    std::tie(x, y) = to_tensor_pair(a, b, ne ? "!=" : "==");
  } catch (nb::builtin_exception&) {
    return nb::bool_(ne);
  }
  try {
    broadcast_shapes(x.shape(), y.shape(), "Equal");
  } catch (const Error&) {
    return nb::bool_(ne);  // TensorFlow: incompatible shapes compare unequal
  }
  return wrap(ne ? not_equal(x, y) : equal(x, y));
}

template <typename Cls>
void add_operators(Cls& cls) {
  cls.def("__add__", &binop<add>)
      .def("__radd__", &rbinop<add>)
      .def("__sub__", &binop<subtract>)
      .def("__rsub__", &rbinop<subtract>)
      .def("__mul__", &binop<multiply>)
      .def("__rmul__", &rbinop<multiply>)
      .def("__truediv__", &binop<divide>)
      .def("__rtruediv__", &rbinop<divide>)
      .def("__floordiv__", &binop<floordiv>)
      .def("__rfloordiv__", &rbinop<floordiv>)
      .def("__mod__", &binop<floormod>)
      .def("__rmod__", &rbinop<floormod>)
      .def("__pow__", &binop<pow2>)
      .def("__rpow__", &rbinop<pow2>)
      .def("__matmul__", &binop<matmul2>)
      .def("__rmatmul__", &rbinop<matmul2>)
      .def("__and__", &binop<logical_or_bitwise_and>)
      .def("__rand__", &rbinop<logical_or_bitwise_and>)
      .def("__or__", &binop<logical_or_bitwise_or>)
      .def("__ror__", &rbinop<logical_or_bitwise_or>)
      .def("__xor__", &binop<logical_or_bitwise_xor>)
      .def("__rxor__", &rbinop<logical_or_bitwise_xor>)
      .def("__lshift__", &binop<left_shift>)
      .def("__rshift__", &binop<right_shift>)
      .def("__lt__", &binop<less>)
      .def("__le__", &binop<less_equal>)
      .def("__gt__", &binop<greater>)
      .def("__ge__", &binop<greater_equal>)
      .def(
          "__eq__", [](nb::handle a, nb::handle b) { return eq_op(a, b, false); },
          nb::arg("other").none())
      .def(
          "__ne__", [](nb::handle a, nb::handle b) { return eq_op(a, b, true); },
          nb::arg("other").none())
      .def("__neg__", [](nb::handle a) { return wrap(negative(to_tensor(a))); })
      .def("__pos__", [](nb::handle a) { return wrap(to_tensor(a)); })
      .def("__abs__", [](nb::handle a) { return wrap(abs(to_tensor(a))); })
      .def("__invert__",
           [](nb::handle a) {
             Tensor t = to_tensor(a);
             return wrap(t.dtype() == DType::kBool ? logical_not(t) : invert(t));
           })
      .def("__getitem__", &getitem, nb::arg("key").none())
      .def("__bool__",
           [](nb::handle a) {
             Tensor t = to_tensor(a);
             if (t.is_symbolic())
               graph_error(t, "Using it as a Python bool",
                           "Use kiln.cond / kiln.where, or write the `if`/`while` in a "
                           "kiln.function with autograph=True (the default) so it is converted "
                           "to graph control flow.");
             if (t.num_elements() != 1)
               throw nb::value_error(
                   "The truth value of a tensor with more than one element is ambiguous. Use "
                   "kiln.reduce_any or kiln.reduce_all");
             int r = PyObject_IsTrue(tensor_numpy(t, true).ptr());
             if (r < 0) throw nb::python_error();
             return r == 1;
           })
      .def("__index__",
           [](nb::handle a) {
             Tensor t = to_tensor(a);
             if (t.is_symbolic())
               graph_error(t, "Using it as a Python int (an index)",
                           "Pass a Python int, or use tensor ops (kiln.gather, slicing).");
             if (!is_integer(t.dtype()) || t.num_elements() != 1)
               throw nb::type_error(
                   str_cat("only integer scalar tensors can be converted to an index, got ",
                           t.debug_string())
                       .c_str());
             return nb::cast<int64_t>(nb::int_(tensor_numpy(t, true)));
           })
      .def("__int__",
           [](nb::handle a) {
             Tensor t = to_tensor(a);
             if (t.is_symbolic()) graph_error(t, "Converting it to a Python int", "");
             return nb::int_(tensor_numpy(t, true));
           })
      .def("__float__",
           [](nb::handle a) {
             Tensor t = to_tensor(a);
             if (t.is_symbolic()) graph_error(t, "Converting it to a Python float", "");
             return nb::float_(tensor_numpy(t, true));
           })
      .def(
          "__array__",
          [](nb::handle a, nb::handle dtype, nb::handle) {
            nb::object arr = tensor_numpy(to_tensor(a), false);
            if (!dtype.is_none()) arr = arr.attr("astype")(dtype);
            return arr;
          },
          nb::arg("dtype").none() = nb::none(), nb::arg("copy").none() = nb::none())
      .def(
          "numpy", [](nb::handle a) { return tensor_numpy(to_tensor(a), true); },
          "The value as a NumPy array (a read-only view of the tensor's memory; bytes for "
          "string scalars). Raises AttributeError on a symbolic tensor.");
}

// kiln.DType.
void bind_dtype(nb::module_& m) {
  nb::class_<PyDType>(m, "DType", "An element type (kiln.float32, kiln.int32, ...).")
      .def_prop_ro("name", [](const PyDType& d) { return std::string(dtype_name(d.dtype)); })
      .def_prop_ro("is_floating", [](const PyDType& d) { return is_floating(d.dtype); })
      .def_prop_ro("is_integer", [](const PyDType& d) { return is_integer(d.dtype); })
      .def_prop_ro("is_complex", [](const PyDType& d) { return is_complex(d.dtype); })
      .def_prop_ro("is_bool", [](const PyDType& d) { return d.dtype == DType::kBool; })
      .def_prop_ro("is_unsigned", [](const PyDType& d) { return d.dtype == DType::kUInt8; })
      .def_prop_ro("size", [](const PyDType& d) { return dtype_size(d.dtype); })
      .def_prop_ro("as_numpy_dtype",
                   [](const PyDType& d) {
                     if (d.dtype == DType::kBFloat16)
                       return nb::object(nb::module_::import_("ml_dtypes").attr("bfloat16"));
                     std::string n =
                         d.dtype == DType::kString ? "object_" : std::string(dtype_name(d.dtype));
                     return nb::object(numpy().attr(n.c_str()));
                   })
      .def_prop_ro("base_dtype", [](nb::handle self) { return nb::borrow(self); })
      .def_prop_ro("_enum", [](const PyDType& d) { return static_cast<int>(d.dtype); })
      .def("__repr__", [](const PyDType& d) { return str_cat("tf.", dtype_name(d.dtype)); })
      .def("__str__",
           [](const PyDType& d) { return str_cat("<dtype: '", dtype_name(d.dtype), "'>"); })
      .def(
          "__eq__",
          [](const PyDType& d, nb::handle o) {
            if (o.is_none()) return false;
            try {
              return to_dtype(o) == d.dtype;
            } catch (nb::builtin_exception&) {
              return false;
            }
          },
          nb::arg("other").none())
      .def(
          "__ne__",
          [](const PyDType& d, nb::handle o) {
            if (o.is_none()) return true;
            try {
              return to_dtype(o) != d.dtype;
            } catch (nb::builtin_exception&) {
              return true;
            }
          },
          nb::arg("other").none())
      .def("__hash__", [](const PyDType& d) { return static_cast<int>(d.dtype); });
}

// kiln.Tensor: properties, Python protocols and operators.
void bind_tensor_class(nb::module_& m) {
  auto tensor = nb::class_<Tensor>(
      m, "Tensor",
      "A multi-dimensional value: concrete (eager) or symbolic (inside a function being "
      "traced). Immutable.");
  tensor.def_prop_ro("dtype", [](const Tensor& t) { return dtype_object(t.dtype()); })
      .def_prop_ro("_dims",
                   [](const Tensor& t) -> nb::object {
                     if (!t.shape().rank_known()) return nb::none();
                     nb::list l;
                     for (int64_t d : t.shape().dims())
                       l.append(d < 0 ? nb::none() : nb::object(nb::int_(d)));
                     return nb::tuple(l);
                   })
      .def_prop_ro("ndim",
                   [](const Tensor& t) -> nb::object {
                     return t.shape().rank_known() ? nb::object(nb::int_(t.rank())) : nb::none();
                   })
      .def_prop_ro("is_symbolic", &Tensor::is_symbolic,
                   "True for a tensor of a function being traced (it has no value).")
      .def_prop_ro("name",
                   [](const Tensor& t) {
                     if (!t.is_symbolic())
                       throw nb::attribute_error(
                           "Tensor.name is undefined when eager execution is enabled.");
                     return t.symbol()->tensor_name(t.output_index());
                   })
      .def_prop_ro(
          "device",
          [](const Tensor&) { return std::string("/job:localhost/replica:0/task:0/device:CPU:0"); })
      .def("__len__",
           [](const Tensor& t) {
             if (!t.shape().rank_known() || t.rank() == 0 || t.dim(0) < 0)
               throw nb::type_error(
                   str_cat("len is not well defined for a tensor of shape ", t.shape().to_string())
                       .c_str());
             return t.dim(0);
           })
      .def("__iter__",
           [](const Tensor& t) {
             if (t.is_symbolic())
               graph_error(t, "Iterating over it",
                           "Use `for x in t` inside a kiln.function with autograph=True (the "
                           "default), or kiln.unstack when the length is known.");
             if (t.rank() == 0) throw nb::type_error("Cannot iterate over a scalar tensor.");
             if (t.rank() == 1 && unseen_eager_unstack(t)) return iterate_scalars(t);
             nb::list items;
             if (t.dim(0) > 0)
               for (Tensor& x : unstack(t, 0)) items.append(wrap(std::move(x)));
             return items.attr("__iter__")();
           })
      .def("__hash__",
           [](const Tensor&) -> Py_hash_t {
             throw nb::type_error(
                 "Tensor is unhashable (== compares values). Instead, use tensor.ref() as the "
                 "key.");
           })
      .def("__dlpack_device__", [](const Tensor&) { return nb::make_tuple(1, 0); })
      .def(
          "__dlpack__",
          [](const Tensor& t, nb::kwargs kw) {
            return tensor_numpy(t, false).attr("__dlpack__")(**kw);
          },
          "DLPack export (zero-copy, read-only, CPU).");
  add_operators(tensor);
  tensor.attr("__array_priority__") = 100;
}

// as_dtype, constant, convert_to_tensor.
void bind_conversions(nb::module_& m) {
  m.def("_dtype", [](int e) { return dtype_object(static_cast<DType>(e)); });
  m.def(
      "as_dtype", [](nb::handle h) { return dtype_object(to_dtype(h)); },
      "Converts a name, NumPy dtype or kiln DType to a kiln DType.");
  m.def(
      "constant",
      [](nb::handle value, nb::handle dtype, nb::handle shape, nb::handle) {
        DType dt = to_dtype_or_none(dtype);
        Tensor t = to_tensor(value, DType::kInvalid, "constant");
        if (dt != DType::kInvalid && t.dtype() != dt) {
          if (is_tensor(value) || is_variable(value)) {
            t = cast(t, dt);
          } else {
            t = to_tensor(value, dt, "constant");
          }
        }
        if (!shape.is_none()) {
          std::vector<int64_t> dims;
          for (nb::handle d : shape) dims.push_back(nb::cast<int64_t>(d));
          Shape s(dims);
          if (t.num_elements() == 1 && s.num_elements() != 1)
            t = broadcast_to(reshape(t, std::vector<int64_t>{}), s);
          else
            t = reshape(t, s);
        }
        return wrap(t);
      },
      nb::arg("value"), nb::arg("dtype").none() = nb::none(), nb::arg("shape").none() = nb::none(),
      nb::arg("name").none() = nb::none(),
      "Creates a tensor from a Python value, nested list or NumPy array (tf.constant).");
  m.def(
      "convert_to_tensor",
      [](nb::handle value, nb::handle dtype, nb::handle dtype_hint, nb::handle) {
        DType dt = to_dtype_or_none(dtype);
        if (dt == DType::kInvalid && !dtype_hint.is_none() && !is_tensor(value) &&
            !is_variable(value)) {
          try {
            return wrap(to_tensor(value, to_dtype(dtype_hint), "convert_to_tensor"));
          } catch (nb::builtin_exception&) {
          }
        }
        return wrap(to_tensor(value, dt, "convert_to_tensor"));
      },
      nb::arg("value"), nb::arg("dtype").none() = nb::none(),
      nb::arg("dtype_hint").none() = nb::none(), nb::arg("name").none() = nb::none(),
      "Converts a value to a Tensor (tf.convert_to_tensor).");
}

}  // namespace

void bind_tensor(nb::module_& m) {
  bind_dtype(m);
  bind_tensor_class(m);
  bind_conversions(m);
}

void add_tensor_operators(nb::class_<Variable>& cls) {
  add_operators(cls);
}

}  // namespace kiln::py
