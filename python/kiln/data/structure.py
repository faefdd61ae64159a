"""Element structures of datasets: nested tuples/dicts/namedtuples of tensors
(RaggedTensors, SparseTensors and ExtensionTypes included), described by matching
structures of TensorSpecs, RaggedTensorSpecs, SparseTensorSpecs and Specs (a dataset's
element_spec). Composite leaves travel as their component tensors
(component_specs / to_components / from_components)."""
import collections.abc

import numpy as np

from kiln import _kiln, nest
from kiln._composite import CompositeTensor
from kiln.data import composite, extension
from kiln.tensor_shape import TensorShape

Tensor, Variable, TensorSpec = _kiln.Tensor, _kiln.Variable, _kiln.TensorSpec
_raw = _kiln.raw
_STRING = _kiln.as_dtype("string")


def is_symbolic(t):
    return isinstance(t, Tensor) and t.is_symbolic


def to_tensor(value, dtype=None):
    """value as a Tensor (NumPy 0-d arrays and scalars stay scalars)."""
    if isinstance(value, Variable):
        value = value.read_value()
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != _kiln.as_dtype(dtype):
            raise TypeError(f"expected a {_kiln.as_dtype(dtype).name} tensor, got "
                            f"{value.dtype.name}")
        return value
    if isinstance(value, (np.ndarray, np.generic)) and np.ndim(value) == 0:
        # Through the Python scalar: a 0-d array must give a shape () tensor.
        arr = np.asarray(value)
        if dtype is None:
            dtype = _STRING if arr.dtype.kind in "SUO" else _kiln.as_dtype(arr.dtype)
        return _kiln.constant(arr.item(), dtype=dtype)
    if dtype is None:
        return _kiln.convert_to_tensor(value)
    return _kiln.convert_to_tensor(value, dtype=dtype)


def normalize_element(element, what="element"):
    """Tuples, dicts and namedtuples stay structures; every other leaf (lists
    included, as in tf.data) becomes one Tensor."""
    def rec(x, path):
        if isinstance(x, collections.abc.Mapping):
            return type(x)((k, rec(x[k], f"{path}[{k!r}]")) for k in x) \
                if type(x) is not dict else {k: rec(x[k], f"{path}[{k!r}]") for k in x}
        if composite.is_composite_value(x):
            return x
        if isinstance(x, CompositeTensor):
            raise TypeError(f"{what}: {path} is a {type(x).__name__}; kiln's datasets hold "
                            "tensors, RaggedTensors, SparseTensors and ExtensionTypes only")
        if isinstance(x, tuple):
            items = [rec(c, f"{path}[{i}]") for i, c in enumerate(x)]
            return type(x)(*items) if hasattr(type(x), "_fields") else tuple(items)
        if x is None:
            raise TypeError(f"{what}: {path} is None; dataset elements must be tensors "
                            "or values convertible to tensors")
        try:
            return to_tensor(x)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{what}: {path} could not be converted to a tensor: {e}") from None
    return rec(element, what)


def spec_of(t):
    if composite.is_composite_value(t):
        return composite.spec_of_value(t)
    return TensorSpec(TensorShape(t._dims) if not _unknown_rank(t) else TensorShape(None),
                      t.dtype)


def _unknown_rank(t):
    return t.shape.rank is None


def specs_of(element):
    return nest.map_structure(spec_of, element)


def flat_specs(spec):
    return nest.flatten(spec)


def has_composites(spec):
    return any(composite.is_composite_spec(s) for s in nest.flatten(spec))


def component_specs(spec):
    """The TensorSpecs of an element's component tensors (composites expanded)."""
    out = []
    for s in nest.flatten(spec):
        out += composite.component_specs(s) if composite.is_composite_spec(s) else [s]
    return out


def to_components(spec, element):
    """An element's component tensors, in component_specs order."""
    out = []
    for s, v in zip(nest.flatten(spec), nest.flatten(element)):
        out += composite.to_components(s, v) if composite.is_composite_spec(s) else [v]
    return out


def from_components(spec, flat):
    """The element of `spec` made of its component tensors."""
    it = iter(flat)
    leaves = []
    for s in nest.flatten(spec):
        if composite.is_composite_spec(s):
            parts = [next(it) for _ in composite.component_specs(s)]
            leaves.append(composite.from_components(s, parts))
        else:
            leaves.append(next(it))
    return nest.pack_sequence_as(spec, leaves)


