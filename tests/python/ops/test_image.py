"""tf.image: resize (TensorFlow 2's half-pixel bilinear and nearest), flips and
convert_image_dtype, eagerly, traced and with gradients, and the error paths."""
import numpy as np
import pytest

import kiln as tf

SMALL = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)[:, :, None]  # [2, 2, 1]


def test_resize_bilinear_upscale_matches_tensorflow():
    want = np.array([[1.0, 1.25, 1.75, 2.0], [1.5, 1.75, 2.25, 2.5],
                     [2.5, 2.75, 3.25, 3.5], [3.0, 3.25, 3.75, 4.0]], np.float32)
    for f in (tf.image.resize, tf.function(tf.image.resize, autograph=False)):
        got = f(tf.constant(SMALL), [4, 4])
        assert got.dtype == tf.float32 and got.shape == (4, 4, 1)
        np.testing.assert_allclose(got.numpy()[:, :, 0], want)


def test_resize_downscale_and_batch_and_nearest():
    x = np.arange(2 * 4 * 4 * 3, dtype=np.float32).reshape(2, 4, 4, 3)
    got = tf.image.resize(tf.constant(x), [2, 2]).numpy()
    want = x.reshape(2, 2, 2, 2, 2, 3).mean(axis=(2, 4))  # half-pixel: 2x2 block means
    np.testing.assert_allclose(got, want, rtol=1e-6)
    u8 = tf.constant(np.arange(4, dtype=np.uint8).reshape(2, 2, 1))
    near = tf.image.resize(u8, [4, 4], method="nearest")
    assert near.dtype == tf.uint8
    np.testing.assert_array_equal(near.numpy()[:, :, 0],
                                  np.repeat(np.repeat(u8.numpy()[:, :, 0], 2, 0), 2, 1))
    assert tf.image.resize(u8, [3, 5]).dtype == tf.float32


def test_resize_gradient_spreads_back():
    x = tf.constant(SMALL)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.image.resize(x, [4, 4]))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.full((2, 2, 1), 4.0))


def test_flips_and_convert_image_dtype():
    img = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    np.testing.assert_array_equal(tf.image.flip_left_right(img).numpy(), img[:, ::-1])
    np.testing.assert_array_equal(tf.image.flip_up_down(img).numpy(), img[::-1])
    batch = np.stack([img, img + 1])
    np.testing.assert_array_equal(tf.image.flip_left_right(batch).numpy(), batch[:, :, ::-1])
    c = tf.image.convert_image_dtype
    np.testing.assert_allclose(c(tf.constant([[[0, 51, 255]]], tf.uint8), tf.float32).numpy(),
                               [[[0.0, 0.2, 1.0]]])
    np.testing.assert_array_equal(c(tf.constant([[[0.0, 0.5, 1.0]]]), tf.uint8).numpy(),
                                  [[[0, 127, 255]]])
    np.testing.assert_array_equal(
        c(tf.constant([[[2.0, -1.0]]]), tf.uint8, saturate=True).numpy(), [[[255, 0]]])
    assert c(tf.constant([[[1.0]]]), tf.float64).dtype == tf.float64
    np.testing.assert_array_equal(c(tf.constant([[[255]]], tf.uint8), tf.int32).numpy(),
                                  [[[255 * 2 ** 23]]])


def test_image_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="images must be"):
        tf.image.resize(tf.constant([1.0, 2.0]), [2, 2])
    with pytest.raises(ValueError, match="not supported"):
        tf.image.resize(tf.constant(SMALL), [2, 2], method="bicubic")
    with pytest.raises(ValueError, match="antialias"):
        tf.image.resize(tf.constant(SMALL), [2, 2], antialias=True)
    with pytest.raises(tf.errors.InvalidArgumentError, match="size must be positive"):
        tf.image.resize(tf.constant(SMALL), [0, 2])
    with pytest.raises(AttributeError, match="image dtype must be either floating point"):
        tf.image.convert_image_dtype(tf.constant([[["a"]]]), tf.float32)
