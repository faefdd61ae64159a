"""tf.io.parse_example / parse_single_example and the feature specs
(FixedLenFeature, VarLenFeature, FixedLenSequenceFeature, RaggedFeature,
SparseFeature): serialized tf.train.Example messages read by kiln's C++ ops, one
op per feature (_ParseExampleDense, _ParseExampleVarLen; the wire format is read
in src/io/), so parsing works eagerly, in a kiln.function and in Dataset.map.

RaggedFeature partitions and SparseFeature index keys are composed here over
the values and row splits of _ParseExampleVarLen (kiln._parse_partitions),
as TensorFlow's parsing_config composes them.

Differences from TensorFlow: a malformed message is an InvalidArgumentError
naming it (TensorFlow's fast parser sometimes returns an empty result for
one); validate=True partitions fail with kiln's RaggedTensor texts."""
import collections

from kiln import _kiln, _parse_partitions, errors
from kiln.ops import _helpers as h
from kiln.ragged.ragged_tensor import RaggedTensor
from kiln.sparse.sparse_tensor import SparseTensor

raw = _kiln.raw
_STRING = _kiln.as_dtype("string")
_INT64 = _kiln.as_dtype("int64")
_INT32 = _kiln.as_dtype("int32")
_ALLOWED = ("float32", "int64", "string")


def _dims(shape):
    if shape is None:
        return []
    dims = getattr(shape, "as_list", None)
    dims = dims() if dims is not None else list(shape)
    if any(d is None or int(d) < 0 for d in dims):
        raise ValueError(f"All dimensions of shape for feature need to be known but got {shape}.")
    return [int(d) for d in dims]


def _dtype(dtype, key):
    d = _kiln.as_dtype(dtype)
    if d.name not in _ALLOWED:
        raise errors.InvalidArgumentError(
            f"Feature {key!r}: dtype {d.name} is not one a tf.train.Example holds "
            "(float32, int64 or string)")
    return d


class FixedLenFeature(collections.namedtuple(
        "FixedLenFeature", ["shape", "dtype", "default_value"])):
    """A feature of fixed shape in every example (default_value for examples
    that lack it; without one the feature is required)."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class FixedLenSequenceFeature(collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])):
    """A run of values of shape `shape` per example, padded to the longest run
    with default_value (a scalar; 0 or "" when None)."""

    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """Any number of values per example: a SparseTensor."""


class SparseFeature(collections.namedtuple(
        "SparseFeature", ["index_key", "value_key", "dtype", "size", "already_sorted"])):
    """A SparseTensor of dense shape [size] per example from an index feature and
    a value feature."""

    def __new__(cls, index_key, value_key, dtype, size, already_sorted=False):
        return super().__new__(cls, index_key, value_key, dtype, size, already_sorted)


class RaggedFeature(collections.namedtuple(
        "RaggedFeature", ["dtype", "value_key", "partitions", "row_splits_dtype", "validate"])):
    """Any number of values per example: a RaggedTensor (the values of
    `value_key`, the feature's own key by default)."""

    RowSplits = collections.namedtuple("RowSplits", ["key"])
    RowLengths = collections.namedtuple("RowLengths", ["key"])
    RowStarts = collections.namedtuple("RowStarts", ["key"])
    RowLimits = collections.namedtuple("RowLimits", ["key"])
    ValueRowIds = collections.namedtuple("ValueRowIds", ["key"])
    UniformRowLength = collections.namedtuple("UniformRowLength", ["length"])

    def __new__(cls, dtype, value_key=None, partitions=(), row_splits_dtype=_INT32,
                validate=False):
        return super().__new__(cls, dtype, value_key, tuple(partitions), row_splits_dtype,
                               validate)


def _dense(serialized, names, key, spec, variable_length):
    dt = _dtype(spec.dtype, key)
    dims = _dims(spec.shape)
    if spec.default_value is None:
        default = _kiln.convert_to_tensor([], dtype=dt)
    else:
        default = raw.Reshape(h.tensor(spec.default_value) if h.is_tensor(spec.default_value)
                              else _kiln.convert_to_tensor(spec.default_value, dtype=dt),
                              h.const_ints([-1], "int64"))
    return _kiln.execute("_ParseExampleDense", serialized, names, default, key=key, Tdense=dt,
                         dense_shape=dims, variable_length=variable_length)


def _varlen(serialized, names, key, dtype):
    return _kiln.execute("_ParseExampleVarLen", serialized, names, key=key,
                         dtype=_dtype(dtype, key))


def _to_sparse(values, splits, batched):
    if batched:
        return RaggedTensor.from_row_splits(values, splits, validate=False).to_sparse()
    n = raw.Shape(values, out_type=_INT64)
    ids = raw.Range(_kiln.convert_to_tensor(0, dtype=_INT64), n[0],
                    _kiln.convert_to_tensor(1, dtype=_INT64))
    return SparseTensor(raw.ExpandDims(ids, axis=1), values, n)


def _one(serialized, names, key, spec, batched):
    if isinstance(spec, FixedLenFeature):
        return _dense(serialized, names, key, spec, False)
    if isinstance(spec, FixedLenSequenceFeature):
        if not spec.allow_missing:
            raise ValueError("Unsupported: FixedLenSequenceFeature requires allow_missing to "
                             "be True.")
        return _dense(serialized, names, key, spec, True)
    if isinstance(spec, VarLenFeature):
        return _to_sparse(*_varlen(serialized, names, key, spec.dtype), batched)
    if isinstance(spec, (RaggedFeature, SparseFeature)):
        def varlen(k, dtype):
            return _varlen(serialized, names, k, dtype)
        if isinstance(spec, SparseFeature):
            return _parse_partitions.sparse_feature(varlen, spec, batched, serialized)
        return _parse_partitions.ragged_feature(varlen, key, spec, batched)
    raise ValueError(f"Unsupported {type(spec).__name__} {spec} for key '{key}'")


def _strings(x, what):
    t = h.tensor(x) if h.is_tensor(x) else _kiln.convert_to_tensor(x, dtype=_STRING)
    if t.dtype != _STRING:
        raise TypeError(f"{what} must be a string tensor, got {t.dtype.name}")
    return t


def _parse(serialized, features, example_names):
    if not features:
        raise ValueError("Missing: features was {}.")
    s = _strings(serialized, "serialized")
    names = _strings([] if example_names is None else example_names, "example_names")
    batched = s.shape.rank != 0
    return {key: _one(s, names, key, spec, batched) for key, spec in features.items()}


def parse_example(serialized, features, example_names=None, name=None):
    """The features of a batch of serialized Examples (a 1-D string tensor):
    FixedLenFeature -> [batch] + shape, FixedLenSequenceFeature -> [batch, longest]
    + shape, VarLenFeature and SparseFeature -> SparseTensor, RaggedFeature ->
    RaggedTensor. InvalidArgumentError with TensorFlow's messages for a missing
    required feature, a wrong type or a wrong number of values."""
    return _parse(serialized, features, example_names)


def parse_single_example(serialized, features, example_names=None, name=None):
    """The features of one serialized Example (a scalar string): as
    parse_example without the batch dimension."""
    return _parse(serialized, features, example_names)


__all__ = ["FixedLenFeature", "FixedLenSequenceFeature", "VarLenFeature", "SparseFeature",
           "RaggedFeature", "parse_example", "parse_single_example"]
