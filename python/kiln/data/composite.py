"""Composite dataset elements: RaggedTensor and SparseTensor values, their
specs (tf.RaggedTensorSpec, tf.SparseTensorSpec, with TensorFlow's reprs) and
their encoding as component tensors, which is how they cross a traced map
function and a run-time pull.

A RaggedTensorSpec of ragged_rank 0 (a row of a ragged_rank 1 tensor) stands
for a plain Tensor, as in tf.data. Components: a ragged value is its flat
values then its row splits (outermost first); a sparse one its indices,
values and dense_shape. Batching, unbatching and row selection build kiln
ops, so they run eagerly and inside a kiln.function. ExtensionType elements
(kiln.data.extension) count as composites here: their Specs' components are
their tensors, and each of these functions hands them to it."""
import numpy as np

from kiln import _kiln, errors, nest
from kiln.data import extension
from kiln.ragged import _rows
from kiln.ragged.ragged_tensor import RaggedTensor
from kiln.sparse.sparse_tensor import SparseTensor
from kiln.tensor_shape import TensorShape

raw = _kiln.raw
Tensor, TensorSpec = _kiln.Tensor, _kiln.TensorSpec
_INT64 = _kiln.as_dtype("int64")


def _shape_text(shape):
    return f"TensorShape({shape.as_list()})" if shape.rank is not None else \
        "TensorShape(None)"


def _batched_shape(shape, n):
    return TensorShape([n]).concatenate(shape) if shape.rank is not None else TensorShape(None)


def _unbatched_shape(shape):
    return shape[1:] if shape.rank is not None else shape


def _merge_shape(a, b):
    return a.most_specific_compatible_shape(b)


class RaggedTensorSpec:
    """The type of a RaggedTensor element (tf.RaggedTensorSpec): shape (None
    for ragged dims), dtype, ragged_rank, row_splits_dtype."""

    def __init__(self, shape=None, dtype="float32", ragged_rank=None,
                 row_splits_dtype=_INT64, flat_values_spec=None):
        self.shape = TensorShape(shape)
        self.dtype = _kiln.as_dtype(dtype)
        if ragged_rank is None:
            if self.shape.rank is None:
                raise ValueError("Must specify ragged_rank or a shape with a known rank.")
            ragged_rank = self.shape.rank - 1
        self.ragged_rank = int(ragged_rank)
        if self.shape.rank is not None and self.ragged_rank >= max(self.shape.rank, 1):
            raise ValueError(f"Argument `ragged_rank` ({self.ragged_rank}) must be less "
                             f"than rank ({self.shape.rank}).")
        self.row_splits_dtype = _kiln.as_dtype(row_splits_dtype)

    @property
    def value_type(self):
        return RaggedTensor if self.ragged_rank > 0 else Tensor

    @classmethod
    def from_value(cls, value):
        if isinstance(value, RaggedTensor):
            return cls(value.shape, value.dtype, value.ragged_rank, value.row_splits.dtype)
        return cls(value.shape, value.dtype, 0)

    def _component_specs(self):
        r, shape = self.ragged_rank, self.shape
        if r == 0:
            return [TensorSpec(shape, self.dtype)]
        flat = TensorShape([None]).concatenate(shape[r + 1:]) if shape.rank is not None \
            else TensorShape(None)
        n = shape[0] if shape.rank is not None else None
        splits = [TensorShape([None if n is None or k else n + 1]) for k in range(r)]
        return [TensorSpec(flat, self.dtype)] + \
            [TensorSpec(s, self.row_splits_dtype) for s in splits]

    def _to_components(self, value):
        if self.ragged_rank == 0:
            return [value]
        return [value.flat_values] + list(value.nested_row_splits)

    def _from_components(self, parts):
        out = parts[0]
        for splits in reversed(parts[1:]):
            out = RaggedTensor(out, splits)
        return out

    def _batch(self, n):
        return RaggedTensorSpec(_batched_shape(self.shape, n), self.dtype, self.ragged_rank + 1,
                                self.row_splits_dtype)

    def _unbatch(self):
        return RaggedTensorSpec(_unbatched_shape(self.shape), self.dtype,
                                max(self.ragged_rank - 1, 0), self.row_splits_dtype)

    def _supertype(self, other):
        """The spec holding values of both, or None."""
        if not isinstance(other, RaggedTensorSpec) or (self.dtype, self.ragged_rank,
                                                       self.row_splits_dtype) != \
                (other.dtype, other.ragged_rank, other.row_splits_dtype) or \
                self.shape.rank != other.shape.rank:
            return None
        return RaggedTensorSpec(_merge_shape(self.shape, other.shape), self.dtype,
                                self.ragged_rank, self.row_splits_dtype)

    def is_compatible_with(self, other):
        if isinstance(other, (RaggedTensor, Tensor)):
            other = RaggedTensorSpec.from_value(other)
        return isinstance(other, RaggedTensorSpec) and \
            (self.dtype, self.ragged_rank, self.row_splits_dtype) == \
            (other.dtype, other.ragged_rank, other.row_splits_dtype) and \
            self.shape.is_compatible_with(other.shape)

    def __eq__(self, other):
        return isinstance(other, RaggedTensorSpec) and repr(self) == repr(other)

    def __hash__(self):
        return hash(repr(self))

    def __repr__(self):
        return (f"RaggedTensorSpec({_shape_text(self.shape)}, {self.dtype!r}, "
                f"{self.ragged_rank}, {self.row_splits_dtype!r})")


