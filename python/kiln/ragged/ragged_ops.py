"""Ops on RaggedTensors: indexing, elementwise math over the flat values,
reductions over ragged dimensions (unsorted segment ops), concat/stack and
tf.ragged.range. kiln's math ops hand RaggedTensor arguments here (see
kiln.ops._helpers.dispatch)."""
import numpy as np

from kiln import _kiln, errors
from kiln.nest import swap_values
from kiln.ops import _helpers as h
from kiln.ops.array_ops import boolean_mask as dense_boolean_mask
from kiln.ops.math_ops import truediv
from kiln.ragged import _rows
from kiln.ragged.ragged_tensor import RaggedTensor

raw = _kiln.raw
Tensor = _kiln.Tensor
INT64 = _rows.INT64


def _gather(x, idx):
    return raw.GatherV2(x, idx, axis=0, batch_dims=0)


def _eager(*ts):
    return all(isinstance(t, Tensor) and not t.is_symbolic for t in ts)


# ---- row selection ----

def gather_rows(x, idx):
    """The rows idx of a Tensor or RaggedTensor (tf.gather along axis 0)."""
    if not isinstance(x, RaggedTensor):
        return _gather(x, idx)
    s = x.row_splits
    idx = _rows.cast(idx, s.dtype)
    return take_ranges(x, _gather(s, idx), _gather(s, raw.AddV2(idx, _rows.scalar(1, s.dtype))))


def take_ranges(rt, starts, limits):
    """A RaggedTensor whose row r is rt.values[starts[r]:limits[r]]."""
    idx, splits = _rows.gather_ranges(starts, limits)
    return RaggedTensor(gather_rows(rt.values, idx), splits)


def _contiguous(x, start, limit):
    """x[start:limit] along axis 0 (start and limit are scalar tensors)."""
    if not isinstance(x, RaggedTensor):
        return x[start:limit]
    s = x.row_splits[start:raw.AddV2(limit, _rows.scalar(1, limit.dtype))]
    return RaggedTensor(_contiguous(x.values, s[0], s[-1]), raw.Sub(s, s[0]))


def _index(v, what):
    """A Python int or a scalar integer tensor used as an index."""
    if isinstance(v, _kiln.Variable):
        v = v.read_value()
    if isinstance(v, Tensor):
        if not v.dtype.is_integer or v.ndim not in (0, None):
            raise TypeError(f"RaggedTensor indices must be ints or scalar int tensors, got {v}")
        return v
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise TypeError(f"RaggedTensor {what} must be an int, a slice or a scalar int tensor, "
                        f"got {v!r}")
    return int(v.__index__())


def getitem(rt, key):
    """rt[key] for ints, scalar int tensors and slices (ragged dims: step 1)."""
    items = key if isinstance(key, tuple) else (key,)
    for k in items:
        if k is Ellipsis or k is None or isinstance(k, (list, np.ndarray)):
            raise TypeError(f"kiln: RaggedTensor indexing takes ints, scalar int tensors and "
                            f"slices, got {k!r}")
    if not items:
        return rt
    first, rest = items[0], items[1:]
    if isinstance(first, slice):
        out = _slice_rows(rt, first)
        return _index_inner(out, rest) if rest else out
    row = _row(rt, _index(first, "index"))
    return row[rest] if rest else row


def _row(rt, i):
    s = rt.row_splits
    dt = s.dtype
    if isinstance(i, int):
        n = rt.shape[0]
        if n is not None and not -n <= i < n:
            raise errors.InvalidArgumentError(
                f"slice index {i} of dimension 0 out of bounds (the RaggedTensor has {n} rows)")
        start, limit = (s[i], s[i + 1]) if i >= 0 else (s[i - 1], s[i])
    else:
        i = _rows.cast(i, dt)
        i = raw.SelectV2(raw.Less(i, _rows.scalar(0, dt)), raw.AddV2(i, rt.nrows()), i)
        start, limit = _gather(s, i), _gather(s, raw.AddV2(i, _rows.scalar(1, dt)))
    return _contiguous(rt.values, start, limit)


def _slice_rows(rt, slc):
    if slc == slice(None):
        return rt
    s = rt.row_splits
    return take_ranges(rt, s[:-1][slc], s[1:][slc])


