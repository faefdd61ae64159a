"""tf.image's color ops and convert_image_dtype: adjust_brightness/contrast/gamma/
saturation/hue, rgb_to_grayscale/hsv/yuv/yiq and back, per_image_standardization.
Eagerly, traced (static and None dims) and compiled, against NumPy references and values
printed by TensorFlow 2.21, with gradients and TensorFlow's error paths."""
import numpy as np
import pytest

import kiln as tf
from ops_harness import run_both

I = tf.image
# A 2x2 RGB image with distinct channel orders (values printed by TensorFlow 2.21 below).
IMG = (np.arange(12, dtype=np.float32).reshape(2, 2, 3) * 7 % 12) / 11.0
U8 = np.array([[[10, 200, 30], [255, 0, 128]]], np.uint8)
RS = np.random.RandomState(7)
F4 = RS.rand(2, 3, 4, 3).astype(np.float32)
TF = {  # tf.image.<op>(IMG, ...) in TensorFlow 2.21, flattened
    "contrast": [-0.20454544, 0.70454544, -0.02272725, 1.0227273, 0.29545456, 1.2045455,
                 0.6136364, -0.11363637, 0.79545456, 0.20454545, 1.1136364, 0.38636363],
    "sat": [0.3181818, 0.6363636, 0.40909094, 0.90909094, 0.6818182, 1.0, 0.6363637,
            0.40909094, 0.72727275, 0.5909091, 0.90909094, 0.68181825],
    "sat3": [0.0, 0.6363636, 0.18181825, 0.71428585, 0.0, 1.0, 0.51948065, 0.0, 0.72727275,
             0.0, 0.90909094, 0.25974035],
    "hue": [0.0, 0.13636357, 0.6363636, 1.0, 0.5000001, 0.36363637, 0.72727275, 0.22727281,
            0.09090909, 0.27272728, 0.40909085, 0.90909094],
    "hue_neg": [0.4363636, 0.0, 0.6363636, 0.92727274, 1.0, 0.36363637, 0.6545454,
                0.72727275, 0.09090909, 0.7090909, 0.27272728, 0.90909094],
    "hsv": [0.3809524, 1.0, 0.6363636, 0.7857143, 0.6363636, 1.0, 0.7857143, 0.87499994,
            0.72727275, 0.3809524, 0.7, 0.90909094],
    "rgb": [0.18181819, 0.06611571, 0.06611571, 0.9669422, 0.6363636, 1.0, 0.661157,
            0.70924115, 0.72727275, 0.19158523, 0.45454547, 0.0413223],
    "gray": [0.39427274, 0.57200915, 0.2993091, 0.66697276],
    "gamma": [0.0, 1.5954481, 0.8528029, 1.8090681, 1.2060454, 2.0, 1.4770979, 0.6030227,
              1.7056057, 1.0444659, 1.9069252, 1.3483998],
    "std": [-1.593255, 0.43452406, -1.0138896, 1.0138896, -0.43452406, 1.593255, 0.14484142,
            -1.3035723, 0.7242069, -0.7242068, 1.3035724, -0.14484133],
}
TF_U8 = {  # on U8
    "bright": [137, 255, 157, 255, 127, 255], "bright_neg": [0, 174, 4, 229, 0, 102],
    "contrast": [0, 255, 0, 255, 0, 177], "gamma": [0, 235, 5, 255, 0, 96],
    "sat": [105, 200, 115, 255, 127, 191], "hue": [10, 28, 200, 179, 255, 0],
    "gray": [124, 90],
}


def both_close(fn, x, want, atol=1e-5):
    for got in run_both(fn, x):
        assert got.shape == np.asarray(want).shape or got.numpy().size == np.size(want)
        np.testing.assert_allclose(got.numpy().ravel(), np.ravel(want), atol=atol)


@pytest.mark.parametrize("name,fn", [
    ("contrast", lambda x: I.adjust_contrast(x, 1.5)),
    ("sat", lambda x: I.adjust_saturation(x, 0.5)),
    ("sat3", lambda x: I.adjust_saturation(x, 3.0)),
    ("hue", lambda x: I.adjust_hue(x, 0.25)),
    ("hue_neg", lambda x: I.adjust_hue(x, -0.6)),
    ("hsv", I.rgb_to_hsv), ("rgb", I.hsv_to_rgb), ("gray", I.rgb_to_grayscale),
    ("gamma", lambda x: I.adjust_gamma(x, 0.5, 2.0)), ("std", I.per_image_standardization)])
def test_float_ops_match_tensorflow(name, fn):
    both_close(fn, IMG, TF[name])


@pytest.mark.parametrize("name,fn", [
    ("bright", lambda x: I.adjust_brightness(x, 0.5)),
    ("bright_neg", lambda x: I.adjust_brightness(x, -0.1)),
    ("contrast", lambda x: I.adjust_contrast(x, 2.0)),
    ("gamma", lambda x: I.adjust_gamma(x, 2.0, 1.5)),
    ("sat", lambda x: I.adjust_saturation(x, 0.5)), ("hue", lambda x: I.adjust_hue(x, 0.3)),
    ("gray", I.rgb_to_grayscale)])
