"""GaussianNoise, GaussianDropout, SpatialDropout2D: the identity unless training, and the
noise's statistics when training (Keras 3's arguments and errors)."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import randn

layers = tf.keras.layers


@pytest.mark.parametrize("make", [lambda: layers.GaussianNoise(0.3, seed=1),
                                  lambda: layers.GaussianDropout(0.4, seed=2),
                                  lambda: layers.SpatialDropout2D(0.5, seed=3)])
def test_identity_unless_training(make):
    layer = make()
    x = randn(4, 6, 6, 8)
    for kwargs in ({}, {"training": False}):
        np.testing.assert_array_equal(layer(tf.constant(x), **kwargs).numpy(), x)
        traced = tf.function(lambda t: layer(t, **kwargs))(tf.constant(x))
        np.testing.assert_array_equal(traced.numpy(), x)
    assert not np.array_equal(layer(tf.constant(x), training=True).numpy(), x)
    clone = type(layer).from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()


def test_gaussian_noise_statistics():
    x = np.zeros((200, 500), np.float32)
    noise = layers.GaussianNoise(0.25)(tf.constant(x), training=True).numpy()
    assert abs(noise.mean()) < 0.005 and abs(noise.std() - 0.25) < 0.005
    assert layers.GaussianNoise(0.0)(tf.constant(x), training=True).numpy().max() == 0


def test_gaussian_dropout_statistics():
    x = np.ones((200, 500), np.float32)
    rate = 0.3
    y = layers.GaussianDropout(rate)(tf.constant(x), training=True).numpy()
    assert abs(y.mean() - 1) < 0.01
    assert abs(y.std() - np.sqrt(rate / (1 - rate))) < 0.01
    np.testing.assert_array_equal(
        layers.GaussianDropout(1.0)(tf.constant(x), training=True).numpy(), 0)


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_spatial_dropout_drops_whole_feature_maps(data_format):
    x = np.ones((64, 5, 5, 32), np.float32)
    if data_format == "channels_first":
        x = x.transpose(0, 3, 1, 2)
    y = layers.SpatialDropout2D(0.25, data_format=data_format)(tf.constant(x),
                                                               training=True).numpy()
    maps = y if data_format == "channels_last" else y.transpose(0, 2, 3, 1)
    per_map = maps.reshape(64, 25, 32)
    # Each (sample, channel) map is all zeros or all 1 / (1 - rate).
    assert np.all(per_map.min(axis=1) == per_map.max(axis=1))
    assert set(np.unique(per_map)) <= {0.0, np.float32(1 / 0.75)}
    dropped = (per_map[:, 0, :] == 0).mean()
    assert 0.18 < dropped < 0.32


def test_argument_errors():
    for bad in (-0.1, 1.5, None):
        with pytest.raises(ValueError, match="Expected a float value between 0 and 1"):
            layers.GaussianNoise(bad)
        with pytest.raises(ValueError, match="Expected a float value between 0 and 1"):
            layers.GaussianDropout(bad)
        with pytest.raises(ValueError, match="Expected a float value between 0 and 1"):
            layers.SpatialDropout2D(bad)
    with pytest.raises(ValueError):
        layers.SpatialDropout2D(0.5)(tf.constant(randn(2, 3, 4)), training=True)


def test_noise_layers_train_in_fit():
    model = tf.keras.Sequential([layers.Dense(16, input_shape=(4,), activation="relu"),
                                 layers.GaussianNoise(0.05), layers.GaussianDropout(0.1),
                                 layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    x = randn(64, 4)
    y = x.sum(axis=1, keepdims=True)
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=30, verbose=0)
    assert model.evaluate(x, y, verbose=0) < before
    # predict runs without the noise: two calls agree.
    np.testing.assert_array_equal(model.predict(x, verbose=0), model.predict(x, verbose=0))


def test_spatial_dropout1d_drops_whole_channels():
    x = np.ones((64, 7, 32), np.float32)
    layer = layers.SpatialDropout1D(0.25)
    np.testing.assert_array_equal(layer(tf.constant(x)).numpy(), x)
    y = layer(tf.constant(x), training=True).numpy()
    assert np.all(y.min(axis=1) == y.max(axis=1))  # a channel is dropped at every step
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
    assert 0.18 < (y[:, 0, :] == 0).mean() < 0.32
    assert layers.SpatialDropout1D.from_config(layer.get_config()).rate == 0.25
    with pytest.raises(ValueError, match="between 0 and 1"):
        layers.SpatialDropout1D(2.0)


def test_spatial_dropout_config_is_keras_short_list():
    """TF 2.21's SpatialDropout get_config: rate, seed, name, dtype (no trainable), plus
    data_format for the 2-D one."""
    assert set(layers.SpatialDropout1D(0.3).get_config()) == {"rate", "seed", "name", "dtype"}
    assert set(layers.SpatialDropout2D(0.3).get_config()) == {"rate", "seed", "name", "dtype",
                                                              "data_format"}
