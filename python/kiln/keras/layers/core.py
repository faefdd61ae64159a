"""Core layers: Dense, Activation, Dropout, Flatten, Reshape, Rescaling, Lambda."""
import numpy as np

from kiln import _kiln
from kiln.keras import _sparse_rows, activations, initializers
from kiln.keras.engine.keras_tensor import KerasTensor
from kiln.keras.layers import _args
from kiln.keras.layers.base import Layer, InputSpec, _unique
from kiln.ops import _helpers as h
from kiln.ops import array_ops, linalg_ops, math_ops, nn_ops
from kiln.tensor_shape import TensorShape

raw = _kiln.raw


def _dims(shape):
    return list(TensorShape(shape))


class Dense(Layer):
    """``activation(inputs @ kernel + bias)`` on the last axis; kernel
    [input_dim, units], bias [units]. Inputs of rank > 2 are multiplied on
    their last axis."""

    _kiln_static_shapes = True

    def __init__(self, units, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, lora_rank=None,
                 lora_alpha=None, quantization_config=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        _args.no_quantization("Dense", quantization_config, lora_rank, lora_alpha)
        self.units = _args.positive_int(units, "units", "Dense")
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.input_spec = InputSpec(min_ndim=2)
        self.supports_masking = True

    def build(self, input_shape):
        last = TensorShape(input_shape)[-1]
        if last is None:
            raise ValueError("The last dimension of the inputs to a Dense layer should be "
                             f"defined. Found None. Full input shape received: {input_shape}")
        self.kernel = self.add_weight("kernel", (last, self.units),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = self.add_weight("bias", (self.units,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last})
        self.built = True

    def call(self, inputs):
        y = linalg_ops.matmul(inputs, self.kernel)
        if self.use_bias:
            y = nn_ops.bias_add(y, self.bias)
        return self.activation(y) if self.activation is not activations.linear else y

    def compute_output_shape(self, input_shape):
        return TensorShape(_dims(input_shape)[:-1] + [self.units])

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer)
                if isinstance(self.kernel_initializer, initializers.Initializer) else None,
                "bias_initializer": initializers.serialize(self.bias_initializer)
                if isinstance(self.bias_initializer, initializers.Initializer) else None,
                **_args.extras_config(self, ("kernel_regularizer", "bias_regularizer",
                                             "kernel_constraint", "bias_constraint")),
                "quantization_config": None}


class Activation(Layer):
    """Applies an activation function (a name from kiln.keras.activations or a callable)."""

    _kiln_static_shapes = True

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)
        self.supports_masking = True

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "activation": activations.serialize(self.activation)}


class Dropout(Layer):
    """Zeroes a fraction ``rate`` of the inputs and scales the rest by
    1 / (1 - rate) when called with training=True; the identity otherwise
    (inference)."""

    _kiln_static_shapes = True

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = _args.rate(rate)
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)
        self.seed = seed
        self.supports_masking = True

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        if self.rate == 1:
            return array_ops.zeros_like(inputs)
        noise = None
        if self.noise_shape is not None:
            dyn = array_ops.shape(inputs)
            noise = [d if d is not None else dyn[i] for i, d in enumerate(self.noise_shape)]
        return nn_ops.dropout(inputs, self.rate, noise_shape=noise, seed=self.seed)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape,
                "seed": self.seed}