class SparseTensorSpec:
    """The type of a SparseTensor element (tf.SparseTensorSpec): its dense
    shape and dtype."""

    def __init__(self, shape=None, dtype="float32"):
        self.shape = TensorShape(shape)
        self.dtype = _kiln.as_dtype(dtype)

    @property
    def value_type(self):
        return SparseTensor

    @classmethod
    def from_value(cls, value):
        return cls(value.shape, value.dtype)

    def _component_specs(self):
        rank = self.shape.rank
        return [TensorSpec([None, rank], _INT64), TensorSpec([None], self.dtype),
                TensorSpec([rank], _INT64)]

    def _to_components(self, value):
        return [value.indices, value.values, value.dense_shape]

    def _from_components(self, parts):
        indices, values, dense_shape = parts
        static = None
        if dense_shape.is_symbolic and self.shape.rank is not None:
            static = tuple(self.shape.as_list())
        return SparseTensor(indices, values, dense_shape, static)

    def _batch(self, n):
        return SparseTensorSpec(_batched_shape(self.shape, n), self.dtype)

    def _unbatch(self):
        return SparseTensorSpec(_unbatched_shape(self.shape), self.dtype)

    def _supertype(self, other):
        if not isinstance(other, SparseTensorSpec) or self.dtype != other.dtype or \
                self.shape.rank != other.shape.rank:
            return None
        return SparseTensorSpec(_merge_shape(self.shape, other.shape), self.dtype)

    def is_compatible_with(self, other):
        if isinstance(other, SparseTensor):
            other = SparseTensorSpec.from_value(other)
        return isinstance(other, SparseTensorSpec) and self.dtype == other.dtype and \
            self.shape.is_compatible_with(other.shape)

    def __eq__(self, other):
        return isinstance(other, SparseTensorSpec) and repr(self) == repr(other)

    def __hash__(self):
        return hash(repr(self))

    def __repr__(self):
        return f"SparseTensorSpec({_shape_text(self.shape)}, {self.dtype!r})"


COMPOSITE_SPECS = (RaggedTensorSpec, SparseTensorSpec)


def is_composite_spec(spec):
    """Whether spec is a RaggedTensorSpec, a SparseTensorSpec or an ExtensionType's Spec."""
    return isinstance(spec, COMPOSITE_SPECS) or extension.is_spec(spec)


def is_composite_value(value):
    return isinstance(value, (RaggedTensor, SparseTensor)) or extension.is_value(value)


def spec_of_value(value):
    """The spec of a RaggedTensor, SparseTensor or ExtensionType value."""
    if isinstance(value, RaggedTensor):
        return RaggedTensorSpec.from_value(value)
    if extension.is_value(value):
        return extension.spec_of_value(value)
    return SparseTensorSpec.from_value(value)


