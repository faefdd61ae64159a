"""kiln.keras.applications.InceptionResNetV2: Keras' parameter counts, layer names and order,
shapes, CustomScaleLayer, a forward pass at the smallest size, preprocess_input and Keras'
errors."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import randn

apps = tf.keras.applications
irv2 = apps.inception_resnet_v2


def test_parameter_counts_and_names_match_keras():
    model = apps.InceptionResNetV2()
    assert model.name == "inception_resnet_v2" and model.input_shape == (None, 299, 299, 3)
    assert model.count_params() == 55_873_736
    assert sum(int(np.prod(w.shape)) for w in model.trainable_weights) == 55_813_192
    names = [layer.name for layer in model.layers]
    assert len(names) == 782
    assert names[1:7] == ["conv2d", "batch_normalization", "activation", "conv2d_1",
                          "batch_normalization_1", "activation_1"]
    # Keras' positions of the named layers.
    for name, index in [("mixed_5b", 40), ("block35_1_mixed", 59), ("block35_1_conv", 60),
                        ("block35_1_ac", 62), ("mixed_6a", 274), ("block17_20_ac", 594),
                        ("mixed_7a", 617), ("block8_10_conv", 775), ("conv_7b", 777)]:
        assert names.index(name) == index, name
    scales = [n for n in names if n.startswith("custom_scale_layer")]
    assert scales[:2] == ["custom_scale_layer", "custom_scale_layer_1"] and len(scales) == 40
    assert names[-6:] == ["custom_scale_layer_39", "conv_7b", "conv_7b_bn", "conv_7b_ac",
                          "avg_pool", "predictions"]
    assert "block8_10_ac" not in names  # the last block is linear
    w = {v.path: tuple(v.shape) for v in model.weights}
    assert w["block35_1_conv/kernel"] == (1, 1, 128, 320) and w["block35_1_conv/bias"] == (320,)
    assert w["block17_1_conv/kernel"] == (1, 1, 384, 1088)
    assert w["block8_1_conv/kernel"] == (1, 1, 448, 2080)
    assert w["conv_7b/kernel"] == (1, 1, 2080, 1536)
    assert "conv_7b_bn/gamma" not in w  # batch norms without scale, as Keras'
    assert [model.get_layer(n).scale for n in ("custom_scale_layer", "custom_scale_layer_10",
                                               "custom_scale_layer_30",
                                               "custom_scale_layer_39")] == [0.17, 0.1, 0.2, 1.0]


def test_without_the_top():
    model = apps.InceptionResNetV2(include_top=False, input_shape=(75, 75, 3))
    assert model.count_params() == 54_336_736 and len(model.layers) == 780
    assert model.output_shape == (None, 1, 1, 1536)
    pooled = apps.InceptionResNetV2(include_top=False, input_shape=(100, 120, 3), pooling="max")
    assert len(pooled.layers) == 781 and pooled.output_shape == (None, 1536)
    assert apps.InceptionResNetV2(include_top=False).input_shape == (None, None, None, 3)


def test_forward_pass_and_custom_scale_layer():
    model = apps.InceptionResNetV2(include_top=False, input_shape=(75, 75, 3), pooling="avg")
    x = irv2.preprocess_input(
        np.random.default_rng(0).uniform(0, 255, (2, 75, 75, 3)).astype(np.float32))
    assert x.min() >= -1 and x.max() <= 1
    out = model(tf.constant(x)).numpy()
    assert out.shape == (2, 1536) and np.all(np.isfinite(out)) and np.all(out >= 0)
    layer = irv2.CustomScaleLayer(0.5)
    a, b = randn(2, 3, seed=1), randn(2, 3, seed=2)
    np.testing.assert_allclose(layer([tf.constant(a), tf.constant(b)]).numpy(), a + 0.5 * b,
                               rtol=1e-6)
    assert layer.get_config()["scale"] == 0.5
    inp = tf.keras.Input((4, 4, 8))
    assert irv2.CustomScaleLayer(2.0)([inp, inp]).shape == (None, 4, 4, 8)


def test_errors(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no Keras cache
    with pytest.raises(ValueError, match="kiln does not download"):
        apps.InceptionResNetV2(weights="imagenet")
    with pytest.raises(ValueError, match="at least 75x75"):
        apps.InceptionResNetV2(input_shape=(74, 100, 3), include_top=False)
    with pytest.raises(ValueError, match="static input_shape"):
        apps.InceptionResNetV2(input_shape=(None, None, 3))
    with pytest.raises(ValueError, match="Unknown Inception-ResNet block type"):
        irv2.inception_resnet_block(tf.keras.Input((8, 8, 32)), 0.1, "block9", 1)
