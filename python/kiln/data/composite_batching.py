"""Dataset.ragged_batch and Dataset.sparse_batch (tf.data.experimental's
dense_to_ragged_batch / dense_to_sparse_batch): batches of elements of
different shapes as RaggedTensors or SparseTensors.

ragged_batch batches a component whose static shape is fully known densely;
one with unknown dimensions becomes a RaggedTensor whose ragged dimensions are
the batch's and those up to its last unknown one (tf.data's rule).
sparse_batch turns each batch of a one-component dataset into a SparseTensor
of dense shape [batch] + row_shape (unknown row dimensions: the batch's
largest), every value of every element listed.

Their element_spec holds the RaggedTensorSpec / SparseTensorSpec below
(kiln.data.composite, tf.data's reprs). The batches are produced eagerly; a
loop inside a kiln.function pulls them at run time."""
import numpy as np

from kiln import _kiln, errors, nest
from kiln.data import structure
from kiln.data.composite import RaggedTensorSpec, SparseTensorSpec
from kiln.data.dataset import DatasetV2, install_methods
from kiln.data.transforms import UnaryDataset, count_arg, element_groups, _stack
from kiln.ragged import RaggedTensor
from kiln.sparse import SparseTensor
from kiln.tensor_shape import TensorShape, as_shape

TensorSpec = _kiln.TensorSpec
_INT64 = _kiln.as_dtype("int64")


def _batch_size(batch_size, who):
    bs = count_arg(batch_size, "batch_size", who)
    if bs <= 0:
        raise errors.InvalidArgumentError("Batch size must be greater than zero.")
    return bs


def _card(parent, bs, drop):
    n = parent._card
    return n if n < 0 else (n // bs if drop else -(-n // bs))


# ---- ragged_batch ----

def _ragged_rank(spec):
    """The element's ragged rank before batching, or None to batch it densely."""
    if not isinstance(spec, TensorSpec) or spec.shape.rank is None or \
            spec.shape.is_fully_defined():
        return None
    return max(a for a, d in enumerate(spec.shape.as_list()) if d is None)


def _batched_spec(spec, lead, splits_dtype):
    rank = _ragged_rank(spec)
    if rank is None:
        return structure.relax_leading(spec, lead)
    return RaggedTensorSpec(TensorShape([lead]).concatenate(spec.shape), spec.dtype, rank + 1,
                            splits_dtype)


def _ragged(values, rank, spec, splits_dtype):
    """The rows (dense arrays) as one RaggedTensor with ragged_rank rank + 1."""
    arrays = [np.asarray(v.numpy()) for v in values]
    lengths = [[a.shape[0] for a in arrays]]
    for k in range(1, rank + 1):  # each row's dimension k, once per slice above it
        lengths.append([a.shape[k] for a in arrays for _ in range(int(np.prod(a.shape[:k])))])
    flat = np.concatenate([a.reshape((-1,) + a.shape[rank + 1:]) for a in arrays])
    lens = [structure.to_tensor(np.asarray(x, dtype=splits_dtype.as_numpy_dtype))
            for x in lengths]
    return RaggedTensor.from_nested_row_lengths(structure.to_tensor(flat, spec.dtype), lens)


class RaggedBatchDataset(UnaryDataset):
    _name = "RaggedBatchDataset"

    def __init__(self, parent, batch_size, drop_remainder, row_splits_dtype):
        bs, drop = _batch_size(batch_size, "ragged_batch"), bool(drop_remainder)
        self._splits = _kiln.as_dtype(row_splits_dtype)
        spec = nest.map_structure(lambda s: _batched_spec(s, bs if drop else None,
                                                          self._splits),
                                  parent.element_spec)
        super().__init__(parent, spec, _card(parent, bs, drop))
        self._bs, self._drop = bs, drop

    def _eager_iter(self):
        specs = nest.flatten(self._parent.element_spec)
        for items in element_groups(self._parent._eager_iter(), self._bs, self._drop):
            flats = [nest.flatten(x) for x in items]
            out = []
            for k, s in enumerate(specs):
                parts = [f[k] for f in flats]
                rank = _ragged_rank(s)
                out.append(_stack(parts, s) if rank is None else
                           _ragged(parts, rank, s, self._splits))
            yield nest.pack_sequence_as(self._spec, out)


# ---- sparse_batch ----

def _row_shape(row_shape):
    if isinstance(row_shape, (_kiln.Tensor, _kiln.Variable)):
        row_shape = structure.to_tensor(row_shape).numpy().tolist()
    dims = as_shape(row_shape).as_list() if not isinstance(row_shape, (list, tuple)) else \
        [None if d is None or int(d) < 0 else int(d) for d in row_shape]
    return TensorShape(dims)


def _fmt(dims):
    return "[" + ",".join(str(d) for d in dims) + "]"


class SparseBatchDataset(UnaryDataset):
    _name = "DenseToSparseBatchDataset"

    def __init__(self, parent, batch_size, row_shape):
        spec = parent.element_spec
        if nest.is_nested(spec):
            types = structure.format_structure(spec, lambda s: repr(s.dtype))
            raise TypeError("`dense_to_sparse_batch` requires an input dataset whose elements "
                            "have a single component, but the given dataset has the following "
                            f"component types: {types}.")
        bs = _batch_size(batch_size, "sparse_batch")
        self._row = _row_shape(row_shape)
        super().__init__(parent, SparseTensorSpec(TensorShape([None]).concatenate(self._row),
                                                  spec.dtype), _card(parent, bs, False))
        self._bs = bs

    def _check(self, a):
        want = self._row.as_list()
        if a.ndim != len(want):
            raise errors.InvalidArgumentError(
                f"Input element had shape ({_fmt(a.shape)}) that is incompatible with the row "
                f"shape ({_fmt(['-1' if d is None else d for d in want])}).")
        if any(d is not None and s > d for s, d in zip(a.shape, want)):
            raise errors.DataLossError(
                f"Input element had shape ({_fmt(a.shape)}) that is larger than the row shape "
                f"({_fmt(['-1' if d is None else d for d in want])}).")

    def _sparse(self, items):
        arrays = [np.asarray(t.numpy()) for t in items]
        for a in arrays:
            self._check(a)
        dims = [d if d is not None else max(a.shape[i] for a in arrays)
                for i, d in enumerate(self._row.as_list())]
        indices = [np.concatenate([np.full((a.size, 1), j), np.argwhere(np.ones(a.shape))], 1)
                   for j, a in enumerate(arrays)]
        values = np.concatenate([a.reshape(-1) for a in arrays])
        idx = np.concatenate(indices).astype(np.int64).reshape(-1, len(dims) + 1)
        return SparseTensor(structure.to_tensor(idx),
                            structure.to_tensor(values, self._spec.dtype),
                            structure.to_tensor(np.asarray([len(arrays)] + dims, np.int64)))

    def _eager_iter(self):
        for items in element_groups(self._parent._eager_iter(), self._bs, False):
            yield self._sparse(items)


class _Methods:
    def ragged_batch(self, batch_size, drop_remainder=False, row_splits_dtype=_INT64,
                     name=None):
        """Batches elements of different shapes: components with unknown
        dimensions as RaggedTensors, the others densely."""
        return RaggedBatchDataset(self, batch_size, drop_remainder, row_splits_dtype)

    def sparse_batch(self, batch_size, row_shape, name=None):
        """Batches a one-component dataset into SparseTensors of dense shape
        [batch] + row_shape."""
        return SparseBatchDataset(self, batch_size, row_shape)


install_methods(DatasetV2, _Methods)
