"""tf.image's color ops: adjust_brightness/contrast/gamma/saturation/hue, the RGB <->
grayscale/HSV/YUV/YIQ conversions and per_image_standardization, composed of
elementwise ops and reductions (differentiable; integer images go through float32 as
TensorFlow's do)."""
from kiln import _kiln, errors
from kiln.dtypes import cast
from kiln.ops import _helpers as h
from kiln.ops import math_ops as m
from kiln.ops.array_ops import stack, unstack, tile
from kiln.ops.image_convert import (FLOAT32, at_least_3d, convert_image_dtype, to_float,
                                    float32_work, scalar_float, static_value, check,
                                    shape_text, kernel_shape)

raw = h.raw

_GRAY = [0.2989, 0.587, 0.114]
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
               [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]
_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
               [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
               [0.6208248, -0.64720424, 1.70423049]]


def _const(v, like):
    return _kiln.convert_to_tensor(v, dtype=like.dtype)


def _check3(x, op, min_rank=1, error=errors.InvalidArgumentError, verb="instead has"):
    """Checks that x has rank >= min_rank and 3 channels, as TensorFlow's kernels do."""
    if x.ndim is None or x.ndim < min_rank:
        raise errors.InvalidArgumentError(
            f"{op}: input must be at least {min_rank}-D, got shape{kernel_shape(x)}")
    c = x.shape[-1]
    if c is not None and c != 3:
        raise error(f"{op}: input must have 3 channels but {verb} {c} channels.")


def _split(x):
    return unstack(x, 3, axis=-1)


# ---- adjust_brightness / contrast / gamma ----

def adjust_brightness(image, delta):
    """image + delta (tf.image.adjust_brightness); integer images are converted to float
    and back, saturating."""
    x, orig = to_float(image)
    d = h.tensor(delta) if h.is_tensor(delta) else h.tensor(delta, x.dtype)
    if d.dtype != x.dtype:
        d = cast(d, x.dtype)
    return convert_image_dtype(raw.AddV2(x, d), orig, saturate=True)


def adjust_contrast(images, contrast_factor):
    """(x - mean) * contrast_factor + mean, the mean per image and channel over height and
    width (tf.image.adjust_contrast)."""
    x, orig = to_float(images)
    if x.ndim is None or x.ndim < 3:
        raise errors.InvalidArgumentError(
            f"AdjustContrastv2: input must be at least 3-D, got shape{kernel_shape(x)}")
    factor = scalar_float(contrast_factor, "AdjustContrastv2", "contrast_factor")
    xf, back = float32_work(x)
    mean = m.reduce_mean(xf, axis=[-3, -2], keepdims=True)
    out = raw.AddV2(raw.Mul(raw.Sub(xf, mean), factor), mean)
    return convert_image_dtype(back(out), orig, saturate=True)


def adjust_gamma(image, gamma=1, gain=1):
    """gain * image ** gamma (tf.image.adjust_gamma); gamma must be >= 0."""
    x, orig = to_float(image)
    g = static_value(gamma)
    if g is not None and h.tensor(g).ndim == 0:
        check(float(g) >= 0, "Gamma should be a non-negative real number.", h.is_tensor(gamma))
    gam = cast(h.tensor(gamma), x.dtype) if h.is_tensor(gamma) else h.tensor(gamma, x.dtype)
    gn = cast(h.tensor(gain), x.dtype) if h.is_tensor(gain) else h.tensor(gain, x.dtype)
    return convert_image_dtype(raw.Mul(gn, raw.Pow(x, gam)), orig, saturate=True)


# ---- HSV ----

def _safe(d, x):
    """d where it is > 0, else 1: a divisor whose unused quotients stay finite (and so
    do their gradients)."""
    return raw.SelectV2(raw.Greater(d, _const(0, x)), d, _const(1, x))


def _hue(r, g, b, v, rng):
    """TensorFlow's hue in [0, 1) of the channels, given their max v and range rng."""
    zero = _const(0, r)
    norm = raw.RealDiv(_const(1 / 6, r), _safe(rng, r))
    hue = raw.SelectV2(
        raw.Equal(r, v), raw.Mul(norm, raw.Sub(g, b)),
        raw.SelectV2(raw.Equal(g, v), raw.AddV2(raw.Mul(norm, raw.Sub(b, r)), _const(2 / 6, r)),
                     raw.AddV2(raw.Mul(norm, raw.Sub(r, g)), _const(4 / 6, r))))
    hue = raw.SelectV2(raw.Greater(rng, zero), hue, zero)
    return raw.SelectV2(raw.Less(hue, zero), raw.AddV2(hue, _const(1, r)), hue)


