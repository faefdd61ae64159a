"""tf.image's geometry: flips, transpose, rot90, central_crop, crop_to_bounding_box,
pad_to_bounding_box and resize_with_crop_or_pad, as slices, pads, reverses and
transposes of the image (3-D [height, width, channels] or 4-D batched)."""
from kiln import _kiln, errors
from kiln.ops import _helpers as h
from kiln.ops import math_ops as m
from kiln.ops.array_ops import reverse, slice as slice_, pad, squeeze
from kiln.ops.image_convert import (at_least_3d, three_or_four, batched, dim, static_value,
                                    check, shape_text)

raw = h.raw
_INT32 = _kiln.as_dtype("int32")


def flip_left_right(image):
    """image mirrored along its width (tf.image.flip_left_right)."""
    x = three_or_four(image)
    return reverse(x, [x.ndim - 2])


def flip_up_down(image):
    """image mirrored along its height (tf.image.flip_up_down)."""
    x = three_or_four(image)
    return reverse(x, [x.ndim - 3])


def transpose(image, name=None):
    """image with height and width swapped (tf.image.transpose)."""
    x = three_or_four(image)
    return raw.Transpose(x, perm=[1, 0, 2] if x.ndim == 3 else [0, 2, 1, 3])


def _rot90_once(x, k):
    """x rotated k (0..3) quarter turns counter-clockwise."""
    hw = [x.ndim - 3, x.ndim - 2]
    perm = [1, 0, 2] if x.ndim == 3 else [0, 2, 1, 3]
    if k == 1:
        return raw.Transpose(reverse(x, [hw[1]]), perm=perm)
    if k == 2:
        return reverse(x, hw)
    if k == 3:
        return reverse(raw.Transpose(x, perm=perm), [hw[1]])
    return x


def _rot90_k(k):
    """k as a Python int (mod 4), or an int32 scalar tensor while tracing."""
    if h.is_tensor(k):
        t = h.tensor(k)
        if t.dtype != _INT32:
            raise ValueError(f"k: Tensor conversion requested dtype int32 for Tensor with "
                             f"dtype {t.dtype.name}")
        if t.ndim not in (0, None):
            raise ValueError(f"Shape {shape_text(t)} must have rank 0")
        v = static_value(t)
        return t if v is None else int(v) % 4
    if isinstance(k, (list, tuple)) or getattr(k, "ndim", 0):
        raise ValueError(f"Shape ({len(k)},) must have rank 0")
    if isinstance(k, bool) or not float(k).is_integer():
        raise TypeError(f"Cannot convert {k!r} to EagerTensor of dtype int32")
    return int(k) % 4


def rot90(image, k=1, name=None):
    """image rotated k quarter turns counter-clockwise (tf.image.rot90). A k known only
    when the function runs needs a square image (the four rotations are selected)."""
    x = three_or_four(image)
    k = _rot90_k(k)
    if isinstance(k, int):
        return _rot90_once(x, k)
    hgt, wid = x.shape[x.ndim - 3], x.shape[x.ndim - 2]
    if hgt is None or hgt != wid:
        raise errors.InvalidArgumentError(
            f"rot90: k must be a constant unless the image is square with static dims, got "
            f"shape {shape_text(x)}")
    k4 = m.floormod(k, 4)
    out = x
    for i in (1, 2, 3):
        out = raw.SelectV2(m.equal(k4, i), _rot90_once(x, i), out)
    return out


# ---- bounding boxes ----

def _int_arg(v):
    """(v for the ops: a Python int or an int32 scalar tensor, its value when known now,
    whether it was a tensor)."""
    if h.is_tensor(v):
        t = h.tensor(v)
        t = t if t.dtype == _INT32 else raw.Cast(t, DstT=_INT32)
        s = static_value(t)
        return (t if s is None else int(s)), (None if s is None else int(s)), True
    v = h.one_int(v, "offset or size", "image")
    return v, v, False


