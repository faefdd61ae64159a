"""kiln.keras.applications.VGG16/VGG19: Keras' parameter counts and names, a forward pass."""
import numpy as np
import pytest

import kiln as tf

apps = tf.keras.applications


@pytest.mark.parametrize("name,total,n_layers", [("VGG16", 138357544, 23),
                                                 ("VGG19", 143667240, 26)])
def test_counts_and_names_match_keras(name, total, n_layers):
    model = getattr(apps, name)()
    assert model.count_params() == total and len(model.layers) == n_layers
    names = [layer.name for layer in model.layers]
    assert names[1:4] == ["block1_conv1", "block1_conv2", "block1_pool"]
    assert names[-4:] == ["flatten", "fc1", "fc2", "predictions"]
    assert model.output_shape == (None, 1000) and model.name == name.lower()


def test_forward_pass_without_the_top(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no Keras cache
    model = apps.VGG16(include_top=False, input_shape=(32, 32, 3), pooling="max")
    assert model.output_shape == (None, 512)
    x = apps.vgg.preprocess_input(
        np.random.default_rng(0).uniform(0, 255, (2, 32, 32, 3)).astype(np.float32))
    out = model.predict(x, verbose=0)
    assert out.shape == (2, 512) and np.all(out >= 0)
    grid = apps.VGG19(include_top=False, input_shape=(64, 64, 3))
    assert grid.output_shape == (None, 2, 2, 512)
    with pytest.raises(ValueError, match="kiln does not download"):
        apps.VGG16(weights="imagenet")
