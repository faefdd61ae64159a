"""Argument conversion shared by the op wrappers (not public API)."""
import numpy as np

from kiln import _kiln
from kiln import errors
from kiln.ops.core import is_tensor
from kiln.tensor_shape import TensorShape

raw = _kiln.raw
Tensor = _kiln.Tensor
Variable = _kiln.Variable

INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1
_NP_KINDS = ("bool", "int8", "uint8", "int32", "int64", "float32", "float64")


def int_array(vals, dtype="int32"):
    """An int32/int64 tensor of a (possibly empty, possibly nested) list of ints."""
    return _kiln.convert_to_tensor(np.asarray(vals, dtype=_kiln.as_dtype(dtype).name))


_CONST_INTS = {}


def const_ints(vals, dtype="int32"):
    """A 1-D int tensor of a flat list of Python ints, cached: tensors are
    immutable and small shape/slice constants repeat (converting a list costs
    microseconds, a dict lookup nanoseconds)."""
    key = (str(dtype), tuple(vals))
    t = _CONST_INTS.get(key)
    if t is None:
        if len(_CONST_INTS) >= 4096:
            _CONST_INTS.clear()
        t = _CONST_INTS[key] = int_array(vals, dtype)
    return t


def tensor(x, dtype=None, op=None):
    """x as a Tensor (Variables are read); dtype, if given, must match a tensor
    and is used to convert a Python value."""
    if dtype is None and type(x) is Tensor:  # the common case, without the checks below
        return x
    if dtype is not None:
        dtype = _kiln.as_dtype(dtype)
    if isinstance(x, Variable):
        x = x.read_value()
    if isinstance(x, Tensor):
        if dtype is not None and x.dtype != dtype:
            raise errors.InvalidArgumentError(
                f"{op or 'convert_to_tensor'}: expected a {dtype.name} tensor, got "
                f"{x.dtype.name}")
        return x
    if isinstance(x, (np.generic, np.ndarray)) and x.ndim == 0 and x.dtype.name in _NP_KINDS:
        # 0-d NumPy values keep their dtype and stay scalars.
        return _kiln.convert_to_tensor(x.item(), dtype=dtype or x.dtype.name)
    return _kiln.convert_to_tensor(x, dtype=dtype)


# Composite tensors (kiln.RaggedTensor, kiln.SparseTensor) register handlers here: an op
# whose argument failed to convert (a TypeError) asks them before re-raising. Each handler
# takes (fn, args) and returns the result or NotImplemented; fn._kiln_kind says what fn is.
DISPATCHERS = []


def dispatch(fn, *args):
    """fn(*args) computed by a composite tensor's handler, or NotImplemented."""
    for handler in DISPATCHERS:
        out = handler(fn, args)
        if out is not NotImplemented:
            return out
    return NotImplemented


def pair(x, y, op):
    """Converts two operands as TensorFlow's binary ops do: a Python value takes
    the dtype of the tensor operand."""
    if type(x) is Tensor and type(y) is Tensor:  # nothing to convert
        return x, y
    if is_tensor(x) and not is_tensor(y):
        x = tensor(x)
        return x, tensor(y, x.dtype, op)
    if is_tensor(y) and not is_tensor(x):
        y = tensor(y)
        return tensor(x, y.dtype, op), y
    if not is_tensor(x):
        # Two Python values: the first fixes the dtype, as TensorFlow converts them
        # (tf.maximum(0., [1, -1]) is float32); one that cannot take it keeps its own,
        # and the op then names both dtypes.
        x = tensor(x)
        try:
            return x, tensor(y, x.dtype, op)
        except (TypeError, ValueError):
            return x, tensor(y)
    return tensor(x), tensor(y)


def check_same_dtype(op, **named):
    """InvalidArgumentError naming op and both dtypes when tensors disagree."""
    items = list(named.items())
    first_name, first = items[0]
    for name, t in items[1:]:
        if t.dtype != first.dtype:
            raise errors.InvalidArgumentError(
                f"{op}: dtype mismatch: {first_name} is {first.dtype.name} but {name} is "
                f"{t.dtype.name} (kiln does not promote dtypes implicitly; use cast)")


def int_list(value, what, op):
    """A constant list of Python ints from an int, list/tuple or eager tensor
    (attribute-like arguments: axes, perm, sizes)."""
    if value is None:
        return None
    # The common case, a list or tuple of plain ints, without the checks below
    # (a loop, not all() over a generator: this runs once per op call).
    if type(value) is list or type(value) is tuple:
        for v in value:
            if type(v) is not int:
                break
        else:
            return list(value)
    if isinstance(value, Variable):
        value = value.read_value()
    if isinstance(value, Tensor):
        if value.is_symbolic:
            raise TypeError(f"{op}: {what} must be a constant (a Python int or list of ints); "
                            "this tensor is only known when the function runs")
        if not value.dtype.is_integer:
            raise TypeError(f"{op}: {what} must be integers, got a {value.dtype.name} tensor")
        return [int(v) for v in value.numpy().ravel()]
    if isinstance(value, bool):
        raise TypeError(f"{op}: {what} must be an int or a list of ints, got {value!r}")
    if hasattr(value, "__index__") and not isinstance(value, (list, tuple)):
        return [int(value.__index__())]
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            nested = isinstance(v, (Tensor, Variable, list, tuple)) or hasattr(v, "tolist")
            out.extend(int_list(v, what, op) if nested else [_one_int(v, what, op)])
        return out
    if hasattr(value, "tolist"):  # NumPy arrays
        return int_list(value.tolist(), what, op)
    raise TypeError(f"{op}: {what} must be an int or a list of ints, got {value!r}")


