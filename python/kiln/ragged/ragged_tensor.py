"""kiln.RaggedTensor: values partitioned into rows of different lengths (tf.RaggedTensor).

A RaggedTensor is (values, row_splits): `values` is a Tensor (or, for a ragged rank
above 1, another RaggedTensor) and row i is values[row_splits[i]:row_splits[i + 1]].
Everything is built from kiln ops, so ragged tensors work eagerly and inside a
kiln.function, pass into and out of one (see kiln._composite), and gradients flow to
the values. Conversions (from_tensor, to_tensor, to_sparse, from_sparse) are added by
kiln.ragged._convert and indexing by kiln.ragged.ragged_ops, which build on this module.
"""
import numpy as np

from kiln import _kiln, errors
from kiln._composite import CompositeTensor
from kiln.ops import _helpers as h
from kiln.ragged import _rows
from kiln.tensor_shape import TensorShape

raw = _kiln.raw
Tensor = _kiln.Tensor
INT64 = _rows.INT64
INT32 = _rows.INT32


def _is_eager_tensor(t):
    return isinstance(t, Tensor) and not t.is_symbolic


def convert_values(values, dtype=None):
    """values as a Tensor or RaggedTensor (Python lists become tensors)."""
    if isinstance(values, RaggedTensor):
        return values
    t = h.tensor(values, dtype)
    if t.ndim == 0:
        raise ValueError("RaggedTensor values must have rank >= 1, got a scalar")
    return t


def convert_partition(p, what, dtype_hint=INT64):
    """A row-partition tensor (row splits, lengths, ids): int32 or int64; Python
    values become dtype_hint (TensorFlow's int64 by default)."""
    if isinstance(p, (Tensor, _kiln.Variable)):
        p = h.tensor(p)
    else:
        p = _kiln.convert_to_tensor(np.asarray(p, dtype=_kiln.as_dtype(dtype_hint).name))
    if p.dtype not in (INT32, INT64):
        raise ValueError(f"{what} must have dtype int32 or int64, got {p.dtype.name}")
    if p.ndim is not None and p.ndim != 1:
        raise ValueError(f"{what} must be a vector (rank 1), got shape {p.shape}")
    return p


def _match_dtype(values, p, what):
    """p in the row-splits dtype of a ragged `values` (Python-made partitions are cast;
    tensors of another dtype are TensorFlow's ValueError)."""
    if not isinstance(values, RaggedTensor) or p.dtype == values.row_splits.dtype:
        return p
    raise ValueError(f"dtype mismatch: {what} is {p.dtype.name} but the values' row_splits "
                     f"are {values.row_splits.dtype.name} (use with_row_splits_dtype)")


def _check_eager(ok, what, message):
    if not ok:
        raise errors.InvalidArgumentError(
            f"Arguments to {what} do not form a valid RaggedTensor: {message}")


def _validate_splits(values, splits, what):
    """Eager checks of a row-splits vector against its values (TensorFlow's validate=True)."""
    if not (_is_eager_tensor(splits) and (isinstance(values, RaggedTensor) or
                                          _is_eager_tensor(values))):
        return
    s = splits.numpy()
    _check_eager(s.size >= 1, what, "row_splits must not be empty")
    _check_eager(s[0] == 0, what, f"row_splits[0] must be 0, got {s[0]}")
    _check_eager(bool(np.all(s[1:] >= s[:-1])), what, "row_splits must be sorted ascending")
    nvals = _nvals(values)
    if nvals is not None:
        _check_eager(s[-1] == nvals, what, f"row_splits[-1] = {s[-1]} must equal the number "
                                           f"of values, {nvals}")


def _nvals(values):
    if isinstance(values, RaggedTensor):
        return values.nrows().numpy() if values._is_eager() else None
    return values.shape[0] if values.ndim else None


