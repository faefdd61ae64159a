"""Activation layers: ReLU, LeakyReLU, PReLU, ELU, Softmax (Keras 3's arguments, defaults and
errors)."""
from kiln import dtypes
from kiln.keras import activations, initializers
from kiln.keras.layers.base import Layer, InputSpec
from kiln.ops import _helpers as h
from kiln.ops import array_ops, math_ops, nn_ops
from kiln.tensor_shape import TensorShape


def _number(value, name, layer, what):
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) \
            or value < 0:
        raise ValueError(f"{name} of a {layer} layer cannot be {what}. Received: "
                         f"{name}={value!r}")
    return float(value)


class ReLU(Layer):
    """max_value for x >= max_value, x for threshold < x < max_value,
    negative_slope * (x - threshold) below threshold."""

    _kiln_static_shapes = True

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        if max_value is not None:
            max_value = _number(max_value, "max_value", "ReLU", "a negative value")
        self.max_value = max_value
        self.negative_slope = _number(negative_slope, "negative_slope", "ReLU",
                                      "a negative value")
        self.threshold = _number(threshold, "threshold", "ReLU", "a negative value")
        self.supports_masking = True

    def call(self, inputs):
        return activations.relu(inputs, negative_slope=self.negative_slope,
                                max_value=self.max_value, threshold=self.threshold)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "max_value": self.max_value,
                "negative_slope": self.negative_slope, "threshold": self.threshold}


class LeakyReLU(Layer):
    """x for x > 0, negative_slope * x elsewhere (``alpha`` is the older name)."""

    _kiln_static_shapes = True

    def __init__(self, negative_slope=0.3, **kwargs):
        if "alpha" in kwargs:
            negative_slope = kwargs.pop("alpha")
        super().__init__(**kwargs)
        if negative_slope is None or isinstance(negative_slope, bool) \
                or not isinstance(negative_slope, (int, float)) or negative_slope < 0:
            raise ValueError("The negative_slope value of a Leaky ReLU layer cannot be None or "
                             "negative value. Expected a float. Received: "
                             f"negative_slope={negative_slope!r}")
        self.negative_slope = float(negative_slope)
        self.supports_masking = True

    def call(self, inputs):
        return activations.leaky_relu(inputs, negative_slope=self.negative_slope)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "negative_slope": self.negative_slope}


class PReLU(Layer):
    """x for x > 0, alpha * x elsewhere, with a learned ``alpha`` of the
    input's shape less the batch axis (axes in ``shared_axes``, counted from
    1, share one value)."""

    _kiln_static_shapes = True

    def __init__(self, alpha_initializer="Zeros", alpha_regularizer=None, alpha_constraint=None,
                 shared_axes=None, **kwargs):
        super().__init__(**kwargs)
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = alpha_regularizer
        self.alpha_constraint = alpha_constraint
        if shared_axes is None:
            self.shared_axes = None
        elif isinstance(shared_axes, (list, tuple)):
            self.shared_axes = list(shared_axes)
        else:
            self.shared_axes = [shared_axes]
        self.supports_masking = True

    def build(self, input_shape):
        dims = list(TensorShape(input_shape))
        param = dims[1:]
        for a in self.shared_axes or []:
            if not isinstance(a, int) or not 1 <= a < len(dims):
                raise ValueError(f"Invalid axis in `shared_axes` of PReLU: {a} (inputs of rank "
                                 f"{len(dims)}; axes count from 1)")
            param[a - 1] = 1
        if any(d is None for d in param):
            raise ValueError("PReLU needs the input's dimensions other than the batch and the "
                             f"shared axes defined. Received: input_shape={input_shape}")
        self.alpha = self.add_weight("alpha", tuple(param), initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)
        axes = {i: dims[i] for i in range(1, len(dims)) if i not in (self.shared_axes or [])}
        self.input_spec = InputSpec(ndim=len(dims), axes=axes)
        self.built = True

    def call(self, inputs):
        pos = nn_ops.relu(inputs)
        neg = math_ops.multiply(-self.alpha, nn_ops.relu(-inputs))
        return pos + neg

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(),
                "alpha_initializer": initializers.serialize(self.alpha_initializer)
                if isinstance(self.alpha_initializer, initializers.Initializer) else None,
                "alpha_regularizer": None, "alpha_constraint": None,
                "shared_axes": self.shared_axes}


class ELU(Layer):
    """x for x > 0, alpha * (exp(x) - 1) elsewhere."""

    _kiln_static_shapes = True

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = float(alpha)
        self.supports_masking = True

    def call(self, inputs):
        return activations.elu(inputs, alpha=self.alpha)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


class Softmax(Layer):
    """Softmax over ``axis`` (an int or a list of ints). With a ``mask`` (1
    or True: keep), masked positions take part as a large negative logit and
    their outputs are 0, so a row masked whole gives zeros."""

    _kiln_static_shapes = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is not None:
            mask = h.tensor(mask)
            if mask.dtype.name != "bool":
                mask = math_ops.greater(mask, h.tensor(0.5, mask.dtype))
            low = -3e4 if inputs.dtype.name == "float16" else -1e9
            inputs = array_ops.where(mask, inputs, h.tensor(low, inputs.dtype))
        axis = self.axis
        if isinstance(axis, (list, tuple)) and len(axis) > 1:
            out = math_ops.exp(inputs - math_ops.reduce_logsumexp(inputs, axis=list(axis),
                                                                   keepdims=True))
        else:
            if isinstance(axis, (list, tuple)):
                axis = axis[0]
            out = activations.softmax(inputs, axis=axis)
        if mask is not None:
            out = out * dtypes.cast(mask, out.dtype)
        return out

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


__all__ = ["ReLU", "LeakyReLU", "PReLU", "ELU", "Softmax"]
