"""Keras 3's autocasting of a mixed-precision layer's variables.

Under a policy whose compute dtype differs from its variable dtype
("mixed_float16": float16 computations, float32 variables), Keras reads a
layer's floating variables in the compute dtype while the layer runs
(``AutocastScope``). kiln's variables are read by the ops themselves, so
``autocast_variables(layer)`` does it by attribute: for the time of the call,
each attribute of the layer (and of its sublayers with a mixed policy) that
holds a floating Keras variable made with ``autocast=True`` reads as the
variable cast to the compute dtype (a Cast op: gradients still reach the
variable). Variables held in lists or dicts are left as they are, as are
those of layers with ``autocast=False`` (Keras: no autocast scope for them)
and of sublayers of a layer that is not mixed (they cast their own when
called). Layers with a float32 policy never enter here.
"""
import contextlib

from kiln import _kiln, nest
from kiln.keras.variables import Variable as KerasVariable


def is_mixed(layer):
    """Whether the layer's variables are read in another (floating) dtype."""
    compute = layer._dtype
    return bool(getattr(layer, "_autocast", True)) and compute.is_floating and \
        compute != layer._kiln_variable_dtype


def _castable(v, dtype):
    return isinstance(v, KerasVariable) and getattr(v, "_kiln_autocast", True) and \
        v.dtype.is_floating and v.dtype != dtype


def _swap(layer, saved, seen):
    if id(layer) in seen or not is_mixed(layer):
        return
    seen.add(id(layer))
    attrs = vars(layer)
    dtype = layer._dtype
    for name, value in list(attrs.items()):
        if _castable(value, dtype):
            saved.append((attrs, name, value))
            attrs[name] = _kiln.raw.Cast(value, DstT=dtype)
    for child in layer._sublayers_direct():
        _swap(child, saved, seen)


@contextlib.contextmanager
def autocast_variables(layer):
    """Within: the mixed-precision layers' variables read in their compute dtype."""
    saved = []
    try:
        _swap(layer, saved, set())
        yield
    finally:
        for attrs, name, value in reversed(saved):
            attrs[name] = value


_HALF = ("float16", "bfloat16")


def cast_call_args(layer, args, kwargs):
    """The other call arguments' floating tensors cast to a float16 / bfloat16
    compute dtype, as Keras casts every argument (``value`` of an attention
    layer, an RNN's ``initial_state``); other layers' are left as they are."""
    dtype = layer._dtype
    if not (args or kwargs) or dtype.name not in _HALF or not layer._autocast:
        return args, kwargs

    def conv(x):
        if isinstance(x, _kiln.Tensor) and x.dtype.is_floating and x.dtype != dtype:
            return _kiln.raw.Cast(x, DstT=dtype)
        return x
    return tuple(nest.map_structure(conv, list(args))), nest.map_structure(conv, kwargs)
