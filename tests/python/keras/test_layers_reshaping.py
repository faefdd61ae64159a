"""Permute, Cropping2D, UpSampling2D against NumPy (Keras 3's arguments and errors)."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import assert_layer, randn

layers = tf.keras.layers


def test_permute_matches_numpy_and_checks_dims():
    x = randn(2, 3, 4, 5)
    layer = layers.Permute((3, 1, 2))
    assert_layer(layer, x, x.transpose(0, 3, 1, 2))
    assert layer.compute_output_shape((None, 3, 4, 5)) == (None, 5, 3, 4)
    assert layers.Permute.from_config(layer.get_config()).dims == (3, 1, 2)
    jit = tf.function(lambda t: layers.Permute((2, 1))(t), jit_compile=True)(tf.constant(x[0]))
    np.testing.assert_array_equal(jit.numpy(), x[0].transpose(0, 2, 1))
    for bad in [(0, 1), (1, 3), (2, 2)]:
        with pytest.raises(ValueError, match="must be consecutive and start from 1"):
            layers.Permute(bad)
    with pytest.raises(ValueError):
        layers.Permute((2, 1))(tf.constant(x))  # rank 4, dims for rank 3


@pytest.mark.parametrize("cropping,pairs", [
    (1, ((1, 1), (1, 1))),
    ((1, 2), ((1, 1), (2, 2))),
    (((0, 2), (1, 0)), ((0, 2), (1, 0))),
    (((0, 0), (0, 0)), ((0, 0), (0, 0))),
])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_cropping2d(cropping, pairs, data_format):
    x = randn(2, 6, 7, 3)
    if data_format == "channels_first":
        x = x.transpose(0, 3, 1, 2)
    layer = layers.Cropping2D(cropping, data_format=data_format)
    (t, b), (l, r) = pairs
    if data_format == "channels_last":
        want = x[:, t:x.shape[1] - b, l:x.shape[2] - r, :]
    else:
        want = x[:, :, t:x.shape[2] - b, l:x.shape[3] - r]
    assert_layer(layer, x, want)
    assert layer.compute_output_shape(x.shape) == want.shape
    assert layer.get_config()["cropping"] == pairs
    fn = tf.function(lambda a: layer(a), input_signature=[
        tf.TensorSpec([None] * 4, tf.float32)])
    np.testing.assert_array_equal(fn(tf.constant(x)).numpy(), want)


def test_cropping2d_errors():
    for bad in [-1, (1, 2, 3), ((1, 2), 3, 4), ((1,), (2, 3)), "1"]:
        with pytest.raises(ValueError, match="`cropping` should be either an int"):
            layers.Cropping2D(bad)
    with pytest.raises(ValueError, match="should be smaller than the corresponding spatial"):
        layers.Cropping2D(((3, 3), (0, 0)))(tf.constant(randn(1, 6, 4, 2)))


def _resize_bilinear_ref(x, out_h, out_w):
    """tf.image.resize's bilinear (half-pixel centers) on NHWC."""
    n, h, w, c = x.shape
    def coords(out, size):
        src = (np.arange(out) + 0.5) * size / out - 0.5
        src = np.clip(src, 0, None)
        lo = np.minimum(np.floor(src).astype(int), size - 1)
        hi = np.minimum(lo + 1, size - 1)
        return lo, hi, src - lo
    y0, y1, fy = coords(out_h, h)
    x0, x1, fx = coords(out_w, w)
    top = x[:, y0][:, :, x0] * (1 - fx)[None, None, :, None] + \
        x[:, y0][:, :, x1] * fx[None, None, :, None]
    bot = x[:, y1][:, :, x0] * (1 - fx)[None, None, :, None] + \
        x[:, y1][:, :, x1] * fx[None, None, :, None]
    return top * (1 - fy)[None, :, None, None] + bot * fy[None, :, None, None]


def test_upsampling2d_nearest_and_bilinear():
    x = randn(2, 3, 4, 5)
    layer = layers.UpSampling2D((2, 3))
    want = x.repeat(2, axis=1).repeat(3, axis=2)
    assert_layer(layer, x, want)
    assert layer.compute_output_shape((None, 3, None, 5)) == (None, 6, None, 5)
    fn = tf.function(lambda a: layer(a), input_signature=[tf.TensorSpec([None] * 4, tf.float32)])
    np.testing.assert_array_equal(fn(tf.constant(x)).numpy(), want)
    first = layers.UpSampling2D(2, data_format="channels_first")
    xc = x.transpose(0, 3, 1, 2)
    assert_layer(first, xc, xc.repeat(2, axis=2).repeat(2, axis=3))
    bil = layers.UpSampling2D(2, interpolation="bilinear")
    assert_layer(bil, x, _resize_bilinear_ref(x.astype(np.float64), 6, 8), rtol=1e-5, atol=1e-5)
    cfg = bil.get_config()
    assert (cfg["size"], cfg["interpolation"]) == ((2, 2), "bilinear")
    with pytest.raises(ValueError, match="`interpolation` argument should be one of"):
        layers.UpSampling2D(interpolation="cubic")
    with pytest.raises(ValueError, match="size"):
        layers.UpSampling2D((0, 2))


