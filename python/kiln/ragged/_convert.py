"""Conversions between ragged, dense and sparse tensors (to_tensor, from_tensor,
to_sparse, from_sparse), as gathers over computed positions: they run eagerly and
traced, and gradients reach the values through the gathers."""
import numpy as np

from kiln import _kiln, errors
from kiln.ops import _helpers as h
from kiln.ragged import _rows
from kiln.ragged.ragged_tensor import RaggedTensor
from kiln.sparse.sparse_tensor import SparseTensor

raw = _kiln.raw
Tensor = _kiln.Tensor
INT64 = _rows.INT64


def _gather(x, idx):
    return raw.GatherV2(x, idx, axis=0, batch_dims=0)


def _shape_entries(shape, rank):
    """to_tensor's `shape` as a list of Python ints / None of length rank (or None)."""
    if shape is None:
        return None
    if isinstance(shape, Tensor):
        if shape.is_symbolic:
            raise ValueError("RaggedTensor.to_tensor: a shape tensor must be known when the "
                             "function is traced (pass a list of ints and None)")
        shape = [None if d < 0 else int(d) for d in shape.numpy().tolist()]
    dims = list(shape.as_list() if hasattr(shape, "as_list") else shape)
    if len(dims) != rank:
        raise ValueError(f"RaggedTensor.to_tensor: shape {dims} must have rank {rank}")
    return [None if d is None else int(d) for d in dims]


def _default(rt, default_value):
    if default_value is None:
        return h.zero_of(rt.dtype)
    d = h.tensor(default_value, None if h.is_tensor(default_value) else rt.dtype)
    if d.dtype != rt.dtype:
        raise TypeError(f"RaggedTensor.to_tensor: default_value is {d.dtype.name} but the "
                        f"values are {rt.dtype.name}")
    return d


def to_tensor(rt, default_value=None, shape=None):
    """rt as a dense tensor (RaggedTensor.to_tensor)."""
    dims = _shape_entries(shape, rt.shape.rank)
    return _to_dense(rt, _default(rt, default_value), dims)


def _to_dense(rt, default, dims):
    values = rt.values
    if isinstance(values, RaggedTensor):
        values = _to_dense(values, default, dims[1:] if dims else None)
    rows, cols = (dims[0], dims[1]) if dims else (None, None)
    return _densify(values, rt.row_splits, default, rows, cols)


def _densify(values, splits, default, out_rows, ncols):
    """The [rows, cols, *inner] tensor whose (r, c) slice is row r's value c, or the
    default past the row's end (rows and cols: the counts, or None for the bounding
    shape)."""
    dt = splits.dtype
    nrows = _rows.nrows(splits)
    rows = nrows if out_rows is None else _rows.scalar(out_rows, dt)
    cols = _rows.max_length(splits) if ncols is None else _rows.scalar(ncols, dt)
    r = raw.Minimum(_rows.positions(rows, dt), nrows)  # rows past the end: the empty row
    lens = raw.ConcatV2([_rows.lengths(splits), _rows.vector([0], dt)], axis=0)
    starts = raw.ExpandDims(_gather(splits, r), axis=1)
    c = raw.ExpandDims(_rows.positions(cols, dt), axis=0)
    valid = raw.Less(c, raw.ExpandDims(_gather(lens, r), axis=1))
    nvals = _rows.dim(values, 0, dt)
    idx = raw.SelectV2(valid, raw.AddV2(starts, c), nvals)  # nvals: the padding row
    inner = _rows.shape(values, INT64)[1:]
    pad = raw.BroadcastTo(_kiln.raw.Cast(default, DstT=values.dtype)
                          if default.dtype != values.dtype else default,
                          raw.ConcatV2([_rows.vector([1], INT64), inner], axis=0))
    out = _gather(raw.ConcatV2([values, pad], axis=0),
                  raw.Reshape(idx, _rows.vector([-1], INT64)))
    head = _rows.vector([_rows.cast(rows, INT64), _rows.cast(cols, INT64)], INT64)
    return raw.Reshape(out, raw.ConcatV2([head, inner], axis=0))


def from_tensor(tensor, lengths, padding, ragged_rank, splits_dtype):
    """RaggedTensor.from_tensor."""
    t = h.tensor(tensor)
    ragged_rank = h.one_int(ragged_rank, "ragged_rank", "from_tensor")
    rank = h.static_rank(t, "RaggedTensor.from_tensor")
    if not 0 < ragged_rank < rank:
        raise ValueError(f"ragged_rank must be greater than 0 and less than the tensor's "
                         f"rank ({rank}); got {ragged_rank}")
    if lengths is not None and padding is not None:
        raise ValueError("Specify lengths or padding, but not both")
    dt = splits_dtype
    nrows, ncols = _rows.dim(t, 0, dt), _rows.dim(t, 1, dt)
    flat = raw.Reshape(t, raw.ConcatV2([_rows.vector([-1], INT64), _rows.shape(t)[2:]], axis=0))
    if ragged_rank > 1:
        if lengths is not None or padding is not None:
            raise ValueError("kiln: from_tensor with lengths or padding supports ragged_rank=1 "
                             "only")
        inner = from_tensor(flat, None, None, ragged_rank - 1, dt)
        return RaggedTensor(inner, _uniform_splits(nrows, ncols))
    if lengths is None and padding is None:
        return RaggedTensor(flat, _uniform_splits(nrows, ncols))
    if padding is not None:
        lens = _unpadded_lengths(t, padding, dt)
    else:
        lens = _rows.cast(h.tensor(lengths) if h.is_tensor(lengths) else
                          _kiln.convert_to_tensor(np.asarray(lengths, np.int64)), dt)
        lens = raw.Minimum(raw.Maximum(lens, _rows.scalar(0, dt)), ncols)
    splits = _rows.splits_from_lengths(lens)
    ids = _rows.rowids(splits)
    idx = raw.AddV2(raw.Mul(ids, ncols), _rows.column_ids(splits, ids))
    return RaggedTensor(_gather(flat, idx), splits)