def _sub(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    return m.subtract(_t(a), _t(b))


def _t(v):
    return v if h.is_tensor(v) else _kiln.convert_to_tensor(v, dtype=_INT32)


def _known(*vals):
    return all(isinstance(v, int) for v in vals)


def _checks(items):
    """Runs the (values, predicate, message, whether a value came from a tensor) checks
    whose values are all known."""
    for vals, pred, msg, from_tensor in items:
        if _known(*vals):
            check(pred(*vals), msg, from_tensor)


def _unbatch(x, was_batch):
    return x if was_batch else squeeze(x, [0])


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The [target_height, target_width] box of image whose top-left corner is at
    (offset_height, offset_width) (tf.image.crop_to_bounding_box)."""
    x, was_batch = batched(image)
    at_least_3d(x)
    (oh, soh, t1), (ow, sow, t2), (th, sth, t3), (tw, stw, t4) = (
        _int_arg(v) for v in (offset_height, offset_width, target_height, target_width))
    height, width = x.shape[1], x.shape[2]
    _checks([((sow,), lambda a: a >= 0, "offset_width must be >= 0.", t2),
             ((soh,), lambda a: a >= 0, "offset_height must be >= 0.", t1),
             ((stw,), lambda a: a > 0, "target_width must be > 0.", t4),
             ((sth,), lambda a: a > 0, "target_height must be > 0.", t3),
             ((width, stw, sow), lambda w, t, o: w >= t + o, "width must be >= target + offset.",
              t4 or t2),
             ((height, sth, soh), lambda v, t, o: v >= t + o,
              "height must be >= target + offset.", t3 or t1)])
    out = slice_(x, [0, oh, ow, 0], [-1, th, tw, -1])
    return _unbatch(out, was_batch)


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """image padded with zeros to [target_height, target_width], its top-left corner at
    (offset_height, offset_width) (tf.image.pad_to_bounding_box)."""
    x, was_batch = batched(image)
    (oh, soh, t1), (ow, sow, t2), (th, sth, t3), (tw, stw, t4) = (
        _int_arg(v) for v in (offset_height, offset_width, target_height, target_width))
    after_w = _sub(_sub(tw, ow), dim(x, 2))
    after_h = _sub(_sub(th, oh), dim(x, 1))
    at_least_3d(x)
    _checks([((soh,), lambda a: a >= 0, "offset_height must be >= 0", t1),
             ((sow,), lambda a: a >= 0, "offset_width must be >= 0", t2),
             ((after_w,), lambda a: a >= 0, "width must be <= target - offset", t4 or t2),
             ((after_h,), lambda a: a >= 0, "height must be <= target - offset", t3 or t1)])
    out = pad(x, [[0, 0], [oh, after_h], [ow, after_w], [0, 0]])
    return _unbatch(out, was_batch)


def _max0(v):
    return max(v, 0) if isinstance(v, int) else m.maximum(v, 0)


def _half(v):
    return v // 2 if isinstance(v, int) else m.floordiv(v, 2)


def _min(a, b):
    return min(a, b) if _known(a, b) else m.minimum(_t(a), _t(b))


def resize_with_crop_or_pad(image, target_height, target_width):
    """image cropped and/or padded with zeros, centered, to [target_height, target_width]
    (tf.image.resize_with_crop_or_pad)."""
    x, was_batch = batched(image)
    at_least_3d(x)
    (th, sth, t1), (tw, stw, t2) = _int_arg(target_height), _int_arg(target_width)
    _checks([((stw,), lambda a: a > 0, "target_width must be > 0.", t2),
             ((sth,), lambda a: a > 0, "target_height must be > 0.", t1)])
    height, width = dim(x, 1), dim(x, 2)
    wdiff, hdiff = _sub(tw, width), _sub(th, height)
    crop_w, pad_w = _max0(_half(_sub(0, wdiff))), _max0(_half(wdiff))
    crop_h, pad_h = _max0(_half(_sub(0, hdiff))), _max0(_half(hdiff))
    cropped = crop_to_bounding_box(x, crop_h, crop_w, _min(th, height), _min(tw, width))
    out = pad_to_bounding_box(cropped, pad_h, pad_w, th, tw)
    return _unbatch(out, was_batch)


# ---- central crop ----

def _fraction(central_fraction):
    """central_fraction as a Python float (checked) or a float64 scalar tensor."""
    v = static_value(central_fraction)
    if v is None:
        return raw.Cast(h.tensor(central_fraction), DstT="float64")
    v = float(v)
    if v <= 0.0 or v > 1.0:
        raise ValueError("central_fraction must be within (0, 1]")
    return v


def _crop_start(size, frac):
    """TensorFlow's int((size - size * fraction) / 2), in float64 when not static."""
    if isinstance(size, int) and isinstance(frac, float):
        return int((float(size) - float(size) * frac) / 2)
    s = raw.Cast(_t(size), DstT="float64")
    f = frac if h.is_tensor(frac) else _kiln.convert_to_tensor(frac, dtype="float64")
    start = m.divide(m.subtract(s, m.multiply(s, f)), 2.0)
    return raw.Cast(start, DstT=_INT32)


def central_crop(image, central_fraction):
    """The central region of image, central_fraction of its height and width
    (tf.image.central_crop)."""
    x = h.tensor(image)
    frac = _fraction(central_fraction)
    if isinstance(frac, float) and frac == 1.0:
        return x
    at_least_3d(x)
    if x.ndim not in (3, 4):
        raise ValueError("`image` should either be a Tensor with rank = 3 or rank = 4. Had "
                         f"rank = {x.ndim}.")
    r = x.ndim
    hgt, wid = dim(x, r - 3), dim(x, r - 2)
    hs, ws = _crop_start(hgt, frac), _crop_start(wid, frac)
    hsize, wsize = _sub(_sub(hgt, hs), hs), _sub(_sub(wid, ws), ws)
    begin, size = [hs, ws, 0], [hsize, wsize, -1]
    if r == 4:
        begin, size = [0] + begin, [-1] + size
    return slice_(x, begin, size)


IMAGE_GEOMETRY = ["flip_left_right", "flip_up_down", "transpose", "rot90", "central_crop",
                  "crop_to_bounding_box", "pad_to_bounding_box", "resize_with_crop_or_pad"]
__all__ = list(IMAGE_GEOMETRY)
