"""tf.image: resize (bilinear, nearest; gathers with precomputed indices and weights)
here, and the ops of kiln/ops/image_*.py: geometry (flips, rot90, crops, pads), color
(adjust_*, rgb_to_*), random and stateless_random_*, convert_image_dtype and the measures
(psnr, ssim, ...). All are compositions of kiln ops, so they run eagerly, traced and
under a GradientTape."""
import numpy as np

from kiln import _kiln, errors
from kiln.ops import _helpers as h
# The codecs live in tf.io; tf.image names them too.
from kiln.io import (decode_png, encode_png, decode_jpeg, encode_jpeg,  # noqa: F401
                     decode_image, is_jpeg)
from kiln.ops import image_color, image_geometry, image_metrics, image_random
from kiln.ops.image_convert import convert_image_dtype  # noqa: F401
from kiln.ops.image_color import *  # noqa: F401,F403
from kiln.ops.image_geometry import *  # noqa: F401,F403
from kiln.ops.image_metrics import *  # noqa: F401,F403
from kiln.ops.image_random import *  # noqa: F401,F403

raw = h.raw


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


__all__ = (["resize", "convert_image_dtype", "decode_png", "encode_png", "decode_jpeg",
            "encode_jpeg", "decode_image", "is_jpeg"] + image_color.IMAGE_COLOR +
           image_geometry.IMAGE_GEOMETRY + image_metrics.IMAGE_METRICS +
           image_random.IMAGE_RANDOM)