def _bound(v, lens, default):
    """A slice bound per row: v (negative from the row's end) clipped to [0, len]."""
    if v is None:
        return default
    dt = lens.dtype
    v = _rows.scalar(_index(v, "slice bounds"), dt)
    v = raw.SelectV2(raw.Less(v, _rows.scalar(0, dt)), raw.AddV2(lens, v),
                     raw.AddV2(raw.ZerosLike(lens), v))
    return raw.Minimum(raw.Maximum(v, _rows.scalar(0, dt)), lens)


def _index_inner(rt, rest):
    """rest applied to dimensions 1, 2, ... of rt (dimension 0 kept)."""
    k, more = rest[0], rest[1:]
    s = rt.row_splits
    lens, starts = _rows.lengths(s), s[:-1]
    if isinstance(k, slice):
        if k.step not in (None, 1):
            raise ValueError("kiln: slicing a ragged dimension supports step 1 only")
        out = rt
        if k != slice(None):
            b = _bound(k.start, lens, raw.ZerosLike(lens))
            e = raw.Maximum(_bound(k.stop, lens, lens), b)
            out = take_ranges(rt, raw.AddV2(starts, b), raw.AddV2(starts, e))
        if not more:
            return out
        v = out.values
        return out.with_values(_index_inner(v, more) if isinstance(v, RaggedTensor)
                               else v[(slice(None),) + more])
    j = _index(k, "index")
    dt = s.dtype
    jj = _rows.scalar(j, dt)
    jj = raw.SelectV2(raw.Less(jj, _rows.scalar(0, dt)), raw.AddV2(lens, jj),
                      raw.AddV2(raw.ZerosLike(lens), jj))
    ok = raw.LogicalAnd(raw.GreaterEqual(jj, _rows.scalar(0, dt)), raw.Less(jj, lens))
    if _eager(ok) and not bool(np.all(ok.numpy())):
        raise errors.InvalidArgumentError(f"slice index {j} of dimension 1 out of bounds "
                                          "(some rows are shorter)")
    picked = gather_rows(rt.values, raw.SelectV2(ok, raw.AddV2(starts, jj),
                                                 _rows.scalar(-1, dt)))
    if not more:
        return picked
    if isinstance(picked, RaggedTensor):
        return _index_inner(picked, more)
    return picked[(slice(None),) + more]


# ---- elementwise ----

def _same_partition(rts):
    """InvalidArgumentError unless the ragged tensors have the same row partitions."""
    first = rts[0].nested_row_splits
    for rt in rts[1:]:
        other = rt.nested_row_splits
        if len(other) != len(first):
            raise ValueError("Ragged tensors must have the same ragged_rank, got "
                             f"{len(first)} and {len(other)}")
        for a, b in zip(first, other):
            if _eager(a, b):
                same = a.shape == b.shape and np.array_equal(a.numpy(), b.numpy())
            else:
                same = a.shape.is_compatible_with(b.shape)
            if not same:
                raise errors.InvalidArgumentError("Inputs must have identical ragged splits")


def map_flat_values(op, *args, **kwargs):
    """op applied to the flat values of the RaggedTensors in args/kwargs (which need one
    row partition); the result keeps that partition (tf.ragged.map_flat_values)."""
    found, args2, kwargs2 = swap_values(RaggedTensor, lambda r: r.flat_values, args, kwargs)
    if not found:
        return op(*args, **kwargs)
    _same_partition(found)
    out = op(*args2, **kwargs2)
    return found[0].with_flat_values(out)


