"""tf.image's measures: image_gradients, sobel_edges, total_variation, psnr and ssim,
composed of slices, reductions and depthwise convolutions (differentiable)."""
import numpy as np

from kiln import _kiln, errors
from kiln.dtypes import cast
from kiln.ops import _helpers as h
from kiln.ops import math_ops as m
from kiln.ops.core import range as range_
from kiln.ops.array_ops import strided_slice, concat, reshape, pad, tile
from kiln.ops.nn_ops import depthwise_conv2d, softmax
from kiln.ops.image_convert import FLOAT32, convert_image_dtype, shape_text, dim

raw = h.raw


def _along(x, axis, begin, end=None):
    """x[..., begin:end, ...] on one axis (end None: to the end)."""
    r = x.ndim
    others = ((1 << r) - 1) & ~(1 << axis)
    b, e = [0] * r, [0] * r
    b[axis] = begin
    e[axis] = 0 if end is None else end
    end_mask = others | (1 << axis) if end is None else others
    return strided_slice(x, b, e, [1] * r, begin_mask=others, end_mask=end_mask)


def _diff(x, axis):
    """x[1:] - x[:-1] along axis."""
    return raw.Sub(_along(x, axis, 1), _along(x, axis, 0, -1))


def image_gradients(image):
    """(dy, dx): each pixel's forward difference down and to the right, 0 on the last row
    and column ([batch, height, width, channels] images) (tf.image.image_gradients)."""
    x = h.tensor(image)
    if x.ndim != 4:
        raise ValueError("image_gradients expects a 4D tensor [batch_size, h, w, d], not "
                         f"{shape_text(x)}.")
    dy = concat([_diff(x, 1), raw.ZerosLike(_along(x, 1, 0, 1))], 1)
    dx = concat([_diff(x, 2), raw.ZerosLike(_along(x, 2, 0, 1))], 2)
    return dy, dx


def total_variation(images, name=None):
    """The sum of the absolute differences of neighbouring pixels, per image
    (tf.image.total_variation)."""
    x = h.tensor(images)
    if x.ndim not in (3, 4):
        raise ValueError("'images' must be either 3 or 4-dimensional.")
    axes = None if x.ndim == 3 else [1, 2, 3]
    first = x.ndim - 3
    return raw.AddV2(m.reduce_sum(m.abs(_diff(x, first)), axes),
                     m.reduce_sum(m.abs(_diff(x, first + 1)), axes))


_SOBEL = np.expand_dims(np.transpose(np.array(
    [[[-1, -2, -1], [0, 0, 0], [1, 2, 1]], [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]]),
    (1, 2, 0)), -2)


def sobel_edges(image):
    """The vertical and horizontal Sobel responses of [batch, height, width, channels]
    images, reflect-padded, as [batch, height, width, channels, 2] (tf.image.sobel_edges)."""
    x = h.tensor(image)
    if x.ndim != 4:
        raise errors.InvalidArgumentError(
            f"sobel_edges: image must be [batch, height, width, channels], got shape "
            f"{shape_text(x)}")
    kern = tile(_kiln.convert_to_tensor(_SOBEL.astype(x.dtype.name)), [1, 1, dim(x, 3), 1])
    padded = pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    out = depthwise_conv2d(padded, kern, [1, 1, 1, 1], "VALID")
    if None not in x.shape.as_list()[1:]:
        return reshape(out, [-1] + x.shape.as_list()[1:] + [2])
    return raw.Reshape(out, concat([raw.Shape(x, out_type="int32"), h.const_ints([2])], 0))


# ---- psnr, ssim ----

def _pair(a, b, op):
    """a and b as tensors of rank >= 3 with the same last three dims."""
    x, y = h.tensor(a), h.tensor(b)
    for t in (x, y):
        if t.ndim is None or t.ndim < 3:
            raise errors.InvalidArgumentError(
                f"{op}: images must have rank >= 3 ([..., height, width, channels]), got "
                f"shape {shape_text(t)}")
    if not x.shape[-3:].is_compatible_with(y.shape[-3:]):
        raise errors.InvalidArgumentError(
            f"{op}: the images' shapes are incompatible: {shape_text(x)} and {shape_text(y)}")
    return x, y


def _max_val(max_val, dtype):
    """max_val in the images' dtype, then as a float32 image value (TensorFlow's order)."""
    v = cast(h.tensor(max_val), dtype)
    return convert_image_dtype(v, FLOAT32)


def _f32(v):
    return _kiln.convert_to_tensor(v, dtype=FLOAT32)