def component_specs(spec):
    """The TensorSpecs of a composite spec's component tensors."""
    if extension.is_spec(spec):
        return extension.leaf_specs(spec)
    return spec._component_specs()


def to_components(spec, value):
    if extension.is_spec(spec):
        return extension.leaves(value)
    return spec._to_components(value)


def from_components(spec, parts):
    if extension.is_spec(spec):
        return extension.rebuild(spec, parts)
    return spec._from_components(parts)


def unbatch_spec(spec):
    """The spec of one row of a batched composite (TensorFlow's AttributeError for a
    plain ExtensionType)."""
    if extension.is_spec(spec):
        return extension.unbatch_spec(spec)
    return spec._unbatch()


# ---- rows: element i, elements [start, end) ----

def _i64(v):
    return _kiln.convert_to_tensor(v, dtype=_INT64)


def _keep(sp, mask):
    keep = raw.Squeeze(raw.Where(mask), squeeze_dims=[1])
    return raw.GatherV2(sp.indices, keep, axis=0), raw.GatherV2(sp.values, keep, axis=0)


def row(value, i):
    """Row i (an int64 scalar tensor or int) of a Tensor, RaggedTensor, SparseTensor or
    BatchableExtensionType."""
    if extension.is_value(value):
        return extension.row(value, lambda t: row(t, i))
    if isinstance(value, SparseTensor):
        i = _i64(i) if isinstance(i, int) else i
        indices, values = _keep(value, raw.Equal(value.indices[:, 0], i))
        shape = value.shape
        static = tuple(shape.as_list()[1:]) if shape.rank is not None else None
        return SparseTensor(indices[:, 1:], values, value.dense_shape[1:], static)
    if isinstance(value, RaggedTensor):
        return value[i]
    return raw.GatherV2(value, i, axis=0) if isinstance(i, Tensor) else value[i]


def rows(value, start, end):
    """Rows [start, end) (int64 scalar tensors) as a value of the same kind."""
    if extension.is_value(value):
        return extension.rows(value, lambda t: rows(t, start, end))
    if isinstance(value, SparseTensor):
        first = value.indices[:, 0]
        indices, values = _keep(value, raw.LogicalAnd(raw.GreaterEqual(first, start),
                                                      raw.Less(first, end)))
        shift = raw.ConcatV2([raw.Reshape(start, _i64([1])),
                              raw.ZerosLike(value.dense_shape[1:])], axis=0)
        shape = raw.ConcatV2([raw.Reshape(end - start, _i64([1])), value.dense_shape[1:]],
                             axis=0)
        return SparseTensor(raw.Sub(indices, shift), values, shape)
    if isinstance(value, RaggedTensor):
        s = value.row_splits
        dt = s.dtype
        return value[_rows.cast(start, dt):_rows.cast(end, dt)]
    return raw.GatherV2(value, raw.Range(start, end, _i64(1)), axis=0)


def nrows_tensor(value):
    """The number of rows as an int64 scalar tensor."""
    if extension.is_value(value):
        return nrows_tensor(extension.first_leaf(value))
    if isinstance(value, SparseTensor):
        return value.dense_shape[0]
    if isinstance(value, RaggedTensor):
        return value.nrows(out_type=_INT64)
    return raw.Shape(value, out_type=_INT64)[0]


def sized_leaves(values):
    """The values with each ExtensionType replaced by its tensors (whose first
    dimensions must agree when slicing)."""
    out = []
    for v in values:
        out += extension.leaves(v) if extension.is_value(v) else [v]
    return out


def nrows(value):
    """The number of rows of an eager value (a Python int)."""
    if extension.is_value(value):
        return nrows(extension.first_leaf(value))
    if isinstance(value, SparseTensor):
        return int(value.dense_shape.numpy()[0])
    if isinstance(value, RaggedTensor):
        return int(value.nrows().numpy())
    return int(value.shape[0])


# ---- batching ----

def _concat(parts, axis=0):
    return parts[0] if len(parts) == 1 else raw.ConcatV2(list(parts), axis=axis)


