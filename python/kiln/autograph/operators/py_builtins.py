"""Python builtins that change meaning on tensors inside converted code."""
import builtins

from kiln import dtypes
from kiln.autograph.operators import backend as be
from kiln.autograph.operators.loops import Enumerate
from kiln.ops import array_ops, core, math_ops


def range_(*args):
    """range() with tensor arguments is kiln.range (iterated as a graph loop)."""
    if any(be.is_tensor(a) for a in args):
        return core.range(*args)
    return builtins.range(*args)


def len_(x):
    """len() of a tensor: its static first dimension, or a tensor if unknown."""
    if be.is_tensor(x):
        shape = be.static_shape(x)
        if shape is not None and len(shape) == 0:
            raise TypeError(f"len() of a scalar tensor ({be.describe(x)})")
        if shape and shape[0] is not None:
            return shape[0]
        return array_ops.shape(x)[0]
    return builtins.len(x)


def enumerate_(iterable, start=0):
    """enumerate() of a tensor or dataset is iterated as a graph loop."""
    if be.is_tensor(iterable) or hasattr(iterable, "_kiln_for_loop"):
        return Enumerate(iterable, start)
    return builtins.enumerate(iterable, start)


def _cast_builtin(py_type, dtype_name):
    def convert(x=0, *args):
        if be.is_graph_tensor(x) and not args:
            return dtypes.cast(x, getattr(dtypes, dtype_name))
        return py_type(x, *args)
    convert.__name__ = py_type.__name__ + "_"
    convert.__doc__ = f"{py_type.__name__}() of a traced tensor is kiln.cast to {dtype_name}."
    return convert


int_ = _cast_builtin(int, "int32")
float_ = _cast_builtin(float, "float32")


def abs_(x):
    """abs() of a tensor is kiln.abs."""
    if be.is_tensor(x):
        return math_ops.abs(x)
    return builtins.abs(x)


OVERLOADS = {
    builtins.range: range_,
    builtins.len: len_,
    builtins.enumerate: enumerate_,
    builtins.int: int_,
    builtins.float: float_,
    builtins.abs: abs_,
}
