"""tf.image's random ops and their stateless_* variants (the same seed gives the same
values, another seed others; values are kiln's, not TensorFlow's Philox bits), and the
measures image_gradients, sobel_edges, total_variation, psnr and ssim (values printed by
TensorFlow 2.21), eagerly, traced and compiled, with gradients and error paths."""
import numpy as np
import pytest

import kiln as tf
from ops_harness import run_both

I = tf.image
RS = np.random.RandomState(3)
F3 = RS.rand(6, 7, 3).astype(np.float32)
F4 = RS.rand(8, 3, 4, 3).astype(np.float32)
SEED = (1, 2)


def test_stateless_ops_repeat_per_seed_and_vary_across_seeds():
    x = tf.constant(F3)
    ops = [lambda t, s: I.stateless_random_brightness(t, 0.5, s),
           lambda t, s: I.stateless_random_contrast(t, 0.2, 1.8, s),
           lambda t, s: I.stateless_random_saturation(t, 0.2, 1.8, s),
           lambda t, s: I.stateless_random_hue(t, 0.4, s),
           lambda t, s: I.stateless_random_crop(t, [3, 3, 3], s)]
    for op in ops:
        a = op(x, SEED).numpy()
        traced = tf.function(op)(x, tf.constant(SEED, tf.int64)).numpy()
        np.testing.assert_array_equal(a, op(x, np.array(SEED)).numpy())
        np.testing.assert_array_equal(a, traced)
        others = [op(x, (1, s)).numpy() for s in (3, 4, 5)]
        assert any(not np.array_equal(a, o) for o in others)
    delta = (I.stateless_random_brightness(x, 0.5, SEED) - x).numpy()
    assert np.allclose(delta, delta.flat[0], atol=1e-6) and abs(delta.flat[0]) <= 0.5


def test_stateless_flips_choose_per_image_and_compile():
    x = tf.constant(F4)
    for op, axis in ((I.stateless_random_flip_left_right, 2),
                     (I.stateless_random_flip_up_down, 1)):
        got = op(x, SEED).numpy()
        flipped = [np.array_equal(g, np.flip(f, axis - 1)) for g, f in zip(got, F4)]
        kept = [np.array_equal(g, f) for g, f in zip(got, F4)]
        assert all(a or b for a, b in zip(flipped, kept)) and any(flipped) and any(kept)
        jit = tf.function(lambda t: op(t, SEED), jit_compile=True,
                          input_signature=[tf.TensorSpec([None, 3, 4, 3])])
        np.testing.assert_array_equal(jit(x).numpy(), got)
    one = I.stateless_random_flip_left_right(F3, (5, 5)).numpy()
    assert np.array_equal(one, F3) or np.array_equal(one, F3[:, ::-1])


def test_stateless_uniform_bits_are_spread():
    flips = [I.stateless_random_flip_left_right(F4, (s, 7)).numpy() for s in range(8)]
    flipped = sum(np.array_equal(g, np.flip(f, 1)) for b in flips for g, f in zip(b, F4))
    assert 16 <= flipped <= 48  # of 64
    crops = {float(I.stateless_random_crop(np.arange(100.0).reshape(10, 10, 1), [2, 2, 1],
                                           (s, 0)).numpy()[0, 0, 0]) for s in range(30)}
    assert len(crops) >= 15


def test_stateful_random_ops_follow_the_global_seed():
    x = tf.constant(F3)
    ops = [lambda t: I.random_brightness(t, 0.3), lambda t: I.random_contrast(t, 0.5, 1.5),
           lambda t: I.random_saturation(t, 0.5, 1.5), lambda t: I.random_hue(t, 0.2),
           lambda t: I.random_crop(t, [2, 3, 3]), I.random_flip_left_right,
           I.random_flip_up_down]
    for op in ops:
        tf.random.set_seed(11)
        a = op(x).numpy()
        tf.random.set_seed(11)
        np.testing.assert_array_equal(op(x).numpy(), a)
    crop = I.random_crop(x, [2, 3, 3], seed=4).numpy()
    assert any(np.array_equal(crop, F3[i:i + 2, j:j + 3]) for i in range(5) for j in range(5))
    f = tf.function(lambda t: I.random_crop(t, [2, 3, 3]),
                    input_signature=[tf.TensorSpec([None, None, 3])])
    assert f(x).shape == (2, 3, 3)


