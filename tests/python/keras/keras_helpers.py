"""NumPy references and eager-vs-function checks for the kiln.keras tests."""
import numpy as np

import kiln as tf


def rng(seed=0):
    return np.random.default_rng(seed)


def randn(*shape, seed=0):
    return rng(seed).standard_normal(shape).astype(np.float32)


def eager_and_function(layer, *args, **kwargs):
    """(eager output, kiln.function output) of layer(*args, **kwargs) as NumPy."""
    eager = layer(*args, **kwargs)
    fn = tf.function(lambda *a: layer(*a, **kwargs))
    traced = fn(*args)
    return _np(eager), _np(traced)


def _np(out):
    if isinstance(out, (list, tuple)):
        return [o.numpy() for o in out]
    return out.numpy()


def assert_layer(layer, x, expected, rtol=1e-5, atol=1e-5, **kwargs):
    """The layer's output on x equals expected, eagerly and in a function."""
    x = tf.constant(x) if isinstance(x, np.ndarray) else x
    eager, traced = eager_and_function(layer, x, **kwargs)
    np.testing.assert_allclose(eager, expected, rtol=rtol, atol=atol)
    np.testing.assert_allclose(traced, expected, rtol=rtol, atol=atol)
    return eager


def same_pads(n, k, s, d=1):
    """TensorFlow's SAME padding (before, after) along one axis."""
    eff = (k - 1) * d + 1
    out = -(-n // s)
    total = max((out - 1) * s + eff - n, 0)
    return total // 2, total - total // 2


def _pad_hw(x, kernel, strides, padding, dilation, value=0.0):
    if padding == "valid":
        return x
    ph = same_pads(x.shape[1], kernel[0], strides[0], dilation[0])
    pw = same_pads(x.shape[2], kernel[1], strides[1], dilation[1])
    return np.pad(x, [(0, 0), ph, pw, (0, 0)], constant_values=value)


def _windows(x, kernel, strides, dilation):
    """Yields (i, j, x_slice) with x_slice[n, oh, ow, c] = x at window offset (i, j)."""
    kh, kw = kernel
    eh, ew = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    oh = (x.shape[1] - eh) // strides[0] + 1
    ow = (x.shape[2] - ew) // strides[1] + 1
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dilation[0], j * dilation[1]
            yield i, j, x[:, r0:r0 + (oh - 1) * strides[0] + 1:strides[0],
                          c0:c0 + (ow - 1) * strides[1] + 1:strides[1], :]


def np_conv2d(x, w, strides=(1, 1), padding="valid", dilation=(1, 1), groups=1):
    """NHWC x, HWIO w -> NHWC, as tf.nn.conv2d (grouped when groups > 1)."""
    x = _pad_hw(x.astype(np.float64), w.shape[:2], strides, padding, dilation)
    cin_g, cout = w.shape[2], w.shape[3]
    cout_g = cout // groups
    out = None
    for i, j, xs in _windows(x, w.shape[:2], strides, dilation):
        parts = [xs[..., g * cin_g:(g + 1) * cin_g] @ w[i, j, :, g * cout_g:(g + 1) * cout_g]
                 for g in range(groups)]
        term = np.concatenate(parts, axis=-1)
        out = term if out is None else out + term
    return out.astype(np.float32)


def np_depthwise(x, w, strides=(1, 1), padding="valid", dilation=(1, 1)):
    """NHWC x, [kh, kw, C, M] w -> [N, OH, OW, C * M] (channel c, multiplier m at c * M + m)."""
    x = _pad_hw(x.astype(np.float64), w.shape[:2], strides, padding, dilation)
    out = None
    for i, j, xs in _windows(x, w.shape[:2], strides, dilation):
        term = (xs[..., :, None] * w[i, j]).reshape(xs.shape[:3] + (-1,))
        out = term if out is None else out + term
    return out.astype(np.float32)


def np_pool(x, pool, strides, padding, kind):
    """Max or average pooling (SAME padding not counted in averages)."""
    x = x.astype(np.float64)
    if kind == "max":
        xp = _pad_hw(x, pool, strides, padding, (1, 1), value=-np.inf)
        return np.max([s for _, _, s in _windows(xp, pool, strides, (1, 1))], axis=0)
    xp = _pad_hw(x, pool, strides, padding, (1, 1), value=0.0)
    ones = _pad_hw(np.ones_like(x), pool, strides, padding, (1, 1), value=0.0)
    total = np.sum([s for _, _, s in _windows(xp, pool, strides, (1, 1))], axis=0)
    count = np.sum([s for _, _, s in _windows(ones, pool, strides, (1, 1))], axis=0)
    return (total / count).astype(np.float32)