def _one_int(v, what, op):
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise TypeError(f"{op}: {what} must be an int or a list of ints, got {v!r}")
    return int(v.__index__())


def one_int(value, what, op):
    """A single constant Python int (an axis)."""
    vals = int_list(value, what, op)
    if len(vals) != 1:
        raise errors.InvalidArgumentError(f"{op}: {what} must be a single int, got {value!r}")
    return vals[0]


def shape_tensor(value, op, what="shape"):
    """A 1-D int32/int64 tensor from a shape-like value: a tensor, a TensorShape,
    or a list mixing Python ints and scalar tensors (packed)."""
    if isinstance(value, TensorShape):
        if value.rank is None or any(d is None for d in value.as_list()):
            raise errors.InvalidArgumentError(
                f"{op}: {what} {value} is not fully defined")
        value = value.as_list()
    if isinstance(value, Variable):
        value = value.read_value()
    if isinstance(value, Tensor):
        if not value.dtype.is_integer or value.dtype.size < 4:
            raise TypeError(f"{op}: {what} must be an int32 or int64 tensor, got "
                            f"{value.dtype.name}")
        return value
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, (Tensor, Variable)) for v in value):
            return pack_ints(list(value), op, what)
        vals = [_one_int(v, what, op) for v in value]
        big = any(v < INT32_MIN or v > INT32_MAX for v in vals)
        return const_ints(vals, "int64" if big else "int32")
    if hasattr(value, "__index__") and not isinstance(value, bool):
        return const_ints([int(value.__index__())])
    if hasattr(value, "tolist"):
        return shape_tensor(value.tolist(), op, what)
    raise TypeError(f"{op}: {what} must be a list of ints or an int tensor, got {value!r}")


def pack_ints(parts, op, what):
    """One 1-D int tensor from Python ints and scalar int tensors (int64 when any
    part is int64 or out of int32 range, else int32)."""
    tensors = [tensor(p) if isinstance(p, (Tensor, Variable)) else None for p in parts]
    for t in tensors:
        if t is not None and (not t.dtype.is_integer or t.dtype.size < 4):
            raise TypeError(f"{op}: {what} entries must be int32 or int64 scalars, got a "
                            f"{t.dtype.name} tensor")
        if t is not None and t.ndim not in (0, None):
            raise errors.InvalidArgumentError(
                f"{op}: {what} entries must be scalars, got a tensor of shape {t.shape}")
    wide = any(t is not None and t.dtype.size == 8 for t in tensors) or any(
        t is None and not (INT32_MIN <= _one_int(p, what, op) <= INT32_MAX)
        for p, t in zip(parts, tensors))
    dtype = _kiln.as_dtype("int64" if wide else "int32")
    items = []
    for p, t in zip(parts, tensors):
        if t is None:
            items.append(_kiln.convert_to_tensor(_one_int(p, what, op), dtype=dtype))
        else:
            items.append(t if t.dtype == dtype else raw.Cast(t, DstT=dtype))
    if not items:
        return int_array([], dtype)
    return raw.Pack(items, axis=0)


def static_rank(t, op):
    """The rank of t, or an error when it is unknown while tracing."""
    r = t.ndim
    if r is None:
        raise errors.InvalidArgumentError(f"{op}: the rank of the input must be known")
    return r


def normalize_axis(axis, rank, op):
    if axis < -rank or axis >= rank:
        raise errors.InvalidArgumentError(
            f"{op}: axis {axis} is out of range for rank {rank} (expected [{-rank}, {rank}))")
    return axis + rank if axis < 0 else axis


def zero_of(dtype):
    """A scalar zero (False, b'') of dtype."""
    dtype = _kiln.as_dtype(dtype)
    if dtype == _kiln.as_dtype("string"):
        return _kiln.convert_to_tensor("")
    if dtype.is_bool:
        return _kiln.convert_to_tensor(False)
    return _kiln.convert_to_tensor(0, dtype=dtype)


def one_of(dtype, op="ones"):
    dtype = _kiln.as_dtype(dtype)
    if dtype == _kiln.as_dtype("string"):
        raise errors.InvalidArgumentError(f"{op}: strings have no 'one'")
    if dtype.is_bool:
        return _kiln.convert_to_tensor(True)
    return _kiln.convert_to_tensor(1, dtype=dtype)
