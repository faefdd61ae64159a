"""Checks and conversions of the variables that tensor conditionals and loops
carry: Python numbers become tensors, structures and dtypes must agree, and
every message names the variable and the statement."""
import re

from kiln import _kiln
from kiln.autograph.errors import location, warn_once
from kiln.autograph.operators import backend as be
from kiln.ops.array_ops import zeros
from kiln.autograph.operators.variables import Undefined, UndefinedReturnValue

_RETURN_NAME = re.compile(r"^retval_(_\d+)?$")


def display_name(name):
    """'the return value' for the generated return variable, else "'x'"."""
    if _RETURN_NAME.match(name):
        return "the return value"
    return f"'{name}'"


def is_return_name(name):
    """True for the generated return-value variable (retval_)."""
    return bool(_RETURN_NAME.match(name))


def is_python_scalar(x):
    """A Python bool, int or float (what a tensor statement may convert)."""
    return isinstance(x, (bool, int, float)) and not be.is_tensor(x)


def _dtype_kind(dtype):
    if getattr(dtype, "is_bool", False) or be.dtype_name(dtype) == "bool":
        return "bool"
    if getattr(dtype, "is_floating", False):
        return "float"
    if getattr(dtype, "is_integer", False):
        return "int"
    return "other"


def scalar_to_tensor(value, like=None):
    """A Python bool/int/float as a tensor, using like's dtype when compatible."""
    if like is not None and be.is_tensor(like):
        kind = _dtype_kind(like.dtype)
        ok = (kind == "bool" and isinstance(value, bool)) or \
             (kind == "int" and isinstance(value, int) and not isinstance(value, bool)) or \
             (kind == "float" and not isinstance(value, bool))
        if ok:
            return _kiln.constant(value, dtype=like.dtype)
    return _kiln.constant(value)


def carriable(x):
    """Leaves a tensor statement can carry: tensors, TensorArrays, numbers."""
    return be.is_tensor(x) or be.is_tensor_array(x) or is_python_scalar(x)


def check_leaf_types(name, value, where, what):
    """Raises a TypeError naming `name` when a leaf cannot be carried."""
    for leaf in be.flatten(value):
        if not carriable(leaf):
            raise TypeError(
                f"{where}: {display_name(name)} is {be.describe(leaf)} of type "
                f"{type(leaf).__name__}, but {what} can only carry tensors, TensorArrays "
                "and Python numbers (assign it a tensor before the statement, or keep it "
                "out of the statement)")


def same_structure_or_raise(name, a, b, where, a_label, b_label):
    """Raises a ValueError naming `name` when a and b nest differently."""
    if be.structure_key(a) != be.structure_key(b):
        raise ValueError(
            f"{where}: {display_name(name)} has a different structure in the {a_label} "
            f"({be.describe(a)}) than in the {b_label} ({be.describe(b)}); both must "
            "have the same nesting of lists, tuples and dicts")


def check_dtypes(name, a, b, where, a_label, b_label):
    """Raises a TypeError naming `name` when tensor leaves differ in dtype."""
    for x, y in zip(be.flatten(a), be.flatten(b)):
        if be.is_tensor(x) and be.is_tensor(y) and x.dtype != y.dtype:
            raise TypeError(
                f"{where}: {display_name(name)} has dtype {be.dtype_name(x.dtype)} in the "
                f"{a_label} but {be.dtype_name(y.dtype)} in the {b_label}; give both the "
                "same dtype (e.g. a float literal 0.0 instead of 0, or kiln.cast)")


def to_tensors(value, like=None):
    """Converts the Python-number leaves of `value` (like: matching template)."""
    leaves = be.flatten(value)
    likes = be.flatten(like) if like is not None else [None] * len(leaves)
    out = [scalar_to_tensor(x, l) if is_python_scalar(x) else x for x, l in zip(leaves, likes)]
    return be.pack_as(value, out)


def zeros_like_static(name, value, where):
    """Zeros with the dtype and static shape of `value` (a placeholder for a
    variable that one path leaves undefined)."""
    def leaf(x):
        if is_python_scalar(x):
            return type(x)()
        if be.is_tensor(x):
            shape = be.static_shape(x)
            if shape is None or any(d is None for d in shape):
                raise ValueError(
                    f"{where}: {display_name(name)} is not defined on every path and its "
                    f"shape {shape} is not fully known, so no placeholder value can be made; "
                    "define it before the statement")
            return zeros(list(shape), dtype=x.dtype)
        raise ValueError(
            f"{where}: {display_name(name)} is not defined on every path; define it "
            "before the statement")

    return be.pack_as(value, [leaf(x) for x in be.flatten(value)])


_CONSEQUENCE = {
    "assign": "it runs once while tracing (whatever the condition), not each time the "
              "graph runs",
    "try": "it only catches errors raised while tracing, not errors of the graph at run "
           "time",
}


def warn_unsupported(opts, kind, filename, lineno):
    """Warns for each construct the converter flagged inside this statement."""
    for line, what, why in (opts or {}).get("unsupported", ()):
        warn_once(
            f"{location(filename, line)}: {what} inside the tensor-dependent {kind} at line "
            f"{lineno} is not converted: {_CONSEQUENCE.get(why, why)}", filename, line)


def is_undefined_value(x):
    """True for the Undefined / UndefinedReturnValue placeholders."""
    return isinstance(x, (Undefined, UndefinedReturnValue))
