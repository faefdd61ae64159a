"""Preprocessing layers: Normalization (with adapt), Resizing, CenterCrop, RandomFlip and
CategoryEncoding (Keras 3's arguments, defaults and errors). They run eagerly, in functions
and in ``tf.data`` pipelines (``dataset.map(layer)``)."""
import numpy as np

import kiln.image as image_ops
from kiln import _kiln, dtypes
from kiln.keras.layers import _args
from kiln.keras.layers.base import Layer
from kiln.keras.layers.index_lookup import to_sparse
from kiln.ops import _helpers as h
from kiln.ops import array_ops, math_ops, random_ops
from kiln.tensor_shape import TensorShape

_EPSILON = 1e-7  # keras.backend.epsilon()


def _as_numpy_batches(data):
    """The batches of `data` (an array, a tensor, or a dataset of them) as NumPy arrays."""
    if isinstance(data, (np.ndarray, list, tuple, float, int)):
        yield np.asarray(data)
    elif isinstance(data, (_kiln.Tensor, _kiln.Variable)):
        yield np.asarray(data)
    else:
        for batch in data:
            if isinstance(batch, (list, tuple)):  # (features, labels): Keras adapts on features
                batch = batch[0]
            yield np.asarray(batch)


class Normalization(Layer):
    """(x - mean) / sqrt(variance) along ``axis`` (the feature axes kept; the
    others reduced), from ``mean``/``variance`` given, or from ``adapt(data)``
    (non-trainable weights ``mean`` and ``variance``). ``invert`` maps back."""

    _kiln_static_shapes = True

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        self.axis = (axis,) if isinstance(axis, int) else tuple(axis)
        if (mean is None) != (variance is None):
            raise ValueError("When setting values directly, both `mean` and `variance` must be "
                             f"set. Received: mean={mean} and variance={variance}")
        self.input_mean, self.input_variance = mean, variance
        self.invert = bool(invert)
        self.supports_masking = True

    def _keep(self, rank):
        return sorted(a % rank for a in self.axis)

    def build(self, input_shape):
        shape = TensorShape(input_shape)
        rank = shape.rank
        keep = self._keep(rank)
        dims = [shape[a] for a in keep]
        if any(d is None for d in dims):
            raise ValueError("All `axis` values to be kept must have a known shape. Received "
                             f"axis={self.axis}, inputs.shape={shape}")
        self._rank = rank
        self._param_shape = tuple(dims)
        if self.input_mean is None:
            self.adapt_mean = self.add_weight("mean", self._param_shape, initializer="zeros",
                                              trainable=False)
            self.adapt_variance = self.add_weight("variance", self._param_shape,
                                                  initializer="ones", trainable=False)
            # Keras keeps it for old saved models (never updated).
            self.count = self.add_weight("count", (), dtype="int64", initializer="zeros",
                                         trainable=False)
        self.built = True

    def adapt(self, data, batch_size=None, steps=None):
        """Sets mean and variance from `data` (an array, a tensor, or a dataset
        of batches), combining the batches' statistics exactly."""
        count, total, total_sq = 0, None, None
        for i, batch in enumerate(_as_numpy_batches(data)):
            if steps is not None and i >= steps:
                break
            x = batch.astype(np.float64)
            if x.ndim == 1 and self.axis == (-1,):
                x = x[:, None]
            if not self.built:
                self.build((None,) + x.shape[1:])
            keep = self._keep(x.ndim)
            reduce = tuple(a for a in range(x.ndim) if a not in keep)
            n = int(np.prod([x.shape[a] for a in reduce])) if reduce else 1
            s, sq = x.sum(axis=reduce), (x * x).sum(axis=reduce)
            count += n
            total = s if total is None else total + s
            total_sq = sq if total_sq is None else total_sq + sq
        if count == 0:
            raise ValueError("Normalization.adapt: `data` holds no values")
        mean = total / count
        var = np.maximum(total_sq / count - mean * mean, 0.0)
        self.adapt_mean.assign(mean.reshape(self._param_shape).astype(np.float32))
        self.adapt_variance.assign(var.reshape(self._param_shape).astype(np.float32))

    def _stats(self, x):
        rank = len(x.shape)
        keep = self._keep(rank)
        shape = [x.shape[a] if a in keep else 1 for a in range(rank)]
        if self.input_mean is not None:
            mean = np.broadcast_to(np.asarray(self.input_mean, np.float32),
                                   self._param_shape).reshape(shape)
            var = np.broadcast_to(np.asarray(self.input_variance, np.float32),
                                  self._param_shape).reshape(shape)
            return h.tensor(mean, x.dtype), h.tensor(var, x.dtype)
        return (array_ops.reshape(self.adapt_mean, shape),
                array_ops.reshape(self.adapt_variance, shape))

    def call(self, inputs):
        x = h.tensor(inputs)
        if not x.dtype.is_floating:
            x = dtypes.cast(x, "float32")
        mean, var = self._stats(x)
        std = math_ops.maximum(math_ops.sqrt(var), h.tensor(_EPSILON, x.dtype))
        if self.invert:
            return mean + x * std
        return (x - mean) / std

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        mean, var = self.input_mean, self.input_variance
        return {**super().get_config(), "axis": self.axis, "invert": self.invert,
                "mean": np.asarray(mean).tolist() if mean is not None else None,
                "variance": np.asarray(var).tolist() if var is not None else None}


