"""kiln.keras.applications.MobileNet (v1): Keras' parameter counts, names and shapes
(alpha, depth_multiplier, dropout), a forward pass and training at a small size,
preprocess_input and Keras' errors."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import randn

apps = tf.keras.applications


def _trainable(model):
    return sum(int(np.prod(w.shape)) for w in model.trainable_weights)


def test_parameter_counts_and_names_match_keras():
    model = apps.MobileNet()
    assert model.name == "mobilenet_1.00_224" and model.input_shape == (None, 224, 224, 3)
    assert model.count_params() == 4_253_864 and _trainable(model) == 4_231_976
    names = [layer.name for layer in model.layers]
    assert len(names) == 91
    assert names[1:12] == ["conv1", "conv1_bn", "conv1_relu", "conv_dw_1", "conv_dw_1_bn",
                           "conv_dw_1_relu", "conv_pw_1", "conv_pw_1_bn", "conv_pw_1_relu",
                           "conv_pad_2", "conv_dw_2"]
    assert [n for n in names if n.startswith("conv_pad")] == \
        ["conv_pad_2", "conv_pad_4", "conv_pad_6", "conv_pad_12"]
    assert names[-6:] == ["conv_pw_13_relu", "global_average_pooling2d", "dropout",
                          "conv_preds", "reshape_2", "predictions"]
    w = {v.path: tuple(v.shape) for v in model.weights}
    assert w["conv_dw_2/kernel"] == (3, 3, 64, 1)
    assert w["conv_pw_13/kernel"] == (1, 1, 1024, 1024)
    assert w["conv_preds/kernel"] == (1, 1, 1024, 1000) and w["conv_preds/bias"] == (1000,)
    assert model.get_layer("dropout").rate == pytest.approx(1e-3)


def test_width_and_depth_multipliers():
    small = apps.MobileNet(alpha=0.25, input_shape=(128, 128, 3))
    assert small.name == "mobilenet_0.25_128"
    assert small.count_params() == 475_544 and _trainable(small) == 470_072
    wide = apps.MobileNet(alpha=0.75, depth_multiplier=2, input_shape=(40, 50, 3),
                          include_top=False, pooling="max")
    assert wide.name == "mobilenet_0.75_40" and len(wide.layers) == 87
    assert wide.count_params() == 3_647_352 and _trainable(wide) == 3_623_496
    assert wide.output_shape == (None, 768)
    assert tuple(wide.get_layer("conv_dw_1").depthwise_kernel.shape) == (3, 3, 24, 2)
    assert tuple(wide.get_layer("conv_pw_1").kernel.shape) == (1, 1, 48, 48)
    grid = apps.MobileNet(input_shape=(33, 35, 3), include_top=False)
    assert grid.name == "mobilenet_1.00_33" and len(grid.layers) == 86
    assert grid.count_params() == 3_228_864 and grid.output_shape == (None, 1, 1, 1024)
    assert apps.MobileNet(include_top=False).name == "mobilenet_1.00_None"
    assert apps.MobileNet(include_top=False, name="backbone").name == "backbone"


def test_forward_pass_training_and_preprocessing():
    model = apps.MobileNet(alpha=0.25, input_shape=(32, 32, 3), classes=5, dropout=0.5)
    assert model.get_layer("dropout").rate == 0.5 and model.output_shape == (None, 5)
    x = apps.mobilenet.preprocess_input(
        np.random.default_rng(0).uniform(0, 255, (4, 32, 32, 3)).astype(np.float32))
    assert x.min() >= -1 and x.max() <= 1
    probs = model.predict(x, verbose=0)
    assert probs.shape == (4, 5)
    np.testing.assert_allclose(probs.sum(axis=1), 1, rtol=1e-5)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(randn(8, 32, 32, 3), np.arange(8) % 5, epochs=1, batch_size=4, verbose=0)
    logits = apps.MobileNet(alpha=0.25, input_shape=(32, 32, 3), classes=5,
                            classifier_activation=None)
    assert np.all(np.isfinite(logits(tf.constant(x)).numpy()))
    odd = apps.MobileNet(alpha=0.5, input_shape=(64, 45, 3), include_top=False)
    assert odd.output_shape == (None, 2, 1, 512)  # Keras' too
    assert odd.predict(randn(1, 64, 45, 3), verbose=0).shape == (1, 2, 1, 512)
    features = apps.MobileNet(alpha=0.25, include_top=False, pooling="avg")
    assert features.input_shape == (None, None, None, 3)
    assert features(randn(1, 64, 48, 3)).shape == (1, 256)


def test_errors(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no Keras cache
    with pytest.raises(ValueError, match="kiln does not download"):
        apps.MobileNet(weights="imagenet")
    with pytest.raises(ValueError, match="alpha"):
        apps.MobileNet(alpha=0)
    with pytest.raises(ValueError, match="depth_multiplier"):
        apps.MobileNet(depth_multiplier=0.5)
    with pytest.raises(ValueError, match="static input_shape"):
        apps.MobileNet(input_shape=(None, None, 3))
    with pytest.raises(ValueError, match="at least 32x32"):
        apps.MobileNet(input_shape=(31, 64, 3), include_top=False)
    with pytest.raises(ValueError, match="pooling"):
        apps.MobileNet(include_top=False, pooling="sum")
