"""Tensor.__getitem__ for keys the C++ fast path does not take: scalar int
tensors (symbolic ones too, e.g. a while_loop counter) as indices or slice
bounds, NumPy integers. Builds one StridedSlice, as TensorFlow's slicing does.
A bool tensor/array key is a boolean mask (tf.boolean_mask); lists and int tensors
of rank > 0 ("fancy" indexing) are TypeErrors pointing to kiln.gather."""
import numpy as np

from kiln import _kiln
from kiln.ops._helpers import const_ints
from kiln.ops.array_ops import boolean_mask

_raw = _kiln.raw
Tensor, Variable = _kiln.Tensor, _kiln.Variable
_INT32 = (-(2 ** 31), 2 ** 31 - 1)
_VALID = ("Only integers, slices (`:`), ellipsis (`...`), kiln.newaxis (`None`) and scalar "
          "int32/int64 tensors are valid indices")


def _bad(item, why=""):
    return TypeError(f"{_VALID}, got {item!r}{why}")


def _part(v, item):
    """A slice bound or index: a Python int or a scalar int32/int64 tensor."""
    if isinstance(v, Variable):
        v = v.read_value()
    if isinstance(v, Tensor):
        if not v.dtype.is_integer or v.dtype.size < 4:
            raise _bad(item, f" (a {v.dtype.name} tensor)")
        if v.ndim not in (0, None):
            raise _bad(item, f" (a tensor of shape {v.shape}; use kiln.gather to pick "
                             "several elements)")
        return v
    if isinstance(v, bool):
        raise _bad(item)
    if hasattr(v, "__index__") and not isinstance(v, (list, tuple)):
        if hasattr(v, "ndim") and getattr(v, "ndim", 0) != 0:  # NumPy arrays
            raise _bad(item, " (use kiln.gather to pick several elements)")
        return int(v.__index__())
    raise _bad(item)


def _spec(key):
    """begin, end, strides (lists of ints / tensors) and the five masks."""
    if isinstance(key, list):
        raise TypeError(f"{_VALID}, got the list {key!r}: kiln does not do NumPy's list "
                        "('fancy') indexing; use kiln.gather")
    items = key if isinstance(key, tuple) else (key,)
    if len(items) > 64:
        raise ValueError(f"at most 64 index entries are supported, got {len(items)}")
    begin, end, strides = [], [], []
    masks = dict(begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0)
    for i, item in enumerate(items):
        bit = 1 << i
        b, e, s = 0, 0, 1
        if item is None:
            masks["new_axis_mask"] |= bit
        elif item is Ellipsis:
            if masks["ellipsis_mask"]:
                raise IndexError("an index can only have a single ellipsis ('...')")
            masks["ellipsis_mask"] |= bit
        elif isinstance(item, slice):
            if item.step is not None:
                s = _part(item.step, item)
                if isinstance(s, int) and s == 0:
                    raise ValueError("slice step cannot be zero")
            if item.start is None:
                masks["begin_mask"] |= bit
            else:
                b = _part(item.start, item)
            if item.stop is None:
                masks["end_mask"] |= bit
            else:
                e = _part(item.stop, item)
        else:
            b = _part(item, item)
            e = 0 if isinstance(b, Tensor) else (0 if b == -1 else b + 1)  # ignored when shrinking
            masks["shrink_axis_mask"] |= bit
        begin.append(b)
        end.append(e)
        strides.append(s)
    return begin, end, strides, masks


def _pack(parts, dtype):
    if all(isinstance(p, int) for p in parts):
        return const_ints(parts, dtype.name)
    items = []
    for p in parts:
        if isinstance(p, Tensor):
            items.append(p if p.dtype == dtype else _raw.Cast(p, DstT=dtype))
        else:
            items.append(_kiln.convert_to_tensor(p, dtype=dtype))
    return _raw.Pack(items, axis=0)


def _is_bool_mask(key):
    if isinstance(key, Variable):
        key = key.read_value()
    if isinstance(key, Tensor):
        return key.dtype.is_bool
    return isinstance(key, np.ndarray) and key.dtype == np.bool_


def getitem(tensor, key):
    """tensor[key] with TensorFlow's slicing rules; see the module docstring.
    A bool tensor/array key is a boolean mask, as in TensorFlow."""
    x = tensor.read_value() if isinstance(tensor, Variable) else tensor
    if _is_bool_mask(key):
        return boolean_mask(x, key)
    begin, end, strides, masks = _spec(key)
    parts = begin + end + strides
    wide = any(isinstance(p, Tensor) and p.dtype.size == 8 for p in parts) or any(
        isinstance(p, int) and not (_INT32[0] <= p <= _INT32[1]) for p in parts)
    dtype = _kiln.as_dtype("int64" if wide else "int32")
    if not begin:  # x[()]
        return _raw.Identity(x)
    return _raw.StridedSlice(x, _pack(begin, dtype), _pack(end, dtype), _pack(strides, dtype),
                             **masks)
