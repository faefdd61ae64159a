"""kiln.keras.applications.ConvNeXtTiny..XLarge: Keras' parameter counts and layer names,
LayerScale and StochasticDepth, a forward pass at a small size, preprocess_input and Keras'
errors."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import randn

apps = tf.keras.applications
convnext = apps.convnext

COUNTS = {"Tiny": 28_589_128, "Small": 50_223_688, "Base": 88_591_464, "Large": 197_767_336,
          "XLarge": 350_196_968}


@pytest.mark.parametrize("variant", ["Tiny", "Small", "Base", "Large", "XLarge"])
def test_parameter_counts_match_keras(variant):
    model = getattr(apps, "ConvNeXt" + variant)()
    assert model.name == "convnext_" + variant.lower()
    assert model.count_params() == COUNTS[variant]
    assert model.non_trainable_weights == []


def test_layer_names_follow_keras():
    model = apps.ConvNeXtTiny()
    names = [layer.name for layer in model.layers]
    assert names[1:3] == ["convnext_tiny_prestem_normalization", "convnext_tiny_stem"]
    assert names[3:11] == ["convnext_tiny_stage_0_block_0_" + n for n in (
        "depthwise_conv", "layernorm", "pointwise_conv_1", "gelu", "pointwise_conv_2",
        "layer_scale", "identity")] + ["tf.math.add"]
    assert names[-3:] == ["convnext_tiny_head_gap", "convnext_tiny_head_layernorm",
                          "convnext_tiny_head_dense"]
    assert "convnext_tiny_downsampling_block_2" in names
    assert "convnext_tiny_stage_3_block_2_layer_scale" in names
    stem = model.get_layer("convnext_tiny_stem")
    assert [layer.name for layer in stem.layers] == ["convnext_tiny_stem_conv",
                                                     "convnext_tiny_stem_layernorm"]
    assert stem.layers[0].kernel_size == (4, 4) and stem.layers[0].strides == (4, 4)
    dw = model.get_layer("convnext_tiny_stage_1_block_0_depthwise_conv")
    assert dw.groups == 192 and dw.kernel_size == (7, 7)
    assert tuple(dw.kernel.shape) == (7, 7, 1, 192)
    scale = model.get_layer("convnext_tiny_stage_0_block_0_layer_scale")
    np.testing.assert_array_equal(scale.weights[0].numpy(), np.full(96, 1e-6, np.float32))
    assert scale.get_config()["projection_dim"] == 96
    assert model.get_layer("convnext_tiny_head_layernorm").epsilon == 1e-6


def test_forward_pass_at_a_small_size():
    model = apps.ConvNeXtTiny(input_shape=(32, 32, 3), include_top=False, pooling="avg")
    x = np.random.default_rng(0).uniform(0, 255, (2, 32, 32, 3)).astype(np.float32)
    out = model(tf.constant(x)).numpy()
    assert out.shape == (2, 768) and np.all(np.isfinite(out))
    # The last layer norm: each row has mean 0 and variance 1.
    np.testing.assert_allclose(out.mean(axis=1), 0, atol=1e-4)
    pre = tf.keras.Model(model.inputs,
                         model.get_layer("convnext_tiny_prestem_normalization").output)
    want = (x / 255 - [0.485, 0.456, 0.406]) / np.array([0.229, 0.224, 0.225])
    np.testing.assert_allclose(pre(tf.constant(x)).numpy(), want, rtol=1e-4, atol=1e-4)
    grid = apps.ConvNeXtTiny(input_shape=(64, 64, 3), include_top=False,
                             include_preprocessing=False)
    assert grid.layers[1].name == "convnext_tiny_stem"
    assert grid(randn(1, 64, 64, 3)).shape == (1, 2, 2, 768)


def test_layer_scale_and_stochastic_depth():
    x = randn(4, 3, 3, 5)
    scale = convnext.LayerScale(0.5, 5)
    np.testing.assert_allclose(scale(x).numpy(), 0.5 * x, rtol=1e-6)
    drop = convnext.StochasticDepth(0.5)
    np.testing.assert_array_equal(drop(x).numpy(), x)
    tf.random.set_seed(3)
    y = drop(tf.ones([64, 2, 2, 3]), training=True).numpy()
    per_sample = y.reshape(64, -1)
    assert set(np.unique(per_sample)) <= {0.0, 2.0}  # whole samples dropped or scaled by 2
    assert np.all(per_sample.min(axis=1) == per_sample.max(axis=1))
    assert 10 < (per_sample[:, 0] == 0).sum() < 54
    assert drop.get_config()["drop_path_rate"] == 0.5
    model = convnext.ConvNeXt([1, 1, 1, 1], [8, 16, 16, 16], drop_path_rate=0.3,
                              input_shape=(32, 32, 3), include_top=False, name="tiny_test")
    names = [layer.name for layer in model.layers]
    assert "tiny_test_stage_0_block_0_identity" in names  # rate 0 for the first block
    assert model.get_layer("tiny_test_stage_3_block_0_stochastic_depth").drop_path_rate == \
        pytest.approx(0.3)


def test_preprocess_input_and_decode_predictions(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no Keras cache
    x = np.array([[0.0, 127.5, 255.0]], np.float32)
    assert convnext.preprocess_input(x) is x
    with pytest.raises(ValueError, match="imagenet_class_index.json"):
        convnext.decode_predictions(np.zeros((1, 1000)))


def test_bad_arguments(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no Keras cache
    with pytest.raises(ValueError, match="kiln does not download"):
        apps.ConvNeXtTiny(weights="imagenet")
    with pytest.raises(ValueError, match="path to the weights file"):
        apps.ConvNeXtSmall(weights="missing.weights.h5")
    with pytest.raises(ValueError, match="at least 32x32"):
        apps.ConvNeXtTiny(input_shape=(16, 16, 3))
    with pytest.raises(ValueError, match="static input_shape"):
        apps.ConvNeXtTiny(input_shape=(None, None, 3))
    with pytest.raises(ValueError, match="pooling"):
        apps.ConvNeXtTiny(include_top=False, pooling="sum")
