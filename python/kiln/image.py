"""tf.image: resize (bilinear, nearest), flips and convert_image_dtype, composed of
kiln ops (gathers with precomputed indices and weights), so they run eagerly, traced
and under a GradientTape."""
import numpy as np

from kiln import _kiln, errors
from kiln.ops import _helpers as h
from kiln.ops.array_ops import reverse

raw = h.raw

_INT_MAX = {"uint8": 255, "int8": 127, "int32": 2 ** 31 - 1, "int64": 2 ** 63 - 1}


def _image(images, op):
    x = h.tensor(images)
    if x.ndim not in (3, 4):
        raise errors.InvalidArgumentError(
            f"{op}: images must be [height, width, channels] or [batch, height, width, "
            f"channels], got shape {x.shape}")
    return x


def _axis_weights(n_in, n_out, method):
    """Source rows (lower, upper) and the upper row's weight for each output row, with
    TensorFlow 2's half-pixel centers."""
    scale = n_in / n_out
    src = (np.arange(n_out) + 0.5) * scale
    if method == "nearest":
        idx = np.minimum(np.floor(src), n_in - 1).astype(np.int64)
        return idx, idx, None
    src = src - 0.5
    floor = np.floor(src)
    lower = np.clip(floor, 0, n_in - 1).astype(np.int64)
    upper = np.clip(np.ceil(src), 0, n_in - 1).astype(np.int64)
    return lower, upper, (src - floor).astype(np.float32)


def _resize_axis(x, axis, n_out, method):
    n_in = x.shape[axis]
    lower, upper, w = _axis_weights(n_in, n_out, method)
    lo = raw.GatherV2(x, h.int_array(lower, "int64"), axis=axis, batch_dims=0)
    if w is None:
        return lo
    hi = raw.GatherV2(x, h.int_array(upper, "int64"), axis=axis, batch_dims=0)
    shape = [1] * x.ndim
    shape[axis] = n_out
    wt = _kiln.convert_to_tensor(w.reshape(shape))
    return raw.AddV2(lo, raw.Mul(raw.Sub(hi, lo), wt))


def resize(images, size, method="bilinear", preserve_aspect_ratio=False, antialias=False,
           name=None):
    """images resized to size = [new_height, new_width] (tf.image.resize) with half-pixel
    centers, as TensorFlow 2. "bilinear" returns float32; "nearest" keeps the dtype.
    antialias and preserve_aspect_ratio are not supported (an error says so)."""
    x = _image(images, "ResizeBilinear")
    method = str(method).lower().split(".")[-1]
    if method in ("nearest_neighbor",):
        method = "nearest"
    if method not in ("bilinear", "nearest"):
        raise ValueError(f"resize: method {method!r} is not supported (use 'bilinear' or "
                         "'nearest')")
    if antialias or preserve_aspect_ratio:
        raise ValueError("resize: antialias and preserve_aspect_ratio are not supported")
    new_h, new_w = h.int_list(size, "size", "Resize")
    if new_h <= 0 or new_w <= 0:
        raise errors.InvalidArgumentError(f"Resize: size must be positive, got {[new_h, new_w]}")
    hw = [x.ndim - 3, x.ndim - 2]
    if any(x.shape[a] is None for a in hw):
        raise errors.InvalidArgumentError(
            f"Resize: the input's height and width must be known, got shape {x.shape}")
    if any(x.shape[a] == 0 for a in hw):
        raise errors.InvalidArgumentError(f"Resize: empty image, shape {x.shape}")
    if method == "bilinear" and x.dtype.name != "float32":
        x = raw.Cast(x, DstT=_kiln.as_dtype("float32"))
    x = _resize_axis(x, hw[0], new_h, method)
    return _resize_axis(x, hw[1], new_w, method)


def flip_left_right(image):
    """image mirrored along its width (tf.image.flip_left_right)."""
    x = _image(image, "ReverseV2")
    return reverse(x, [x.ndim - 2])


def flip_up_down(image):
    """image mirrored along its height (tf.image.flip_up_down)."""
    x = _image(image, "ReverseV2")
    return reverse(x, [x.ndim - 3])


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """image converted to dtype with its values rescaled (tf.image.convert_image_dtype):
    integers span [0, MAX] and floats [0, 1]. Float to integer multiplies by MAX + 0.5 and
    truncates (clipped first with saturate); integer to integer scales by the ratio of the
    ranges."""
    x = h.tensor(image)
    out = _kiln.as_dtype(dtype)
    src = x.dtype
    if src == out:
        return raw.Identity(x)
    for d in (src, out):
        if not (d.is_floating or d.name in _INT_MAX):
            raise TypeError(f"convert_image_dtype: {d.name} is not an image dtype")
    if src.is_floating and out.is_floating:
        return raw.Cast(x, DstT=out)
    if src.is_floating:  # float -> int
        top = _INT_MAX[out.name]
        y = raw.Mul(x, _kiln.convert_to_tensor(top + 0.5, dtype=src))
        if saturate:
            y = raw.ClipByValue(y, _kiln.convert_to_tensor(0.0, dtype=src),
                                _kiln.convert_to_tensor(float(top), dtype=src))
        return raw.Cast(y, DstT=out)
    if out.is_floating:  # int -> float
        top = _INT_MAX[src.name]
        return raw.Mul(raw.Cast(x, DstT=out), _kiln.convert_to_tensor(1.0 / top, dtype=out))
    in_top, out_top = _INT_MAX[src.name], _INT_MAX[out.name]
    if out_top > in_top:  # widen: cast, then scale up
        y = raw.Cast(x, DstT=out)
        return raw.Mul(y, _kiln.convert_to_tensor((out_top + 1) // (in_top + 1), dtype=out))
    y = raw.FloorDiv(x, _kiln.convert_to_tensor((in_top + 1) // (out_top + 1), dtype=src))
    return raw.Cast(y, DstT=out)



__all__ = ["resize", "flip_left_right", "flip_up_down", "convert_image_dtype"]
