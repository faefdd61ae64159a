"""Weight regularizers (kiln.keras.regularizers): penalties added to the loss.

``L1(l1)``: l1 * sum(|w|); ``L2(l2)``: l2 * sum(w^2); ``L1L2(l1, l2)``: both.
A layer's ``kernel_regularizer='l2'`` (a name, a config dict or an instance)
is resolved with ``get``.
"""
from kiln.ops import _helpers as h
from kiln.ops import math_ops

__all__ = ["Regularizer", "L1", "L2", "L1L2", "l1", "l2", "l1_l2", "get", "serialize",
           "deserialize"]


def _factor(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"Value for argument `{name}` must be a non-negative float. "
                         f"Received: {name}={value!r}")
    return float(value)


class Regularizer:
    """Base class: ``regularizer(weight)`` is a scalar penalty."""

    def __call__(self, x):
        return 0.0

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class L1(Regularizer):
    def __init__(self, l1=0.01):
        self.l1 = _factor(l1, "l1")

    def __call__(self, x):
        return self.l1 * math_ops.reduce_sum(math_ops.abs(x))

    def get_config(self):
        return {"l1": self.l1}


class L2(Regularizer):
    def __init__(self, l2=0.01):
        self.l2 = _factor(l2, "l2")

    def __call__(self, x):
        return self.l2 * math_ops.reduce_sum(math_ops.square(x))

    def get_config(self):
        return {"l2": self.l2}


class L1L2(Regularizer):
    def __init__(self, l1=0.0, l2=0.0):
        self.l1, self.l2 = _factor(l1, "l1"), _factor(l2, "l2")

    def __call__(self, x):
        out = h.tensor(0.0, x.dtype)  # a tensor even when both factors are 0 (Keras)
        if self.l1:
            out = out + self.l1 * math_ops.reduce_sum(math_ops.abs(x))
        if self.l2:
            out = out + self.l2 * math_ops.reduce_sum(math_ops.square(x))
        return out

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


l1, l2, l1_l2 = L1, L2, L1L2
_BY_NAME = {"L1": L1, "L2": L2, "L1L2": L1L2, "l1": L1, "l2": L2, "l1_l2": L1L2, "l1l2": L1L2}


def serialize(regularizer):
    """Keras 3's dict: module, class_name, config, registered_name."""
    return {"module": "keras.regularizers", "class_name": type(regularizer).__name__,
            "config": regularizer.get_config(), "registered_name": None}


def deserialize(config):
    cls = _BY_NAME.get(config.get("class_name")) if isinstance(config, dict) else None
    if cls is None:
        raise ValueError(f"Could not interpret regularizer identifier: {config!r}")
    return cls.from_config(dict(config.get("config") or {}))


def get(identifier):
    """A regularizer from a name ('l2'), a config dict, an instance or a
    callable(weight); None gives None."""
    if identifier is None or isinstance(identifier, Regularizer):
        return identifier
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"Could not interpret regularizer identifier: {identifier!r}")
        return _BY_NAME[identifier]()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret regularizer identifier: {identifier!r}")
