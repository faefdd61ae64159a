"""RandomRotation (Keras 3's arguments, defaults and errors).

kiln has no ImageProjectiveTransform kernel: the rotation is computed as TensorFlow's
ImageProjectiveTransformV3 does it (each output pixel's source point, its fill-mode mapping,
then a nearest or bilinear read where outside pixels read ``fill_value``), from elementwise ops
and one batched gather per read.
"""
import math

from kiln import dtypes
from kiln.keras.layers import _args
from kiln.keras.layers.base import Layer
from kiln.ops import _helpers as h
from kiln.ops import array_ops, core, math_ops, random_ops
from kiln.tensor_shape import TensorShape

_FILL_MODES = ("reflect", "wrap", "constant", "nearest")
_INTERPOLATIONS = ("nearest", "bilinear")


def factor_pair(factor, bounds=(-1, 1)):
    """Keras' ``factor``: a number f gives (-|f|, |f|) (clipped to bounds), a pair is sorted."""
    msg = ("The `factor` argument should be a number (or a list of two numbers) in the range "
           f"[{bounds[0]}, {bounds[1]}]. Received: factor={factor}")
    if isinstance(factor, (tuple, list)):
        if len(factor) != 2 or factor[0] > bounds[1] or factor[1] < bounds[0]:
            raise ValueError(msg)
        return tuple(sorted(float(f) for f in factor))
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) \
            or not bounds[0] <= factor <= bounds[1]:
        raise ValueError(msg)
    factor = abs(float(factor))
    return max(-factor, bounds[0]), factor


def _map_coord(c, n, mode):
    """TensorFlow's MapCoordinate: a source coordinate on an axis of n pixels, by fill mode."""
    if mode == "constant":
        return c
    last = h.tensor(float(n - 1), c.dtype)
    zero = h.tensor(0.0, c.dtype)
    if mode == "nearest":
        return math_ops.clip_by_value(c, zero, last)
    if n <= 1:
        return array_ops.zeros_like(c)
    if mode == "reflect":
        sz2 = float(2 * n)
        neg = c + sz2 * math_ops.floor(-c / sz2)
        neg = array_ops.where(neg < -float(n), neg + sz2, -neg - 1.0)
        pos = c - sz2 * math_ops.floor(c / sz2)
        pos = array_ops.where(pos >= float(n), sz2 - pos - 1.0, pos)
    else:  # wrap
        sz = float(n - 1)
        neg = c + float(n) * (math_ops.floor(-c / sz) + 1.0)
        pos = c - float(n) * math_ops.floor(c / sz)
    out = array_ops.where(c < zero, neg, array_ops.where(c > last, pos, c))
    return math_ops.clip_by_value(out, zero, last)


class _Reader:
    """Pixels of [B, H, W, C] images at integer-valued float coordinates [B, H, W]; outside
    the image, ``fill``."""

    def __init__(self, images, fill):
        self.b = array_ops.shape(images)[0]
        self.hw = (images.shape[1], images.shape[2])
        self.c = images.shape[3]
        self.flat = array_ops.reshape(images, [-1, self.c])  # [B * H * W, C]
        # Each image's first row in flat (gather has no batch_dims yet).
        self.offset = array_ops.reshape(core.range(self.b) * (self.hw[0] * self.hw[1]),
                                        [-1, 1, 1])
        self.fill = h.tensor(float(fill), images.dtype)

    def __call__(self, y, x):
        hh, ww = self.hw
        valid = math_ops.logical_and(
            math_ops.logical_and(y >= 0.0, y < float(hh)),
            math_ops.logical_and(x >= 0.0, x < float(ww)))
        yc = math_ops.clip_by_value(y, h.tensor(0.0, y.dtype), h.tensor(hh - 1.0, y.dtype))
        xc = math_ops.clip_by_value(x, h.tensor(0.0, x.dtype), h.tensor(ww - 1.0, x.dtype))
        idx = dtypes.cast(yc * float(ww) + xc, "int32") + self.offset
        v = array_ops.reshape(array_ops.gather(self.flat, idx), [self.b, hh, ww, self.c])
        return array_ops.where(array_ops.expand_dims(valid, -1), v, self.fill)


def _round_half_away(c):
    return math_ops.sign(c) * math_ops.floor(math_ops.abs(c) + 0.5)


