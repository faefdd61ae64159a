"""Nested structures (tf.nest): lists, tuples, namedtuples and dicts of leaves.

Composite tensors (RaggedTensor, SparseTensor, ExtensionType values) are leaves unless a
function is asked to expand them (`expand_composites=True`): then they stand for their
component tensors (`CompositeTensor._kiln_nest_components`)."""
import collections.abc

from kiln._composite import CompositeTensor


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def is_nested(x):
    """True for list, tuple, namedtuple and dict (mapping) structures (composite tensors,
    tuples of their components, are leaves)."""
    return isinstance(x, (list, tuple, collections.abc.Mapping)) and not isinstance(
        x, CompositeTensor)


def _children(x):
    if isinstance(x, collections.abc.Mapping):
        return [x[k] for k in sorted(x)]
    return list(x)


def _expands(x, expand_composites):
    return expand_composites and isinstance(x, CompositeTensor)


def flatten(structure, expand_composites=False):
    """The leaves of `structure`, depth first (dict values in sorted key order); with
    expand_composites, composite tensors are replaced by their component tensors."""
    out = []

    def rec(x):
        if is_nested(x):
            for c in _children(x):
                rec(c)
        elif _expands(x, expand_composites):
            for c in x._kiln_nest_components():
                rec(c)
        else:
            out.append(x)

    rec(structure)
    return out


def _rebuild(template, children):
    if isinstance(template, collections.abc.Mapping):
        keys = sorted(template)
        d = dict(zip(keys, children))
        return type(template)((k, d[k]) for k in template) if type(template) is not dict else {
            k: d[k] for k in template}
    if _is_namedtuple(template):
        return type(template)(*children)
    if isinstance(template, tuple):
        return tuple(children)
    return list(children)


def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    """Builds `structure`'s shape with the leaves taken from `flat_sequence`."""
    flat = list(flat_sequence)
    pos = [0]

    def rec(x):
        if is_nested(x):
            return _rebuild(x, [rec(c) for c in _children(x)])
        if _expands(x, expand_composites):
            return x._kiln_nest_rebuild([rec(c) for c in x._kiln_nest_components()])
        if pos[0] >= len(flat):
            raise ValueError(
                f"Structure had more leaves than the {len(flat)} values given: {structure}")
        v = flat[pos[0]]
        pos[0] += 1
        return v

    result = rec(structure)
    if pos[0] != len(flat):
        raise ValueError(
            f"Structure {structure} has {pos[0]} leaves, but {len(flat)} values were given")
    return result


def map_structure(func, *structures, **kwargs):
    """Applies func to the corresponding leaves of structures of the same shape."""
    if not structures:
        raise ValueError("map_structure needs at least one structure")
    expand = kwargs.get("expand_composites", False)
    for s in structures[1:]:
        assert_same_structure(structures[0], s, expand_composites=expand)
    flats = [flatten(s, expand) for s in structures]
    return pack_sequence_as(structures[0], [func(*xs) for xs in zip(*flats)], expand)


def _shape_of(x, expand_composites=False):
    if is_nested(x):
        kind = "dict" if isinstance(x, collections.abc.Mapping) else type(x).__name__
        keys = sorted(x) if isinstance(x, collections.abc.Mapping) else None
        return (kind, keys, tuple(_shape_of(c, expand_composites) for c in _children(x)))
    if _expands(x, expand_composites):
        return (type(x).__name__, None, tuple(_shape_of(c, True)
                                               for c in x._kiln_nest_components()))
    return "."


def assert_same_structure(nest1, nest2, check_types=True, expand_composites=False):
    """Raises ValueError (TypeError for type differences) if the structures differ."""
    a, b = _shape_of(nest1, expand_composites), _shape_of(nest2, expand_composites)
    if a == b:
        return
    if not check_types:
        if len(flatten(nest1, expand_composites)) == len(flatten(nest2, expand_composites)):
            return
    raise ValueError(
        "The two structures don't have the same nested structure.\n\n"
        f"First structure: {nest1!r}\n\nSecond structure: {nest2!r}")


def swap_values(cls, values_of, args, kwargs):
    """Replaces every `cls` composite in args/kwargs by ``values_of(composite)``: returns
    (the composites in order, new args list, new kwargs dict). What
    tf.ragged.map_flat_values and tf.sparse.map_values share."""
    found = []

    def swap(x):
        if isinstance(x, cls):
            found.append(x)
            return values_of(x)
        return x

    return found, map_structure(swap, list(args)), map_structure(swap, dict(kwargs))