def _hw_axes(x, data_format):
    rank = len(x.shape)
    if rank not in (3, 4):
        raise ValueError("Expected an image array with shape `(height, width, channels)`, or "
                         "`(batch_size, height, width, channels)`, but got input with incorrect "
                         f"rank, of shape {tuple(x.shape)}.")
    first = rank - 3 if data_format == "channels_last" else rank - 2
    return first, first + 1


class Resizing(Layer):
    """Resizes images to ``height`` x ``width`` (tf.image.resize's methods;
    half-pixel centers), batched or not. ``crop_to_aspect_ratio`` first crops
    the largest central window of the target's aspect ratio;
    ``pad_to_aspect_ratio`` first pads both sides evenly with ``fill_value``."""

    _kiln_static_shapes = True

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False,
                 pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0,
                 antialias=False, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.height = _args.positive_int(height, "height", "Resizing")
        self.width = _args.positive_int(width, "width", "Resizing")
        if interpolation not in ("bilinear", "nearest"):
            raise ValueError("Resizing: `interpolation` must be 'bilinear' or 'nearest' (the "
                             f"methods supported so far). Received: {interpolation!r}")
        if crop_to_aspect_ratio and pad_to_aspect_ratio:
            raise ValueError("Only one of `pad_to_aspect_ratio` & `crop_to_aspect_ratio` can "
                             "be True.")
        if antialias:
            raise NotImplementedError("Resizing(antialias=True) is not supported yet")
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)
        self.pad_to_aspect_ratio = bool(pad_to_aspect_ratio)
        self.fill_mode, self.fill_value, self.antialias = fill_mode, fill_value, False
        self.data_format = _args.data_format(data_format)

    def _to_aspect(self, x):
        """[N, H, W, C] cropped or padded to the target's aspect ratio (Keras' sizes)."""
        hh, ww = x.shape[1], x.shape[2]
        if self.crop_to_aspect_ratio:
            ch = max(min(hh, int(ww * self.height / self.width)), 1)
            cw = max(min(ww, int(hh * self.width / self.height)), 1)
            top, left = int((hh - ch) / 2), int((ww - cw) / 2)
            return x[:, top:top + ch, left:left + cw, :]
        top = int((max(hh, int(ww * self.height / self.width)) - hh) / 2)
        left = int((max(ww, int(hh * self.width / self.height)) - ww) / 2)
        pads = [[0, 0], [top, top], [left, left], [0, 0]]
        return array_ops.pad(x, pads, constant_values=self.fill_value)

    def call(self, inputs):
        x = h.tensor(inputs)
        batched = len(x.shape) == 4
        if self.data_format == "channels_first":
            x = array_ops.transpose(x, [0, 2, 3, 1] if batched else [1, 2, 0])
        x = x if batched else array_ops.expand_dims(x, 0)
        if self.crop_to_aspect_ratio or self.pad_to_aspect_ratio:
            x = self._to_aspect(x)
        y = image_ops.resize(x, [self.height, self.width], method=self.interpolation)
        if not batched:
            y = array_ops.squeeze(y, [0])
        if self.data_format == "channels_first":
            y = array_ops.transpose(y, [0, 3, 1, 2] if batched else [2, 0, 1])
        return y

    def compute_output_shape(self, input_shape):
        dims = list(TensorShape(input_shape))
        first = len(dims) - 3 if self.data_format == "channels_last" else len(dims) - 2
        dims[first], dims[first + 1] = self.height, self.width
        return TensorShape(dims)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "interpolation": self.interpolation,
                "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
                "pad_to_aspect_ratio": self.pad_to_aspect_ratio, "fill_mode": self.fill_mode,
                "fill_value": self.fill_value, "antialias": self.antialias,
                "data_format": self.data_format}


class CenterCrop(Layer):
    """The central ``height`` x ``width`` of each image (inputs at least that
    large)."""

    _kiln_static_shapes = True

    def __init__(self, height, width, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.height = _args.positive_int(height, "height", "CenterCrop")
        self.width = _args.positive_int(width, "width", "CenterCrop")
        self.data_format = _args.data_format(data_format)

    def call(self, inputs):
        x = h.tensor(inputs)
        ha, wa = _hw_axes(x, self.data_format)
        shape = array_ops.shape(x)
        idx = [slice(None)] * len(x.shape)
        for axis, size in ((ha, self.height), (wa, self.width)):
            n = x.shape[axis]
            if n is not None and n < size:
                raise ValueError(f"CenterCrop: the input's size {n} along axis {axis} is smaller "
                                 f"than the crop {size} (resizing up is not supported yet)")
            start = (n - size) // 2 if n is not None else (shape[axis] - size) // 2
            idx[axis] = slice(start, start + size)
        return x[tuple(idx)]

    def compute_output_shape(self, input_shape):
        dims = list(TensorShape(input_shape))
        first = len(dims) - 3 if self.data_format == "channels_last" else len(dims) - 2
        dims[first], dims[first + 1] = self.height, self.width
        return TensorShape(dims)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "data_format": self.data_format}


