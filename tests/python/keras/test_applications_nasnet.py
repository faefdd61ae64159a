"""kiln.keras.applications.NASNetMobile / NASNetLarge: Keras' parameter counts, layer names
and order, weight paths (Keras' name scopes), shapes, a forward pass at a small size,
preprocess_input and Keras' errors."""
import numpy as np
import pytest

import kiln as tf

apps = tf.keras.applications


def _trainable(model):
    return sum(int(np.prod(w.shape)) for w in model.trainable_weights)


def test_mobile_counts_names_and_paths_match_keras():
    model = apps.NASNetMobile()
    assert model.name == "nasnet_mobile" and model.input_shape == (None, 224, 224, 3)
    assert model.count_params() == 5_326_716 and _trainable(model) == 5_289_978
    names = [layer.name for layer in model.layers]
    assert len(names) == 771
    assert names[1:12] == [
        "stem_conv1", "stem_bn1", "activation", "reduction_conv_1_stem_1",
        "reduction_bn_1_stem_1", "activation_1", "activation_3",
        "separable_conv_1_pad_reduction_left1_stem_1",
        "separable_conv_1_pad_reduction_right1_stem_1",
        "separable_conv_1_reduction_left1_stem_1", "separable_conv_1_reduction_right1_stem_1"]
    assert names[-6:] == ["normal_add_4_12", "normal_add_5_12", "normal_concat_12",
                          "activation_187", "global_average_pooling2d", "predictions"]
    concats = [n for n in names if n.startswith(("normal_concat", "reduction_concat"))]
    assert concats == (["reduction_concat_stem_1", "reduction_concat_stem_2"] +
                       [f"normal_concat_{i}" for i in range(4)] +
                       ["reduction_concat_reduce_4"] +
                       [f"normal_concat_{i}" for i in range(5, 9)] +
                       ["reduction_concat_reduce_8"] +
                       [f"normal_concat_{i}" for i in range(9, 13)])
    paths = [v.path for v in model.weights]
    assert paths[:6] == ["stem_conv1/kernel", "stem_bn1/gamma", "stem_bn1/beta",
                         "stem_bn1/moving_mean", "stem_bn1/moving_variance",
                         "reduction_A_block_stem_1/reduction_conv_1_stem_1/kernel"]
    assert ("reduction_A_block_stem_1/block_1/separable_conv_block_reduction_left1_stem_1/"
            "separable_conv_1_reduction_left1_stem_1/depthwise_kernel") in paths
    assert ("reduction_A_block_stem_2/adjust_block/adjust_reduction_block_stem_2/"
            "adjust_conv_1_stem_2/kernel") in paths
    assert ("normal_A_block_0/adjust_block/adjust_reduction_block_0/adjust_bn_0/"
            "moving_mean") in paths
    assert ("normal_A_block_1/adjust_block/adjust_projection_block_1/"
            "adjust_conv_projection_1/kernel") in paths
    assert paths[-2:] == ["predictions/kernel", "predictions/bias"]
    shapes = {v.path.rsplit("/", 2)[-2] + "/" + v.name: tuple(v.shape) for v in model.weights}
    assert shapes["stem_conv1/kernel"] == (3, 3, 3, 32)
    assert shapes["adjust_conv_1_stem_2/kernel"] == (1, 1, 32, 11)
    assert shapes["separable_conv_1_normal_left1_12/depthwise_kernel"] == (5, 5, 176, 1)
    assert shapes["predictions/kernel"] == (1056, 1000)


def test_large_counts():
    model = apps.NASNetLarge()
    assert model.name == "nasnet_large" and model.input_shape == (None, 331, 331, 3)
    assert model.count_params() == 88_949_818 and _trainable(model) == 88_753_150
    assert len(model.layers) == 1041


def test_mobile_without_the_top_and_a_forward_pass():
    default = apps.NASNetMobile(include_top=False)
    assert default.input_shape == (None, 224, 224, 3)  # Keras' fixed size here
    assert default.count_params() == 4_269_716 and len(default.layers) == 769
    grid = apps.NASNetMobile(include_top=False, input_shape=(64, 48, 3))
    assert grid.output_shape == (None, 2, 2, 1056)
    model = apps.NASNetMobile(include_top=False, input_shape=(32, 32, 3), pooling="max")
    assert model.output_shape == (None, 1056) and len(model.layers) == 770
    assert model.get_layer("reduction_concat_reduce_4").output.shape == (None, 2, 2, 352)
    assert model.get_layer("normal_concat_12").output.shape == (None, 1, 1, 1056)
    x = apps.nasnet.preprocess_input(
        np.random.default_rng(0).uniform(0, 255, (2, 32, 32, 3)).astype(np.float32))
    assert x.min() >= -1 and x.max() <= 1
    out = model(tf.constant(x)).numpy()
    assert out.shape == (2, 1056) and np.all(np.isfinite(out)) and np.all(out >= 0)
    top = apps.NASNetMobile(input_shape=(32, 32, 3), classes=3)
    probs = top(tf.constant(x)).numpy()
    np.testing.assert_allclose(probs.sum(axis=1), 1, rtol=1e-5)


def test_errors(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no Keras cache
    with pytest.raises(ValueError, match="kiln does not download"):
        apps.NASNetMobile(weights="imagenet")
    with pytest.raises(ValueError, match="must be static"):
        apps.NASNetMobile(weights="imagenet", input_shape=(None, 224, 3))
    with pytest.raises(ValueError, match="penultimate_filters"):
        apps.nasnet.NASNet(input_shape=(32, 32, 3), penultimate_filters=100, include_top=False)
    with pytest.raises(ValueError, match="only be loaded with NASNetLarge or NASNetMobile"):
        apps.nasnet.NASNet(input_shape=(96, 96, 3), weights="imagenet", default_size=96)
    with pytest.raises(ValueError, match="at least 32x32"):
        apps.NASNetMobile(input_shape=(16, 64, 3), include_top=False)
    with pytest.raises(ValueError, match="static input_shape"):
        apps.NASNetLarge(input_shape=(None, None, 3))
