"""NumPy's dtypes and type promotion for kiln.experimental.numpy (TensorFlow's tnp rules:
`np.result_type` over the operands' dtypes, Python scalars weak; Python floats count as
float32 under `prefer_float32`). NumPy only decides dtypes here; kiln's ops compute."""
import numbers

import numpy as np

from kiln import _kiln

Tensor, Variable, DType = _kiln.Tensor, _kiln.Variable, _kiln.DType
raw = _kiln.raw

STATE = {"prefer_float32": False}

bool_ = np.bool_
int8, uint8, int16, uint16 = np.int8, np.uint8, np.int16, np.uint16
int32, uint32, int64, uint64 = np.int32, np.uint32, np.int64, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128
int_, float_, complex_ = np.int64, np.float64, np.complex128
object_, str_ = np.object_, np.str_
iinfo, finfo, issubdtype = np.iinfo, np.finfo, np.issubdtype


def is_prefer_float32():
    return STATE["prefer_float32"]


def set_prefer_float32(value):
    STATE["prefer_float32"] = bool(value)


def default_float():
    """The dtype Python floats become: float64, float32 under prefer_float32."""
    return _kiln.as_dtype("float32" if is_prefer_float32() else "float64")


def to_kiln(dtype):
    """A NumPy dtype (or type, name, kiln DType) as a kiln DType; TypeError for the dtypes
    kiln does not have (int16, uint16/32/64, ...)."""
    if isinstance(dtype, DType):
        return dtype
    d = np.dtype(dtype)
    if d.kind in "SUO":
        return _kiln.as_dtype("string")
    try:
        return _kiln.as_dtype(d.name)
    except (TypeError, ValueError):
        raise TypeError(f"kiln has no {d.name} dtype (NumPy's promotion asked for it)") from None


def _operand(x):
    """What np.result_type sees for x: a dtype for tensors and arrays, the value for Python
    scalars (weak), each element for lists."""
    if isinstance(x, (Tensor, Variable)):
        return np.dtype(x.dtype.as_numpy_dtype)
    if isinstance(x, DType):
        return np.dtype(x.as_numpy_dtype)
    if isinstance(x, bool) or isinstance(x, (np.generic, np.ndarray)):
        return x
    if isinstance(x, float) and is_prefer_float32():
        return np.float32(x)
    if isinstance(x, complex) and is_prefer_float32():
        return np.complex64(x)
    if isinstance(x, numbers.Number):
        return x
    if isinstance(x, type) or isinstance(x, np.dtype):
        return np.dtype(x)
    raise TypeError(f"Cannot determine the dtype of {x!r}")


def _operands(xs):
    out = []
    for x in xs:
        if isinstance(x, (list, tuple)):
            out.extend(_operands(x))
        else:
            out.append(_operand(x))
    return out


def result_type(*arrays_and_dtypes):
    """NumPy's result dtype of the operands (tnp.result_type), as a kiln DType."""
    ops = _operands(arrays_and_dtypes) or [np.asarray([])]
    return to_kiln(np.result_type(*ops))


def literal_dtype(value):
    """The dtype NumPy gives a Python literal (ints int64, floats float64 or float32 under
    prefer_float32), or a tensor's own dtype."""
    if isinstance(value, (Tensor, Variable)):
        return value.dtype
    arr = np.asarray(value)
    if arr.dtype == np.float64 and is_prefer_float32() and \
            not isinstance(value, (np.ndarray, np.generic)):
        return _kiln.as_dtype("float32")
    return to_kiln(arr.dtype)


def cast(x, dtype):
    """x (a tensor or a Python / NumPy value) as a tensor of kiln dtype `dtype`; Python ints
    out of the dtype's range wrap as TensorFlow's conversion does."""
    if isinstance(x, Variable):
        x = x.read_value()
    if isinstance(x, Tensor):
        return x if x.dtype == dtype else raw.Cast(x, DstT=dtype)
    try:
        return _kiln.convert_to_tensor(x, dtype=dtype)
    except (TypeError, ValueError):
        if dtype == _kiln.as_dtype("string"):
            raise
        return _kiln.convert_to_tensor(np.asarray(x).astype(dtype.as_numpy_dtype))


def is_float_like(dtype):
    return dtype.is_floating or dtype.is_complex
