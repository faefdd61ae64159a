"""Helpers for kiln.function's TensorFlow-shaped views of a traced signature:
structured_input_signature's (args, kwargs) split and the dtype names of TensorFlow's
kernel messages. (The printed signatures and input_signature errors keep the seed
guide's texts; they are made in kiln.function and the C++ ConcreteFunction.)"""
import inspect

from kiln import _kiln

_P = inspect.Parameter


class _Dead:
    """An argument whose object no longer exists (TensorFlow shows a dead Weakref)."""

    def __repr__(self):
        return f"<weakref at 0x{id(self):x}; dead>"


DEAD = _Dead()


def parameters(params, traced):
    """[(name, kind, value)] of the traced arguments, as TensorFlow's FunctionType
    lists them: *args items as name_i and **kwargs items by key; a function
    with *args has positional-only parameters before it."""
    var_positional = any(p.kind == _P.VAR_POSITIONAL for p in params)
    out = []
    for p, v in zip(params, traced):
        if p.kind == _P.VAR_POSITIONAL:
            out += [(f"{p.name}_{i}", _P.POSITIONAL_ONLY, x) for i, x in enumerate(v)]
        elif p.kind == _P.VAR_KEYWORD:
            out += [(k, _P.KEYWORD_ONLY, x) for k, x in v.items()]
        elif var_positional and p.kind == _P.POSITIONAL_OR_KEYWORD:
            out.append((p.name, _P.POSITIONAL_ONLY, v))
        else:
            out.append((p.name, p.kind, v))
    return out


def structured_signature(params, traced):
    """TensorFlow's structured_input_signature: (positional values, {keyword: value});
    a **kwargs item's spec is named by its key, as TensorFlow names it."""
    args, kwargs = [], {}
    for name, kind, v in parameters(params, traced):
        if kind == _P.KEYWORD_ONLY:
            if isinstance(v, _kiln.TensorSpec) and v.name != name:
                v = _kiln.TensorSpec(v.shape, v.dtype, name=name)
            kwargs[name] = v
        else:
            args.append(v)
    return tuple(args), kwargs


_TF_DTYPE_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def dtype_name(dtype):
    """TensorFlow's DataTypeString (float32 is "float"), as its kernel messages
    name dtypes ("was expected to be a string tensor but is a int32 tensor")."""
    return _TF_DTYPE_NAMES.get(dtype.name, dtype.name)