def binary(fn, x, y):
    """fn(x, y) with one or both a RaggedTensor: on the flat values, with a dense
    operand broadcast over the uniform inner dims (or per row, shaped [nrows, 1, ...])."""
    if isinstance(x, RaggedTensor) and isinstance(y, RaggedTensor):
        _same_partition([x, y])
        return x.with_flat_values(fn(x.flat_values, y.flat_values))
    rt, other = (x, y) if isinstance(x, RaggedTensor) else (y, x)
    t = h.tensor(other, None if h.is_tensor(other) else rt.dtype)
    flat = rt.flat_values
    inner = flat.ndim - 1  # the uniform inner dimensions
    lead = t.shape.as_list()[:t.ndim - inner] if t.ndim is not None else [None]
    if t.ndim is not None and t.ndim <= rt.shape.rank and all(d == 1 for d in lead):
        t = raw.Reshape(t, raw.Shape(t, out_type=INT64)[len(lead):])  # size-1 outer dims
    elif t.ndim == rt.shape.rank and rt.ragged_rank == 1 and t.shape[1] == 1:
        t = _gather(raw.Squeeze(t, squeeze_dims=[1]), rt.value_rowids())  # one value per row
    elif t.ndim is None or t.ndim > inner:
        raise ValueError(f"kiln: a RaggedTensor of shape {rt.shape} combines with scalars, "
                         f"tensors of its uniform inner dimensions, [nrows, 1, ...] tensors "
                         f"and RaggedTensors with its row partition; got shape {t.shape}")
    out = fn(flat, t) if rt is x else fn(t, flat)
    return rt.with_flat_values(out)


# ---- reductions ----

_SEGMENT = {"Sum": raw.UnsortedSegmentSum, "Max": raw.UnsortedSegmentMax,
            "Min": raw.UnsortedSegmentMin, "Prod": raw.UnsortedSegmentProd}


def _segment(op_name, data, ids, n):
    """The segment reduction of op_name (Any/All over int32)."""
    if op_name in ("Any", "All"):
        seg = raw.UnsortedSegmentMax if op_name == "Any" else raw.UnsortedSegmentMin
        out = seg(raw.Cast(data, DstT=_rows.INT32), ids, n)
        return raw.Greater(out, raw.ZerosLike(out))
    return _SEGMENT[op_name](data, ids, n)


def reduce(op_name, rt, axis=None, keepdims=False):
    """tf.reduce_<op>(rt, axis): a Tensor when no ragged dimension is left."""
    if op_name == "Mean":
        total = reduce("Sum", rt, axis, keepdims)
        ones = rt.with_flat_values(raw.OnesLike(rt.flat_values))
        count = reduce("Sum", ones, axis, keepdims)
        return truediv(total, count)
    if op_name in ("Any", "All") and not rt.dtype.is_bool:
        raise errors.InvalidArgumentError(f"{op_name}: input must be bool, got {rt.dtype.name}")
    rank = rt.shape.rank
    if axis is None:
        out = getattr(raw, op_name)(rt.flat_values, axis=[], keepdims=False)
        return raw.Reshape(out, h.const_ints([1] * rank)) if keepdims else out
    axes = sorted({h.normalize_axis(a, rank, op_name)
                   for a in h.int_list(axis, "axis", op_name)}, reverse=True)
    out = rt
    for a in axes:
        out = _reduce_axis(op_name, out, a, keepdims)
    return out


def _reduce_axis(op_name, x, axis, keepdims):
    if not isinstance(x, RaggedTensor):
        return getattr(raw, op_name)(x, axis=[axis], keepdims=bool(keepdims))
    if axis == 0:
        wrapped = RaggedTensor(x, _rows.vector([0, x.nrows()], x.row_splits.dtype))
        out = _reduce_axis(op_name, wrapped, 1, False)[0]
        return raw.ExpandDims(out, axis=0) if keepdims else out
    if axis >= 2:
        v = x.values
        if isinstance(v, RaggedTensor):
            return x.with_values(_reduce_axis(op_name, v, axis - 1, keepdims))
        return x.with_values(getattr(raw, op_name)(v, axis=[axis - 1], keepdims=bool(keepdims)))
    v = x.values
    s = x.row_splits
    if not isinstance(v, RaggedTensor):  # rows of values -> one slice per row
        out = _segment(op_name, v, _rows.rowids(s), x.nrows())
        return raw.ExpandDims(out, axis=1) if keepdims else out
    if keepdims:
        raise ValueError("kiln: keepdims=True is not supported when the result is ragged")
    if isinstance(v.values, RaggedTensor):
        raise ValueError("kiln: reducing over axis 1 supports ragged_rank <= 2")
    # Align the inner rows of each outer row by column: (outer row, column) segments.
    outer = _rows.rowids(s)
    vs = v.row_splits
    lens = raw.UnsortedSegmentMax(_rows.lengths(vs), outer, x.nrows())
    lens = raw.Maximum(lens, raw.ZerosLike(lens))
    splits = _rows.splits_from_lengths(lens)
    inner_ids = _rows.rowids(vs)
    seg = raw.AddV2(_gather(splits, _gather(outer, inner_ids)), _rows.column_ids(vs, inner_ids))
    return RaggedTensor(_segment(op_name, v.values, seg, splits[-1]), splits)


