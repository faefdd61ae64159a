"""kiln.keras.applications.DenseNet121/169/201: Keras' parameter counts and names, a forward
pass, preprocess_input."""
import numpy as np
import pytest

import kiln as tf

apps = tf.keras.applications


@pytest.mark.parametrize("name,total,n_layers", [("DenseNet121", 8062504, 429),
                                                 ("DenseNet169", 14307880, 597),
                                                 ("DenseNet201", 20242984, 709)])
def test_counts_and_names_match_keras(name, total, n_layers):
    model = getattr(apps, name)()
    assert model.count_params() == total and len(model.layers) == n_layers
    names = [layer.name for layer in model.layers]
    assert names[2:5] == ["conv1_conv", "conv1_bn", "conv1_relu"]
    assert names[6:8] == ["pool1", "conv2_block1_0_bn"]
    assert "pool2_conv" in names and "conv5_block16_concat" in names
    assert names[-4:] == ["bn", "relu", "avg_pool", "predictions"]
    w = {v.path: tuple(v.shape) for v in model.weights}
    assert w["conv2_block1_1_conv/kernel"] == (1, 1, 64, 128)
    assert w["conv2_block1_2_conv/kernel"] == (3, 3, 128, 32)


def test_forward_pass_and_preprocessing():
    model = apps.DenseNet121(include_top=False, input_shape=(64, 64, 3), pooling="avg")
    assert model.output_shape == (None, 1024)
    raw = np.random.default_rng(0).uniform(0, 255, (2, 64, 64, 3)).astype(np.float32)
    x = apps.densenet.preprocess_input(raw)
    np.testing.assert_allclose(x[0, 0, 0], (raw[0, 0, 0] / 255 - [0.485, 0.456, 0.406]) /
                               [0.229, 0.224, 0.225], rtol=1e-5)
    np.testing.assert_allclose(apps.densenet.preprocess_input(tf.constant(raw)).numpy(), x,
                               rtol=1e-5, atol=1e-6)
    out = model.predict(x, verbose=0)
    assert out.shape == (2, 1024) and np.all(np.isfinite(out))
    with pytest.raises(ValueError, match="pooling"):
        apps.DenseNet121(include_top=False, pooling="sum")
