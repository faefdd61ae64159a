"""kiln.keras.applications.MobileNetV3Small/Large: Keras' parameter counts and layer names,
hard-swish, a forward pass at a small size, weights from a local file, preprocess_input and
Keras' errors."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import randn

apps = tf.keras.applications


def _trainable(model):
    return sum(int(np.prod(w.shape)) for w in model.trainable_weights)


def test_parameter_counts_match_keras():
    small = apps.MobileNetV3Small()
    assert small.name == "MobileNetV3Small" and small.count_params() == 2_554_968
    assert _trainable(small) == 2_542_856
    large = apps.MobileNetV3Large()
    assert large.name == "MobileNetV3Large" and large.count_params() == 5_507_432
    assert _trainable(large) == 5_483_032
    assert apps.MobileNetV3Small(minimalistic=True).count_params() == 2_056_848
    assert apps.MobileNetV3Large(minimalistic=True).count_params() == 3_948_688
    assert apps.MobileNetV3Small(alpha=0.75).count_params() == 2_051_552
    assert apps.MobileNetV3Large(alpha=0.75).count_params() == 4_012_616
    assert apps.MobileNetV3Small is apps.mobilenet_v3.MobileNetV3Small


def test_layer_names_and_shapes_follow_keras():
    model = apps.MobileNetV3Small()
    names = [layer.name for layer in model.layers]
    assert names[1:6] == ["rescaling", "conv", "conv_bn", "activation",
                          "expanded_conv_depthwise_pad"]
    for name in ("expanded_conv_squeeze_excite_avg_pool", "expanded_conv_squeeze_excite_conv_1",
                 "expanded_conv_squeeze_excite_mul", "expanded_conv_1_expand_bn",
                 "expanded_conv_10_add", "conv_1", "conv_1_bn"):
        assert name in names
    assert names[-4:] == ["dropout", "logits", "flatten", "predictions"]
    assert model.get_layer("activation").activation is tf.keras.activations.hard_swish
    assert model.get_layer("rescaling").scale == 1 / 127.5
    assert model.get_layer("conv_bn").epsilon == 1e-3
    assert model.get_layer("conv_bn").momentum == 0.999
    w = {v.path: tuple(v.shape) for v in model.weights}
    assert w["expanded_conv_depthwise/kernel"] == (3, 3, 16, 1)
    assert w["expanded_conv_3_depthwise/kernel"] == (5, 5, 96, 1)
    assert w["expanded_conv_3_squeeze_excite_conv/kernel"] == (1, 1, 96, 24)
    assert w["conv_2/kernel"] == (1, 1, 576, 1024) and w["logits/bias"] == (1000,)
    large = apps.MobileNetV3Large(minimalistic=True, include_top=False)
    names = [layer.name for layer in large.layers]
    assert not any("squeeze_excite" in n for n in names) and "rescaling_1" in names
    assert "expanded_conv_14_add" in names and large.output_shape == (None, None, None, 960)


def test_hard_swish():
    x = np.array([-4.0, -3.0, -1.5, 0.0, 1.0, 3.0, 5.0], np.float32)
    want = x * np.clip(x + 3, 0, 6) / 6
    acts = tf.keras.activations
    np.testing.assert_allclose(acts.hard_swish(x).numpy(), want, rtol=1e-6)
    assert acts.get("hard_swish") is acts.hard_silu
    assert acts.serialize(acts.hard_swish) == "hard_silu"


def test_forward_pass_at_a_small_size():
    model = apps.MobileNetV3Small(input_shape=(48, 40, 3), classes=5, dropout_rate=0.0)
    probs = model(tf.constant(np.random.default_rng(0).uniform(0, 255, (2, 48, 40, 3))
                              .astype(np.float32))).numpy()
    assert probs.shape == (2, 5) and np.all(np.isfinite(probs))
    np.testing.assert_allclose(probs.sum(axis=1), 1, rtol=1e-5)
    assert "dropout" not in [layer.name for layer in model.layers]
    features = apps.MobileNetV3Large(input_shape=(32, 32, 3), include_top=False,
                                     pooling="avg", include_preprocessing=False)
    assert "rescaling" not in [layer.name for layer in features.layers]
    out = features(randn(1, 32, 32, 3)).numpy()
    assert out.shape == (1, 960) and np.all(np.isfinite(out))


def test_weights_from_a_local_file(tmp_path):
    kw = dict(input_shape=(32, 32, 3), include_top=False, minimalistic=True)
    tf.keras.utils.set_random_seed(1)
    first = apps.MobileNetV3Small(**kw)
    path = str(tmp_path / "mnv3.weights.h5")
    first.save_weights(path)
    tf.keras.utils.set_random_seed(2)
    again = apps.MobileNetV3Small(weights=path, **kw)
    for a, b in zip(first.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_preprocess_input_and_decode_predictions(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no Keras cache
    x = np.array([[0.0, 127.5, 255.0]], np.float32)
    assert apps.mobilenet_v3.preprocess_input(x) is x
    with pytest.raises(ValueError, match="imagenet_class_index.json"):
        apps.mobilenet_v3.decode_predictions(np.zeros((1, 1000)))


def test_bad_arguments(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no Keras cache
    with pytest.raises(ValueError, match="kiln does not download"):
        apps.MobileNetV3Small(weights="imagenet", input_shape=(224, 224, 3))
    with pytest.raises(ValueError, match="path to the weights file"):
        apps.MobileNetV3Small(weights="/no/such/file.weights.h5")
    with pytest.raises(ValueError, match="at least 32x32"):
        apps.MobileNetV3Large(input_shape=(16, 16, 3))
    with pytest.raises(ValueError, match="alpha"):
        apps.MobileNetV3Small(alpha=0)
    with pytest.raises(ValueError, match="pooling"):
        apps.MobileNetV3Small(include_top=False, pooling="sum")
    with pytest.raises(ValueError, match="classes"):
        apps.MobileNetV3Large(classes=0)
    with pytest.raises(ValueError, match="Unknown activation"):
        apps.MobileNetV3Large(classifier_activation="softmax2")
