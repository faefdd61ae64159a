"""Argument checks shared by the built-in layers (Keras' names and errors)."""
import numpy as np

from kiln.keras import constraints, initializers, regularizers


def positive_int(value, name, layer):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"Invalid value for argument `{name}` of {layer}. Expected a strictly "
                         f"positive integer. Received {name}={value!r}")
    return int(value)


def int_tuple(value, n, name, allow_zero=False):
    """An int or n ints as an n-tuple (kernel_size, strides, pool_size, ...)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        out = (int(value),) * n
    else:
        try:
            out = tuple(value)
        except TypeError:
            out = None
        if out is None or len(out) != n or any(
                isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in out):
            raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. "
                             f"Received {name}={value!r}")
        out = tuple(int(v) for v in out)
    low = 0 if allow_zero else 1
    if any(v < low for v in out):
        kind = "non-negative" if allow_zero else "strictly positive"
        raise ValueError(f"The `{name}` argument must be {kind}. Received {name}={value!r}")
    return out


def padding_mode(value):
    p = value.lower() if isinstance(value, str) else value
    if p not in ("valid", "same"):
        raise ValueError(f"The `padding` argument must be one of 'valid', 'same'. "
                         f"Received padding={value!r}")
    return p


def data_format(value):
    if value is None:
        return "channels_last"
    v = value.lower() if isinstance(value, str) else value
    if v not in ("channels_last", "channels_first"):
        raise ValueError("The `data_format` argument must be one of 'channels_first', "
                         f"'channels_last'. Received data_format={value!r}")
    return v


def conv_output_length(length, kernel, padding, stride, dilation=1):
    """Output length of a convolution / pooling window along one axis."""
    if length is None:
        return None
    eff = (kernel - 1) * dilation + 1
    if padding == "same":
        return (length + stride - 1) // stride
    return (length - eff + stride) // stride if length >= eff else 0


def rate(value, name="rate"):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) \
            or not 0 <= value <= 1:
        raise ValueError(f"Invalid value received for argument `{name}`. Expected a float value "
                         f"between 0 and 1. Received: {name}={value!r}")
    return float(value)


def serialize(obj, kind=None):
    """A regularizer / constraint argument as a config value: Keras 3's dict
    (module, class_name, config, registered_name) for an object or a name of
    ``kind`` ('regularizer' / 'constraint'); None stays None."""
    if kind is not None and isinstance(obj, (str, dict)):
        obj = _KINDS[kind].get(obj)
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    if isinstance(obj, regularizers.Regularizer):
        return regularizers.serialize(obj)
    if isinstance(obj, constraints.Constraint):
        return constraints.serialize(obj)
    if hasattr(obj, "get_config"):
        return {"module": type(obj).__module__, "class_name": type(obj).__name__,
                "config": obj.get_config(), "registered_name": None}
    return getattr(obj, "__name__", repr(obj))


_KINDS = {"regularizer": regularizers, "constraint": constraints}


def _kind(name):
    return next((k for k in _KINDS if name.endswith(k)), None)


def extras_config(layer, names):
    """{name: serialize(layer.<name>)}: the regularizers and constraints Keras lists."""
    return {n: serialize(getattr(layer, n, None), _kind(n)) for n in names}


CONV_EXTRAS = ("kernel_regularizer", "bias_regularizer", "activity_regularizer",
               "kernel_constraint", "bias_constraint")


def init_config(init):
    """An initializer argument as a config value (None when it is a plain function)."""
    return initializers.serialize(init) if isinstance(init, initializers.Initializer) else None


def no_quantization(layer, quantization_config=None, lora_rank=None, lora_alpha=None):
    """Keras 3's quantization and LoRA arguments: accepted when off."""
    if quantization_config is not None:
        raise NotImplementedError(f"{layer}(quantization_config=...): quantized layers are "
                                  "not supported by kiln yet")
    if lora_rank is not None or lora_alpha is not None:
        raise NotImplementedError(f"{layer}(lora_rank=...): LoRA is not supported by kiln yet")