def _batch_ragged(spec, values):
    dt, r = spec.row_splits_dtype, spec.ragged_rank
    parts = [spec._to_components(v) for v in values]
    counts = [_rows.nrows(p[1]) if r else _rows.dim(p[0], 0, dt) for p in parts]
    splits = [_rows.splits_from_lengths(_rows.vector(counts, dt))]
    for k in range(1, r + 1):
        splits.append(_rows.splits_from_lengths(_concat([_rows.lengths(p[k]) for p in parts])))
    return spec._batch(None)._from_components([_concat([p[0] for p in parts])] + splits)


def _batch_sparse(values):
    cols = []
    for j, v in enumerate(values):
        n = raw.Shape(v.indices, out_type=_INT64)[:1]
        cols.append(raw.ConcatV2([raw.Fill(raw.ConcatV2([n, _i64([1])], axis=0), _i64(j)),
                                  v.indices], axis=1))
    shapes = raw.Pack([v.dense_shape for v in values], axis=0)
    dense = raw.ConcatV2([_i64([len(values)]), raw.Max(shapes, axis=[0], keepdims=False)],
                         axis=0)
    return SparseTensor(_concat(cols), _concat([v.values for v in values]), dense)


def batch(spec, values):
    """A list of values of a composite spec as one batched value (tf.data's
    batch: ragged gains an outer ragged dimension, sparse a batch dimension, a
    BatchableExtensionType's tensors one)."""
    if extension.is_spec(spec):
        return extension.batch(spec, values, stack)
    if isinstance(spec, SparseTensorSpec):
        return _batch_sparse(values)
    return _batch_ragged(spec, values)


def stack(spec, parts):
    """Values of one spec (a TensorSpec or a composite's) as one batched value; tensors
    must have one shape (tf.data's InvalidArgumentError)."""
    if is_composite_spec(spec):
        return batch(spec, parts)
    first = parts[0].shape
    for j, p in enumerate(parts[1:], 1):
        if p.shape != first:
            raise errors.InvalidArgumentError(
                "batch: cannot batch tensors with different shapes: the first element has "
                f"shape {first} and element {j} has shape {p.shape}")
    return raw.Pack(list(parts), axis=0)


# ---- NumPy ----

def to_numpy(value):
    """An element's NumPy value as as_numpy_iterator gives it: ragged as
    RaggedTensor.numpy(), sparse as its dense array (TensorFlow 2.21's)."""
    if isinstance(value, SparseTensor):
        dense = _zeros(value.dense_shape.numpy(), value.values.dtype)
        idx = value.indices.numpy()
        if idx.size:
            dense[tuple(idx.T)] = value.values.numpy()
        return dense
    return value.numpy()


def _zeros(shape, dtype):
    if dtype == _kiln.as_dtype("string"):  # (TensorFlow 2.21 fails here)
        return np.full(shape, b"", dtype=object)
    return np.zeros(shape, dtype=dtype.as_numpy_dtype)


# ---- checks ----

def supertype(a, b):
    """The spec of a concatenation's elements; TypeError as tf.data's."""
    if extension.is_spec(a):
        out = extension.supertype(a, b, _merge_tensor_specs)
    else:
        out = a._supertype(b) if is_composite_spec(a) else None
    if out is None:
        raise TypeError(f"Incompatible dataset elements:\n  {a} vs.   {b}")
    return out


def _merge_tensor_specs(a, b):
    return TensorSpec(_merge_shape(a.shape, b.shape), a.dtype)


def check_numpy(spec):
    """TensorFlow's TypeError for as_numpy_iterator() over ExtensionType elements."""
    for s in nest.flatten(spec):
        if extension.is_spec(s):
            raise TypeError("`tf.data.Dataset.as_numpy_iterator()` is not supported for "
                            f"datasets that produce values of type {s.value_type}")


def check_graph_batch(spec):
    """NotImplementedError for batches of ragged or sparse values built
    inside a kiln.function from elements computed there."""
    for s in nest.flatten(spec):
        if isinstance(s, COMPOSITE_SPECS):
            raise NotImplementedError(
                "batching ragged or sparse elements of a dataset made inside a kiln.function "
                "is not supported there; build the dataset outside the function (its batches "
                "are then pulled at run time) or batch from from_tensor_slices directly")
