"""Batches of index-addressable datasets with ragged or sparse elements,
built in the graph (DatasetV2._slice for such elements): one while_loop
over the batch's elements concatenates each element's pieces (values, row
counts and lengths, sparse indices with the element's row), and the batch
is assembled from them after the loop. A BatchableExtensionType's pieces are
those of its tensors."""
import numpy as np

from kiln import _kiln, nest
from kiln.control_flow import while_loop
from kiln.data import composite, extension
from kiln.ragged import _rows
from kiln.sparse.sparse_tensor import SparseTensor
from kiln.tensor_shape import TensorShape

raw = _kiln.raw
_INT64 = _kiln.as_dtype("int64")


def _i64(v):
    return _kiln.convert_to_tensor(np.int64(v)) if isinstance(v, int) else v


def _lead(shape):
    """shape with a leading unknown dimension."""
    return TensorShape([None]).concatenate(shape) if shape.rank is not None else \
        TensorShape(None)


def _pieces(spec, value, j):
    """Element j's pieces of one leaf (each concatenated along axis 0)."""
    if extension.is_spec(spec):
        extension.require_batchable(spec, "_batch")
        return [p for s, v in zip(extension.leaf_specs(spec), extension.leaves(value))
                for p in _pieces(s, v, j)]
    if isinstance(spec, composite.SparseTensorSpec):
        n = raw.Shape(value.indices, out_type=_INT64)[:1]
        col = raw.Fill(raw.ConcatV2([n, _i64(np.int64([1]))], axis=0), j)
        return [raw.ConcatV2([col, value.indices], axis=1), value.values,
                raw.ExpandDims(value.dense_shape, axis=0)]
    if isinstance(spec, composite.RaggedTensorSpec):
        parts = spec._to_components(value)
        dt = spec.row_splits_dtype
        count = _rows.nrows(parts[1]) if spec.ragged_rank else _rows.dim(parts[0], 0, dt)
        return [parts[0], _rows.vector([count], dt)] + [_rows.lengths(s) for s in parts[1:]]
    return [raw.ExpandDims(value, axis=0)]


def _invariants(spec):
    if extension.is_spec(spec):
        return [i for s in extension.leaf_specs(spec) for i in _invariants(s)]
    if isinstance(spec, composite.SparseTensorSpec):
        rank = spec.shape.rank
        return [TensorShape([None, None if rank is None else rank + 1]), TensorShape([None]),
                TensorShape([None, rank])]
    if isinstance(spec, composite.RaggedTensorSpec):
        flat = spec._component_specs()[0].shape
        flat = _lead(flat[1:]) if flat.rank else flat
        return [flat] + [TensorShape([None])] * (spec.ragged_rank + 1)
    return [_lead(spec.shape)]


def _finish(spec, pieces, size):
    if extension.is_spec(spec):
        it = iter(pieces)
        leaves = [_finish(s, [next(it) for _ in _invariants(s)], size)
                  for s in extension.leaf_specs(spec)]
        return extension.rebuild(extension.batch_spec(spec, None), leaves)
    if isinstance(spec, composite.SparseTensorSpec):
        indices, values, shapes = pieces
        dense = raw.ConcatV2([raw.Reshape(size, _i64(np.int64([1]))),
                              raw.Max(shapes, axis=[0], keepdims=False)], axis=0)
        return SparseTensor(indices, values, dense)
    if isinstance(spec, composite.RaggedTensorSpec):
        splits = [_rows.splits_from_lengths(p) for p in pieces[1:]]
        return spec._batch(None)._from_components([pieces[0]] + splits)
    return pieces[0]


def _all_pieces(specs, element, j):
    out = []
    for s, v in zip(specs, nest.flatten(element)):
        out += _pieces(s, v, j)
    return out


def slice_elements(dataset, start, end):
    """Elements [start, end) (end > start) of an index-addressable dataset
    batched as BatchDataset batches them."""
    spec = dataset.element_spec
    specs = nest.flatten(spec)
    size = end - start
    first = _all_pieces(specs, dataset._element_at(start), _i64(0))
    shapes = [TensorShape([])] + [s for sp in specs for s in _invariants(sp)]

    def c(j, *acc):
        return raw.Less(j, size)

    def b(j, *acc):
        new = _all_pieces(specs, dataset._element_at(start + j), j)
        return (j + _i64(1),) + tuple(raw.ConcatV2([a, p], axis=0) for a, p in zip(acc, new))

    out = while_loop(c, b, (_i64(1),) + tuple(first), shape_invariants=tuple(shapes))
    it = iter(out[1:])
    leaves = [_finish(s, [next(it) for _ in _invariants(s)], size) for s in specs]
    return nest.pack_sequence_as(spec, leaves)

