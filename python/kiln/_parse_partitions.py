"""RaggedFeature partitions and SparseFeature index keys for tf.io.parse_example,
composed over the (values, row_splits) pairs that _ParseExampleVarLen gives per
feature, as TensorFlow's parsing_config does (_add_ragged_partition for one
Example, _add_batched_ragged_partition for a batch, sparse_merge).

`varlen(key, dtype)` parses one feature: its values and its per-example row
splits (int64)."""
import numbers

from kiln import _kiln, debugging
from kiln.ops import _helpers as h
from kiln.ragged import _rows
from kiln.ragged.ragged_tensor import RaggedTensor
from kiln.sparse import sparse_ops
from kiln.sparse.sparse_tensor import SparseTensor

raw = _kiln.raw
Tensor = _kiln.Tensor
_INT64 = _kiln.as_dtype("int64")


# ---- RaggedFeature ----

def ragged_feature(varlen, key, spec, batched):
    """A RaggedFeature's value: its values, partitioned innermost partition first."""
    dt = _kiln.as_dtype(spec.row_splits_dtype)
    values, splits = varlen(spec.value_key or key, spec.dtype)
    if not batched:
        out = values
        for p in reversed(spec.partitions):
            out = _partition_one(out, p, varlen, dt, spec.validate)
        return out
    out = RaggedTensor.from_row_splits(values, _rows.cast(splits, dt), validate=False)
    for p in reversed(spec.partitions):
        out = _partition_batch(out, p, varlen, spec.validate)
    return out


def _uniform(values, length, dt):
    """values (a Tensor or RaggedTensor) in rows of `length`."""
    if isinstance(values, Tensor):
        shape = raw.ConcatV2([h.const_ints([-1, length], "int64"),
                              raw.Shape(values, out_type=_INT64)[1:]], axis=0)
        return raw.Reshape(values, shape)
    n = values.nrows(out_type=dt)
    step = _rows.scalar(length, dt)
    stop = raw.AddV2(raw.Mul(raw.FloorDiv(n, step), step), _rows.scalar(1, dt))
    return RaggedTensor.from_row_splits(values, raw.Range(_rows.scalar(0, dt), stop, step),
                                        validate=False)


_ONE = {"RowSplits": RaggedTensor.from_row_splits, "RowLengths": RaggedTensor.from_row_lengths,
        "RowStarts": RaggedTensor.from_row_starts, "RowLimits": RaggedTensor.from_row_limits,
        "ValueRowIds": RaggedTensor.from_value_rowids}


def _kind(p):
    kind = type(p).__name__
    if kind not in _ONE and kind != "UniformRowLength":
        raise ValueError(f"Unhandled partition type {p!r}")
    return kind


def _partition_one(values, p, varlen, dt, validate):
    """One Example's values partitioned by p (its key's values, cast to dt)."""
    kind = _kind(p)
    if kind == "UniformRowLength":
        return _uniform(values, p.length, dt)
    part = _rows.cast(varlen(p.key, _INT64)[0], dt)
    return _ONE[kind](values, part, validate=validate)


def _partition_batch(rt, p, varlen, validate):
    """A batch's rt (rows: examples) with each example's values partitioned by p."""
    dt = rt.row_splits.dtype
    kind = _kind(p)
    if kind == "UniformRowLength":
        inner = _uniform(rt.values, p.length, dt)
        return RaggedTensor.from_row_splits(
            inner, raw.FloorDiv(rt.row_splits, _rows.scalar(p.length, dt)), validate=False)
    values, splits = varlen(p.key, _INT64)
    part = RaggedTensor(_rows.cast(values, dt), _rows.cast(splits, dt))
    if kind == "ValueRowIds":
        return _rowids_batch(rt, part, validate)
    if kind == "RowSplits":
        part = part[:, 1:]
    if kind == "RowLengths":
        return part.with_values(RaggedTensor.from_row_lengths(rt.values, part.values,
                                                              validate=validate))
    shifted = raw.AddV2(part.values, _repeat(rt.row_starts(), part))
    make = RaggedTensor.from_row_starts if kind == "RowStarts" else \
        RaggedTensor.from_row_limits
    return part.with_values(make(rt.values, shifted, validate=validate))


