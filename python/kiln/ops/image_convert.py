"""tf.image's shared pieces: the image-shape checks with TensorFlow's messages,
convert_image_dtype (with saturate) and the float round trip of the adjust_* ops."""
import numpy as np

from kiln import _kiln, errors
from kiln.dtypes import cast
from kiln.ops import _helpers as h
from kiln.ops.array_ops import strided_slice

raw = h.raw
FLOAT32 = _kiln.as_dtype("float32")
_RANGE = {"uint8": (0, 255), "int8": (-128, 127), "int32": (-2 ** 31, 2 ** 31 - 1),
          "int64": (-2 ** 63, 2 ** 63 - 1)}
_NP = {"float16": np.float16, "bfloat16": np.float32, "float32": np.float32,
       "float64": np.float64}


def shape_text(x):
    """x's shape as TensorFlow prints it: (4, 5, 3), <unknown>."""
    return str(x.shape)


def kernel_shape(x):
    """x's shape as TensorFlow's kernels print it: [5,3]."""
    return "[" + ",".join("?" if d is None else str(d) for d in x.shape.as_list()) + "]"


def dim(x, i):
    """Dim i of x: a Python int when static, else an int32 scalar tensor."""
    d = x.shape[i]
    if d is not None:
        return d
    return strided_slice(raw.Shape(x, out_type="int32"), [i], [i + 1], [1],
                         shrink_axis_mask=1)


def at_least_3d(image, what="image"):
    """image as a tensor of rank >= 3 whose inner 3 dims are not 0 (ValueError as
    TensorFlow's _CheckAtLeast3DImage)."""
    x = h.tensor(image)
    if x.ndim is None:
        raise errors.InvalidArgumentError(f"'{what}': the rank of the image must be known")
    if x.ndim < 3:
        raise ValueError(f"'{what}' (shape {shape_text(x)}) must be at least "
                         "three-dimensional.")
    if 0 in x.shape.as_list()[-3:]:
        raise ValueError(f"inner 3 dims of '{what}.shape' must be > 0: {shape_text(x)}")
    return x


def three_or_four(image):
    """image as a tensor of rank 3 or 4 (TensorFlow's checks and messages)."""
    x = at_least_3d(image)
    if x.ndim > 4:
        raise ValueError(f"'image' (shape {shape_text(x)}) must have either 3 or 4 "
                         "dimensions.")
    return x


def batched(image):
    """(image as a 4-D tensor, whether it was 4-D) for the bounding-box ops."""
    x = h.tensor(image)
    if x.ndim is None:
        raise errors.InvalidArgumentError("'image': the rank of the image must be known")
    if x.ndim not in (3, 4):
        raise ValueError(f"'image' (shape {shape_text(x)}) must have either 3 or 4 "
                         "dimensions.")
    if x.ndim == 3:
        return raw.ExpandDims(x, axis=0), False
    return x, True


def _check_image_dtype(d, what):
    if not (d.is_floating or d.name in _RANGE):
        raise AttributeError(f"{what} must be either floating point or integer")


def _saturate_cast(x, out):
    """x cast to out, clamped to out's range first (tf.dtypes.saturate_cast's limits,
    nudged inwards when out's bound is not representable in x's dtype)."""
    src = x.dtype
    lo, hi = _RANGE[out.name]
    if src.is_floating:
        npd = _NP[src.name]
        top = float(np.finfo(npd).max)
        lo_v, hi_v = npd(max(-top, lo)), npd(min(top, hi))
        if float(hi_v) > hi:
            hi_v = np.nextafter(hi_v, npd(0))
        if float(lo_v) < lo:
            lo_v = np.nextafter(lo_v, npd(0))
        lo_v, hi_v = float(lo_v), float(hi_v)
    else:
        in_lo, in_hi = _RANGE[src.name]
        lo_v, hi_v = max(in_lo, lo), min(in_hi, hi)
    if src.is_floating or lo_v > _RANGE[src.name][0] or hi_v < _RANGE[src.name][1]:
        x = raw.ClipByValue(x, _kiln.convert_to_tensor(lo_v, dtype=src),
                            _kiln.convert_to_tensor(hi_v, dtype=src))
    return raw.Cast(x, DstT=out)


