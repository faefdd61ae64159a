"""Normalization (adapt), Resizing, CenterCrop, RandomFlip, CategoryEncoding against NumPy,
eagerly, traced and in tf.data pipelines."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import assert_layer, randn

layers = tf.keras.layers


def test_normalization_adapt_from_arrays_and_datasets():
    data = np.random.default_rng(0).normal(3, 2, (200, 4)).astype(np.float32)
    layer = layers.Normalization()
    layer.adapt(data)
    # As TF 2.21: a third weight, count (int64, shape (), left 0), counted by count_params.
    assert [w.name for w in layer.weights] == ["mean", "variance", "count"]
    assert layer.count.dtype.name == "int64" and int(layer.count.numpy()) == 0
    assert layer.count_params() == 9 and layer.trainable_weights == []
    np.testing.assert_allclose(layer.adapt_mean.numpy(), data.mean(0), rtol=1e-5)
    np.testing.assert_allclose(layer.adapt_variance.numpy(), data.var(0), rtol=1e-4)
    want = (data - data.mean(0)) / data.std(0)
    assert_layer(layer, data, want, rtol=1e-4, atol=1e-4)
    batched = layers.Normalization()
    batched.adapt(tf.data.Dataset.from_tensor_slices(data).batch(32))
    np.testing.assert_allclose(batched.adapt_mean.numpy(), data.mean(0), rtol=1e-5)
    np.testing.assert_allclose(batched.adapt_variance.numpy(), data.var(0), rtol=1e-4)
    mapped = next(iter(tf.data.Dataset.from_tensor_slices(data).batch(50).map(layer)))
    np.testing.assert_allclose(mapped.numpy(), want[:50], rtol=1e-4, atol=1e-4)
    back = layers.Normalization(invert=True)
    back.adapt(data)
    np.testing.assert_allclose(back(tf.constant(want)).numpy(), data, rtol=1e-4, atol=1e-4)


def test_normalization_given_stats_axes_and_errors():
    x = randn(3, 2, 4)
    layer = layers.Normalization(mean=[1.0, 2.0, 3.0, 4.0], variance=[1.0, 4.0, 9.0, 16.0])
    want = (x - np.array([1, 2, 3, 4])) / np.array([1, 2, 3, 4])
    assert_layer(layer, x, want, rtol=1e-5, atol=1e-6)
    assert layers.Normalization.from_config(layer.get_config()).input_mean == [1, 2, 3, 4]
    per_step = layers.Normalization(axis=1)
    per_step.adapt(x)
    np.testing.assert_allclose(per_step.adapt_mean.numpy(), x.mean(axis=(0, 2)), rtol=1e-5,
                               atol=1e-6)
    whole = layers.Normalization(axis=None)
    whole.adapt(x)
    np.testing.assert_allclose(whole(tf.constant(x)).numpy(), (x - x.mean()) / x.std(),
                               rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="both `mean` and `variance` must be set"):
        layers.Normalization(mean=1.0)


def _np_resize_bilinear(x, out_h, out_w):
    n, hh, ww, c = x.shape
    def coords(out, size):
        src = np.clip((np.arange(out) + 0.5) * size / out - 0.5, 0, None)
        lo = np.minimum(np.floor(src).astype(int), size - 1)
        return lo, np.minimum(lo + 1, size - 1), src - lo
    y0, y1, fy = coords(out_h, hh)
    x0, x1, fx = coords(out_w, ww)
    fx, fy = fx[None, None, :, None], fy[None, :, None, None]
    top = x[:, y0][:, :, x0] * (1 - fx) + x[:, y0][:, :, x1] * fx
    bot = x[:, y1][:, :, x0] * (1 - fx) + x[:, y1][:, :, x1] * fx
    return top * (1 - fy) + bot * fy


def test_resizing_and_center_crop():
    images = randn(2, 6, 8, 3)
    layer = layers.Resizing(4, 5)
    assert_layer(layer, images, _np_resize_bilinear(images.astype(np.float64), 4, 5),
                 rtol=1e-5, atol=1e-5)
    assert layer.compute_output_shape((None, 6, 8, 3)) == (None, 4, 5, 3)
    single = layer(tf.constant(images[0])).numpy()
    np.testing.assert_allclose(single, layer(tf.constant(images)).numpy()[0], rtol=1e-6)
    nearest = layers.Resizing(12, 16, interpolation="nearest")
    assert_layer(nearest, images, images.repeat(2, axis=1).repeat(2, axis=2))
    crop = layers.CenterCrop(4, 4)
    assert_layer(crop, images, images[:, 1:5, 2:6])
    first = layers.CenterCrop(2, 3, data_format="channels_first")
    xc = images.transpose(0, 3, 1, 2)
    assert_layer(first, xc, xc[:, :, 2:4, 2:5])
    with pytest.raises(ValueError, match="smaller than the crop"):
        layers.CenterCrop(10, 2)(tf.constant(images))
    with pytest.raises(ValueError, match="incorrect rank"):
        crop(tf.constant(randn(2, 3)))
    assert layers.Resizing.from_config(layer.get_config()).width == 5


def test_random_flip_flips_whole_images_only_when_training():
    images = randn(64, 3, 4, 2)
    layer = layers.RandomFlip("horizontal", seed=3)
    np.testing.assert_array_equal(layer(tf.constant(images), training=False).numpy(), images)
    out = layer(tf.constant(images), training=True).numpy()
    flipped = [np.array_equal(o, i[:, ::-1]) for o, i in zip(out, images)]
    kept = [np.array_equal(o, i) for o, i in zip(out, images)]
    assert all(f or k for f, k in zip(flipped, kept))
    assert 16 < sum(flipped) < 48
    both = layers.RandomFlip()(tf.constant(images), training=True).numpy()
    options = lambda i: [i, i[::-1], i[:, ::-1], i[::-1, ::-1]]  # noqa: E731
    assert all(any(np.array_equal(o, c) for c in options(i)) for o, i in zip(both, images))
    with pytest.raises(ValueError, match="unknown mode"):
        layers.RandomFlip("diagonal")


def test_category_encoding_modes():
    ids = np.array([[1, 1, 3], [0, 4, 4]])
    assert_layer(layers.CategoryEncoding(5), ids,
                 np.array([[0, 1, 0, 1, 0], [1, 0, 0, 0, 1]], np.float32))
    assert_layer(layers.CategoryEncoding(5, output_mode="count"), ids,
                 np.array([[0, 2, 0, 1, 0], [1, 0, 0, 0, 2]], np.float32))
    assert_layer(layers.CategoryEncoding(5, output_mode="one_hot"), np.array([[2], [4]]),
                 np.eye(5, dtype=np.float32)[[2, 4]])
    assert layers.CategoryEncoding(5).compute_output_shape((None, 3)) == (None, 5)
    assert layers.CategoryEncoding(5, "one_hot").compute_output_shape((None, 1)) == (None, 5)
    with pytest.raises(ValueError, match="Unknown arg for output_mode"):
        layers.CategoryEncoding(5, output_mode="tf_idf")
    with pytest.raises(ValueError, match="num_tokens must be set"):
        layers.CategoryEncoding()
    cfg = layers.CategoryEncoding(7, "count").get_config()
    assert (cfg["num_tokens"], cfg["output_mode"]) == (7, "count")


def _keras_crop_window(h, w, th, tw):
    ch, cw = max(min(h, int(w * th / tw)), 1), max(min(w, int(h * tw / th)), 1)
    return int((h - ch) / 2), ch, int((w - cw) / 2), cw


def test_resizing_crop_and_pad_to_aspect_ratio():
    """As TF 2.21's Resizing: the central window of the target's aspect ratio, resized; or
    fill_value padding of int((padded - size) / 2) on both sides, then resized."""
    x = randn(2, 8, 7, 3)
    top, ch, left, cw = _keras_crop_window(8, 7, 4, 6)
    assert (top, ch, left, cw) == (2, 4, 0, 7)
    plain = layers.Resizing(4, 6, interpolation="nearest")
    want = plain(tf.constant(x[:, top:top + ch, left:left + cw])).numpy()
    crop = layers.Resizing(4, 6, interpolation="nearest", crop_to_aspect_ratio=True)
    assert_layer(crop, x, want)
    padded = np.pad(x, [(0, 0), (0, 0), (2, 2), (0, 0)], constant_values=0.5)  # 8 x 11
    want = plain(tf.constant(padded)).numpy()
    pad = layers.Resizing(4, 6, interpolation="nearest", pad_to_aspect_ratio=True,
                          fill_value=0.5)
    assert_layer(pad, x, want)
    cfg = pad.get_config()
    assert cfg["pad_to_aspect_ratio"] is True and cfg["fill_value"] == 0.5
    assert {"crop_to_aspect_ratio", "fill_mode", "antialias"} <= set(cfg)
    with pytest.raises(ValueError, match="Only one of"):
        layers.Resizing(4, 6, crop_to_aspect_ratio=True, pad_to_aspect_ratio=True)


def test_category_encoding_config_has_no_sparse_key():
    assert set(layers.CategoryEncoding(4).get_config()) == {"name", "trainable", "dtype",
                                                            "num_tokens", "output_mode"}