# ---- joining ----

def _as_ragged(x, ragged_rank, dtype):
    if isinstance(x, RaggedTensor):
        return x
    return RaggedTensor.from_tensor(h.tensor(x, None if h.is_tensor(x) else dtype),
                                    ragged_rank=ragged_rank)


def concat(values, axis=0):
    """RaggedTensors (dense tensors converted) joined along axis 0 or 1 (tf.concat)."""
    first = next(v for v in values if isinstance(v, RaggedTensor))
    rts = [_as_ragged(v, first.ragged_rank, first.dtype) for v in values]
    rank = first.shape.rank
    axis = h.normalize_axis(h.one_int(axis, "axis", "concat"), rank, "concat")
    _check_joinable(rts)
    if axis == 0:
        return _concat_rows(rts)
    if axis == 1:
        return _concat_columns(rts)
    raise ValueError("kiln: concat of RaggedTensors supports axis 0 and 1")


def _check_joinable(rts):
    first = rts[0]
    for rt in rts[1:]:
        if rt.ragged_rank != first.ragged_rank or rt.dtype != first.dtype:
            raise ValueError(f"ragged concat: inputs must have one dtype and ragged_rank; got "
                             f"{first.dtype.name}/{first.ragged_rank} and "
                             f"{rt.dtype.name}/{rt.ragged_rank}")
        if rt.row_splits.dtype != first.row_splits.dtype:
            raise ValueError("ragged concat: inputs must have one row_splits dtype")


def _concat_rows(rts):
    values = [rt.values for rt in rts]
    if isinstance(values[0], RaggedTensor):
        joined = _concat_rows(values)
    else:
        joined = raw.ConcatV2(values, axis=0)
    parts, offset = [rts[0].row_splits], rts[0].row_splits[-1]
    for rt in rts[1:]:
        parts.append(raw.AddV2(rt.row_splits[1:], offset))
        offset = raw.AddV2(offset, rt.row_splits[-1])
    return RaggedTensor(joined, raw.ConcatV2(parts, axis=0))


def _concat_columns(rts):
    """Row i of the result is row i of each input, one after another."""
    dt = rts[0].row_splits.dtype
    if _eager(*[rt.row_splits for rt in rts]):
        n = {int(rt.nrows().numpy()) for rt in rts}
        if len(n) > 1:
            raise errors.InvalidArgumentError(
                f"ragged concat along axis 1: inputs must have the same number of rows, got "
                f"{sorted(n)}")
    lens = [_rows.lengths(rt.row_splits) for rt in rts]
    total = lens[0]
    for ln in lens[1:]:
        total = raw.AddV2(total, ln)
    splits = _rows.splits_from_lengths(total)
    dest, before = [], raw.ZerosLike(total)
    for rt, ln in zip(rts, lens):
        ids = _rows.rowids(rt.row_splits)
        start = _gather(raw.AddV2(splits[:-1], before), ids)
        dest.append(raw.AddV2(start, _rows.column_ids(rt.row_splits, ids)))
        before = raw.AddV2(before, ln)
    dest = raw.ConcatV2(dest, axis=0)
    n = splits[-1]
    source = raw.UnsortedSegmentSum(_rows.positions(n, dt), dest, n)  # the inverse permutation
    joined = _concat_rows([RaggedTensor(rt.values, _rows.vector([0, rt.row_splits[-1]], dt))
                           for rt in rts]).values
    return RaggedTensor(gather_rows(joined, source), splits)


