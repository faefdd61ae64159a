"""kiln.keras.applications.EfficientNetB0..B7: Keras' parameter counts and layer names, the
Rescaling + Normalization preprocessing inside the model, a forward pass at a small size,
preprocess_input and Keras' errors."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import randn

apps = tf.keras.applications

# Keras' numbers with the top at the default size: (total, trainable).
COUNTS = {"B0": (5_330_571, 5_288_548), "B1": (7_856_239, 7_794_184),
          "B2": (9_177_569, 9_109_994), "B3": (12_320_535, 12_233_232),
          "B4": (19_466_823, 19_341_616), "B5": (30_562_527, 30_389_784),
          "B6": (43_265_143, 43_040_704), "B7": (66_658_687, 66_347_960)}
SIZES = {"B0": 224, "B1": 240, "B2": 260, "B3": 300, "B4": 380, "B5": 456, "B6": 528,
         "B7": 600}


@pytest.mark.parametrize("variant", sorted(COUNTS))
def test_parameter_counts_match_keras(variant):
    model = getattr(apps, "EfficientNet" + variant)()
    assert model.name == "efficientnet" + variant.lower()
    assert model.input_shape == (None, SIZES[variant], SIZES[variant], 3)
    total, trainable = COUNTS[variant]
    assert model.count_params() == total
    assert sum(int(np.prod(w.shape)) for w in model.trainable_weights) == trainable


def test_layer_names_follow_keras():
    model = apps.EfficientNetB0()
    names = [layer.name for layer in model.layers]
    assert names[1:7] == ["rescaling", "normalization", "stem_conv_pad", "stem_conv", "stem_bn",
                          "stem_activation"]
    assert names[-6:] == ["top_conv", "top_bn", "top_activation", "avg_pool", "top_dropout",
                          "predictions"]
    blocks = sorted({n.split("_")[0] for n in names if n.startswith("block")})
    assert [sum(b.startswith(f"block{i}") for b in blocks) for i in range(1, 8)] == \
        [1, 2, 2, 3, 3, 4, 1]
    assert "block1a_expand_conv" not in names and "block2a_expand_conv" in names
    assert "block2a_dwconv_pad" in names and "block2b_dwconv_pad" not in names
    assert "block2b_drop" in names and "block2b_add" in names and "block2a_add" not in names
    assert model.get_layer("block3a_dwconv").kernel_size == (5, 5)
    assert model.get_layer("block2a_se_reduce").filters == 4  # max(1, int(16 * 0.25))
    assert model.get_layer("top_dropout").rate == 0.2
    norm = model.get_layer("normalization")
    assert [v.path for v in norm.weights] == ["normalization/mean", "normalization/variance",
                                              "normalization/count"]
    b7 = apps.EfficientNetB3(include_top=False, input_shape=(64, 64, 3))
    assert b7.get_layer("stem_conv").filters == 40 and b7.output_shape == (None, 2, 2, 1536)
    assert "block7b_add" in [layer.name for layer in b7.layers]


def test_forward_pass_at_a_small_size():
    model = apps.EfficientNetB0(input_shape=(32, 32, 3), include_top=False, pooling="avg")
    model.get_layer("normalization").set_weights(
        [np.array([0.485, 0.456, 0.406], np.float32),
         np.array([0.229, 0.224, 0.225], np.float32) ** 2, np.array(0, np.int64)])
    x = np.random.default_rng(0).uniform(0, 255, (2, 32, 32, 3)).astype(np.float32)
    out = model(tf.constant(x)).numpy()
    assert out.shape == (2, 1280) and np.all(np.isfinite(out))
    head = tf.keras.Model(model.inputs, model.get_layer("normalization").output)
    want = (x / 255 - [0.485, 0.456, 0.406]) / np.array([0.229, 0.224, 0.225])
    np.testing.assert_allclose(head(tf.constant(x)).numpy(), want, rtol=1e-5, atol=1e-5)
    top = apps.EfficientNetB1(input_shape=(33, 35, 3), classes=3)
    probs = top(randn(1, 33, 35, 3)).numpy()
    assert probs.shape == (1, 3) and np.all(np.isfinite(probs))
    np.testing.assert_allclose(probs.sum(), 1, rtol=1e-5)


def test_preprocess_input_and_decode_predictions(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no Keras cache
    x = np.array([[0.0, 127.5, 255.0]], np.float32)
    assert apps.efficientnet.preprocess_input(x) is x
    with pytest.raises(ValueError, match="imagenet_class_index.json"):
        apps.efficientnet.decode_predictions(np.zeros((1, 1000)))


def test_bad_arguments(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no Keras cache
    with pytest.raises(ValueError, match="kiln does not download"):
        apps.EfficientNetB0(weights="imagenet")
    with pytest.raises(ValueError, match="path to the weights file"):
        apps.EfficientNetB0(weights=3)
    with pytest.raises(ValueError, match="at least 32x32"):
        apps.EfficientNetB0(input_shape=(16, 16, 3))
    with pytest.raises(ValueError, match="static input_shape"):
        apps.EfficientNetB2(input_shape=(None, None, 3))
    with pytest.raises(ValueError, match="pooling"):
        apps.EfficientNetB0(include_top=False, pooling="sum")
    with pytest.raises(ValueError, match="input_tensor"):
        apps.EfficientNetB0(input_tensor=tf.zeros([1, 64, 64, 3]))