class RaggedTensor(CompositeTensor):
    """A tensor with ragged dimensions (tf.RaggedTensor). Build one with
    kiln.ragged.constant or a from_* factory; rt.shape has None for ragged dims."""

    __slots__ = ()
    _fields = ("values", "row_splits")

    def __new__(cls, values, row_splits, internal=True):
        return tuple.__new__(cls, (values, row_splits))

    # ---- components ----

    @property
    def values(self):
        """The concatenated rows (a Tensor, or a RaggedTensor for ragged_rank > 1)."""
        return tuple.__getitem__(self, 0)

    @property
    def row_splits(self):
        """Row i is values[row_splits[i]:row_splits[i + 1]]."""
        return tuple.__getitem__(self, 1)

    @property
    def flat_values(self):
        """The innermost values: a Tensor."""
        v = self.values
        while isinstance(v, RaggedTensor):
            v = v.values
        return v

    @property
    def nested_row_splits(self):
        """The row splits of every ragged dimension, outermost first."""
        out, rt = [], self
        while isinstance(rt, RaggedTensor):
            out.append(rt.row_splits)
            rt = rt.values
        return tuple(out)

    def _kiln_nest_components(self):
        # tf.nest.flatten(rt, expand_composites=True): flat values, then splits outermost first.
        return [self.flat_values] + list(self.nested_row_splits)

    def _kiln_nest_rebuild(self, components):
        out = components[0]
        for splits in reversed(components[1:]):
            out = RaggedTensor(out, splits)
        return out

    @property
    def ragged_rank(self):
        """The number of ragged dimensions."""
        v = self.values
        return 1 + (v.ragged_rank if isinstance(v, RaggedTensor) else 0)

    @property
    def dtype(self):
        """The dtype of the values."""
        return self.flat_values.dtype

    @property
    def row_splits_dtype(self):
        return self.row_splits.dtype

    @property
    def shape(self):
        """The static shape: TensorShape([nrows, None, ...]) (None for ragged dims)."""
        n = self.row_splits.shape[0] if self.row_splits.shape.rank else None
        inner = self.values.shape
        inner = inner.as_list()[1:] if inner.rank is not None else []
        return TensorShape([None if n is None else n - 1, None] + inner)

    def get_shape(self):
        return self.shape

    @property
    def ndim(self):
        return self.shape.rank

    # ---- row partitions ----

    def row_lengths(self, axis=1, name=None):
        """The length of each row (axis=1), or of each row of dimension `axis` (a
        RaggedTensor when it is nested)."""
        axis = _inner_axis(self, axis, "row_lengths")
        if axis == 1:
            return _rows.lengths(self.row_splits)
        return self.with_values(self.values.row_lengths(axis - 1))

    def nrows(self, out_type=None, name=None):
        """The number of rows, a scalar (row_splits' dtype unless out_type)."""
        n = _rows.nrows(self.row_splits)
        return n if out_type is None else _rows.cast(n, _kiln.as_dtype(out_type))

    def row_starts(self, name=None):
        return self.row_splits[:-1]

    def row_limits(self, name=None):
        return self.row_splits[1:]

    def value_rowids(self, name=None):
        """The row of each value (a vector as long as values)."""
        return _rows.rowids(self.row_splits)

    def nested_row_lengths(self, name=None):
        return tuple(_rows.lengths(s) for s in self.nested_row_splits)

    def nested_value_rowids(self, name=None):
        return tuple(_rows.rowids(s) for s in self.nested_row_splits)

    def bounding_shape(self, axis=None, out_type=None, name=None):
        """The smallest dense shape that holds every row: [nrows, max length, ...]."""
        dt = _kiln.as_dtype(out_type) if out_type is not None else self.row_splits.dtype
        inner = self.values.bounding_shape(out_type=dt)[1:] if isinstance(
            self.values, RaggedTensor) else _rows.shape(self.values, dt)[1:]
        head = _rows.vector([_rows.cast(self.nrows(), dt),
                             _rows.cast(_rows.max_length(self.row_splits), dt)], dt)
        out = raw.ConcatV2([head, inner], axis=0)
        return out if axis is None else out[axis]

    # ---- new values ----

    def with_values(self, new_values):
        """The same outer row partition around new_values."""
        return RaggedTensor(convert_values(new_values), self.row_splits)

    def with_flat_values(self, new_values):
        """The same nested row partitions around new flat values."""
        if isinstance(self.values, RaggedTensor):
            return self.with_values(self.values.with_flat_values(new_values))
        return self.with_values(new_values)

    def with_row_splits_dtype(self, dtype):
        """This ragged tensor with row splits of dtype (int32 or int64)."""
        dtype = _kiln.as_dtype(dtype)
        v = self.values
        if isinstance(v, RaggedTensor):
            v = v.with_row_splits_dtype(dtype)
        return RaggedTensor(v, _rows.cast(self.row_splits, dtype))

    def _map_values(self, fn):
        return self.with_flat_values(fn(self.flat_values))

    # ---- factories ----

    @classmethod
    def from_row_splits(cls, values, row_splits, name=None, validate=True):
        """Rows values[row_splits[i]:row_splits[i + 1]]."""
        values = convert_values(values)
        hint = values.row_splits.dtype if isinstance(values, RaggedTensor) else INT64
        splits = _match_dtype(values, convert_partition(row_splits, "row_splits", hint),
                              "row_splits")
        if validate:
            _validate_splits(values, splits, "from_row_splits")
        return cls(values, splits)

    @classmethod
    def from_row_lengths(cls, values, row_lengths, name=None, validate=True):
        """Rows of the given lengths, taken in order from values."""
        values = convert_values(values)
        lens = _match_dtype(values, convert_partition(row_lengths, "row_lengths",
                                                      _splits_hint(values)), "row_lengths")
        if validate and _is_eager_tensor(lens) and np.any(lens.numpy() < 0):
            _check_eager(False, "from_row_lengths", "row_lengths must be >= 0")
        return cls.from_row_splits(values, _rows.splits_from_lengths(lens), validate=validate)

    @classmethod
    def from_row_starts(cls, values, row_starts, name=None, validate=True):
        """Rows starting at row_starts (each row ends where the next starts)."""
        values = convert_values(values)
        starts = convert_partition(row_starts, "row_starts", _splits_hint(values))
        nvals = _rows.cast(_rows.dim(values, 0) if isinstance(values, Tensor)
                           else values.nrows(), starts.dtype)
        return cls.from_row_splits(values, raw.ConcatV2([starts, _rows.vector([nvals],
                                                                               starts.dtype)],
                                                        axis=0), validate=validate)

    @classmethod
    def from_row_limits(cls, values, row_limits, name=None, validate=True):
        """Rows ending at row_limits (each row starts where the previous ends)."""
        values = convert_values(values)
        limits = convert_partition(row_limits, "row_limits", _splits_hint(values))
        zero = _rows.vector([0], limits.dtype)
        return cls.from_row_splits(values, raw.ConcatV2([zero, limits], axis=0),
                                   validate=validate)

    @classmethod
    def from_value_rowids(cls, values, value_rowids, nrows=None, name=None, validate=True):
        """Rows given by the (sorted) row index of each value; nrows defaults to
        max(value_rowids) + 1, and may add empty rows at the end."""
        values = convert_values(values)
        ids = convert_partition(value_rowids, "value_rowids", _splits_hint(values))
        dt = ids.dtype
        if nrows is None:
            nrows = _count_rows(ids)
        n = _rows.scalar(nrows, dt)
        if validate and _is_eager_tensor(ids):
            v, nr = ids.numpy(), int(n.numpy())
            ok = v.size == 0 or (np.all(v[1:] >= v[:-1]) and v[0] >= 0 and v[-1] < nr)
            _check_eager(ok, "from_value_rowids", "value_rowids must be sorted, >= 0 and "
                                                  "< nrows")
        lens = raw.UnsortedSegmentSum(raw.OnesLike(ids), ids, n)
        return cls.from_row_splits(values, _rows.splits_from_lengths(lens), validate=validate)

    @classmethod
    def from_nested_row_splits(cls, flat_values, nested_row_splits, name=None, validate=True):
        """A ragged tensor with one ragged dimension per row-splits vector (outermost first)."""
        if isinstance(nested_row_splits, Tensor):
            raise ValueError("nested_row_splits must be a list of tensors")
        out = flat_values
        for splits in reversed(list(nested_row_splits)):
            out = cls.from_row_splits(out, splits, validate=validate)
        return out

    @classmethod
    def from_nested_row_lengths(cls, flat_values, nested_row_lengths, name=None, validate=True):
        """A ragged tensor with one ragged dimension per row-lengths vector."""
        out = flat_values
        for lens in reversed(list(nested_row_lengths)):
            out = cls.from_row_lengths(out, lens, validate=validate)
        return out

    @classmethod
    def from_nested_value_rowids(cls, flat_values, nested_value_rowids, nested_nrows=None,
                                 name=None, validate=True):
        ids = list(nested_value_rowids)
        nrows = [None] * len(ids) if nested_nrows is None else list(nested_nrows)
        out = flat_values
        for i, n in reversed(list(zip(ids, nrows))):
            out = cls.from_value_rowids(out, i, n, validate=validate)
        return out

    # ---- conversion ----

    def to_list(self):
        """The value as nested Python lists (eager only)."""
        if not self._is_eager():
            raise ValueError("RaggedTensor.to_list() is only supported in eager mode; inside "
                             "a kiln.function, return the RaggedTensor and call to_list() on "
                             "the result.")
        values = self.values.to_list() if isinstance(self.values, RaggedTensor) else \
            self.values.numpy().tolist()
        s = self.row_splits.numpy().tolist()
        return [values[a:b] for a, b in zip(s[:-1], s[1:])]

    def numpy(self):
        """The value as NumPy: one array per row (an object array when the rows'
        lengths differ), as TensorFlow's RaggedTensor.numpy()."""
        if not self._is_eager():
            raise ValueError("RaggedTensor.numpy() is only supported in eager mode.")
        values = self.values.numpy()
        splits = self.row_splits.numpy()
        rows = [values[splits[i]:splits[i + 1]] for i in range(len(splits) - 1)]
        if not rows:
            return np.zeros((0, 0) + values.shape[1:], dtype=values.dtype)
        if any(len(row) != len(rows[0]) for row in rows):
            out = np.empty(len(rows), dtype=object)
            out[:] = rows
            return out
        return np.array(rows)  # object rows of one length too: a 2-D object array

    def _is_eager(self):
        return all(_is_eager_tensor(t) for t in (self.flat_values,) + self.nested_row_splits)

    def __repr__(self):
        if self._is_eager():
            with np.printoptions(formatter={"all": _formatter}):
                text = _formatter(self.numpy())
            return f"<kiln.RaggedTensor {text}>"
        return f"kiln.RaggedTensor(values={self.values}, row_splits={self.row_splits})"

    __str__ = __repr__

    def consumers(self):
        return []


def _formatter(x):
    """TensorFlow's ragged printing: NumPy's text with ', ' between elements."""
    if isinstance(x, np.ndarray):
        if x.size != 0:
            return np.array2string(x, separator=", ")
        return repr(x.tolist())
    return str(x)


def _count_rows(ids):
    """max(ids) + 1, or 0 for no ids."""
    dt = ids.dtype
    top = raw.Max(raw.ConcatV2([_rows.vector([-1], dt), ids], axis=0), axis=[0],
                  keepdims=False)
    return raw.AddV2(top, _rows.scalar(1, dt))


def _splits_hint(values):
    return values.row_splits.dtype if isinstance(values, RaggedTensor) else INT64


def _inner_axis(rt, axis, op):
    axis = h.one_int(axis, "axis", op)
    rank = rt.shape.rank
    if axis < 0:
        axis += rank
    if not 1 <= axis <= rt.ragged_rank:
        raise ValueError(f"{op}: axis={axis} must be a ragged dimension in [1, "
                         f"{rt.ragged_rank}]")
    return axis


def is_ragged(x):
    """True for a kiln.RaggedTensor."""
    return isinstance(x, RaggedTensor)
