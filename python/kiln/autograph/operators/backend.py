"""What the operators need to know about values: tensors, TensorArrays and
nested structures, with short descriptions for error messages."""
import collections.abc

from kiln import _kiln
from kiln._composite import CompositeTensor
from kiln.control_flow import TensorArray
from kiln.ops.core import is_tensor


def tracing():
    """True while a kiln.function is being traced."""
    return not _kiln.executing_eagerly()


def is_graph_tensor(x):
    """A tensor whose value is only known when the graph runs."""
    return is_tensor(x) and tracing()


def is_tensor_array(x):
    """True for kiln.TensorArray values."""
    return isinstance(x, TensorArray)


def truth(x):
    """Python truth of a condition (eager tensors included)."""
    return bool(x)


# Nested structures (same rules as kiln.nest: tuples, lists, namedtuples, dicts; composite
# tensors, such as ExtensionType values, stand for their component tensors).

def is_nested(x):
    """Lists, tuples (namedtuples), mappings and composite tensors are structures; all else
    leaves."""
    return isinstance(x, (list, tuple, collections.abc.Mapping))


def children(x):
    if isinstance(x, CompositeTensor):
        return x._kiln_nest_components()
    if isinstance(x, collections.abc.Mapping):
        return [x[k] for k in sorted(x)]
    return list(x)


def flatten(x):
    """The leaves of a structure, depth first (mapping values by sorted key)."""
    if is_nested(x):
        out = []
        for c in children(x):
            out.extend(flatten(c))
        return out
    return [x]


def structure_key(x):
    """A hashable description of the nesting (not of the leaves)."""
    if is_nested(x):
        keys = tuple(sorted(x)) if isinstance(x, collections.abc.Mapping) else None
        return (type(x).__name__, keys, tuple(structure_key(c) for c in children(x)))
    return "."


def pack_as(template, leaves):
    """A structure shaped like `template` holding `leaves` (inverse of flatten)."""
    it = iter(leaves)

    def rec(t):
        if is_nested(t):
            kids = [rec(c) for c in children(t)]
            if isinstance(t, CompositeTensor):
                return t._kiln_nest_rebuild(kids)
            if isinstance(t, collections.abc.Mapping):
                d = dict(zip(sorted(t), kids))
                return type(t)((k, d[k]) for k in t) if type(t) is not dict else \
                    {k: d[k] for k in t}
            if isinstance(t, tuple) and hasattr(type(t), "_fields"):
                return type(t)(*kids)
            return type(t)(kids)
        return next(it)

    return rec(template)


def describe(x):
    """Short text for a value in error messages: 'Tensor(float32, shape=(3,))'."""
    if is_nested(x):
        if isinstance(x, collections.abc.Mapping):
            return "{" + ", ".join(f"{k!r}: {describe(x[k])}" for k in sorted(x)) + "}"
        inner = ", ".join(describe(c) for c in x)
        if isinstance(x, list):
            return f"[{inner}]"
        name = "" if type(x) is tuple else type(x).__name__
        return f"{name}({inner}{',' if len(x) == 1 and not name else ''})"
    if is_tensor_array(x):
        return f"TensorArray({dtype_name(x.dtype)})"
    if is_tensor(x):
        return f"Tensor({dtype_name(x.dtype)}, shape={static_shape(x)})"
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def dtype_name(dtype):
    """'float32' for a kiln DType."""
    return getattr(dtype, "name", str(dtype))


def static_shape(x):
    """The static shape as a tuple with None for unknown dims (None if unknown rank)."""
    shape = getattr(x, "shape", None)
    if shape is None:
        return None
    as_list = getattr(shape, "as_list", None)
    if as_list is not None:
        try:
            return tuple(as_list())
        except ValueError:  # unknown rank
            return None
    try:
        return tuple(shape)
    except TypeError:
        return None
