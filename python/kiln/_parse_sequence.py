"""tf.io.parse_sequence_example / parse_single_sequence_example: serialized
tf.train.SequenceExample messages. The context is read as an Example's features
(both messages keep their Features in field 1); each feature list by one
_ParseSequenceFeatureList op (src/io/), whose values and per-step and
per-example splits are shaped here: FixedLenSequenceFeature -> [batch, steps] +
shape padded with zeros (and its lengths), VarLenFeature -> a 3-D SparseTensor,
RaggedFeature -> a RaggedTensor [batch, (steps), (values)]. A scalar serialized
is one SequenceExample: the results have no batch dimension."""
from kiln import _kiln, _parse_example as pe
from kiln.ops import _helpers as h
from kiln.ragged.ragged_tensor import RaggedTensor

raw = _kiln.raw
_INT64 = _kiln.as_dtype("int64")


def _feature_list(serialized, names, key, spec):
    dense = isinstance(spec, pe.FixedLenSequenceFeature)
    if dense and spec.default_value is not None:
        raise ValueError(f"Value feature_list.dense_defaults[{key}] must be None")
    if not isinstance(spec, (pe.FixedLenSequenceFeature, pe.VarLenFeature, pe.RaggedFeature)):
        raise ValueError(f"Unsupported {type(spec).__name__} {spec} for feature list '{key}'")
    if isinstance(spec, pe.RaggedFeature) and (spec.partitions or spec.value_key not in
                                                (None, key)):
        raise ValueError(f"Feature list '{key}': RaggedFeature partitions and value_key are "
                         "not supported in sequence features")
    dims = pe._dims(spec.shape) if dense else []
    values, value_splits, step_splits = _kiln.execute(
        "_ParseSequenceFeatureList", serialized, names, key=key,
        dtype=pe._dtype(spec.dtype, key), dense=dense, dense_shape=dims,
        allow_missing=bool(dense and spec.allow_missing))
    if dense:
        steps = raw.Reshape(values, h.const_ints([-1] + dims, "int64"))
        padded = RaggedTensor.from_row_splits(steps, step_splits, validate=False).to_tensor()
        return padded, raw.Sub(step_splits[1:], step_splits[:-1])
    inner = RaggedTensor.from_row_splits(values, value_splits, validate=False)
    nested = RaggedTensor.from_row_splits(inner, step_splits, validate=False)
    if isinstance(spec, pe.VarLenFeature):
        return nested.to_sparse(), None
    if spec.row_splits_dtype != _INT64:
        nested = nested.with_row_splits_dtype(spec.row_splits_dtype)
    return nested, None


def _first(x):
    """Example 0 of a batch of one: x[0] for tensors, ragged and sparse values."""
    if isinstance(x, RaggedTensor):
        return x[0]
    if hasattr(x, "indices") and hasattr(x, "dense_shape"):  # SparseTensor: drop dim 0
        return type(x)(x.indices[:, 1:], x.values, x.dense_shape[1:])
    return x[0]


def _parse(serialized, context_features, sequence_features, example_names):
    if not context_features and not sequence_features:
        raise ValueError("Must provide at least one context_features or sequence_features")
    s = pe._strings(serialized, "serialized")
    names = pe._strings([] if example_names is None else example_names, "example_names")
    single = s.shape.rank == 0
    vec = raw.Reshape(s, h.const_ints([1], "int64")) if single else s
    names = raw.Reshape(names, h.const_ints([-1], "int64")) if names.shape.rank == 0 else names
    context = pe._parse(s, context_features, example_names) if context_features else {}
    lists, lengths = {}, {}
    for key, spec in (sequence_features or {}).items():
        value, length = _feature_list(vec, names, key, spec)
        lists[key] = _first(value) if single else value
        if length is not None:
            lengths[key] = length[0] if single else length
    return context, lists, lengths


def parse_sequence_example(serialized, context_features=None, sequence_features=None,
                           example_names=None, name=None):
    """(context, feature_lists, feature_list_lengths) of serialized SequenceExamples
    (tf.io.parse_sequence_example): context features as parse_example reads them,
    sequence features shaped [batch, steps, ...], and the step count of each
    FixedLenSequenceFeature."""
    return _parse(serialized, context_features, sequence_features, example_names)


def parse_single_sequence_example(serialized, context_features=None, sequence_features=None,
                                  example_name=None, name=None):
    """(context, feature_lists) of one serialized SequenceExample (a scalar), as
    tf.io.parse_single_sequence_example: results without a batch dimension."""
    context, lists, _ = _parse(serialized, context_features, sequence_features,
                               None if example_name is None else [example_name])
    return context, lists


__all__ = ["parse_sequence_example", "parse_single_sequence_example"]
