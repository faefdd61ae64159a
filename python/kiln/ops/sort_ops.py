"""Sorting and selection: tf.math.top_k, tf.sort, tf.argsort over the TopKV2 op."""
import collections

from kiln import _kiln
from kiln import errors
from kiln.ops import _helpers as h

raw = h.raw


def top_k(input, k=1, sorted=True, index_type="int32", name=None):  # noqa: A002
    """The k largest entries of the last dimension and their indices (tf.math.top_k):
    largest first, ties by lower index, NaN above every number."""
    if _kiln.as_dtype(index_type).name != "int32":
        raise TypeError(f"top_k: index_type must be int32, got {index_type}")
    x = h.tensor(input)
    kt = h.tensor(k) if h.is_tensor(k) else _kiln.convert_to_tensor(
        h.one_int(k, "k", "TopKV2"), dtype="int32")
    values, indices = raw.TopKV2(x, kt, sorted=bool(sorted))
    return TopKV2(values, indices)


# top_k's result, as TensorFlow's: a (values, indices) named tuple.
TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


def _to_last(x, axis, op):
    """x with `axis` moved to the end, and the permutation that moves it back."""
    if x.ndim is None:
        raise errors.InvalidArgumentError(f"{op}: the input needs a known rank")
    if x.ndim == 0:
        raise errors.InvalidArgumentError(f"{op}: the input must have rank >= 1, got a scalar")
    a = h.one_int(axis, "axis", op)
    if not -x.ndim <= a < x.ndim:
        raise errors.InvalidArgumentError(
            f"{op}: axis {a} is out of range for a tensor of rank {x.ndim}")
    a %= x.ndim
    if a == x.ndim - 1:
        return x, None
    perm = list(range(x.ndim))
    perm[a], perm[-1] = perm[-1], perm[a]
    return raw.Transpose(x, perm=perm), perm


def _sort(values, axis, direction, op, want_indices):
    x = h.tensor(values)
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"{op}: direction must be 'ASCENDING' or 'DESCENDING', got "
                         f"{direction!r}")
    if not (x.dtype.is_integer or x.dtype.is_floating):
        raise TypeError(f"{op}: values must be numeric, got {x.dtype.name}")
    y, perm = _to_last(x, axis, op)
    n = y.shape[-1]
    k = _kiln.convert_to_tensor(n, dtype="int32") if n is not None else raw.Cast(
        raw.GatherV2(raw.Shape(y, out_type=_kiln.as_dtype("int32")),
                     _kiln.convert_to_tensor(y.ndim - 1, dtype="int32"), axis=0, batch_dims=0),
        DstT=_kiln.as_dtype("int32"))
    # Ascending is a descending sort of an order-reversing map: ~x for integers
    # (exact, no overflow at the minimum), -x for floats.
    flip = raw.Invert if x.dtype.is_integer else raw.Neg
    ascending = direction == "ASCENDING"
    vals, idx = raw.TopKV2(flip(y) if ascending else y, k, sorted=True)
    out = idx if want_indices else (flip(vals) if ascending else vals)
    return raw.Transpose(out, perm=perm) if perm else out


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """values sorted along axis (tf.sort). Ties keep their order; NaN sorts as the
    largest value in DESCENDING and, as in TensorFlow, first in ASCENDING."""
    return _sort(values, axis, direction, "sort", False)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The int32 indices that sort values along axis (tf.argsort); always stable."""
    return _sort(values, axis, direction, "argsort", True)


__all__ = ["sort", "argsort"]