def test_unet_style_model_builds_trains_and_round_trips():
    inp = tf.keras.Input((8, 8, 3))
    down = layers.Conv2D(4, 3, padding="same", activation="relu")(inp)
    pooled = layers.MaxPooling2D()(down)
    up = layers.UpSampling2D()(layers.Conv2D(4, 3, padding="same")(pooled))
    merged = layers.Concatenate()([layers.Cropping2D(0)(down), up])
    out = layers.Conv2D(1, 1)(layers.Permute((1, 2, 3))(merged))
    model = tf.keras.Model(inp, out)
    assert model.output_shape == (None, 8, 8, 1)
    model.compile(optimizer="adam", loss="mse")
    x = randn(8, 8, 8, 3)
    y = x.mean(axis=-1, keepdims=True)
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=10, verbose=0)
    assert model.evaluate(x, y, verbose=0) < before
    clone = tf.keras.Model.from_config(model.get_config())
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("signature", [[2, 3, 4, 5], [None, 3, 4, 5], [None, None, None, 5]])
def test_upsampling2d_gradient_in_a_function(signature):
    # Known sizes take the broadcast path, unknown ones gather rows and columns;
    # each value's gradient is the sum of its block's.
    x = randn(2, 3, 4, 5)
    layer = layers.UpSampling2D((2, 3))
    dy = randn(2, 6, 12, 5, seed=1)

    @tf.function(input_signature=[tf.TensorSpec(signature, tf.float32)])
    def grad(a):
        with tf.GradientTape() as tape:
            tape.watch(a)
            y = layer(a)
            loss = tf.reduce_sum(y * tf.constant(dy))
        return y, tape.gradient(loss, a)

    y, g = grad(tf.constant(x))
    np.testing.assert_array_equal(y.numpy(), x.repeat(2, axis=1).repeat(3, axis=2))
    want = dy.reshape(2, 3, 2, 4, 3, 5).sum(axis=(2, 4))
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-5, atol=1e-5)


def test_one_dimensional_reshaping_layers():
    x = randn(2, 5, 3)
    assert_layer(layers.RepeatVector(4), x[:, 0], np.repeat(x[:, None, 0], 4, axis=1))
    assert layers.RepeatVector(4).compute_output_shape((None, 3)) == (None, 4, 3)
    assert_layer(layers.Cropping1D((1, 2)), x, x[:, 1:3])
    assert_layer(layers.Cropping1D(0), x, x)
    assert_layer(layers.ZeroPadding1D((2, 1)), x, np.pad(x, [(0, 0), (2, 1), (0, 0)]))
    assert_layer(layers.ZeroPadding1D(), x, np.pad(x, [(0, 0), (1, 1), (0, 0)]))
    assert_layer(layers.UpSampling1D(3), x, x.repeat(3, axis=1))
    fn = tf.function(lambda a: layers.UpSampling1D(2)(a),
                     input_signature=[tf.TensorSpec([None, None, 3], tf.float32)])
    np.testing.assert_array_equal(fn(tf.constant(x)).numpy(), x.repeat(2, axis=1))
    for cls, kwargs in [(layers.Cropping1D, {"cropping": (1, 2)}),
                        (layers.ZeroPadding1D, {"padding": (2, 0)}),
                        (layers.UpSampling1D, {"size": 3}), (layers.RepeatVector, {"n": 2})]:
        layer = cls(**kwargs)
        assert cls.from_config(layer.get_config()).get_config() == layer.get_config()
    with pytest.raises(ValueError, match="smaller than the input length"):
        layers.Cropping1D((3, 2))(tf.constant(x))
    with pytest.raises(ValueError, match="non-negative"):
        layers.ZeroPadding1D(-1)
    with pytest.raises(TypeError, match="integer value for `n`"):
        layers.RepeatVector(2.5)
    model = tf.keras.Sequential([layers.Dense(4, input_shape=(3,)), layers.RepeatVector(5),
                                 layers.LSTM(2, return_sequences=True)])
    assert model.output_shape == (None, 5, 2)


def test_zero_padding1d_channels_first():
    """Keras 3.15's ZeroPadding1D takes data_format (steps on axis 2 when channels_first)."""
    x = randn(2, 3, 4)
    layer = layers.ZeroPadding1D((2, 1), data_format="channels_first")
    assert_layer(layer, x, np.pad(x, [(0, 0), (0, 0), (2, 1)]))
    assert layer.compute_output_shape((None, 3, 4)) == (None, 3, 7)
    assert layer.get_config()["data_format"] == "channels_first"
    assert layers.ZeroPadding1D().get_config()["data_format"] == "channels_last"
