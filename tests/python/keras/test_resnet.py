"""kiln.keras.applications.ResNet*: Keras' parameter counts, layer names and shapes, a forward
pass, training, preprocess_input and argument errors."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import randn

apps = tf.keras.applications

# tf.keras.applications' totals and trainable counts (with the top, 1000 classes).
COUNTS = {"ResNet50": (25636712, 25583592), "ResNet101": (44707176, 44601832),
          "ResNet152": (60419944, 60268520), "ResNet50V2": (25613800, 25568360),
          "ResNet101V2": (44675560, 44577896), "ResNet152V2": (60380648, 60236904)}


@pytest.mark.parametrize("name", list(COUNTS))
def test_parameter_counts_match_keras(name):
    model = getattr(apps, name)()
    total, trainable = COUNTS[name]
    assert model.count_params() == total
    assert sum(int(np.prod(w.shape)) for w in model.trainable_weights) == trainable
    assert model.output_shape == (None, 1000)
    assert model.name == name.lower()


def test_resnet50_layer_names_and_weight_shapes():
    model = apps.ResNet50()
    names = [layer.name for layer in model.layers]
    assert names[1:7] == ["conv1_pad", "conv1_conv", "conv1_bn", "conv1_relu", "pool1_pad",
                          "pool1_pool"]
    # Keras' order (by depth, then a walk from the outputs), which fixes the
    # order of get_weights(): the shortcut's layers after the main branch's
    # deeper ones, interleaved at equal depth.
    assert names[7:19] == [
        "conv2_block1_1_conv", "conv2_block1_1_bn", "conv2_block1_1_relu",
        "conv2_block1_2_conv", "conv2_block1_2_bn", "conv2_block1_2_relu",
        "conv2_block1_0_conv", "conv2_block1_3_conv", "conv2_block1_0_bn", "conv2_block1_3_bn",
        "conv2_block1_add", "conv2_block1_out"]
    assert len(names) == 177
    assert "conv5_block3_out" in names and names[-2:] == ["avg_pool", "predictions"]
    w = {v.path: tuple(v.shape) for v in model.weights}
    assert w["conv1_conv/kernel"] == (7, 7, 3, 64)
    assert w["conv2_block1_0_conv/kernel"] == (1, 1, 64, 256)
    assert w["conv5_block3_3_conv/kernel"] == (1, 1, 512, 2048)
    assert w["predictions/kernel"] == (2048, 1000)
    v2 = apps.ResNet50V2(include_top=False)
    v2_names = [layer.name for layer in v2.layers]
    assert "conv2_block1_preact_bn" in v2_names and v2_names[-1] == "post_relu"


def test_forward_pass_pooling_and_training():
    features = apps.ResNet50(include_top=False, input_shape=(64, 64, 3), pooling="avg")
    assert features.output_shape == (None, 2048)
    x = np.random.default_rng(0).uniform(0, 255, (2, 64, 64, 3)).astype(np.float32)
    out = features.predict(apps.resnet.preprocess_input(x), verbose=0)
    assert out.shape == (2, 2048) and np.all(np.isfinite(out)) and np.all(out >= 0)
    fn = tf.function(lambda a: features(a, training=False))
    np.testing.assert_allclose(fn(tf.constant(apps.resnet.preprocess_input(x))).numpy(), out,
                               rtol=1e-4, atol=1e-4)
    grid = apps.ResNet50V2(include_top=False, input_shape=(64, 64, 3))
    assert grid.output_shape == (None, 2, 2, 2048)
    small = apps.ResNet50(weights=None, input_shape=(32, 32, 3), classes=3)
    small.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="sparse_categorical_crossentropy")
    data = randn(8, 32, 32, 3)
    labels = np.arange(8) % 3
    small.fit(data, labels, epochs=1, batch_size=4, verbose=0)
    assert small.predict(data, verbose=0).shape == (8, 3)


def test_preprocess_input_and_errors(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no Keras cache
    x = np.array([[[[10.0, 20.0, 30.0]]]], np.float32)
    want = np.array([[[[30 - 103.939, 20 - 116.779, 10 - 123.68]]]], np.float32)
    np.testing.assert_allclose(apps.resnet.preprocess_input(x), want, rtol=1e-6)
    np.testing.assert_allclose(apps.resnet.preprocess_input(tf.constant(x)).numpy(), want,
                               rtol=1e-6)
    np.testing.assert_allclose(apps.resnet.preprocess_input_v2(np.array([0.0, 255.0])),
                               [-1.0, 1.0])
    with pytest.raises(ValueError, match="kiln does not download"):
        apps.ResNet50(weights="imagenet")
    with pytest.raises(ValueError, match="classes"):
        apps.ResNet50(classes=0)
    with pytest.raises(ValueError, match="pooling"):
        apps.ResNet50(include_top=False, pooling="min")
    with pytest.raises(ValueError, match="static input_shape"):
        apps.ResNet50(input_shape=(None, None, 3))
    with pytest.raises(ValueError, match="at least 32x32"):
        apps.ResNet50(include_top=False, input_shape=(16, 16, 3))