class Flatten(Layer):
    """Reshapes [batch, d1, d2, ...] to [batch, d1 * d2 * ...]."""

    _kiln_static_shapes = True

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = _args.data_format(data_format)

    def call(self, inputs):
        x = h.tensor(inputs)
        r = x.ndim
        if r is None:
            raise ValueError("Flatten: the rank of the input must be known")
        if self.data_format == "channels_first" and r > 2:
            x = raw.Transpose(x, perm=[0] + list(range(2, r)) + [1])
        if r < 2:
            return array_ops.expand_dims(x, 1)
        rest = x.shape[1:]
        if all(d is not None for d in rest):
            return array_ops.reshape(x, [-1, int(np.prod(rest, dtype=np.int64))])
        return array_ops.reshape(x, [array_ops.shape(x)[0], -1])

    def compute_output_shape(self, input_shape):
        dims = _dims(input_shape)
        if len(dims) < 2:
            return TensorShape(dims + [1])
        rest = dims[1:]
        n = None if any(d is None for d in rest) else int(np.prod(rest, dtype=np.int64))
        return TensorShape([dims[0], n])

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class Reshape(Layer):
    """Reshapes each sample to ``target_shape`` (the batch axis is kept); one
    entry may be -1."""

    _kiln_static_shapes = True

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        try:
            target = tuple(int(d) for d in target_shape)
        except (TypeError, ValueError):
            raise ValueError(f"Reshape: target_shape must be a tuple of ints, got "
                             f"{target_shape!r}") from None
        if sum(d == -1 for d in target) > 1 or any(d < -1 for d in target):
            raise ValueError(f"Reshape: target_shape may contain at most one -1 and no other "
                             f"negative value, got {target_shape!r}")
        self.target_shape = target

    def _resolved(self, input_shape):
        dims = _dims(input_shape)
        target = list(self.target_shape)
        rest = dims[1:]
        known = None if any(d is None for d in rest) else int(np.prod(rest, dtype=np.int64))
        if -1 in target:
            other = int(np.prod([d for d in target if d != -1], dtype=np.int64))
            if known is not None:
                if other == 0 or known % other:
                    raise ValueError(f"Reshape: the total size of the new array must be "
                                     f"unchanged, input_shape={tuple(rest)}, "
                                     f"output_shape={self.target_shape}")
                target[target.index(-1)] = known // other
            else:
                target[target.index(-1)] = None
        elif known is not None and known != int(np.prod(target, dtype=np.int64)):
            raise ValueError(f"Reshape: the total size of the new array must be unchanged, "
                             f"input_shape={tuple(rest)}, output_shape={self.target_shape}")
        return dims[0], target

    def call(self, inputs):
        x = h.tensor(inputs)
        _, target = self._resolved(x.shape)
        if all(d is not None for d in target):
            return array_ops.reshape(x, [-1] + target)
        return array_ops.reshape(x, [array_ops.shape(x)[0]] + list(self.target_shape))

    def compute_output_shape(self, input_shape):
        batch, target = self._resolved(input_shape)
        return TensorShape([batch] + target)

    def get_config(self):
        return {**super().get_config(), "target_shape": self.target_shape}


class Rescaling(Layer):
    """``inputs * scale + offset`` (scale and offset: numbers or per-channel
    lists); inputs are cast to the layer's dtype first."""

    _kiln_static_shapes = True

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        for name, v in (("scale", scale), ("offset", offset)):
            try:
                np.asarray(v, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"Rescaling: {name} must be a number or a list of numbers, "
                                 f"got {v!r}") from None
        self.scale, self.offset = scale, offset

    def call(self, inputs):
        x = h.tensor(inputs)
        if x.dtype != self._dtype:
            x = raw.Cast(x, DstT=self._dtype)
        s = _kiln.convert_to_tensor(np.asarray(self.scale, dtype=self._dtype.name))
        o = _kiln.convert_to_tensor(np.asarray(self.offset, dtype=self._dtype.name))
        return raw.AddV2(raw.Mul(x, s), o)

    def _output_dtype(self, inputs):
        return self._dtype

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "offset": self.offset}


class Lambda(Layer):
    """Wraps ``function(inputs, **arguments)`` as a layer (no weights).
    ``output_shape`` is optional: shapes are found by tracing when omitted."""

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda: function must be callable, got {function!r}")
        self.function = function
        self.arguments = dict(arguments or {})
        self._output_shape = output_shape

    def call(self, inputs):
        return self.function(inputs, **self.arguments)

    def compute_output_shape(self, input_shape):
        if self._output_shape is None:
            raise NotImplementedError("Lambda: no output_shape given")
        if callable(self._output_shape):
            return self._output_shape(input_shape)
        return TensorShape([TensorShape(input_shape)[0]] + list(self._output_shape))


