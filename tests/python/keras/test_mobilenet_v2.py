"""kiln.keras.applications.MobileNetV2: Keras' parameter counts, names and shapes, a forward
pass and training at a small size, preprocess_input and errors."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import randn

apps = tf.keras.applications


def test_parameter_counts_and_names_match_keras():
    model = apps.MobileNetV2()
    assert model.name == "mobilenetv2_1.00_224"
    assert model.count_params() == 3538984
    assert sum(int(np.prod(w.shape)) for w in model.trainable_weights) == 3504872
    names = [layer.name for layer in model.layers]
    assert names[1:9] == ["Conv1", "bn_Conv1", "Conv1_relu", "expanded_conv_depthwise",
                          "expanded_conv_depthwise_BN", "expanded_conv_depthwise_relu",
                          "expanded_conv_project", "expanded_conv_project_BN"]
    assert "block_1_pad" in names and "block_16_project_BN" in names
    assert names[-1] == "predictions" and len(names) == 156
    w = {v.path: tuple(v.shape) for v in model.weights}
    assert w["block_1_depthwise/kernel"] == (3, 3, 96, 1)
    assert w["Conv_1/kernel"] == (1, 1, 320, 1280)
    small = apps.MobileNetV2(alpha=0.5, input_shape=(96, 96, 3), include_top=False,
                             pooling="avg")
    assert small.name == "mobilenetv2_0.50_96" and small.count_params() == 706224
    assert small.output_shape == (None, 1280)


def test_forward_pass_training_and_preprocessing():
    model = apps.MobileNetV2(input_shape=(64, 64, 3), classes=4)
    x = apps.mobilenet_v2.preprocess_input(
        np.random.default_rng(0).uniform(0, 255, (4, 64, 64, 3)).astype(np.float32))
    assert x.min() >= -1 and x.max() <= 1
    probs = model.predict(x, verbose=0)
    np.testing.assert_allclose(probs.sum(axis=1), 1, rtol=1e-5)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(randn(8, 64, 64, 3), np.arange(8) % 4, epochs=1, batch_size=4, verbose=0)
    odd = apps.MobileNetV2(input_shape=(33, 35, 3), include_top=False)
    assert odd.output_shape == (None, 2, 2, 1280)
    assert odd.predict(randn(1, 33, 35, 3), verbose=0).shape == (1, 2, 2, 1280)


def test_errors(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no Keras cache
    with pytest.raises(ValueError, match="kiln does not download"):
        apps.MobileNetV2(weights="imagenet")
    with pytest.raises(ValueError, match="alpha"):
        apps.MobileNetV2(alpha=0)
    with pytest.raises(ValueError, match="static input_shape"):
        apps.MobileNetV2(input_shape=(None, None, 3))