def _extremes(r, g, b):
    return m.minimum(m.minimum(r, g), b), m.maximum(m.maximum(r, g), b)


def _hsv(r, g, b):
    """TensorFlow's RGBToHSV kernel on the channels: (h, s, v)."""
    lo, v = _extremes(r, g, b)
    rng = raw.Sub(v, lo)
    zero = _const(0, r)
    s = raw.SelectV2(raw.Greater(v, zero), raw.RealDiv(rng, _safe(v, r)), zero)
    return _hue(r, g, b, v, rng), s, v


def _unit(t):
    return raw.ClipByValue(t, _const(0, t), _const(1, t))


def _ramps(hue):
    """Each channel's place between the smallest and the largest channel, in [0, 1], for a
    hue in [0, 1] (piecewise linear, as TensorFlow's kernels)."""
    dh = raw.Mul(hue, _const(6, hue))

    def ramp(center, sign):  # clip(sign * (|dh - center| - 1) + ..., 0, 1)
        a = raw.Abs(raw.Sub(dh, _const(center, hue)))
        return _unit(raw.Sub(a, _const(1, hue)) if sign > 0 else raw.Sub(_const(2, hue), a))

    return ramp(3, 1), ramp(2, -1), ramp(4, -1)


def _rgb(hue, s, v):
    """TensorFlow's HSVToRGB kernel on the channels: (r, g, b)."""
    one_s = raw.Sub(_const(1, s), s)
    return [raw.Mul(raw.AddV2(one_s, raw.Mul(s, d)), v) for d in _ramps(hue)]


def _color_input(images, op):
    """images as a float tensor: a non-tensor becomes float32 (the op's default type)."""
    x = h.tensor(images) if h.is_tensor(images) else h.tensor(images, FLOAT32)
    if not x.dtype.is_floating:
        raise errors.InvalidArgumentError(
            f"{op}: images must be float16, bfloat16, float32 or float64, got {x.dtype.name}")
    return x


def rgb_to_hsv(images, name=None):
    """RGB images (last dim 3, values in [0, 1]) as hue, saturation, value in [0, 1]
    (tf.image.rgb_to_hsv)."""
    x = _color_input(images, "RGBToHSV")
    _check3(x, "RGBToHSV", error=errors.FailedPreconditionError, verb="input only has")
    return stack(list(_hsv(*_split(x))), axis=-1)


def hsv_to_rgb(images, name=None):
    """HSV images (last dim 3) as RGB (tf.image.hsv_to_rgb)."""
    x = _color_input(images, "HSVToRGB")
    _check3(x, "HSVToRGB", error=errors.FailedPreconditionError, verb="input only has")
    return stack(_rgb(*_split(x)), axis=-1)


def adjust_saturation(image, saturation_factor, name=None):
    """image with its HSV saturation scaled by saturation_factor and clipped to [0, 1]
    (tf.image.adjust_saturation)."""
    x, orig = to_float(image)
    _check3(x, "AdjustSaturation", min_rank=3)
    factor = scalar_float(saturation_factor, "AdjustSaturation", "scale")
    xf, back = float32_work(x)
    hue, s, v = _hsv(*_split(xf))
    out = stack(_rgb(hue, _unit(raw.Mul(s, factor)), v), axis=-1)
    return convert_image_dtype(back(out), orig)


