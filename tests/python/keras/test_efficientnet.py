"""EfficientNetV2-S: architecture, parameter counts, output, determinism, eager == function."""
import numpy as np
import pytest

import kiln as tf

apps = tf.keras.applications


@pytest.fixture(scope="module")
def model():
    tf.keras.utils.set_random_seed(1)
    return apps.EfficientNetV2S(input_shape=(64, 64, 3))


@pytest.fixture(scope="module")
def image():
    return tf.constant(np.random.default_rng(5).uniform(0, 255, (1, 64, 64, 3))
                       .astype(np.float32))


def test_parameter_counts_match_keras(model):
    assert model.name == "efficientnetv2-s"
    assert model.count_params() == 21_612_360
    assert sum(w.shape.num_elements() for w in model.trainable_weights) == 21_458_488
    assert sum(w.shape.num_elements() for w in model.non_trainable_weights) == 153_872
    assert apps.EfficientNetV2S is apps.efficientnet_v2.EfficientNetV2S


def test_architecture_follows_the_paper(model):
    names = [layer.name for layer in model.layers]
    assert names[1:6] == ["rescaling", "stem_conv", "stem_bn", "stem_activation",
                          "block1a_project_conv"]
    assert names[-6:] == ["top_conv", "top_bn", "top_activation", "avg_pool", "top_dropout",
                          "predictions"]
    blocks = sorted({n.split("_")[0] for n in names if n.startswith("block")})
    per_stage = [sum(b.startswith(f"block{i}") for b in blocks) for i in range(1, 7)]
    assert per_stage == [2, 4, 4, 6, 9, 15]
    stem = model.get_layer("stem_conv")
    assert stem.strides == (2, 2) and stem.filters == 24 and not stem.use_bias
    assert model.get_layer("stem_bn").momentum == 0.9
    assert model.get_layer("stem_bn").epsilon == 1e-3
    # Fused-MBConv in stages 1-3 (no depthwise, no SE), MBConv + SE in stages 4-6.
    assert not any(n.startswith(("block1", "block2", "block3")) and
                   ("dwconv" in n or "se_" in n) for n in names)
    assert model.get_layer("block2a_expand_conv").kernel_size == (3, 3)
    assert model.get_layer("block4a_dwconv2").strides == (2, 2)
    assert model.get_layer("block4a_se_reduce").filters == 16  # max(1, int(64 * 0.25))
    assert model.get_layer("block4a_se_expand").filters == 256
    assert model.get_layer("block6o_se_reduce").filters == 64
    assert "block4a_add" not in names and "block4b_add" in names
    assert model.get_layer("top_conv").filters == 1280
    assert model.get_layer("predictions").units == 1000
    assert model.get_layer("rescaling").scale == 1 / 128


def test_output_shape_and_softmax(model, image):
    out = model(image)
    assert out.shape == (1, 1000)
    probs = out.numpy()
    assert np.all(probs >= 0) and abs(probs.sum() - 1) < 1e-4


def test_eager_equals_function(model, image):
    eager = model(image).numpy()
    f = tf.function(model)
    np.testing.assert_allclose(f(image).numpy(), eager, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(f(image).numpy(), eager, rtol=1e-4, atol=1e-6)


def test_deterministic_with_a_seed(model, image):
    tf.keras.utils.set_random_seed(1)
    again = apps.EfficientNetV2S(input_shape=(64, 64, 3))
    for a, b in zip(model.weights, again.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(model(image).numpy(), model(image).numpy())
    tf.keras.utils.set_random_seed(2)
    other = tf.keras.layers.Conv2D(24, 3, kernel_initializer=again.get_layer(
        "stem_conv").kernel_initializer)
    other.build((None, 64, 64, 3))
    assert not np.array_equal(other.kernel.numpy(), model.get_layer("stem_conv").kernel.numpy())


def test_summary_content(model):
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert text.startswith('Model: "efficientnetv2-s"')
    assert "Total params: 21,612,360 (82.44 MB)" in text
    assert "Trainable params: 21,458,488" in text and "Non-trainable params: 153,872" in text
    assert "stem_conv (Conv2D)" in text and "(None, 32, 32, 24)" in text
    assert "predictions (Dense)" in text and "1,281,000" in text


def test_headless_variant_with_input_tensor_and_pooling():
    inp = tf.keras.Input((None, None, 3))
    m = apps.EfficientNetV2S(include_top=False, input_tensor=inp, pooling="max",
                             include_preprocessing=False, classes=10)
    assert m.count_params() == 21_612_360 - 1_281_000
    assert "rescaling" not in [layer.name for layer in m.layers]
    assert m.get_layer("top_activation").output.shape == (None, None, None, 1280)
    assert m.outputs[0].shape == (None, 1280)
    assert m(tf.zeros([1, 32, 64, 3])).shape == (1, 1280)


def test_bad_arguments(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # no Keras cache
    with pytest.raises(ValueError, match="kiln does not download"):
        apps.EfficientNetV2S(weights="imagenet")
    with pytest.raises(ValueError, match="at least 32x32"):
        apps.EfficientNetV2S(input_shape=(16, 16, 3))
    with pytest.raises(ValueError, match="static input_shape"):
        apps.EfficientNetV2S(input_shape=(None, None, 3))
    with pytest.raises(ValueError, match="three integers"):
        apps.EfficientNetV2S(input_shape=(64, 64))
    with pytest.raises(ValueError, match="classes"):
        apps.EfficientNetV2S(classes=0)
    with pytest.raises(ValueError, match="pooling"):
        apps.EfficientNetV2S(include_top=False, pooling="sum")
    with pytest.raises(ValueError, match="Unknown activation"):
        apps.EfficientNetV2S(classifier_activation="softmax2")
    with pytest.raises(ValueError, match="input_tensor"):
        apps.EfficientNetV2S(input_tensor=tf.zeros([1, 64, 64, 3]))
