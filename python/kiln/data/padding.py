"""Dataset.padded_batch: batches of elements padded to a common shape.

Each component is padded at the end of each dimension, to the padded shape's
size there, or (None / -1) to the largest size in the batch; with
padding_values (scalars, default 0, "" for strings, False for bools)."""

import numpy as np

from kiln import _kiln, errors, nest
from kiln.data import extension, structure
from kiln.data.dataset import DatasetV2, install_methods
from kiln.data.transforms import count_arg, element_groups, UnaryDataset
from kiln.tensor_shape import TensorShape, as_shape

TensorSpec = _kiln.TensorSpec
_INT64 = _kiln.as_dtype("int64")


def _check_tensor_specs(spec):
    extension.check_shape_property(spec)
    for s in nest.flatten(spec):
        if not isinstance(s, TensorSpec):
            if hasattr(s, "element_spec"):
                raise TypeError("`padded_batch` is not supported for datasets of datasets")
            raise TypeError("`padded_batch` is only supported for datasets that produce "
                            "tensor elements but type spec of elements in the input dataset "
                            f"is not a subclass of TensorSpec: `{s}`.")


def flat_up_to(spec, value):
    """value's parts at the leaves of spec (tf.data's nest: lists are leaves)."""
    def what(t, v):
        if not isinstance(v, (tuple, dict)):
            return ("If shallow structure is a sequence, input must also be a sequence. "
                    f"Input has type: '{type(v).__name__}'.")
        return (f"The two structures don't have the same sequence length. Input structure "
                f"has length {len(v)}, while shallow structure has length {len(t)}.")
    if not nest.is_nested(spec):
        return [value]
    return structure.flatten_up_to(spec, value, what)


def as_padded_shape(value):
    """A padded shape (TensorShape, list with None/-1, int, 1-D int64 tensor)."""
    if isinstance(value, (_kiln.Tensor, _kiln.Variable)):
        t = structure.to_tensor(value)
        if t.shape.rank not in (None, 1):
            raise ValueError(f"Padded shape {value} must be a `tf.int64` vector tensor, but "
                             f"its shape was {t.shape}.")
        if t.dtype != _INT64:
            raise TypeError(f"Padded shape {value} must be a `tf.int64` vector tensor, but "
                            f"its element type was {t.dtype.name}.")
        value = [int(d) for d in t.numpy()]
    return as_shape(value)


def _compatible(padded, shape):
    """Whether elements of `shape` can be padded to `padded`."""
    if padded.rank is None or shape.rank is None:
        return True
    if padded.rank != shape.rank:
        return False
    return all(p is None or s is None or p >= s
               for p, s in zip(padded.as_list(), shape.as_list()))


def _padded_shapes(spec, padded_shapes):
    flat_specs = nest.flatten(spec)
    if padded_shapes is None:
        for i, s in enumerate(flat_specs):
            if s.shape.rank is None:
                raise ValueError("You must provide `padded_shapes` argument because "
                                 f"component {i} has unknown rank.")
        return [s.shape for s in flat_specs]
    out = []
    for s, p in zip(flat_specs, flat_up_to(spec, padded_shapes)):
        shape = as_padded_shape(p)
        if not _compatible(shape, s.shape):
            raise ValueError(f"The padded shape {shape} is not compatible with the shape "
                             f"{s.shape} of the corresponding input component.")
        out.append(shape)
    return out


def _default_padding(dtype):
    if dtype == _kiln.as_dtype("string"):
        return structure.to_tensor(np.asarray(b"", dtype=object), dtype)
    return structure.to_tensor(np.zeros((), dtype=dtype.as_numpy_dtype), dtype)


def _padding_values(spec, padding_values):
    flat_specs = nest.flatten(spec)
    if padding_values is None:
        values = [None] * len(flat_specs)
    elif nest.is_nested(spec) and not isinstance(padding_values, (tuple, dict)):
        values = [padding_values] * len(flat_specs)
    else:
        values = flat_up_to(spec, padding_values)
    out = []
    for s, v in zip(flat_specs, values):
        if v is None:
            out.append(_default_padding(s.dtype))
            continue
        t = structure.to_tensor(v)
        if not t.shape.is_compatible_with(TensorShape([])):
            raise ValueError("Invalid `padding_values`. `padding_values` values should be "
                             f"scalars, but got {t.shape}.")
        if t.dtype != s.dtype:
            raise TypeError("Invalid `padding_values`. `padding_values` values type "
                            f"{t.dtype} does not match type {s.dtype} of the "
                            "corresponding input component.")
        out.append(t)
    return out


def pad_and_stack(arrays, padded, value):
    """NumPy arrays padded at the end to `padded` (None: the largest size)."""
    rank = len(padded)
    for a in arrays:
        if a.ndim != rank:
            raise errors.InvalidArgumentError(
                f"padded_batch: an element of rank {a.ndim} cannot be padded to a shape of "
                f"rank {rank}")
    dims = []
    for i, p in enumerate(padded):
        largest = max(a.shape[i] for a in arrays)
        if p is not None and largest > p:
            raise errors.DataLossError(
                "Attempted to pad to a smaller size than the input element.")
        dims.append(largest if p is None else p)
    out = np.full([len(arrays)] + dims, value, dtype=arrays[0].dtype)
    for j, a in enumerate(arrays):
        out[(j,) + tuple(slice(0, d) for d in a.shape)] = a
    return out


class PaddedBatchDataset(UnaryDataset):
    _name = "PaddedBatchDataset"

    def __init__(self, parent, batch_size, padded_shapes, padding_values, drop_remainder):
        spec = parent.element_spec
        _check_tensor_specs(spec)
        shapes = _padded_shapes(spec, padded_shapes)
        values = _padding_values(spec, padding_values)
        bs = count_arg(batch_size, "batch_size", "padded_batch")
        if bs <= 0:
            raise errors.InvalidArgumentError("Batch size must be greater than zero.")
        drop = bool(drop_remainder)
        lead = [bs if drop else None]
        out = [TensorSpec(TensorShape(None) if p.rank is None else TensorShape(lead + p.as_list()),
                          s.dtype) for s, p in zip(nest.flatten(spec), shapes)]
        n = parent._card
        card = n if n < 0 else (n // bs if drop else -(-n // bs))
        super().__init__(parent, nest.pack_sequence_as(spec, out), card)
        self._bs, self._drop = bs, drop
        self._shapes = [None if p.rank is None else p.as_list() for p in shapes]
        self._values = [v.numpy() for v in values]

    def _eager_iter(self):
        for items in element_groups(self._parent._eager_iter(), self._bs, self._drop):
            yield self._pad(items)

    def _pad(self, items):
        flats = [nest.flatten(x) for x in items]
        out = []
        for k, (padded, value, spec) in enumerate(zip(self._shapes, self._values,
                                                      nest.flatten(self._spec))):
            arrays = [np.asarray(f[k].numpy()) for f in flats]
            if padded is None:
                padded = [None] * arrays[0].ndim
            out.append(structure.to_tensor(pad_and_stack(arrays, padded, value), spec.dtype))
        return nest.pack_sequence_as(self._spec, out)


class _Methods:
    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False, name=None):
        """Batches of batch_size elements, each component padded to
        padded_shapes (None / -1 dimensions: the largest in the batch; default:
        the element_spec's shapes) with padding_values (default zeros)."""
        return PaddedBatchDataset(self, batch_size, padded_shapes, padding_values,
                                  drop_remainder)


install_methods(DatasetV2, _Methods)
