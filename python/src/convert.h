// Conversions between Python objects and kiln values, shared by every
// binding file: Python scalars / lists / NumPy arrays -> Tensor (TensorFlow's
// convert_to_tensor rules), Tensor -> Python, structured arguments <-> Value.
#pragma once
#include <nanobind/nanobind.h>

#include <optional>
#include <string>

#include "kiln/function.h"
#include "kiln/tensor.h"
#include "kiln/variable.h"

namespace kiln::py {
namespace nb = nanobind;

/// The Python face of a DType (kiln.float32, ...): one instance per dtype.
struct PyDType {
  DType dtype;
};
/// The singleton Python object for `dt`.
nb::object dtype_object(DType dt);
/// DType from a kiln DType, a NumPy dtype/type, or a name ("float32").
DType to_dtype(nb::handle h);
/// As above, kInvalid for None.
DType to_dtype_or_none(nb::handle h);

/// The Python face of a Variable. Kept as a separate class so Python
/// subclasses and attributes (trainable, name) work.
struct PyVariable {
  Variable var;
};

/// Whether `h` is a kiln Tensor / Variable.
bool is_tensor(nb::handle h);
bool is_variable(nb::handle h);

/// TensorFlow's convert_to_tensor: Tensor (checked against `dtype` when
/// given), Variable (read), Python bool/int/float/str/bytes, nested lists,
/// NumPy arrays and scalars. Without `dtype`, ints become int32 (int64 when
/// too large), floats float32, mixed int/float lists float32; NumPy arrays
/// keep their dtype. A value that does not fit `dtype` is a TypeError.
Tensor to_tensor(nb::handle h, DType dtype = DType::kInvalid, const char* what = "value");
/// Converts the operands of a binary op as TensorFlow does: a Python number
/// takes the other operand's dtype.
std::pair<Tensor, Tensor> to_tensor_pair(nb::handle a, nb::handle b, const char* op);

/// Wraps a Tensor as a Python kiln.Tensor.
nb::object wrap(Tensor t);

/// Python structure <-> Value. Objects that are not tensors, variables,
/// scalars, strings, None, specs or containers become opaque values keyed by
/// a process-unique id, held weakly where Python allows it.
Value to_value(nb::handle h);
nb::object from_value(const Value& v);

/// The numpy module (imported once).
nb::module_& numpy();

/// A Shape from None (unknown rank), a TensorShape, or a sequence of
/// int/None dims; and back to a kiln.TensorShape.
Shape to_shape(nb::handle h);
nb::object shape_object(const Shape& s);

/// The kiln.errors class name for a code ("InvalidArgumentError"), and back
/// (Code::kOk when the name is not one of them).
std::string error_class_name(Code c);
Code error_code_from_class_name(std::string_view name);

/// Marks a Python exception as already set (propagates through C++).
struct PythonErrorPending {};

}  // namespace kiln::py