def _repeat(per_example, part):
    """per_example[i] once per value of example i of part."""
    return raw.GatherV2(per_example, part.value_rowids(), axis=0, batch_dims=0)


def _rowids_batch(rt, part, validate):
    dt = part.values.dtype
    ids = part.value_rowids()
    top = raw.UnsortedSegmentMax(raw.AddV2(part.values, _rows.scalar(1, dt)), ids,
                                 part.nrows())
    nrows = raw.Maximum(top, _rows.scalar(0, dt))  # rows of each example
    first = raw.Cumsum(nrows, axis=0, exclusive=True, reverse=False)
    shifted = raw.AddV2(part.values, raw.GatherV2(first, ids, axis=0, batch_dims=0))
    inner = RaggedTensor.from_value_rowids(rt.values, shifted,
                                           nrows=raw.Sum(nrows, axis=[0], keepdims=False),
                                           validate=validate)
    return RaggedTensor.from_row_lengths(inner, nrows, validate=validate)


# ---- SparseFeature ----

def _sizes(spec):
    """The index keys and sizes of a SparseFeature (sparse_merge's checks)."""
    if not spec.index_key:
        raise ValueError(f"Missing index_key for SparseFeature {spec}.")
    if isinstance(spec.index_key, str):
        if not isinstance(spec.size, (Tensor, numbers.Integral)):
            raise TypeError("vocab_size has to be a Tensor or Python int. Found "
                            f"{type(spec.size)}")
        return [spec.index_key], [spec.size]
    if isinstance(spec.size, (Tensor, numbers.Integral)) or not hasattr(spec.size, "__iter__"):
        raise TypeError("vocab_size has to be a list of Tensors or Python ints. Found "
                        f"{type(spec.size)}")
    sizes = list(spec.size)
    for d in sizes:
        if not isinstance(d, (Tensor, numbers.Integral)):
            raise TypeError(f"vocab_size has to be a list of Tensors or Python ints. Found "
                            f"{type(d)}")
    if len(sizes) != len(spec.index_key):
        raise ValueError("sp_ids and vocab_size have to have equal lengths.")
    return list(spec.index_key), sizes


def _size_vector(sizes):
    return raw.ConcatV2([raw.Reshape(_rows.cast(h.tensor(d), _INT64) if isinstance(d, Tensor)
                                     else _kiln.convert_to_tensor(int(d), dtype=_INT64),
                                     h.const_ints([1], "int64")) for d in sizes], axis=0)


def _check_counts(index, index_splits, values, splits, key, value_key):
    n, m = index.shape[0], values.shape[0]
    if n is not None and m is not None and n != m and not index.is_symbolic:
        raise ValueError(f"Dimensions {n} and {m} are not compatible")
    debugging.Assert(raw.All(raw.Equal(splits, index_splits), axis=[0]),
                     [f"SparseFeature: the numbers of {key!r} indices and "
                      f"{value_key!r} values differ"])


def sparse_feature(varlen, spec, batched, serialized):
    """A SparseFeature's SparseTensor: dense shape [batch] + sizes, one index
    column per index key, in row-major order unless already_sorted."""
    keys, sizes = _sizes(spec)
    values, splits = varlen(spec.value_key, spec.dtype)
    columns = []
    for k in keys:
        index, index_splits = varlen(k, _INT64)
        _check_counts(index, index_splits, values, splits, k, spec.value_key)
        columns.append(raw.ExpandDims(index, axis=1))
    shape = _size_vector(sizes)
    static = [int(d) if isinstance(d, numbers.Integral) else None for d in sizes]
    if batched:
        static.insert(0, serialized.shape[0])
        rows = RaggedTensor(values, splits).value_rowids()
        columns.insert(0, raw.ExpandDims(_rows.cast(rows, _INT64), axis=1))
        shape = raw.ConcatV2([raw.Shape(serialized, out_type=_INT64)[:1], shape], axis=0)
    indices = columns[0] if len(columns) == 1 else raw.ConcatV2(columns, axis=1)
    sp = SparseTensor(indices, values, shape, static)
    if not spec.already_sorted:
        sp = sparse_ops.reorder(sp)
    return SparseTensor(sp.indices, sp.values, shape, static)