def psnr(a, b, max_val, name=None):
    """The peak signal-to-noise ratio of a and b in dB, per image, for values in
    [0, max_val] (tf.image.psnr)."""
    x, y = _pair(a, b, "psnr")
    mv = _max_val(max_val, x.dtype)
    x, y = convert_image_dtype(x, FLOAT32), convert_image_dtype(y, FLOAT32)
    mse = m.reduce_mean(raw.SquaredDifference(x, y), [-3, -2, -1])
    peak = raw.RealDiv(raw.Mul(_f32(20.0), raw.Log(mv)), raw.Log(_f32(10.0)))
    return raw.Sub(peak, raw.Mul(_f32(np.float32(10 / np.log(10))), raw.Log(mse)))


def _gauss(size, sigma):
    """The [size, size, 1, 1] Gaussian window of TensorFlow's _fspecial_gauss."""
    coords = raw.Sub(cast(range_(size), FLOAT32), _f32((size - 1) / 2.0))
    sig = cast(h.tensor(sigma), FLOAT32) if h.is_tensor(sigma) else _f32(sigma)
    g = raw.Mul(raw.Square(coords), raw.RealDiv(_f32(-0.5), raw.Square(sig)))
    g = raw.AddV2(reshape(g, [1, -1]), reshape(g, [-1, 1]))
    return reshape(softmax(reshape(g, [1, -1])), [size, size, 1, 1])


def _reducer(kernel, shape):
    """The window's weighted means of [..., h, w, c] values (VALID positions)."""
    head, tail = shape[:-3], shape[-3:]

    def reduce(v):
        out = depthwise_conv2d(reshape(v, [-1] + tail), kernel, [1, 1, 1, 1], "VALID")
        out_tail = out.shape.as_list()[1:]
        if None not in head:
            return reshape(out, head + out_tail)
        lead = strided_slice(raw.Shape(v, out_type="int32"), [0], [len(head)], [1])
        return raw.Reshape(out, concat([lead, h.const_ints(out_tail)], 0))

    return reduce


def _ssim_parts(x, y, reduce, max_val, k1, k2):
    """(luminance, contrast-structure) of TensorFlow's _ssim_helper."""
    c1 = raw.Square(raw.Mul(_f32(k1), max_val))
    c2 = raw.Square(raw.Mul(_f32(k2), max_val))
    mean0, mean1 = reduce(x), reduce(y)
    num0 = raw.Mul(raw.Mul(mean0, mean1), _f32(2.0))
    den0 = raw.AddV2(raw.Square(mean0), raw.Square(mean1))
    lum = raw.RealDiv(raw.AddV2(num0, c1), raw.AddV2(den0, c1))
    num1 = raw.Mul(reduce(raw.Mul(x, y)), _f32(2.0))
    den1 = reduce(raw.AddV2(raw.Square(x), raw.Square(y)))
    cs = raw.RealDiv(raw.AddV2(raw.Sub(num1, num0), c2), raw.AddV2(raw.Sub(den1, den0), c2))
    return lum, cs


def ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03,
         return_index_map=False):
    """The structural similarity of img1 and img2 per image, with a Gaussian window
    (tf.image.ssim); return_index_map gives the per-position values instead. The images'
    height, width and channels must be static."""
    x, y = _pair(img1, img2, "ssim")
    mv = _max_val(max_val, x.dtype)
    x, y = convert_image_dtype(x, FLOAT32), convert_image_dtype(y, FLOAT32)
    size = h.one_int(filter_size, "filter_size", "ssim")
    shape = x.shape.as_list()
    if None in shape[-3:]:
        raise errors.InvalidArgumentError(
            f"ssim: the images' height, width and channels must be static, got {shape_text(x)}")
    if shape[-3] < size or shape[-2] < size:
        raise errors.InvalidArgumentError(
            f"ssim: the images' height and width {shape[-3:-1]} must be >= filter_size {size}")
    kernel = tile(_gauss(size, filter_sigma), [1, 1, shape[-1], 1])
    lum, cs = _ssim_parts(x, y, _reducer(kernel, shape), mv, k1, k2)
    per_channel = raw.Mul(lum, cs)
    if not return_index_map:
        per_channel = m.reduce_mean(per_channel, [-3, -2])
    return m.reduce_mean(per_channel, [-1])


IMAGE_METRICS = ["image_gradients", "sobel_edges", "total_variation", "psnr", "ssim"]
__all__ = list(IMAGE_METRICS)
