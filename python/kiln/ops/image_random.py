"""tf.image's random ops (random_crop, random_flip_*, random_brightness/contrast/
saturation/hue) and their stateless_* variants.

The stateful ones draw from kiln.random.uniform (an op seed and the global seed, as
TensorFlow). The stateless ones take seed = (a, b), a shape-[2] int32/int64 value, and
draw from a counter-based hash of it composed of integer ops (so they trace and compile
like the rest): the same seed gives the same values on every call, another seed other
values (kiln.ops.stateless_random). The values are not TensorFlow's Philox bits."""
from kiln import _kiln, errors
from kiln.ops import _helpers as h
from kiln.ops import math_ops as m
from kiln.ops.array_ops import reverse, reshape, slice as slice_
from kiln.ops.random_ops import uniform
from kiln.ops.stateless_random import bits as _bits, uniform_float32 as stateless_uniform
from kiln.ops.image_convert import at_least_3d, static_value, shape_text, dim
from kiln.ops.image_color import (adjust_brightness, adjust_contrast, adjust_saturation,
                                  adjust_hue)

raw = h.raw
_INT32, _INT64 = _kiln.as_dtype("int32"), _kiln.as_dtype("int64")
_INT32_MAX = 2 ** 31 - 1


# ---- flips ----

def _random_flip(image, axis, draw):
    x = at_least_3d(image)
    if x.ndim > 4:
        raise ValueError(f"'image' (shape {shape_text(x)}) must have either 3 or 4 "
                         "dimensions.")
    if x.ndim == 3:
        return raw.SelectV2(m.less(draw([]), 0.5), reverse(x, [axis]), x)
    batch = x.shape[0]
    n = [batch] if batch is not None else raw.Reshape(dim(x, 0), h.const_ints([1]))
    flips = reshape(m.greater(draw(n), 0.5), [-1, 1, 1, 1])  # round(u) == 1
    return raw.SelectV2(flips, reverse(x, [axis + 1]), x)


def random_flip_left_right(image, seed=None):
    """image mirrored along its width with probability 1/2, per image of a batch
    (tf.image.random_flip_left_right)."""
    return _random_flip(image, 1, lambda s: uniform(s, 0, 1.0, seed=seed))


def random_flip_up_down(image, seed=None):
    """image mirrored along its height with probability 1/2, per image of a batch
    (tf.image.random_flip_up_down)."""
    return _random_flip(image, 0, lambda s: uniform(s, 0, 1.0, seed=seed))


def stateless_random_flip_left_right(image, seed):
    """random_flip_left_right drawn from seed = (a, b)
    (tf.image.stateless_random_flip_left_right)."""
    return _random_flip(image, 1, lambda s: stateless_uniform(s, seed))


def stateless_random_flip_up_down(image, seed):
    """random_flip_up_down drawn from seed = (a, b) (tf.image.stateless_random_flip_up_down)."""
    return _random_flip(image, 0, lambda s: stateless_uniform(s, seed))


# ---- color ----

def _check_delta(max_delta, top=None):
    d = static_value(max_delta)
    if d is None:
        return
    if top is not None and d > top:
        raise ValueError(f"max_delta must be <= {top}.")
    if d < 0:
        raise ValueError("max_delta must be non-negative.")


def _check_range(lower, upper):
    lo, hi = static_value(lower), static_value(upper)
    if lo is not None and hi is not None and hi <= lo:
        raise ValueError("upper must be > lower.")
    if lo is not None and lo < 0:
        raise ValueError("lower must be non-negative.")


def _neg(v):
    return m.negative(v) if h.is_tensor(v) else -v


def random_brightness(image, max_delta, seed=None):
    """adjust_brightness by a delta drawn from [-max_delta, max_delta)
    (tf.image.random_brightness)."""
    _check_delta(max_delta)
    return adjust_brightness(image, uniform([], _neg(max_delta), max_delta, seed=seed))


def stateless_random_brightness(image, max_delta, seed):
    """random_brightness drawn from seed = (a, b) (tf.image.stateless_random_brightness)."""
    _check_delta(max_delta)
    return adjust_brightness(image, stateless_uniform([], seed, _neg(max_delta), max_delta))