def test_uint8_ops_convert_and_saturate_as_tensorflow(name, fn):
    for got in run_both(fn, U8):
        assert got.dtype == tf.uint8
        np.testing.assert_array_equal(got.numpy().ravel(), TF_U8[name])


def test_numpy_references_batched():
    x = tf.constant(F4)
    np.testing.assert_allclose(I.adjust_brightness(x, [0.1, -0.2, 0.3]).numpy(),
                               F4 + np.float32([0.1, -0.2, 0.3]), atol=1e-6)
    mean = F4.mean(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(I.adjust_contrast(x, 0.3).numpy(), (F4 - mean) * 0.3 + mean,
                               atol=1e-6)
    np.testing.assert_allclose(I.adjust_gamma(x, 1.7, 0.5).numpy(), 0.5 * F4 ** 1.7, rtol=1e-5)
    np.testing.assert_allclose(I.rgb_to_grayscale(x).numpy(),
                               F4 @ np.float32([[0.2989], [0.587], [0.114]]), atol=1e-6)
    flat = F4.reshape(2, -1)
    std = np.maximum(flat.std(1), 1 / np.sqrt(flat.shape[1]))[:, None]
    np.testing.assert_allclose(I.per_image_standardization(x).numpy().reshape(2, -1),
                               (flat - flat.mean(1, keepdims=True)) / std, atol=1e-5)
    assert I.adjust_saturation(x, 1.0).shape == (2, 3, 4, 3)
    np.testing.assert_allclose(I.adjust_saturation(x, 1.0).numpy(), F4, atol=1e-6)
    np.testing.assert_allclose(I.adjust_hue(x, 1.0).numpy(), F4, atol=1e-5)


def test_hsv_yuv_yiq_round_trips_and_gray_to_rgb():
    x = tf.constant(F4)
    np.testing.assert_allclose(I.hsv_to_rgb(I.rgb_to_hsv(x)).numpy(), F4, atol=1e-6)
    np.testing.assert_allclose(I.yuv_to_rgb(I.rgb_to_yuv(x)).numpy(), F4, atol=1e-5)
    np.testing.assert_allclose(I.yiq_to_rgb(I.rgb_to_yiq(x)).numpy(), F4, atol=1e-4)
    yuv = np.float32([[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
                      [0.114, 0.43601035, -0.10001026]])
    np.testing.assert_allclose(I.rgb_to_yuv(x).numpy(), F4 @ yuv, atol=1e-6)
    hsv = I.rgb_to_hsv(tf.constant([[0.5, 0.5, 0.5], [0.0, 0.0, 0.0]]))  # no hue, no NaN
    np.testing.assert_allclose(hsv.numpy(), [[0, 0, 0.5], [0, 0, 0]])
    assert I.rgb_to_hsv(tf.constant(F4, tf.float64)).dtype == tf.float64
    assert I.rgb_to_yuv(F4.astype(np.float64)).dtype == tf.float64
    g = I.grayscale_to_rgb(tf.constant(F4[..., :1]))
    np.testing.assert_array_equal(g.numpy(), np.repeat(F4[..., :1], 3, -1))


def test_dtypes_of_adjust_ops():
    f64 = tf.constant(IMG.astype(np.float64))
    out = I.adjust_contrast(f64, 1.5)  # through float32, as TensorFlow
    assert out.dtype == tf.float64
    np.testing.assert_allclose(out.numpy().ravel(), TF["contrast"], atol=1e-6)
    f16 = I.adjust_hue(tf.constant(IMG.astype(np.float16)), 0.25)
    assert f16.dtype == tf.float16
    np.testing.assert_allclose(f16.numpy().ravel(), TF["hue"], atol=2e-3)
    i32 = I.adjust_brightness(tf.constant(U8.astype(np.int32)), 0.001)
    np.testing.assert_array_equal(i32.numpy().ravel(),
                                  [2147493, 2147683, 2147513, 2147738, 2147483, 2147611])
    assert I.per_image_standardization(tf.constant(U8)).dtype == tf.float32


def test_convert_image_dtype_matches_tensorflow():
    c = I.convert_image_dtype
    cases = [  # (input, dtype, saturate, TensorFlow 2.21's output)
        (tf.constant([-5, 100], tf.int8), tf.uint8, False, [246, 200]),
        (tf.constant([-5, 100], tf.int8), tf.uint8, True, [0, 200]),
        (tf.constant([-5.0, 0.5, 2.0]), tf.int8, True, [-128, 63, 127]),
        (tf.constant([-0.5, 0.5]), tf.int8, False, [-63, 63]),
        (tf.constant([255, 3], tf.uint8), tf.int8, False, [127, 1]),
        (tf.constant([2 ** 31 - 1, -2 ** 31], tf.int32), tf.uint8, True, [255, 0]),
        (tf.constant([1.0, 2.0, -1.0]), tf.int32, True, [2147483520, 2147483520, -2147483648]),
        (tf.constant([2 ** 62], tf.int64), tf.float32, False, [0.5]),
        (tf.constant([0.0, 0.5, 1.0]), tf.uint8, False, [0, 127, 255]),
    ]
    for x, dtype, sat, want in cases:
        for got in run_both(lambda t: c(t, dtype, saturate=sat), x):
            assert got.dtype == dtype
            np.testing.assert_array_equal(got.numpy(), want)
    assert c(0.5, tf.uint8).numpy() == 127


def test_gradients_match_finite_differences():
    x0 = RS.rand(1, 3, 4, 3)
    fns = [lambda t: I.adjust_contrast(t, 1.7), I.rgb_to_hsv, I.hsv_to_rgb,
           lambda t: I.adjust_gamma(t, 0.6, 1.3), I.rgb_to_yuv]
    for fn in fns:
        w = RS.randn(*fn(tf.constant(x0, tf.float32)).shape)
        t = tf.constant(x0, tf.float32)
        with tf.GradientTape() as tape:
            tape.watch(t)
            s = tf.reduce_sum(fn(t) * tf.constant(w, tf.float32))
        got = tape.gradient(s, t).numpy()
        num = np.zeros_like(x0)
        for i in np.ndindex(x0.shape):
            d = np.zeros_like(x0)
            d[i] = 1e-3
            f = [np.sum(fn(tf.constant(x0 + e, tf.float32)).numpy() * w) for e in (d, -d)]
            num[i] = (f[0] - f[1]) / 2e-3
        np.testing.assert_allclose(got, num, atol=5e-3 * max(1.0, np.abs(num).max()))


def test_hue_and_saturation_gradients_are_finite_on_gray_pixels():
    x = tf.constant([[[0.5, 0.5, 0.5], [0.0, 0.0, 0.0], [0.2, 0.7, 0.7]]])
    for fn in (lambda t: I.adjust_hue(t, 0.3), lambda t: I.adjust_saturation(t, 1.5),
               I.rgb_to_hsv):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(fn(x))
        assert np.all(np.isfinite(tape.gradient(y, x).numpy()))


def test_traced_with_unknown_dims_and_compiled():
    fns = [lambda t: I.adjust_saturation(t, 1.8), lambda t: I.adjust_hue(t, 0.37),
           lambda t: I.adjust_contrast(t, 0.4), I.per_image_standardization]
    x = tf.constant(F4)
    for fn in fns:
        want = fn(x).numpy()
        for jit in (False, True):
            f = tf.function(fn, input_signature=[tf.TensorSpec([None, None, None, 3])],
                            jit_compile=jit)
            np.testing.assert_allclose(f(x).numpy(), want, atol=1e-5)
    delta = tf.function(lambda t, d: I.adjust_hue(t, d))
    np.testing.assert_allclose(delta(tf.constant(IMG), tf.constant(0.25)).numpy().ravel(),
                               TF["hue"], atol=1e-5)


def test_errors_match_tensorflow():
    iae = tf.errors.InvalidArgumentError
    two = tf.constant(IMG[:, :, :2])
    with pytest.raises(iae, match="input must have 3 channels but instead has 2 channels"):
        I.adjust_saturation(two, 2.0)
    with pytest.raises(iae, match=r"input must be at least 3-D, got shape\[2,3\]"):
        I.adjust_hue(IMG[0], 0.2)
    with pytest.raises(iae, match=r"contrast_factor must be scalar: \[2\]"):
        I.adjust_contrast(IMG, [2.0, 1.0])
    with pytest.raises(iae, match=r"scale must be scalar"):
        I.adjust_saturation(IMG, [2.0, 1.0])
    with pytest.raises(ValueError, match=r"delta must be in the interval \[-1, 1\]"):
        I.adjust_hue(IMG, 1.5)
    with pytest.raises(ValueError, match="Gamma should be a non-negative real number"):
        I.adjust_gamma(IMG, -1)
    with pytest.raises(iae, match="Gamma should be a non-negative real number"):
        I.adjust_gamma(IMG, tf.constant(-1.0))
    with pytest.raises(tf.errors.FailedPreconditionError, match="input only has 2 channels"):
        I.rgb_to_hsv(two)
    with pytest.raises(iae, match="RGBToHSV: images must be"):
        I.rgb_to_hsv(tf.constant(U8))
    with pytest.raises(ValueError, match="must be at least two-dimensional"):
        I.grayscale_to_rgb(tf.constant([1.0]))
    with pytest.raises(ValueError, match="Last dimension of a grayscale image should be size 1"):
        I.grayscale_to_rgb(tf.constant(IMG))
    with pytest.raises(TypeError, match="float tensor"):
        I.rgb_to_yuv(tf.constant(U8.astype(np.int32)))
    with pytest.raises(ValueError, match=r"'image' \(shape \(2, 3\)\) must be at least three"):
        I.per_image_standardization(IMG[0])
    with pytest.raises(AttributeError, match="^dtype must be either floating point or integer"):
        I.convert_image_dtype(tf.constant([1.0]), tf.bool)
