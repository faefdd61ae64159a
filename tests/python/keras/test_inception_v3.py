"""kiln.keras.applications.InceptionV3: Keras' parameter counts and layer names, a forward
pass at a small size, preprocess_input and Keras' errors."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import randn

apps = tf.keras.applications


def test_parameter_counts_and_names_match_keras():
    model = apps.InceptionV3()
    assert model.name == "inception_v3" and model.input_shape == (None, 299, 299, 3)
    assert model.count_params() == 23_851_784
    assert sum(int(np.prod(w.shape)) for w in model.trainable_weights) == 23_817_352
    names = [layer.name for layer in model.layers]
    assert names[1:4] == ["conv2d", "batch_normalization", "activation"]
    mixed = [n for n in names if n.startswith("mixed")]
    assert mixed == [f"mixed{i}" for i in range(9)] + ["mixed9_0", "mixed9", "mixed9_1",
                                                       "mixed10"]
    assert sum(n.startswith("conv2d") for n in names) == 94
    assert names[-2:] == ["avg_pool", "predictions"]
    bn = model.get_layer("batch_normalization")
    assert not bn.scale and [v.path.split("/")[-1] for v in bn.weights] == \
        ["beta", "moving_mean", "moving_variance"]
    assert model.get_layer("mixed10").output.shape == (None, 8, 8, 2048)
    assert model.get_layer("mixed7").output.shape == (None, 17, 17, 768)


def test_forward_pass_at_a_small_size():
    model = apps.InceptionV3(input_shape=(75, 80, 3), include_top=False, pooling="avg")
    x = apps.inception_v3.preprocess_input(
        np.random.default_rng(0).uniform(0, 255, (1, 75, 80, 3)).astype(np.float32))
    out = model(tf.constant(x)).numpy()
    assert out.shape == (1, 2048) and np.all(np.isfinite(out))
    top = apps.InceptionV3(input_shape=(80, 80, 3), classes=4)
    probs = top(randn(1, 80, 80, 3)).numpy()
    assert probs.shape == (1, 4)
    np.testing.assert_allclose(probs.sum(), 1, rtol=1e-5)


def test_preprocess_input(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no Keras cache
    x = np.array([[0.0, 127.5, 255.0]], np.float32)
    np.testing.assert_allclose(apps.inception_v3.preprocess_input(x), [[-1.0, 0.0, 1.0]])
    with pytest.raises(ValueError, match="imagenet_class_index.json"):
        apps.inception_v3.decode_predictions(np.zeros((1, 1000)))


def test_bad_arguments(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no Keras cache
    with pytest.raises(ValueError, match="kiln does not download"):
        apps.InceptionV3(weights="imagenet")
    with pytest.raises(ValueError, match="at least 75x75"):
        apps.InceptionV3(input_shape=(74, 299, 3), include_top=False)
    with pytest.raises(ValueError, match="pooling"):
        apps.InceptionV3(include_top=False, pooling="sum")
    with pytest.raises(ValueError, match="input_shape"):
        apps.InceptionV3(input_shape=(299, 299))
