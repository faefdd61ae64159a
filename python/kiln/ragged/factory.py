"""tf.ragged.constant: a RaggedTensor from nested Python lists."""
import numpy as np

from kiln import _kiln
from kiln.ragged import _rows
from kiln.ragged.ragged_tensor import RaggedTensor

INT64 = _rows.INT64


def _is_list(x):
    return isinstance(x, (list, tuple)) or (isinstance(x, np.ndarray) and x.ndim > 0)


def _depths(pylist):
    """(scalar depth or None when there is no scalar, deepest list nesting); a
    ValueError when scalars sit at different depths."""
    if not _is_list(pylist):
        return 0, 0
    scalar, deepest = None, 1
    for child in pylist:
        s, d = _depths(child)
        if s is not None:
            if scalar is not None and scalar != s + 1:
                raise ValueError("all scalar values must have the same nesting depth")
            scalar = s + 1
        deepest = max(deepest, d + 1)
    return scalar, deepest


def _flatten_rows(values, ragged_rank):
    """The row splits of each ragged level and the values below the last one."""
    nested = []
    for _ in range(ragged_rank):
        splits, flat = [0], []
        for row in values:
            if not _is_list(row):
                raise ValueError(f"pylist has scalar values at depth {len(nested) + 1}, but "
                                 f"ragged_rank={ragged_rank} requires deeper scalars")
            splits.append(splits[-1] + len(row))
            flat.extend(row)
        nested.append(splits)
        values = flat
    return nested, values


def _inner_shape_of(item):
    if not _is_list(item):
        return ()
    return (len(item),) + (_inner_shape_of(item[0]) if len(item) else ())


def _check_inner(item, shape):
    if _is_list(item) != bool(shape) or (shape and shape[0] != len(item)):
        raise ValueError("inner values have inconsistent shape")
    if shape:
        for child in item:
            _check_inner(child, shape[1:])


def _default_inner_shape(pylist, ragged_rank):
    _, values = _flatten_rows(pylist, ragged_rank)
    shape = _inner_shape_of(values)
    _check_inner(values, shape)
    return shape[1:]


def _tensor(values, dtype, shape):
    """The values as a tensor of `shape` (an empty list takes dtype, default float32)."""
    if len(values):
        return _kiln.convert_to_tensor(values, dtype=dtype)
    dtype = dtype or _kiln.as_dtype("float32")
    np_type = object if dtype.name == "string" else dtype.name
    return _kiln.convert_to_tensor(np.zeros(shape, np_type), dtype=dtype)


def constant(pylist, dtype=None, ragged_rank=None, inner_shape=None, name=None,
             row_splits_dtype=INT64):
    """A RaggedTensor from a nested list of scalars (tf.ragged.constant). ragged_rank
    defaults to the nesting depth - 1 - len(inner_shape); with ragged_rank 0 (a scalar
    or a flat list) the result is a plain Tensor."""
    if isinstance(pylist, RaggedTensor):
        raise TypeError("pylist may not be a RaggedTensor")
    dtype = None if dtype is None else _kiln.as_dtype(dtype)
    splits_dtype = _kiln.as_dtype(row_splits_dtype)
    inner = None if inner_shape is None else tuple(int(d) for d in inner_shape)
    if not _is_list(pylist):
        if ragged_rank not in (None, 0) or inner:
            raise ValueError(f"Invalid pylist={pylist!r}: incompatible with "
                             f"ragged_rank={ragged_rank}")
        return _kiln.convert_to_tensor(pylist, dtype=dtype)
    if ragged_rank is not None and ragged_rank < 0:
        raise ValueError(f"Invalid ragged_rank={ragged_rank!r}: must be nonnegative")
    scalar, deepest = _depths(pylist)
    if scalar is not None:
        if deepest > scalar:
            raise ValueError(f"Invalid pylist={pylist!r}: empty list nesting is greater than "
                             "scalar value nesting")
        if ragged_rank is not None and deepest < ragged_rank:
            raise ValueError(f"Invalid pylist={pylist!r}, max depth smaller than "
                             f"ragged_rank={ragged_rank}")
    if inner is not None and ragged_rank is not None:
        want = ragged_rank + len(inner) + 1
        if (scalar is not None and want != scalar) or (scalar is None and want < deepest):
            raise ValueError(f"Invalid pylist={pylist!r}: incompatible with "
                             f"ragged_rank={ragged_rank} and dim(inner_shape)={len(inner)}")
    if ragged_rank == 0 or (ragged_rank is None and (
            deepest < 2 or (inner is not None and deepest - len(inner) < 2))):
        values = _kiln.convert_to_tensor(pylist, dtype=dtype)
        return values if inner is None else _kiln.raw.Reshape(
            values, _kiln.convert_to_tensor(np.asarray(inner, np.int64)))
    if inner is None:
        inner = () if ragged_rank is None else _default_inner_shape(pylist, ragged_rank)
    if ragged_rank is None:
        ragged_rank = max(1, (deepest if scalar is None else scalar) - 1 -
                          (len(inner) if scalar is not None else 0))
    nested, values = _flatten_rows(pylist, ragged_rank)
    if inner:
        _check_inner(values, (len(values),) + inner)
    out = _tensor(values, dtype, (len(values),) + inner)
    for splits in reversed(nested):
        out = RaggedTensor(out, _kiln.convert_to_tensor(np.asarray(splits, splits_dtype.name)))
    return out