def stack(values, axis=0, name=None):
    """Tensors or RaggedTensors stacked along a new outer ragged dimension
    (tf.ragged.stack; axis 0 only)."""
    if h.one_int(axis, "axis", "ragged.stack") != 0:
        raise ValueError("kiln: ragged.stack supports axis=0 only")
    rts = [v for v in values if isinstance(v, RaggedTensor)]
    if not rts:
        ts = [h.tensor(v) for v in values]
        if ts[0].ndim == 1:
            lens = raw.Pack([_rows.dim(t, 0) for t in ts], axis=0)
            return RaggedTensor(raw.ConcatV2(ts, axis=0), _rows.splits_from_lengths(lens))
        rts = [RaggedTensor.from_tensor(ts[0])]
    items = [_as_ragged(v, rts[0].ragged_rank, rts[0].dtype) for v in values]
    _check_joinable(items)
    dt = items[0].row_splits.dtype
    lens = raw.Pack([rt.nrows() for rt in items], axis=0)
    return RaggedTensor(_concat_rows(items), _rows.cast(_rows.splits_from_lengths(lens), dt))


# ---- ranges ----

def range(starts, limits=None, deltas=1, dtype=None, name=None,  # noqa: A001
          row_splits_dtype=INT64):
    """Row i holds range(starts[i], limits[i], deltas[i]); scalars broadcast
    (tf.ragged.range)."""
    if limits is None:
        starts, limits = 0, starts
    vals = [starts, limits, deltas]
    if dtype is None:
        tensor = next((v for v in vals if h.is_tensor(v)), None)
        floats = any(isinstance(v, float) or (isinstance(v, (list, tuple)) and
                                              any(isinstance(e, float) for e in v)) for v in vals)
        dtype = tensor.dtype if tensor is not None else ("float32" if floats else "int32")
    dtype = _kiln.as_dtype(dtype)
    s, lim, d = (h.tensor(v, None if h.is_tensor(v) else dtype) for v in vals)
    one = raw.ZerosLike(raw.AddV2(raw.AddV2(s, lim), d))  # the broadcast shape
    s, lim, d = (raw.Reshape(raw.AddV2(v, one), h.const_ints([-1])) for v in (s, lim, d))
    if _eager(d) and bool(np.any(d.numpy() == 0)):
        raise errors.InvalidArgumentError("Requires delta != 0")
    if dtype.is_integer:
        sign = raw.Sign(d)
        size = raw.FloorDiv(raw.Sub(raw.AddV2(raw.Sub(lim, s), d), sign), d)
    else:
        size = raw.Ceil(raw.RealDiv(raw.Sub(lim, s), d))
    dt = _kiln.as_dtype(row_splits_dtype)
    lens = raw.Cast(raw.Maximum(size, raw.ZerosLike(size)), DstT=dt)
    splits = _rows.splits_from_lengths(lens)
    ids = _rows.rowids(splits)
    step = raw.Cast(_rows.column_ids(splits, ids), DstT=dtype)
    return RaggedTensor(raw.AddV2(_gather(s, ids), raw.Mul(step, _gather(d, ids))), splits)


def row_splits_to_segment_ids(splits, name=None, out_type=None):
    """The row of each value for a row-splits vector (tf.ragged.row_splits_to_segment_ids)."""
    s = h.tensor(splits)
    ids = _rows.rowids(s)
    return ids if out_type is None else _rows.cast(ids, _kiln.as_dtype(out_type))


def segment_ids_to_row_splits(segment_ids, num_segments=None, out_type=None, name=None):
    """Row splits for sorted segment ids (tf.ragged.segment_ids_to_row_splits)."""
    rt = RaggedTensor.from_value_rowids(raw.ZerosLike(h.tensor(segment_ids)), segment_ids,
                                        num_segments, validate=False)
    s = rt.row_splits
    return s if out_type is None else _rows.cast(s, _kiln.as_dtype(out_type))


def boolean_mask(data, mask, name=None):
    """The values of data where the (same-partition) mask is true, keeping the rows
    (tf.ragged.boolean_mask for a ragged data and mask)."""
    if not isinstance(data, RaggedTensor) or not isinstance(mask, RaggedTensor):
        return dense_boolean_mask(data, mask)
    _same_partition([data, mask])
    if data.ragged_rank != 1:
        raise ValueError("kiln: ragged.boolean_mask supports ragged_rank 1")
    keep = raw.Cast(mask.flat_values, DstT=data.row_splits.dtype)
    lens = raw.UnsortedSegmentSum(keep, data.value_rowids(), data.nrows())
    idx = raw.Squeeze(raw.Where(mask.flat_values), squeeze_dims=[1])
    return RaggedTensor(_gather(data.flat_values, idx), _rows.splits_from_lengths(lens))


RaggedTensor.__getitem__ = getitem
