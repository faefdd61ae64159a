"""Regularization layers that act only when training: GaussianNoise, GaussianDropout,
SpatialDropout1D/2D (Keras 3's arguments, defaults and errors)."""
import math

from kiln.keras.layers import _args
from kiln.keras.layers.base import Layer, InputSpec
from kiln.ops import array_ops, nn_ops, random_ops
from kiln.tensor_shape import TensorShape


class GaussianNoise(Layer):
    """Adds N(0, stddev) noise when training; the identity otherwise."""

    _kiln_static_shapes = True

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.stddev = _args.rate(stddev, "stddev")
        self.seed = seed
        self.supports_masking = True

    def call(self, inputs, training=False):
        if not training or self.stddev == 0:
            return inputs
        noise = random_ops.normal(array_ops.shape(inputs), mean=0.0, stddev=self.stddev,
                                  dtype=inputs.dtype, seed=self.seed)
        return inputs + noise

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}


class GaussianDropout(Layer):
    """Multiplies by N(1, sqrt(rate / (1 - rate))) noise when training; the
    identity otherwise."""

    _kiln_static_shapes = True

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = _args.rate(rate)
        self.seed = seed
        self.supports_masking = True

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        if self.rate == 1:
            return array_ops.zeros_like(inputs)
        stddev = math.sqrt(self.rate / (1.0 - self.rate))
        noise = random_ops.normal(array_ops.shape(inputs), mean=1.0, stddev=stddev,
                                  dtype=inputs.dtype, seed=self.seed)
        return inputs * noise

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


class _SpatialDropout(Layer):
    """Dropout of whole feature maps when training: each (sample, channel) is
    zeroed everywhere with probability ``rate`` (the rest scaled by
    1 / (1 - rate)); the identity otherwise."""

    _kiln_static_shapes = True
    _ndim = None

    def __init__(self, rate, data_format=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = _args.rate(rate)
        self.data_format = _args.data_format(data_format)
        self.seed = seed
        self.input_spec = InputSpec(ndim=self._ndim)

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        if self.rate == 1:
            return array_ops.zeros_like(inputs)
        s = array_ops.shape(inputs)
        n = self._ndim
        if self.data_format == "channels_last":
            noise = [s[0]] + [1] * (n - 2) + [s[n - 1]]
        else:
            noise = [s[0], s[1]] + [1] * (n - 2)
        return nn_ops.dropout(inputs, self.rate, noise_shape=noise, seed=self.seed)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):  # Keras' own short list (no "trainable")
        return {"rate": self.rate, "seed": self.seed, "name": self.name, "dtype": self.dtype}


class SpatialDropout1D(_SpatialDropout):
    """Spatial dropout of [batch, steps, channels]: a channel is dropped at every step."""

    _ndim = 3

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(rate, seed=seed, **kwargs)


class SpatialDropout2D(_SpatialDropout):
    """Spatial dropout of 4-D images: a channel is dropped at every pixel."""

    _ndim = 4

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


__all__ = ["GaussianNoise", "GaussianDropout", "SpatialDropout1D", "SpatialDropout2D"]