def _interpolate(read, y, x, method):
    if method == "nearest":
        return read(_round_half_away(y), _round_half_away(x))
    y0, x0 = math_ops.floor(y), math_ops.floor(x)
    y1, x1 = y0 + 1.0, x0 + 1.0
    wx0, wx1 = array_ops.expand_dims(x1 - x, -1), array_ops.expand_dims(x - x0, -1)
    wy0, wy1 = array_ops.expand_dims(y1 - y, -1), array_ops.expand_dims(y - y0, -1)
    top = wx0 * read(y0, x0) + wx1 * read(y0, x1)
    bottom = wx0 * read(y1, x0) + wx1 * read(y1, x1)
    return wy0 * top + wy1 * bottom


def rotate(images, angles, interpolation="bilinear", fill_mode="reflect", fill_value=0.0):
    """[B, H, W, C] float images rotated by ``angles`` [B] (radians, counter-clockwise)
    about their centers, as Keras' affine_transform with its rotation matrix."""
    hh, ww = images.shape[1], images.shape[2]
    if hh is None or ww is None:
        raise ValueError("RandomRotation needs the images' height and width defined. "
                         f"Received: shape={images.shape}")
    cx, cy = 0.5 * (ww - 1), 0.5 * (hh - 1)
    a = array_ops.reshape(angles, [-1, 1, 1])
    cos, sin = math_ops.cos(a), math_ops.sin(a)
    # Keras' matrix [a0 a1 a2; b0 b1 b2] with a0 = b1 = cos, a1 = -sin, b0 = sin.
    a2 = cx - cx * cos + cy * sin
    b2 = cy - cx * sin - cy * cos
    xs = array_ops.reshape(dtypes.cast(core.range(ww), images.dtype), [1, 1, ww])
    ys = array_ops.reshape(dtypes.cast(core.range(hh), images.dtype), [1, hh, 1])
    src_x = _map_coord(cos * xs - sin * ys + a2, ww, fill_mode)
    src_y = _map_coord(sin * xs + cos * ys + b2, hh, fill_mode)
    return _interpolate(_Reader(images, fill_value), src_y, src_x, interpolation)


class RandomRotation(Layer):
    """When training, rotates each image by a random angle, ``factor`` * 2 pi
    (a number f: uniform in [-f, f]; a pair: uniform between them), about its
    center; pixels whose source falls outside are filled by ``fill_mode``
    (reflect, wrap, constant with ``fill_value``, nearest). Not training: the
    images unchanged (cast to the layer's dtype)."""

    _kiln_static_shapes = True

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor_pair(factor)
        if fill_mode not in _FILL_MODES:
            raise NotImplementedError(f"Unknown `fill_mode` {fill_mode}. Expected of one "
                                      f"{_FILL_MODES}.")
        if interpolation not in _INTERPOLATIONS:
            raise NotImplementedError(f"Unknown `interpolation` {interpolation}. Expected of "
                                      f"one {_INTERPOLATIONS}.")
        self.fill_mode, self.interpolation = fill_mode, interpolation
        self.seed, self.fill_value = seed, fill_value
        self.data_format = _args.data_format(data_format)

    def _angles(self, n):
        lo, hi = (f * 2 * math.pi for f in self.factor)
        if lo == hi:
            return array_ops.fill([n], h.tensor(lo, "float32"))
        return random_ops.uniform([n], minval=lo, maxval=hi, dtype="float32", seed=self.seed)

    def call(self, inputs, training=True):
        x = h.tensor(inputs)
        if x.dtype != self._dtype:
            x = dtypes.cast(x, self._dtype)
        if not training:
            return x
        rank = len(x.shape)
        if rank not in (3, 4):
            raise ValueError("Expected an image array with shape `(height, width, channels)`, "
                             "or `(batch_size, height, width, channels)`, but got input with "
                             f"incorrect rank, of shape {tuple(x.shape)}.")
        if rank == 3:
            x = array_ops.expand_dims(x, 0)
        if self.data_format == "channels_first":
            x = array_ops.transpose(x, [0, 2, 3, 1])
        y = rotate(x, self._angles(array_ops.shape(x)[0]), self.interpolation, self.fill_mode,
                   self.fill_value)
        if self.data_format == "channels_first":
            y = array_ops.transpose(y, [0, 3, 1, 2])
        return array_ops.squeeze(y, [0]) if rank == 3 else y

    def _output_dtype(self, inputs):
        return self._dtype

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "data_format": self.data_format,
                "fill_mode": self.fill_mode, "fill_value": self.fill_value,
                "interpolation": self.interpolation, "seed": self.seed}


__all__ = ["RandomRotation", "rotate", "factor_pair"]
