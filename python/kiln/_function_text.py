"""Helpers for kiln.function's TensorFlow-shaped views of a traced signature:
structured_input_signature's (args, kwargs) split, the Args/Returns blocks of a printed
signature (the seed release's form: nested values as <n> markers, composites as their
TypeSpec) and the dtype names of TensorFlow's kernel messages."""
import inspect
import pprint

from kiln import _kiln
from kiln._composite import CompositeTensor
from kiln.ragged.ragged_tensor import RaggedTensor
from kiln.sparse.sparse_tensor import SparseTensor

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


class _Marker:
    """A "<n>" placeholder in a printed nested structure."""

    def __init__(self, text):
        self._text = text

    def __repr__(self):
        return self._text


def _dims_text(dims):
    return "[" + ", ".join("None" if d is None else str(d) for d in dims) + "]"


def _ragged_spec_text(r):
    ragged_rank, x = 0, r
    while isinstance(x, RaggedTensor):
        ragged_rank, x = ragged_rank + 1, x.values
    n = r.row_splits.shape[0] if r.row_splits.shape.rank else None
    dims = [n - 1 if n is not None else None] + [None] * ragged_rank + \
        (x.shape.as_list()[1:] if x.shape.rank is not None else [])
    return (f"RaggedTensorSpec(TensorShape({_dims_text(dims)}), tf.{x.dtype.name}, "
            f"{ragged_rank}, tf.{r.row_splits.dtype.name})")


def _sparse_spec_text(sp):
    rank = sp.dense_shape.shape[0] if sp.dense_shape.shape.rank else None
    shape = f"TensorShape({_dims_text([None] * rank)})" if rank is not None else \
        "TensorShape(None)"
    return f"SparseTensorSpec({shape}, tf.{sp.values.dtype.name})"


def spec_text(x):
    """One leaf of a printed signature: "int32 Tensor, shape=()" for tensors and
    TensorSpecs, a composite's TypeSpec, else the value's repr."""
    if isinstance(x, (_kiln.TensorSpec, _kiln.Tensor)):
        return f"{x.dtype.name} Tensor, shape={x.shape}"
    if isinstance(x, RaggedTensor):
        return _ragged_spec_text(x)
    if isinstance(x, SparseTensor):
        return _sparse_spec_text(x)
    return repr(x)


def _leaves(x):
    if isinstance(x, CompositeTensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [y for v in x for y in _leaves(v)]
    if isinstance(x, dict):
        return [y for k in sorted(x) for y in _leaves(x[k])]
    return [x]


def _with_markers(x, markers):
    if isinstance(x, CompositeTensor):
        return next(markers)
    if isinstance(x, (list, tuple)):
        items = [_with_markers(v, markers) for v in x]
        return list(items) if isinstance(x, list) else tuple(items)
    if isinstance(x, dict):
        return {k: _with_markers(x[k], markers) for k in sorted(x)}
    return next(markers)


def describe(x, indent="      "):
    """A value of a printed signature: a leaf as spec_text, a nested structure as
    its text with "<n>" markers, each described on a line below."""
    if not isinstance(x, (list, tuple, dict)) or isinstance(x, CompositeTensor):
        return spec_text(x)
    pieces = _leaves(x)
    markers = [_Marker(f"<{i + 1}>") for i in range(len(pieces))]
    text = pprint.pformat(_with_markers(x, iter(markers)), width=10000)
    for m, piece in zip(markers, pieces):
        text += f"\n{indent}{m!r}: {spec_text(piece)}"
    return text


def signature_blocks(names, traced, outputs):
    """The "  Args:" and "  Returns:" lines of a printed signature. Arguments bound
    to Python values are shown in the header only."""
    lines = ["  Args:"]
    for name, v in zip(names, traced):
        if isinstance(v, (_kiln.TensorSpec, list, tuple, dict)):
            lines.append(f"    {name}: {describe(v)}")
    lines.append("  Returns:")
    lines.append("    NoneTensorSpec()" if outputs is None else f"    {describe(outputs)}")
    return "\n".join(lines)
