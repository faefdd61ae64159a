"""ExtensionType values as tf.data elements (TensorFlow 2.21's "Extension types"
guide, section tf.data). An element's ExtensionType stands in element_spec as its
Spec and travels as the tensors of its fields, nested ExtensionTypes walked (its
leaves). A BatchableExtensionType is sliced, batched and unbatched leaf by leaf
and rebuilt with its Spec's _batch / _unbatch; a plain ExtensionType can be an
element (from_tensors, map results) but not sliced or batched, with TensorFlow's
AttributeErrors. Leaf work (a row, a batch) is handed in by kiln.data.composite."""
from kiln import nest
from kiln.experimental import _fields
from kiln.experimental._spec import BatchableExtensionTypeSpec, ExtensionTypeSpec
from kiln.experimental._spec import type_spec_from_value
from kiln.experimental.extension_type import ExtensionType


def is_spec(spec):
    return isinstance(spec, ExtensionTypeSpec)


def is_value(value):
    return isinstance(value, ExtensionType)


def spec_of_value(value):
    return type(value).Spec.from_value(value)


def leaf_specs(spec):
    """The TensorSpecs of an ExtensionType Spec's tensors, nested Specs walked."""
    out = []
    for s in spec._component_specs:
        out += leaf_specs(s) if is_spec(s) else [s]
    return out


def leaves(value):
    """An ExtensionType value's tensors, in leaf_specs order."""
    out = []
    for x in value._kiln_nest_components():
        out += leaves(x) if is_value(x) else [x]
    return out


def rebuild(spec, flat):
    """The value of `spec` made of its leaves (no constructor, no __validate__)."""
    return _rebuild(spec, iter(flat))


def _rebuild(spec, it):
    parts = [_rebuild(s, it) if is_spec(s) else next(it) for s in spec._component_specs]
    return spec._from_components(parts)


def check_shape_property(spec):
    """TensorFlow's NotImplementedError for padded_batch / window over ExtensionType
    elements whose Spec has no `shape`."""
    for s in nest.flatten(spec):
        if is_spec(s) and not hasattr(s, "shape"):
            raise NotImplementedError(
                "It appears that the Spec of the ExtensionType is missing a shape property. "
                "In order to support tf.Data, it is recommended that you implement a shape "
                "property on the Spec.")


def from_generated(value, spec):
    """A value a from_generator generator yielded, checked against its Spec (TensorFlow's
    text) and rebuilt on it."""
    if not spec.is_compatible_with(value):
        raise TypeError(f"`generator` yielded an element of {type_spec_from_value(value)!r} "
                        f"where an element of {spec!r} was expected.")
    return rebuild(spec, leaves(value))


def require_batchable(spec, attribute):
    """TensorFlow's AttributeError for slicing or batching a plain ExtensionType."""
    if not isinstance(spec, BatchableExtensionTypeSpec):
        raise AttributeError(f"'{type(spec).__name__}' object has no attribute '{attribute}'")


def unbatch_spec(spec):
    """The Spec of one row (from_tensor_slices, unbatch)."""
    require_batchable(spec, "_to_batched_tensor_list")
    return spec._unbatch()


def batch_spec(spec, size):
    require_batchable(spec, "_batch")
    return spec._batch(size)


def map_rows(value, fn, spec):
    """`spec`'s value made of fn(leaf) for each leaf of a batched value."""
    require_batchable(value._type_spec, "_to_batched_tensor_list")
    return rebuild(spec, [fn(x) for x in leaves(value)])


def row(value, fn):
    """One row of a batched value: fn(leaf) gives the leaf's row."""
    return map_rows(value, fn, unbatch_spec(value._type_spec))


def rows(value, fn):
    """Rows [start, end) of a batched value: fn(leaf) gives the leaf's rows."""
    return map_rows(value, fn, unbatch_spec(value._type_spec)._batch(None))


def first_leaf(value):
    """The leaf whose rows count the value's rows."""
    require_batchable(value._type_spec, "_to_batched_tensor_list")
    flat = leaves(value)
    if not flat:
        raise ValueError(f"{type(value).__name__} has no tensor fields to count its rows by")
    return flat[0]


def batch(spec, values, batch_leaf):
    """A list of values of `spec` as one batched value: batch_leaf(leaf_spec, parts)
    batches one leaf of every value."""
    batched = batch_spec(spec, None)
    flats = [leaves(v) for v in values]
    out = [batch_leaf(s, [f[k] for f in flats]) for k, s in enumerate(leaf_specs(spec))]
    return rebuild(batched, out)


def supertype(a, b, merge_leaf):
    """The Spec holding values of both a and b (concatenate), or None:
    merge_leaf(x, y) merges two leaf TensorSpecs."""
    if type(a) is not type(b) or not _same_but_shapes(a, b):
        return None
    merged = [merge_leaf(x, y) for x, y in zip(leaf_specs(a), leaf_specs(b))]
    return _with_leaf_specs(a, iter(merged))


def _same_but_shapes(a, b):
    la, lb = leaf_specs(a), leaf_specs(b)
    return len(la) == len(lb) and all(x.dtype == y.dtype and x.shape.rank == y.shape.rank
                                      for x, y in zip(la, lb)) and \
        _with_leaf_specs(a, iter(lb)) == b


def _with_leaf_specs(spec, it):
    """spec with its leaf TensorSpecs replaced by the next of `it`."""
    fields = {}
    for k, v in spec._field_values().items():
        subs = [_with_leaf_specs(s, it) if is_spec(s) else next(it)
                for s in _fields.leaves(v)]
        fields[k] = _fields.replace_leaves(v, iter(subs))
    return type(spec)._from_fields(fields)