def relax_leading(spec, dim=None):
    """spec with a new leading dimension `dim` (batching)."""
    def leaf(s):
        if composite.is_composite_spec(s):
            return s._batch(dim)
        shape = s.shape
        if shape.rank is None:
            return TensorSpec(TensorShape(None), s.dtype)
        return TensorSpec(TensorShape([dim] + list(shape.dims)), s.dtype)
    return nest.map_structure(leaf, spec)


def format_structure(structure, leaf):
    """Text of a structure with each leaf formatted by leaf() (dataset reprs)."""
    if isinstance(structure, collections.abc.Mapping):
        return "{" + ", ".join(f"{k!r}: {format_structure(structure[k], leaf)}"
                               for k in structure) + "}"
    if isinstance(structure, tuple):
        inner = ", ".join(format_structure(c, leaf) for c in structure)
        if hasattr(type(structure), "_fields"):
            return f"{type(structure).__name__}({inner})"
        return f"({inner},)" if len(structure) == 1 else f"({inner})"
    return leaf(structure)


def flatten_up_to(template, value, what):
    """The parts of `value` at the leaves of `template` (lists and tuples are
    interchangeable in `value`); a TypeError says where they differ."""
    out = []

    def rec(t, v):
        if isinstance(t, collections.abc.Mapping):
            if not isinstance(v, collections.abc.Mapping) or set(v) != set(t):
                raise TypeError(what(t, v))
            for k in sorted(t):
                rec(t[k], v[k])
        elif isinstance(t, tuple):
            if not isinstance(v, (list, tuple)) or len(v) != len(t):
                raise TypeError(what(t, v))
            for tc, vc in zip(t, v):
                rec(tc, vc)
        else:
            out.append(v)

    rec(template, value)
    return out


def check_dtype_conversion(value, dtype):
    """value (NumPy-convertible) as a NumPy array of `dtype`, or None when the
    conversion would change its meaning (float -> int, number -> bool, text)."""
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):
        return None
    kind = arr.dtype.kind
    if dtype == _kiln.as_dtype("string"):
        if kind in "SU" and not isinstance(value, np.ndarray):
            arr = np.array(value, dtype=object)  # NumPy's "S" arrays drop trailing NULs
        return arr if kind in "SUO" else None
    if kind in "SUOV":
        return None
    if dtype.is_bool:
        return arr if kind == "b" else None
    target = np.dtype(dtype.as_numpy_dtype)
    if dtype.is_integer:
        if kind not in "iu":
            return None
        out = arr.astype(target)
        return out if np.array_equal(out.astype(arr.dtype), arr) else None
    if dtype.is_floating:
        return arr.astype(target) if kind in "iuf" else None
    return arr.astype(target)


def dummy_value(spec):
    """A zero tensor of spec's dtype and shape (unknown dims as 0)."""
    shape = spec.shape
    dims = [] if shape.rank is None else [0 if d is None else d for d in shape.dims]
    np_dtype = spec.dtype.as_numpy_dtype
    if spec.dtype == _kiln.as_dtype("string"):
        arr = np.full(dims, b"", dtype=object)
    else:
        arr = np.zeros(dims, dtype=np_dtype)
    return to_tensor(arr, spec.dtype)


def with_spec(t, spec):
    """An ExtensionType value rebuilt on `spec` (its fields other than tensors, a
    batch's TensorShape, as the dataset's element_spec says); other values as they are."""
    return composite.from_components(spec, composite.to_components(spec, t)) \
        if extension.is_spec(spec) else t


def ensure_shape(t, spec):
    """t with spec's static shape where the spec knows more (a no-op reshape;
    possible when at most one dim stays unknown)."""
    if extension.is_spec(spec):
        return with_spec(t, spec)
    if composite.is_composite_spec(spec):
        return t
    shape = spec.shape
    if shape.rank is None or t.shape == shape:
        return t
    dims = shape.as_list()
    if sum(d is None for d in dims) > 1:
        return t
    return _raw.Reshape(t, to_tensor(np.asarray([-1 if d is None else d for d in dims],
                                                dtype=np.int64)))

