"""Keras 3's dtype policies (keras.dtype_policies, keras.mixed_precision).

A policy names the dtype a layer computes in (``compute_dtype``) and the dtype
it keeps its variables in (``variable_dtype``): ``"float32"`` (both float32),
any other dtype name, ``"mixed_float16"`` / ``"mixed_bfloat16"`` (float16 /
bfloat16 computations, float32 variables). Layers take one as ``dtype=``; the
global policy (``set_dtype_policy``, alias ``set_global_policy``) is the
default of layers created after it is set. As in Keras it is per thread and
``keras.backend.clear_session()`` resets it to float32.

A leaf module: kiln.keras.layers.base reads the global policy from here.
"""
import threading

import numpy as np

from kiln import _kiln

__all__ = ["DTypePolicy", "FloatDTypePolicy", "Policy", "get", "serialize", "deserialize",
           "dtype_policy", "set_dtype_policy", "global_policy", "set_global_policy"]

_STATE = threading.local()
_SHORT = {"float": "float32", "int": "int64"}


def _standardize(name):
    """A dtype name as Keras' standardize_dtype gives it, or ValueError."""
    name = _SHORT.get(name, name)
    try:
        return _kiln.as_dtype(name).name
    except (TypeError, ValueError):
        raise ValueError(f"Invalid dtype: {name}") from None


class DTypePolicy:
    """A dtype policy for a Keras layer (keras.DTypePolicy; also
    keras.mixed_precision.Policy).

    Args:
      name: ``"mixed_float16"``, ``"mixed_bfloat16"`` or a dtype name such as
        ``"float32"`` (both dtypes that one); None: the global policy's name.
    """

    def __init__(self, name=None):
        if name is None:
            name = dtype_policy().name
        self._name = name
        self._compute_dtype, self._variable_dtype = self._parse_name(name)
        self._quantization_mode = None

    @staticmethod
    def _parse_name(name):
        if not isinstance(name, str):
            raise TypeError("'name' must be a string, such as 'mixed_float16'. "
                            f"Received: name={name} (of type {type(name)})")
        if name == "mixed_float16":
            return "float16", "float32"
        if name == "mixed_bfloat16":
            return "bfloat16", "float32"
        try:
            dtype = _standardize(name)
        except ValueError:
            raise ValueError(f"Cannot convert '{name}' to a mixed precision DTypePolicy. Valid "
                             "policies include 'mixed_float16', 'mixed_bfloat16', and the "
                             "name of any float dtype such as 'float32'.") from None
        return dtype, dtype

    @property
    def name(self):
        """The policy's name ("mixed_float16", "float32", ...)."""
        return self._name

    @property
    def compute_dtype(self):
        """The dtype layers compute in (and return), as a string."""
        return self._compute_dtype

    @property
    def variable_dtype(self):
        """The dtype layers create their variables in, as a string."""
        return self._variable_dtype

    @property
    def quantization_mode(self):
        """None: kiln has no quantized policies."""
        return self._quantization_mode

    def get_config(self):
        return {"name": self._name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f'<DTypePolicy "{self._name}">'

    def __eq__(self, other):
        if type(other) not in (DTypePolicy, FloatDTypePolicy):
            return False
        return self._name == other._name

    def __hash__(self):
        return hash(self._name)


class FloatDTypePolicy(DTypePolicy):
    """An alias of DTypePolicy (keras.FloatDTypePolicy)."""


Policy = DTypePolicy  # keras.mixed_precision.Policy (legacy name)

_CLASSES = {"DTypePolicy": DTypePolicy, "FloatDTypePolicy": FloatDTypePolicy,
            "Policy": DTypePolicy}


def serialize(policy):
    """Keras 3's dict for a policy: {"module": "keras", "class_name":
    "DTypePolicy", "config": {"name": ...}, "registered_name": None}."""
    return {"module": "keras", "class_name": "DTypePolicy", "config": policy.get_config(),
            "registered_name": None}


def deserialize(config, custom_objects=None):
    """The policy ``serialize`` (or Keras) described."""
    name = config.get("class_name") if isinstance(config, dict) else None
    cls = (custom_objects or {}).get(name) or _CLASSES.get(name)
    if cls is None:
        raise ValueError(f"Cannot interpret `dtype` argument. Expected a string or an instance "
                         f"of DTypePolicy. Received: identifier={config}")
    return cls.from_config(dict(config.get("config") or {}))


def get(identifier):
    """A DTypePolicy from None (the global policy), a name, a policy, a
    ``serialize`` dict or a dtype (kiln, NumPy)."""
    if identifier is None:
        return dtype_policy()
    if isinstance(identifier, DTypePolicy):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        return DTypePolicy(identifier)
    try:
        name = getattr(identifier, "name", None)  # kiln's or TensorFlow's DType
        if not isinstance(name, str):
            name = np.dtype(identifier).name
        return DTypePolicy(_standardize(name))
    except (TypeError, ValueError):
        raise ValueError("Cannot interpret `dtype` argument. Expected a string or an instance "
                         f"of DTypePolicy. Received: identifier={identifier}") from None


def set_dtype_policy(policy):
    """Sets the default policy of the layers created from now on, in this
    thread (keras.config.set_dtype_policy, mixed_precision.set_global_policy)."""
    if not isinstance(policy, DTypePolicy):
        if not isinstance(policy, str):
            raise ValueError("Invalid `policy` argument. Expected the string name of a policy "
                             "(such as 'mixed_float16') or a `DTypePolicy` instance. "
                             f"Received: policy={policy} (of type {type(policy)})")
        policy = DTypePolicy(policy)
    _STATE.policy = policy


def dtype_policy():
    """The global policy (float32 unless set_dtype_policy changed it)."""
    policy = getattr(_STATE, "policy", None)
    if policy is None:
        policy = _STATE.policy = DTypePolicy("float32")
    return policy


def reset():
    """Back to the float32 policy (keras.backend.clear_session)."""
    _STATE.policy = None


global_policy = dtype_policy
set_global_policy = set_dtype_policy