def random_contrast(image, lower, upper, seed=None):
    """adjust_contrast by a factor drawn from [lower, upper) (tf.image.random_contrast)."""
    _check_range(lower, upper)
    return adjust_contrast(image, uniform([], lower, upper, seed=seed))


def stateless_random_contrast(image, lower, upper, seed):
    """random_contrast drawn from seed = (a, b) (tf.image.stateless_random_contrast)."""
    _check_range(lower, upper)
    return adjust_contrast(image, stateless_uniform([], seed, lower, upper))


def random_saturation(image, lower, upper, seed=None):
    """adjust_saturation by a factor drawn from [lower, upper)
    (tf.image.random_saturation)."""
    _check_range(lower, upper)
    return adjust_saturation(image, uniform([], lower, upper, seed=seed))


def stateless_random_saturation(image, lower, upper, seed=None):
    """random_saturation drawn from seed = (a, b) (tf.image.stateless_random_saturation)."""
    _check_range(lower, upper)
    return adjust_saturation(image, stateless_uniform([], seed, lower, upper))


def random_hue(image, max_delta, seed=None):
    """adjust_hue by a delta drawn from [-max_delta, max_delta), max_delta <= 0.5
    (tf.image.random_hue)."""
    _check_delta(max_delta, 0.5)
    return adjust_hue(image, uniform([], _neg(max_delta), max_delta, seed=seed))


def stateless_random_hue(image, max_delta, seed):
    """random_hue drawn from seed = (a, b) (tf.image.stateless_random_hue)."""
    _check_delta(max_delta, 0.5)
    return adjust_hue(image, stateless_uniform([], seed, _neg(max_delta), max_delta))


# ---- crops ----

def _crop_limits(x, size):
    """(size as ints or an int32 tensor, shape - size + 1 per dim), checked when static."""
    rank = h.static_rank(x, "random_crop")
    sz = static_value(size) if h.is_tensor(size) else size
    if sz is None:
        sz = raw.Cast(h.tensor(size), DstT=_INT32)
        return sz, m.add(m.subtract(raw.Shape(x, out_type="int32"), sz), 1)
    sz = h.int_list(sz, "size", "random_crop")
    if len(sz) != rank:
        raise errors.InvalidArgumentError(f"Incompatible shapes: [{rank}] vs. [{len(sz)}]")
    dims = x.shape.as_list()
    if all(d is not None for d in dims):
        if any(d < s for d, s in zip(dims, sz)):
            raise errors.InvalidArgumentError(f"Need value.shape >= size, got {dims} {sz}")
        return sz, [d - s + 1 for d, s in zip(dims, sz)]
    return sz, m.add(m.subtract(raw.Shape(x, out_type="int32"), h.const_ints(sz)), 1)


def _crop(value, size, offsets):
    x = h.tensor(value)
    sz, limit = _crop_limits(x, size)
    lim = limit if h.is_tensor(limit) else h.const_ints(limit)
    return slice_(x, offsets(x.ndim, lim), sz)


def random_crop(value, size, seed=None, name=None):
    """A block of value of the given size (one per dim) at a random offset
    (tf.image.random_crop)."""
    def offsets(rank, lim):
        return m.floormod(uniform([rank], 0, _INT32_MAX, dtype=_INT32, seed=seed), lim)

    return _crop(value, size, offsets)


def stateless_random_crop(value, size, seed, name=None):
    """random_crop drawn from seed = (a, b) (tf.image.stateless_random_crop)."""
    def offsets(rank, lim):
        wide = m.floormod(_bits([rank], seed), raw.Cast(lim, DstT=_INT64))
        return raw.Cast(wide, DstT=_INT32)

    return _crop(value, size, offsets)


IMAGE_RANDOM = ["random_flip_left_right", "random_flip_up_down",
                "stateless_random_flip_left_right", "stateless_random_flip_up_down",
                "random_brightness", "stateless_random_brightness", "random_contrast",
                "stateless_random_contrast", "random_saturation", "stateless_random_saturation",
                "random_hue", "stateless_random_hue", "random_crop", "stateless_random_crop"]
__all__ = list(IMAGE_RANDOM)