def adjust_hue(image, delta, name=None):
    """image with delta (in [-1, 1], a fraction of the color circle) added to its hue
    (tf.image.adjust_hue)."""
    d = static_value(delta)
    if d is not None and h.tensor(d).ndim == 0 and (d < -1 or d > 1):
        raise ValueError("delta must be in the interval [-1, 1]")
    x, orig = to_float(image)
    _check3(x, "AdjustHue", min_rank=3)
    dt = scalar_float(delta, "AdjustHue", "delta")
    xf, back = float32_work(x)
    r, g, b = _split(xf)
    # TensorFlow's AdjustHue keeps each pixel's smallest and largest channel (so values
    # outside [0, 1] keep them too) and moves the middle one along the hue circle.
    lo, hi = _extremes(r, g, b)
    span = raw.Sub(hi, lo)
    hue = raw.FloorMod(raw.AddV2(_hue(r, g, b, hi, span), dt), _const(1, r))
    out = stack([raw.AddV2(lo, raw.Mul(span, d)) for d in _ramps(hue)], axis=-1)
    return convert_image_dtype(back(out), orig)


# ---- grayscale, YUV, YIQ ----

def _mix(x, kernel, op):
    """The last dim (3) of x times kernel ([3, n]) as n channels, each the sum of the
    three products (TensorFlow's tensordot, as elementwise ops)."""
    _check3(x, op)
    chans = _split(x)
    outs = []
    for j in range(len(kernel[0])):
        terms = [raw.Mul(c, _const(kernel[i][j], c)) for i, c in enumerate(chans)]
        outs.append(raw.AddV2(raw.AddV2(terms[0], terms[1]), terms[2]))
    return stack(outs, axis=-1)


def rgb_to_grayscale(images, name=None):
    """RGB images as one channel of luminance 0.2989 R + 0.587 G + 0.114 B, in the
    images' dtype (tf.image.rgb_to_grayscale)."""
    x = h.tensor(images)
    gray = _mix(convert_image_dtype(x, FLOAT32), [[w] for w in _GRAY], "rgb_to_grayscale")
    return convert_image_dtype(gray, x.dtype)


def grayscale_to_rgb(images, name=None):
    """Grayscale images (last dim 1) with the channel repeated 3 times
    (tf.image.grayscale_to_rgb)."""
    x = h.tensor(images)
    if x.ndim is None or x.ndim < 2:
        raise ValueError(f"A grayscale image (shape {shape_text(x)}) must be at least "
                         "two-dimensional.")
    if x.shape[-1] not in (1, None):
        raise ValueError("Last dimension of a grayscale image should be size 1.")
    return tile(x, [1] * (x.ndim - 1) + [3])


def _linear(op, kernel):
    def fn(images):
        x = h.tensor(images)
        if not x.dtype.is_floating:
            raise TypeError(f"{op}: images must be a float tensor, got {x.dtype.name}")
        return _mix(x, kernel, op)

    fn.__name__ = op
    fn.__doc__ = f"images' last dim (3) mixed by TensorFlow's matrix (tf.image.{op})."
    return fn


rgb_to_yuv = _linear("rgb_to_yuv", _RGB_TO_YUV)
yuv_to_rgb = _linear("yuv_to_rgb", _YUV_TO_RGB)
rgb_to_yiq = _linear("rgb_to_yiq", _RGB_TO_YIQ)
yiq_to_rgb = _linear("yiq_to_rgb", _YIQ_TO_RGB)


# ---- standardization ----

def per_image_standardization(image):
    """(image - mean) / max(stddev, 1 / sqrt(N)) per image over its N = height * width *
    channels values, in float32 (tf.image.per_image_standardization)."""
    x = cast(at_least_3d(image), FLOAT32)
    inner = x.shape.as_list()[-3:]
    if None in inner:
        shape = raw.Shape(x, out_type="int32")
        n = cast(m.reduce_prod(shape[-3:]), FLOAT32)
    else:
        n = _kiln.convert_to_tensor(float(inner[0] * inner[1] * inner[2]), dtype=FLOAT32)
    axes = [-1, -2, -3]
    mean = m.reduce_mean(x, axes, keepdims=True)
    std = m.reduce_std(x, axes, keepdims=True)
    return raw.RealDiv(raw.Sub(x, mean), m.maximum(std, raw.Rsqrt(n)))


IMAGE_COLOR = ["adjust_brightness", "adjust_contrast", "adjust_gamma", "adjust_saturation",
               "adjust_hue", "rgb_to_hsv", "hsv_to_rgb", "rgb_to_grayscale",
               "grayscale_to_rgb", "rgb_to_yuv", "yuv_to_rgb", "rgb_to_yiq", "yiq_to_rgb",
               "per_image_standardization"]
__all__ = list(IMAGE_COLOR)
