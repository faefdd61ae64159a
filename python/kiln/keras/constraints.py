"""Weight constraints (kiln.keras.constraints): applied to a weight after each
optimizer update. ``MaxNorm``, ``MinMaxNorm`` and ``UnitNorm`` rescale the
slices' L2 norms along ``axis`` (1e-7 added to the norm, as Keras); ``NonNeg``
zeroes negative values."""
from kiln import ops
from kiln.ops import array_ops, math_ops

__all__ = ["Constraint", "MaxNorm", "MinMaxNorm", "NonNeg", "UnitNorm", "max_norm",
           "min_max_norm", "non_neg", "unit_norm", "get", "serialize", "deserialize"]
_EPSILON = 1e-7


class Constraint:
    """Base class: ``constraint(weight)`` is the projected weight."""

    def __call__(self, w):
        return w

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _norms(w, axis):
    return math_ops.sqrt(math_ops.reduce_sum(math_ops.square(w), axis=axis, keepdims=True))


class MaxNorm(Constraint):
    def __init__(self, max_value=2, axis=0):
        self.max_value, self.axis = max_value, axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        desired = math_ops.clip_by_value(norms, 0.0, float(self.max_value))
        return w * (desired / (_EPSILON + norms))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class MinMaxNorm(Constraint):
    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        clipped = math_ops.clip_by_value(norms, float(self.min_value), float(self.max_value))
        desired = self.rate * clipped + (1 - self.rate) * norms
        return w * (desired / (_EPSILON + norms))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


class NonNeg(Constraint):
    def __call__(self, w):
        return w * ops.cast(math_ops.greater_equal(w, array_ops.zeros_like(w)), w.dtype)


class UnitNorm(Constraint):
    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        return w / (_EPSILON + _norms(w, self.axis))

    def get_config(self):
        return {"axis": self.axis}


max_norm, min_max_norm, non_neg, unit_norm = MaxNorm, MinMaxNorm, NonNeg, UnitNorm
_CLASSES = (MaxNorm, MinMaxNorm, NonNeg, UnitNorm)
_BY_NAME = {c.__name__: c for c in _CLASSES}
_BY_NAME.update({"max_norm": MaxNorm, "min_max_norm": MinMaxNorm, "non_neg": NonNeg,
                 "unit_norm": UnitNorm})


def serialize(constraint):
    """Keras 3's dict: module, class_name, config, registered_name."""
    return {"module": "keras.constraints", "class_name": type(constraint).__name__,
            "config": constraint.get_config(), "registered_name": None}


def deserialize(config):
    cls = _BY_NAME.get(config.get("class_name")) if isinstance(config, dict) else None
    if cls is None:
        raise ValueError(f"Could not interpret constraint identifier: {config!r}")
    return cls.from_config(dict(config.get("config") or {}))


def get(identifier):
    """A constraint from a name ('non_neg'), a config dict, an instance or a
    callable(weight); None gives None."""
    if identifier is None or isinstance(identifier, Constraint):
        return identifier
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"Could not interpret constraint identifier: {identifier!r}")
        return _BY_NAME[identifier]()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret constraint identifier: {identifier!r}")
