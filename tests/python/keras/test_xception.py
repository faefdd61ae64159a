"""kiln.keras.applications.Xception: Keras' parameter counts and layer names, a forward pass
at a small size, preprocess_input and Keras' errors."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import randn

apps = tf.keras.applications


def test_parameter_counts_and_names_match_keras():
    model = apps.Xception()
    assert model.name == "xception" and model.input_shape == (None, 299, 299, 3)
    assert model.count_params() == 22_910_480
    assert sum(int(np.prod(w.shape)) for w in model.trainable_weights) == 22_855_952
    names = [layer.name for layer in model.layers]
    assert names[1:7] == ["block1_conv1", "block1_conv1_bn", "block1_conv1_act",
                          "block1_conv2", "block1_conv2_bn", "block1_conv2_act"]
    # The shortcuts keep Keras' default names.
    assert names.index("conv2d") < names.index("add") < names.index("conv2d_1")
    assert "batch_normalization_3" in names and "batch_normalization_4" not in names
    assert "block2_sepconv2_act" in names and "block2_sepconv1_act" not in names
    assert "block12_sepconv3_bn" in names and "block13_pool" in names
    assert names[-3:] == ["block14_sepconv2_act", "avg_pool", "predictions"]
    assert [n for n in names if n.startswith("add")] == \
        ["add"] + [f"add_{i}" for i in range(1, 12)]
    sep = model.get_layer("block4_sepconv1")
    assert tuple(sep.depthwise_kernel.shape) == (3, 3, 256, 1)
    assert tuple(sep.pointwise_kernel.shape) == (1, 1, 256, 728)


def test_forward_pass_at_a_small_size():
    model = apps.Xception(input_shape=(71, 80, 3), include_top=False, pooling="max")
    x = apps.xception.preprocess_input(
        np.random.default_rng(0).uniform(0, 255, (1, 71, 80, 3)).astype(np.float32))
    out = model(tf.constant(x)).numpy()
    assert out.shape == (1, 2048) and np.all(np.isfinite(out))
    grid = apps.Xception(input_shape=(96, 96, 3), include_top=False)
    assert grid.output_shape == (None, 3, 3, 2048)
    assert grid(randn(1, 96, 96, 3)).shape == (1, 3, 3, 2048)


def test_preprocess_input(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no Keras cache
    x = np.array([[0.0, 127.5, 255.0]], np.float32)
    np.testing.assert_allclose(apps.xception.preprocess_input(x), [[-1.0, 0.0, 1.0]])
    t = apps.xception.preprocess_input(tf.constant(x))
    np.testing.assert_allclose(t.numpy(), [[-1.0, 0.0, 1.0]])
    with pytest.raises(ValueError, match="imagenet_class_index.json"):
        apps.xception.decode_predictions(np.zeros((1, 1000)))


def test_bad_arguments(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no Keras cache
    with pytest.raises(ValueError, match="kiln does not download"):
        apps.Xception(weights="imagenet")
    with pytest.raises(ValueError, match="at least 71x71"):
        apps.Xception(input_shape=(70, 100, 3), include_top=False)
    with pytest.raises(ValueError, match="static input_shape"):
        apps.Xception(input_shape=(None, None, 3))
    with pytest.raises(ValueError, match="classes"):
        apps.Xception(classes=0)