class RandomFlip(Layer):
    """When training, flips each image left-right ("horizontal"), up-down
    ("vertical") or both ways independently, each with probability 1/2; the
    identity otherwise."""

    _kiln_static_shapes = True
    _MODES = ("horizontal", "vertical", "horizontal_and_vertical")

    def __init__(self, mode="horizontal_and_vertical", seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        if mode not in self._MODES:
            raise ValueError(f"RandomFlip layer {self.name} received an unknown mode argument "
                             f"{mode}")
        self.mode, self.seed = mode, seed
        self.data_format = _args.data_format(data_format)

    def call(self, inputs, training=True):
        x = h.tensor(inputs)
        if not training:
            return x
        ha, wa = _hw_axes(x, self.data_format)
        batched = len(x.shape) == 4
        n = array_ops.shape(x)[0] if batched else 1
        axes = ([wa] if self.mode != "vertical" else []) + \
            ([ha] if self.mode != "horizontal" else [])
        for axis in axes:
            flip = random_ops.uniform([n], dtype="float32", seed=self.seed) < 0.5
            flip = array_ops.reshape(flip, [-1] + [1] * (len(x.shape) - 1)) if batched \
                else array_ops.reshape(flip, [1] * len(x.shape))
            x = array_ops.where(flip, array_ops.reverse(x, [axis]), x)
        return x

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "mode": self.mode, "seed": self.seed,
                "data_format": self.data_format}


class CategoryEncoding(Layer):
    """Integer categories in [0, num_tokens) as vectors: "one_hot" (one
    category per entry, a trailing axis of 1 dropped), "multi_hot" (1 for
    each category present) or "count", both over axis 1 as Keras (a 1-D input
    is one example); ``sparse=True``: the same values as a SparseTensor."""

    _kiln_static_shapes = True

    def __init__(self, num_tokens=None, output_mode="multi_hot", sparse=False, **kwargs):
        super().__init__(**kwargs)
        if output_mode not in ("one_hot", "multi_hot", "count"):
            raise ValueError("Unknown arg for output_mode: "
                             f"{output_mode}. Expected one of {{'one_hot', 'multi_hot', "
                             "'count'}}")
        if num_tokens is None:
            raise ValueError("num_tokens must be set to use this layer. If the number of tokens "
                             "is not known beforehand, use the IntegerLookup layer instead.")
        if isinstance(num_tokens, bool) or not isinstance(num_tokens, int) or num_tokens < 1:
            raise ValueError(f"`num_tokens` must be >= 1. Received: num_tokens={num_tokens}.")
        self.num_tokens, self.output_mode, self.sparse = num_tokens, output_mode, bool(sparse)

    def call(self, inputs):
        out = self._dense(inputs)
        return to_sparse(out) if self.sparse else out

    def _dense(self, inputs):
        """Keras 3's encoding: a scalar is one sample; multi_hot and count reduce axis 1
        (axis 0 of a 1-D input, one sample)."""
        x = h.tensor(inputs)
        if x.dtype.is_floating:
            x = dtypes.cast(x, "int64")
        if len(x.shape) == 0:
            x = array_ops.expand_dims(x, -1)
        if self.output_mode == "one_hot" and len(x.shape) > 1 and x.shape[-1] == 1:
            x = array_ops.squeeze(x, [-1])
        onehot = array_ops.one_hot(x, self.num_tokens, dtype=self._dtype.name)
        if self.output_mode == "one_hot":
            return onehot
        counts = math_ops.reduce_sum(onehot, axis=1 if len(x.shape) > 1 else 0)
        if self.output_mode == "multi_hot":
            return math_ops.minimum(counts, h.tensor(1.0, counts.dtype))
        return counts

    def compute_output_shape(self, input_shape):
        dims = list(TensorShape(input_shape))
        if self.output_mode == "one_hot":
            if len(dims) > 1 and dims[-1] == 1:
                dims = dims[:-1]
            return TensorShape(dims + [self.num_tokens])
        if len(dims) <= 1:
            return TensorShape(dims[:0] + [self.num_tokens]) if not dims else \
                TensorShape([self.num_tokens])
        return TensorShape(dims[:-1] + [self.num_tokens])

    def get_config(self):
        return {**super().get_config(), "num_tokens": self.num_tokens,
                "output_mode": self.output_mode}


__all__ = ["Normalization", "Resizing", "CenterCrop", "RandomFlip", "CategoryEncoding"]
