"""Tensor and Variable methods written in Python (printing, shape, ref)."""
import weakref

import numpy as np

from kiln import _kiln
from kiln.tensor_shape import TensorShape

Tensor, Variable = _kiln.Tensor, _kiln.Variable


def _numpy_text(t):
    return str(t.numpy())


def _tensor_str(self):
    if self.is_symbolic:
        return f'Tensor("{self.name}", shape={self.shape}, dtype={self.dtype.name})'
    text = _numpy_text(self)
    if "\n" in text:
        text = "\n" + text
    return f"kiln.Tensor({text}, shape={self.shape}, dtype={self.dtype.name})"


def _tensor_repr(self):
    if self.is_symbolic:
        return f"<kiln.Tensor '{self.name}' shape={self.shape} dtype={self.dtype.name}>"
    v = self.numpy()
    # Scalars show their value (numpy=1.0), arrays their NumPy repr, as the guide prints.
    text = str(v) if self.ndim == 0 else repr(v)
    if "\n" in text:
        text = "\n" + text
    return f"<kiln.Tensor: shape={self.shape}, dtype={self.dtype.name}, numpy={text}>"


def _shape(self):
    # _dims is already a tuple of ints >= 0 and None (or None): no per-dim checks.
    return TensorShape._trusted(self._dims)


class Reference:
    """A hashable reference to a tensor or variable (Tensor.ref())."""

    __slots__ = ("_obj",)

    def __init__(self, obj):
        self._obj = obj

    def deref(self):
        return self._obj

    def _key(self):
        # A variable passed into a function arrives as another Python object
        # over the same variable: compare variables by their variable id.
        obj = self._obj
        return ("v", obj._id) if isinstance(obj, Variable) else ("t", id(obj))

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, Reference) and other._key() == self._key()


Tensor.__str__ = _tensor_str
Tensor.__repr__ = _tensor_repr
Tensor.shape = property(_shape, doc="The static shape (a TensorShape; None for unknown dims).")
Tensor.get_shape = _shape
Tensor.ref = lambda self: Reference(self)
Tensor.experimental_ref = Tensor.ref


def _block_until_ready(self):
    """Returns self: kiln runs ops synchronously, so a tensor is complete when
    an op returns it (the method exists for JAX-style timing code)."""
    return self


Tensor.block_until_ready = _block_until_ready


def _var_repr(self):
    if not _kiln.executing_eagerly():
        # Inside a trace the value is symbolic: TF prints no numpy= part.
        return f"<kiln.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"
    v = self.read_value().numpy()
    text = repr(v) if isinstance(v, np.ndarray) else repr(v.item() if hasattr(v, "item") else v)
    return (f"<kiln.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, "
            f"numpy={text}>")


Variable.shape = property(_shape)
Variable.get_shape = _shape
Variable.__repr__ = _var_repr
Variable.__str__ = _var_repr
Variable.ref = lambda self: Reference(self)
Variable.numpy = lambda self: self.read_value().numpy()


def _var_iter(self):
    """Iterates over the variable's value, as TensorFlow does (`a, b = tf.Variable([1, 2])`)."""
    return iter(self.read_value())


Variable.__iter__ = _var_iter


# The Python object of each live variable, by id: C++ hands back variables (a tape's
# watched_variables) as new wrappers; live_variable() returns the user's own object.
_LIVE = weakref.WeakValueDictionary()
_variable_init = Variable.__init__


def _init_and_register(self, *args, **kwargs):
    _variable_init(self, *args, **kwargs)
    _LIVE[self._id] = self


Variable.__init__ = _init_and_register


def live_variable(v):
    """The Python object the user created for variable v (v itself if unknown)."""
    return _LIVE.get(v._id, v)