class _OpLambda(Layer):
    """The layer behind arithmetic on Keras tensors (``x + y``, ``2 * x``)."""

    def __init__(self, fn, op_name, **kwargs):
        super().__init__(name=_unique(f"tf.math.{op_name}"), **kwargs)
        self._fn = fn

    def call(self, inputs):
        if isinstance(inputs, (list, tuple)):
            return self._fn(*inputs)
        return self._fn(inputs)

    def _convert_inputs(self, inputs):
        return inputs


class Embedding(Layer):
    """Rows of ``embeddings`` [input_dim, output_dim] looked up by integer
    indices: output shape = input shape + (output_dim,). With
    ``mask_zero``, index 0 is padding (compute_mask is ``inputs != 0``) and
    input_dim counts it."""

    _kiln_static_shapes = True

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, embeddings_constraint=None, mask_zero=False,
                 weights=None, lora_rank=None, lora_alpha=None, quantization_config=None,
                 **kwargs):
        input_length = kwargs.pop("input_length", None)  # Keras 2's, ignored as Keras 3 does
        del input_length
        super().__init__(**kwargs)
        bad = [v for v in (input_dim, output_dim)
               if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0]
        if bad:
            raise ValueError("Both `input_dim` and `output_dim` should be positive, Received "
                             f"input_dim = {input_dim} and output_dim = {output_dim}")
        _args.no_quantization("Embedding", quantization_config, lora_rank, lora_alpha)
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = embeddings_regularizer
        self.embeddings_constraint = embeddings_constraint
        self.activity_regularizer = kwargs.get("activity_regularizer")
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero
        self._kiln_initial_weights = weights if weights is not None else \
            self._kiln_initial_weights
        self._autocast = False

    def build(self, input_shape=None):
        self.embeddings = self.add_weight("embeddings", (self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint)
        self.built = True

    def call(self, inputs):
        x = h.tensor(inputs)
        if x.dtype.name not in ("int32", "int64"):
            x = raw.Cast(x, DstT=_kiln.as_dtype("int32"))
        if _sparse_rows.active():  # a train step: TensorFlow's sparse row updates
            out = _sparse_rows.lookup(self.embeddings, x)
        else:
            out = array_ops.gather(self.embeddings, x, axis=0)
        if out.dtype != self._dtype and self._dtype.is_floating:  # mixed precision, as Keras
            out = raw.Cast(out, DstT=self._dtype)
        return out

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return raw.NotEqual(h.tensor(inputs), h.zero_of(h.tensor(inputs).dtype))

    def compute_output_shape(self, input_shape):
        return TensorShape(_dims(input_shape) + [self.output_dim])

    def _output_dtype(self, inputs):
        return self._dtype  # rows of the embeddings, whatever the indices' dtype

    def get_config(self):
        return {**super().get_config(), "input_dim": self.input_dim,
                "output_dim": self.output_dim,
                "embeddings_initializer": initializers.serialize(self.embeddings_initializer)
                if isinstance(self.embeddings_initializer, initializers.Initializer) else None,
                "mask_zero": self.mask_zero,
                **_args.extras_config(self, ("embeddings_regularizer", "activity_regularizer",
                                             "embeddings_constraint")),
                "quantization_config": None}


class Masking(Layer):
    """Masks the steps whose features all equal ``mask_value``: they become 0
    and their mask false ([batch, steps] from [batch, steps, features]), so
    later layers (RNNs, pooling) skip them."""

    _kiln_static_shapes = True

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = mask_value
        self.supports_masking = True

    def _keep(self, inputs, keepdims):
        x = h.tensor(inputs)
        differ = raw.NotEqual(x, h.tensor(self.mask_value, x.dtype))
        return math_ops.reduce_any(differ, axis=-1, keepdims=keepdims)

    def call(self, inputs):
        keep = self._keep(inputs, True)
        return inputs * raw.Cast(keep, DstT=h.tensor(inputs).dtype)

    def compute_mask(self, inputs, mask=None):
        return self._keep(inputs, False)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "mask_value": self.mask_value}


# Arithmetic on Keras tensors (x + y, -x) records an _OpLambda node.
KerasTensor._op_layer = _OpLambda

__all__ = ["Dense", "Activation", "Dropout", "Flatten", "Reshape", "Rescaling", "Lambda",
           "Embedding", "Masking"]