def test_random_errors_match_tensorflow():
    iae = tf.errors.InvalidArgumentError
    for fn, msg in [(lambda: I.random_brightness(F3, -1.0), "max_delta must be non-negative."),
                    (lambda: I.random_contrast(F3, 2.0, 1.0), "upper must be > lower."),
                    (lambda: I.stateless_random_saturation(F3, -1.0, 1.0, SEED),
                     "lower must be non-negative."),
                    (lambda: I.random_hue(F3, 0.6), "max_delta must be <= 0.5."),
                    (lambda: I.stateless_random_flip_left_right(F3[0], SEED),
                     "must be at least three-dimensional.")]:
        with pytest.raises(ValueError, match=msg):
            fn()
    with pytest.raises(iae, match=r"seed must have shape \[2\], not \[3\]"):
        I.stateless_random_crop(F3, [2, 2, 3], seed=(1, 2, 3))
    with pytest.raises(iae, match="seed must be int32 or int64"):
        I.stateless_random_brightness(F3, 0.1, seed=(1.0, 2.0))
    with pytest.raises(iae, match=r"Need value.shape >= size, got \[6, 7, 3\] \[7, 7, 3\]"):
        I.random_crop(F3, [7, 7, 3])
    with pytest.raises(iae, match=r"Incompatible shapes: \[3\] vs. \[2\]"):
        I.random_crop(F3, [2, 2])


# ---- measures ----

X = (np.arange(2 * 9 * 10 * 3, dtype=np.float32).reshape(2, 9, 10, 3) * 37 % 101) / 100.0
Y = (np.arange(2 * 9 * 10 * 3, dtype=np.float32).reshape(2, 9, 10, 3) * 53 % 97) / 96.0


def test_psnr_and_ssim_match_tensorflow():
    for got in run_both(lambda a, b: I.ssim(a, b, 1.0, filter_size=5), X, Y):
        np.testing.assert_allclose(got.numpy(), [0.06655817, -0.02665641], atol=2e-6)
    got = I.ssim(X[0], Y[0], 1.0, filter_size=7, filter_sigma=1.0)
    np.testing.assert_allclose(got.numpy(), 0.07126478, atol=2e-6)
    u8 = I.ssim((X * 255).astype(np.uint8), (Y * 255).astype(np.uint8), 255, filter_size=5)
    np.testing.assert_allclose(u8.numpy(), [0.06731262, -0.02743877], atol=2e-6)
    assert I.ssim(X, Y, 1.0, filter_size=3, return_index_map=True).shape == (2, 7, 8)
    np.testing.assert_allclose(I.ssim(X, X, 1.0, 5).numpy(), [1.0, 1.0], atol=1e-6)
    for got in run_both(lambda a, b: I.psnr(a, b, 1.0), X, Y):
        np.testing.assert_allclose(got.numpy(), [7.956919, 7.596554], rtol=1e-6)
    mse = ((X - Y) ** 2).mean(axis=(1, 2, 3))
    np.testing.assert_allclose(I.psnr(X, Y, 1.0).numpy(), 10 * np.log10(1 / mse), rtol=1e-5)
    assert np.isinf(I.psnr(X, X, 1.0).numpy()).all()


def test_gradients_total_variation_and_sobel():
    dy, dx = run_both(I.image_gradients, X)[1]
    np.testing.assert_allclose(dy.numpy()[:, :-1], X[:, 1:] - X[:, :-1], atol=1e-7)
    np.testing.assert_array_equal(dy.numpy()[:, -1], 0)
    np.testing.assert_allclose(dx.numpy()[:, :, :-1], X[:, :, 1:] - X[:, :, :-1], atol=1e-7)
    tv = np.abs(np.diff(X, axis=1)).sum((1, 2, 3)) + np.abs(np.diff(X, axis=2)).sum((1, 2, 3))
    for got in run_both(I.total_variation, X):
        np.testing.assert_allclose(got.numpy(), tv, rtol=1e-5)
    np.testing.assert_allclose(I.total_variation(X[0]).numpy(), tv[0], rtol=1e-5)
    sobel = I.sobel_edges(X[:1, :3, :3, :1]).numpy()[0, :, :, 0, :].ravel()
    np.testing.assert_allclose(sobel, [0, 0, 0, -1.22, 0, 0, 1.94, 0, 0.93, -2.23, -0.08, 0, 0,
                                       0, 0, -3.24, 0, 0], atol=1e-5)  # TensorFlow's


def test_ssim_and_psnr_are_differentiable():
    x = tf.constant(X[:1])
    target = tf.constant(Y[:1])
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(I.ssim(x, target, 1.0, filter_size=3) + I.psnr(x, target, 1.0))
    g = tape.gradient(loss, x).numpy()
    i = (0, 4, 5, 1)
    d = np.zeros_like(X[:1])
    d[i] = 1e-2

    def f(v):
        return float(tf.reduce_sum(I.ssim(v, target, 1.0, filter_size=3) +
                                   I.psnr(v, target, 1.0)).numpy())

    num = (f(tf.constant(X[:1] + d)) - f(tf.constant(X[:1] - d))) / 2e-2
    np.testing.assert_allclose(g[i], num, rtol=2e-2)


def test_measure_errors():
    with pytest.raises(ValueError, match=r"image_gradients expects a 4D tensor"):
        I.image_gradients(X[0])
    with pytest.raises(ValueError, match="'images' must be either 3 or 4-dimensional."):
        I.total_variation(X[0, 0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="must be >= filter_size 11"):
        I.ssim(X[:, :5], Y[:, :5], 1.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="incompatible"):
        I.psnr(X, Y[:, :8], 1.0)
