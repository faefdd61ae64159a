"""kiln.keras.applications.EfficientNetV2B0..B3, M and L (S: test_efficientnet.py): Keras'
parameter counts and layer names, the B models' ImageNet normalization, a forward pass at a
small size and Keras' errors."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import randn

apps = tf.keras.applications

# Keras' numbers with the top at the default size: (total, trainable, default size).
COUNTS = {"B0": (7_200_312, 7_139_704, 224), "B1": (8_212_124, 8_141_052, 240),
          "B2": (10_178_374, 10_096_086, 260), "B3": (14_467_622, 14_358_406, 300),
          "M": (54_431_388, 54_139_356, 480), "L": (119_027_848, 118_515_272, 480)}


@pytest.mark.parametrize("variant", sorted(COUNTS))
def test_parameter_counts_match_keras(variant):
    model = getattr(apps, "EfficientNetV2" + variant)()
    total, trainable, size = COUNTS[variant]
    assert model.name == "efficientnetv2-" + variant.lower()
    assert model.input_shape == (None, size, size, 3)
    assert model.count_params() == total
    assert sum(int(np.prod(w.shape)) for w in model.trainable_weights) == trainable
    assert getattr(apps.efficientnet_v2, "EfficientNetV2" + variant) is \
        getattr(apps, "EfficientNetV2" + variant)


def test_layer_names_follow_keras():
    model = apps.EfficientNetV2B0()
    names = [layer.name for layer in model.layers]
    assert names[1:6] == ["rescaling", "normalization", "stem_conv", "stem_bn",
                          "stem_activation"]
    assert names[-6:] == ["top_conv", "top_bn", "top_activation", "avg_pool", "top_dropout",
                          "predictions"]
    blocks = sorted({n.split("_")[0] for n in names if n.startswith("block")})
    assert [sum(b.startswith(f"block{i}") for b in blocks) for i in range(1, 7)] == \
        [1, 2, 2, 3, 5, 8]
    assert model.get_layer("stem_conv").filters == 32
    assert model.get_layer("block1a_project_conv").kernel_size == (3, 3)
    assert model.get_layer("block4a_se_reduce").filters == 12  # max(1, int(48 * 0.25))
    assert model.get_layer("normalization").weights == []  # mean and variance given
    big = apps.EfficientNetV2M(include_top=False, input_shape=(64, 64, 3))
    names = [layer.name for layer in big.layers]
    assert not any(n.startswith("normalization") for n in names)
    assert isinstance(big.layers[1], tf.keras.layers.Rescaling) and big.layers[1].scale == 1 / 128
    assert "block7e_add" in names and big.get_layer("top_conv").filters == 1280
    # Keras divides the drop rates by the unscaled number of blocks.
    b3 = apps.EfficientNetV2B3(include_top=False, input_shape=(32, 32, 3))
    assert b3.get_layer("stem_conv").filters == 40
    assert b3.get_layer("block6l_drop").rate == pytest.approx(0.2 * 31 / 21)


def test_forward_pass_and_the_b_models_normalization():
    model = apps.EfficientNetV2B1(input_shape=(32, 32, 3), include_top=False, pooling="avg")
    x = np.random.default_rng(0).uniform(0, 255, (2, 32, 32, 3)).astype(np.float32)
    out = model(tf.constant(x)).numpy()
    assert out.shape == (2, 1280) and np.all(np.isfinite(out))
    head = tf.keras.Model(model.inputs, model.get_layer("normalization").output)
    want = (x / 255 - [0.485, 0.456, 0.406]) / np.array([0.229, 0.224, 0.225])
    np.testing.assert_allclose(head(tf.constant(x)).numpy(), want, rtol=1e-5, atol=1e-5)
    top = apps.EfficientNetV2B0(input_shape=(40, 32, 3), classes=3,
                                include_preprocessing=False)
    assert "rescaling" not in [layer.name for layer in top.layers]
    probs = top(randn(1, 40, 32, 3)).numpy()
    assert probs.shape == (1, 3) and np.all(np.isfinite(probs))


def test_bad_arguments(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no Keras cache
    with pytest.raises(ValueError, match="kiln does not download"):
        apps.EfficientNetV2B0(weights="imagenet")
    with pytest.raises(ValueError, match="path to the weights file"):
        apps.EfficientNetV2L(weights="no-such-file.h5")
    with pytest.raises(ValueError, match="at least 32x32"):
        apps.EfficientNetV2M(input_shape=(31, 64, 3))
    with pytest.raises(ValueError, match="pooling"):
        apps.EfficientNetV2B2(include_top=False, pooling="sum")
    with pytest.raises(ValueError, match="classes"):
        apps.EfficientNetV2B3(classes=-1)