def _uniform_splits(nrows, ncols):
    dt = nrows.dtype
    n = raw.AddV2(nrows, _rows.scalar(1, dt))
    return raw.Mul(_rows.positions(n, dt), ncols)


def _unpadded_lengths(t, padding, dt):
    """Each row's length without its trailing padding (slices equal to `padding`)."""
    pad = h.tensor(padding, None if h.is_tensor(padding) else t.dtype)
    if pad.dtype != t.dtype:
        raise TypeError(f"from_tensor: padding is {pad.dtype.name} but the tensor is "
                        f"{t.dtype.name}")
    is_pad = raw.Equal(t, pad)
    if t.ndim > 2:
        is_pad = raw.All(is_pad, axis=list(range(2, t.ndim)), keepdims=False)
    ncols = _rows.dim(t, 1, dt)
    colnum = raw.AddV2(_rows.positions(ncols, dt), _rows.scalar(1, dt))  # 1-based columns
    last = raw.SelectV2(is_pad, raw.ZerosLike(colnum), colnum)
    zero_col = raw.Fill(_rows.vector([_rows.dim(t, 0), 1], INT64), _rows.scalar(0, dt))
    return raw.Max(raw.ConcatV2([zero_col, last], axis=1), axis=[1], keepdims=False)


def to_sparse(rt):
    """RaggedTensor.to_sparse: indices [row, col, ...] of every value, in row-major order."""
    inner = rt.values
    ids = _rows.cast(_rows.rowids(rt.row_splits), INT64)
    cols = _rows.cast(_rows.column_ids(rt.row_splits), INT64)
    outer = raw.Pack([ids, cols], axis=1)  # [nvals, 2]
    bound = _rows.cast(rt.bounding_shape(), INT64)
    if isinstance(inner, RaggedTensor):
        sp = to_sparse(inner)
        head = _gather(outer, sp.indices[:, 0])
        return SparseTensor(raw.ConcatV2([head, sp.indices[:, 1:]], axis=1), sp.values, bound)
    if inner.ndim == 1:
        return SparseTensor(outer, inner, bound)
    # Uniform inner dimensions: every element of each value slice is an entry.
    every = raw.Where(raw.Fill(_rows.shape(inner), _kiln.convert_to_tensor(True)))
    head = _gather(outer, every[:, 0])
    flat = raw.Reshape(inner, _rows.vector([-1], INT64))
    return SparseTensor(raw.ConcatV2([head, every[:, 1:]], axis=1), flat, bound)


def from_sparse(sp, splits_dtype):
    """RaggedTensor.from_sparse: a 2-D SparseTensor's rows (indices in row-major order)."""
    if not isinstance(sp, SparseTensor):
        raise TypeError(f"from_sparse expects a SparseTensor, got {type(sp).__name__}")
    if sp.shape.rank != 2:
        raise ValueError(f"from_sparse: the SparseTensor must have rank 2, got {sp.shape}")
    rows = sp.indices[:, 0]
    if _is_eager(sp.indices):
        idx = sp.indices.numpy()
        lin = idx[:, 0] * (int(sp.dense_shape.numpy()[1]) + 1) + idx[:, 1]
        if np.any(lin[1:] <= lin[:-1]):
            raise errors.InvalidArgumentError(
                "from_sparse: the SparseTensor's indices must be in row-major order without "
                "repeats (use kiln.sparse.reorder)")
    n = sp.dense_shape[0]
    lens = _rows.cast(raw.UnsortedSegmentSum(raw.OnesLike(rows), rows, n), splits_dtype)
    return RaggedTensor(sp.values, _rows.splits_from_lengths(lens))


def _is_eager(t):
    return isinstance(t, Tensor) and not t.is_symbolic


# ---- RaggedTensor's conversion methods ----

def _from_tensor_method(cls, tensor, lengths=None, padding=None, ragged_rank=1, name=None,
                        row_splits_dtype=INT64):
    """A ragged tensor from a dense one: every row whole, the first `lengths[i]` of row
    i, or row i without its trailing `padding` values (not both)."""
    return from_tensor(tensor, lengths, padding, ragged_rank, _kiln.as_dtype(row_splits_dtype))


def _from_sparse_method(cls, st_input, name=None, row_splits_dtype=INT64):
    """A ragged tensor from a 2-D SparseTensor whose indices are in row-major order (each
    row's values move to its start)."""
    return from_sparse(st_input, _kiln.as_dtype(row_splits_dtype))


def _to_tensor_method(self, default_value=None, name=None, shape=None):
    """A dense tensor: rows padded with default_value (zero) to the longest row, or
    padded/truncated to `shape` (a list; None entries are computed)."""
    return to_tensor(self, default_value, shape)


def _to_sparse_method(self, name=None):
    """A SparseTensor with the same values at [row, column, ...] indices."""
    return to_sparse(self)


RaggedTensor.from_tensor = classmethod(_from_tensor_method)
RaggedTensor.from_sparse = classmethod(_from_sparse_method)
RaggedTensor.to_tensor = _to_tensor_method
RaggedTensor.to_sparse = _to_sparse_method