def _int_to_int(x, out, saturate):
    in_top, out_top = _RANGE[x.dtype.name][1], _RANGE[out.name][1]
    if in_top > out_top:  # narrow: scale down, then cast
        y = raw.FloorDiv(x, _kiln.convert_to_tensor((in_top + 1) // (out_top + 1),
                                                    dtype=x.dtype))
        return _saturate_cast(y, out) if saturate else raw.Cast(y, DstT=out)
    y = _saturate_cast(x, out) if saturate else raw.Cast(x, DstT=out)
    return raw.Mul(y, _kiln.convert_to_tensor((out_top + 1) // (in_top + 1), dtype=out))


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """image converted to dtype with its values rescaled (tf.image.convert_image_dtype):
    integers span [0, MAX] and floats [0, 1]. Float to integer multiplies by MAX + 0.5 and
    truncates (saturate clamps to the integer range first); integer to integer scales by
    the ratio of the ranges."""
    x = h.tensor(image)
    out = _kiln.as_dtype(dtype)
    _check_image_dtype(out, "dtype")
    _check_image_dtype(x.dtype, "image dtype")
    src = x.dtype
    if src == out:
        return raw.Identity(x)
    if not src.is_floating and not out.is_floating:
        return _int_to_int(x, out, saturate)
    if src.is_floating and out.is_floating:
        return raw.Cast(x, DstT=out)
    if out.is_floating:  # int -> float
        scale = _kiln.convert_to_tensor(1.0 / _RANGE[src.name][1], dtype=out)
        return raw.Mul(raw.Cast(x, DstT=out), scale)
    y = raw.Mul(x, _kiln.convert_to_tensor(_RANGE[out.name][1] + 0.5, dtype=src))
    return _saturate_cast(y, out) if saturate else raw.Cast(y, DstT=out)


def to_float(image, keep=("float16", "float32")):
    """(image as a float tensor, its dtype): the dtypes in keep stay, the others are
    converted to float32 as TensorFlow's adjust_* ops do."""
    x = h.tensor(image)
    if x.dtype.name in keep:
        return x, x.dtype
    return convert_image_dtype(x, FLOAT32), x.dtype


def float32_work(x):
    """(x in float32, a function casting a float32 result back to x's dtype): TensorFlow's
    color kernels compute float16 images in float32."""
    if x.dtype == FLOAT32:
        return x, lambda y: y
    dtype = x.dtype
    return raw.Cast(x, DstT=FLOAT32), lambda y: raw.Cast(y, DstT=dtype)


def scalar_float(value, op, what):
    """A float32 scalar tensor (a Python number or a 0-d tensor), as TensorFlow's image
    kernels take their factors."""
    t = h.tensor(value) if h.is_tensor(value) else h.tensor(value, FLOAT32)
    if t.ndim not in (0, None):
        raise errors.InvalidArgumentError(f"{op}: {what} must be scalar: {kernel_shape(t)}")
    return cast(t, FLOAT32) if t.dtype != FLOAT32 else t


def static_value(v):
    """v as a Python number when it is known now (a number or an eager tensor), else
    None (a tensor only known when the function runs)."""
    if isinstance(v, (h.Tensor, h.Variable)):
        t = h.tensor(v)
        if t.is_symbolic:
            return None
        a = t.numpy()
        return a.item() if a.ndim == 0 else a
    return v


def check(cond, what, value_was_tensor):
    """Raises TensorFlow's error for a failed argument check: ValueError for Python
    values, InvalidArgumentError (its Assert op's) for tensors."""
    if cond:
        return
    if value_was_tensor:
        raise errors.InvalidArgumentError(
            f"Expected 'tf.Tensor(False, shape=(), dtype=bool)' to be true. Summarized "
            f"data: b'{what}'")
    raise ValueError(what)


__all__ = []
