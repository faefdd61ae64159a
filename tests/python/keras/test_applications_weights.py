"""kiln.keras.applications' weights="imagenet": Keras' weights files read from Keras'
download cache ($KERAS_HOME/models, else ~/.keras/models; never downloaded), each family's
file names and URLs, Keras' argument checks for pretrained weights; decode_predictions
with the class index from the same cache; imagenet_utils.preprocess_input."""
import json
import os
import warnings

import h5py
import numpy as np
import pytest

import kiln as tf

apps = tf.keras.applications
KERAS = "https://storage.googleapis.com/tensorflow/keras-applications/"


@pytest.fixture
def keras_home(monkeypatch, tmp_path):
    """An empty Keras folder as $KERAS_HOME; its models/ subfolder."""
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    models = tmp_path / "models"
    models.mkdir()
    return models


def _randomize(model, seed=0):
    """Random values everywhere (batch norm statistics too), so that loading
    is seen in every weight."""
    rng = np.random.default_rng(seed)
    model.set_weights([rng.uniform(0.5, 1.5, w.shape).astype(w.dtype)
                       for w in model.get_weights()])
    return model


def write_legacy_h5(model, path):
    """``model``'s weights as Keras 2's save_weights("x.h5") wrote them (the
    layout of Keras' ImageNet files): the root's layer_names, per layer a
    group listing its weight_names, each a dataset under that name."""
    with h5py.File(path, "w") as f:
        f.attrs["layer_names"] = np.array([layer.name.encode() for layer in model.layers])
        f.attrs["backend"] = b"tensorflow"
        f.attrs["keras_version"] = b"2.2.4"
        for layer in model.layers:
            group = f.create_group(layer.name)
            variables = list(layer.trainable_weights) + list(layer.non_trainable_weights)
            names = [f"{layer.name}/{v.name}:0" for v in variables]
            group.attrs["weight_names"] = np.array([n.encode() for n in names], dtype="S")
            for n, v in zip(names, variables):
                group.create_dataset(n, data=v.numpy())


def _assert_same_weights(a, b):
    wa, wb = a.get_weights(), b.get_weights()
    assert len(wa) == len(wb)
    for x, y in zip(wa, wb):
        np.testing.assert_array_equal(x, y)


def test_imagenet_weights_come_from_keras_cache_in_keras2_h5_format(keras_home):
    kw = dict(alpha=0.35, input_shape=(96, 96, 3), include_top=False, pooling="avg")
    reference = _randomize(apps.MobileNetV2(**kw))
    name = "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_0.35_96_no_top.h5"
    write_legacy_h5(reference, keras_home / name)
    loaded = apps.MobileNetV2(weights="imagenet", **kw)
    assert loaded.name == "mobilenetv2_0.35_96"
    _assert_same_weights(loaded, reference)
    x = tf.constant(np.random.default_rng(1).uniform(-1, 1, (2, 96, 96, 3)).astype(np.float32))
    np.testing.assert_allclose(loaded(x).numpy(), reference(x).numpy(), rtol=1e-6, atol=1e-6)


def test_imagenet_weights_with_the_top_in_keras3_weights_format(keras_home, tmp_path):
    # A Keras 3 .weights.h5 file (kiln's save_weights) under Keras' file name
    # loads as well: kiln tells the formats apart by their content.
    reference = _randomize(apps.MobileNet(alpha=0.25, input_shape=(128, 128, 3)), seed=2)
    reference.save_weights(str(tmp_path / "saved.weights.h5"))
    os.replace(tmp_path / "saved.weights.h5", keras_home / "mobilenet_2_5_128_tf.h5")
    loaded = apps.MobileNet(alpha=0.25, input_shape=(128, 128, 3), weights="imagenet")
    assert loaded.name == "mobilenet_0.25_128"
    _assert_same_weights(loaded, reference)


def test_keras_home_defaults_to_the_home_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("KERAS_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    folder = tmp_path / ".keras" / "models"
    assert apps.imagenet_utils.cache_dir() == str(folder)
    with pytest.raises(ValueError, match="not in Keras' cache folder " + str(folder)):
        apps.Xception(weights="imagenet")
    reference = _randomize(apps.Xception(include_top=False, input_shape=(71, 71, 3)))
    folder.mkdir(parents=True)
    write_legacy_h5(reference, folder / "xception_weights_tf_dim_ordering_tf_kernels_notop.h5")
    _assert_same_weights(apps.Xception(include_top=False, input_shape=(71, 71, 3),
                                       weights="imagenet"), reference)


def test_missing_weights_file_error(keras_home):
    with pytest.raises(ValueError) as err:
        apps.ResNet50(weights="imagenet")
    text = str(err.value)
    name = "resnet50_weights_tf_dim_ordering_tf_kernels.h5"
    assert f"the file {name} is not in Keras' cache folder {keras_home} " in text
    assert f"Keras would download it from {KERAS}resnet/{name};" in text
    assert "placed there by hand" in text and str(keras_home / name) in text
    assert "kiln does not download" in text


# (application, arguments, Keras' file name, the URL Keras downloads it from).
FILES = [
    ("ResNet50", {}, "resnet50_weights_tf_dim_ordering_tf_kernels.h5", "resnet/"),
    ("ResNet152", {"include_top": False}, "resnet152_weights_tf_dim_ordering_tf_kernels_notop.h5",
     "resnet/"),
    ("ResNet101V2", {"include_top": False},
     "resnet101v2_weights_tf_dim_ordering_tf_kernels_notop.h5", "resnet/"),
    ("DenseNet169", {}, "densenet169_weights_tf_dim_ordering_tf_kernels.h5", "densenet/"),
    ("VGG16", {"include_top": False}, "vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5",
     "vgg16/"),
    ("VGG19", {}, "vgg19_weights_tf_dim_ordering_tf_kernels.h5", "vgg19/"),
    ("Xception", {}, "xception_weights_tf_dim_ordering_tf_kernels.h5", "xception/"),
    ("InceptionV3", {"include_top": False},
     "inception_v3_weights_tf_dim_ordering_tf_kernels_notop.h5", "inception_v3/"),
    ("InceptionResNetV2", {}, "inception_resnet_v2_weights_tf_dim_ordering_tf_kernels.h5",
     "inception_resnet_v2/"),
    ("MobileNet", {"alpha": 0.5, "input_shape": (160, 160, 3)}, "mobilenet_5_0_160_tf.h5",
     "mobilenet/"),
    ("MobileNet", {"alpha": 0.75, "include_top": False, "input_shape": (192, 192, 3)},
     "mobilenet_7_5_192_tf_no_top.h5", "mobilenet/"),
    ("MobileNetV2", {"alpha": 1.4}, "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_1.4_224.h5",
     "mobilenet_v2/"),
    ("MobileNetV3Small", {"input_shape": (224, 224, 3)},
     "weights_mobilenet_v3_small_224_1.0_float.h5", "mobilenet_v3/"),
    ("MobileNetV3Large", {"minimalistic": True, "include_top": False,
                          "input_shape": (224, 224, 3)},
     "weights_mobilenet_v3_large_minimalistic_224_1.0_float_no_top_v2.h5", "mobilenet_v3/"),
    ("EfficientNetB0", {}, "efficientnetb0.h5",
     "https://storage.googleapis.com/keras-applications/"),
    ("EfficientNetV2S", {"include_top": False}, "efficientnetv2-s_notop.h5", "efficientnet_v2/"),
    ("ConvNeXtTiny", {}, "convnext_tiny.h5", "convnext/"),
    ("NASNetMobile", {}, "nasnet_mobile.h5", "nasnet/NASNet-mobile.h5"),
    ("NASNetLarge", {"include_top": False}, "nasnet_large_no_top.h5",
     "nasnet/NASNet-large-no-top.h5"),
]


@pytest.mark.parametrize("app, kwargs, fname, where", FILES,
                         ids=[f"{a}-{f}" for a, _, f, _ in FILES])
def test_each_family_asks_for_keras_file(keras_home, app, kwargs, fname, where):
    url = where if where.startswith("https:") else KERAS + where
    if not url.endswith(".h5"):
        url += fname
    with pytest.raises(ValueError) as err:
        getattr(apps, app)(weights="imagenet", **kwargs)
    assert f"the file {fname} is not in" in str(err.value)
    assert f"download it from {url};" in str(err.value)


def test_sizes_without_keras_weights_fall_back_to_224(keras_home):
    with pytest.warns(UserWarning, match="Weights for input shape"):
        with pytest.raises(ValueError, match="mobilenet_1_0_224_tf_no_top.h5"):
            apps.MobileNet(include_top=False, weights="imagenet")
    with pytest.warns(UserWarning, match="Weights for input shape"):
        with pytest.raises(ValueError, match="kernels_1.0_224_no_top.h5"):
            apps.MobileNetV2(include_top=False, input_shape=(100, 100, 3), weights="imagenet")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="kernels_0.5_128_no_top.h5"):
            apps.MobileNetV2(alpha=0.5, include_top=False, input_shape=(128, 128, 3),
                             weights="imagenet")


def test_keras_checks_for_pretrained_weights(keras_home, tmp_path):
    with pytest.raises(ValueError, match="`classes` should be 1000"):
        apps.ResNet50(weights="imagenet", classes=10)
    with pytest.raises(ValueError, match=r"`input_shape` should be \(299, 299, 3\)"):
        apps.Xception(weights="imagenet", input_shape=(300, 300, 3))
    with pytest.raises(ValueError, match="The input must have 3 channels"):
        apps.VGG16(weights="imagenet", include_top=False, input_shape=(64, 64, 1))
    with pytest.raises(ValueError, match="Only `None` and `softmax` activations"):
        apps.DenseNet121(weights="imagenet", classifier_activation="sigmoid")
    path = tmp_path / "some.weights.h5"
    path.write_bytes(b"")
    with pytest.raises(ValueError, match="Only `None` and `softmax` activations"):
        apps.DenseNet121(weights=str(path), classifier_activation="relu")
    with pytest.raises(ValueError, match="depth multiplier must be 1"):
        apps.MobileNet(weights="imagenet", depth_multiplier=2)
    with pytest.raises(ValueError, match="alpha can be one of"):
        apps.MobileNet(weights="imagenet", alpha=0.3)
    with pytest.raises(ValueError, match="alpha must be one of"):
        apps.MobileNetV2(weights="imagenet", alpha=0.6)
    with pytest.raises(ValueError, match="alpha can be one of"):
        apps.MobileNetV3Small(weights="imagenet", minimalistic=True, alpha=0.75)
    with pytest.raises(ValueError, match="must be static"):
        apps.NASNetLarge(weights="imagenet", include_top=False, input_shape=(None, None, 3))
    with pytest.raises(ValueError, match='does not match weights variant "convnext_tiny"'):
        apps.ConvNeXtTiny(weights="imagenet", name="my_model")
    with pytest.raises(ValueError, match="path to the weights file"):
        apps.ResNet50(weights="missing.h5")
    # Without pretrained weights, other activations and sizes are fine.
    assert apps.MobileNet(input_shape=(32, 32, 3), classes=3,
                          classifier_activation="sigmoid").output_shape == (None, 3)


def test_efficientnet_imagenet_weights_add_keras_rescaling(keras_home):
    kw = dict(include_top=False, input_shape=(32, 32, 3))
    plain = apps.EfficientNetB0(**kw)
    reference = _randomize(apps.EfficientNetB0(**kw), seed=3)
    write_legacy_h5(reference, keras_home / "efficientnetb0_notop.h5")
    loaded = apps.EfficientNetB0(weights="imagenet", **kw)
    _assert_same_weights(loaded, reference)
    # As Keras: a Rescaling by 1/sqrt(std) after the Normalization, for the
    # ImageNet file's variances (the stds, not their squares).
    kinds = [type(layer).__name__ for layer in loaded.layers[1:5]]
    assert kinds == ["Rescaling", "Normalization", "Rescaling", "ZeroPadding2D"]
    assert [type(layer).__name__ for layer in plain.layers[1:4]] == \
        ["Rescaling", "Normalization", "ZeroPadding2D"]
    assert len(loaded.layers) == len(plain.layers) + 1
    np.testing.assert_allclose(loaded.layers[3].scale, 1 / np.sqrt([0.229, 0.224, 0.225]))


# ---- decode_predictions ----

def _class_index(folder):
    index = {str(i): [f"n{i:08d}", f"class_{i}"] for i in range(1000)}
    (folder / "imagenet_class_index.json").write_text(json.dumps(index))


def test_decode_predictions(keras_home):
    _class_index(keras_home)
    preds = np.random.default_rng(0).random((3, 1000)).astype(np.float32)
    out = apps.imagenet_utils.decode_predictions(preds, top=4)
    assert len(out) == 3
    for row, p in zip(out, preds):
        best = np.argsort(p)[::-1][:4]
        assert [r[0] for r in row] == [f"n{i:08d}" for i in best]
        assert [r[1] for r in row] == [f"class_{i}" for i in best]
        assert [r[2] for r in row] == [p[i] for i in best]
        assert all(len(r) == 3 for r in row)
    # Tensors too, top=5 by default, through each family's module.
    via_tensor = apps.resnet50.decode_predictions(tf.constant(preds))
    assert [[r[:2] for r in row] for row in via_tensor] == \
        [[r[:2] for r in row] for row in apps.imagenet_utils.decode_predictions(preds)]
    assert len(via_tensor[0]) == 5


def test_decode_predictions_errors(keras_home):
    with pytest.raises(ValueError) as err:
        apps.mobilenet.decode_predictions(np.zeros((1, 1000)))
    text = str(err.value)
    assert "imagenet_class_index.json is not in Keras' cache folder" in text
    assert str(keras_home) in text and "placed there by hand" in text
    assert "https://storage.googleapis.com/download.tensorflow.org/data/" \
        "imagenet_class_index.json" in text
    _class_index(keras_home)
    for bad in (np.zeros((2, 10)), np.zeros(1000), np.zeros((1, 1, 1000))):
        with pytest.raises(ValueError, match=r"expects a batch of predictions \(i.e. a 2D "
                           r"array of shape \(samples, 1000\)\). Received array with shape"):
            apps.xception.decode_predictions(bad)


MODULES = ["convnext", "densenet", "efficientnet", "efficientnet_v2", "inception_resnet_v2",
           "inception_v3", "mobilenet", "mobilenet_v2", "mobilenet_v3", "nasnet", "resnet",
           "resnet50", "resnet_v2", "vgg16", "vgg19", "xception"]


@pytest.mark.parametrize("module", MODULES)
def test_each_module_has_preprocess_input_and_decode_predictions(module):
    mod = getattr(apps, module)
    assert callable(mod.preprocess_input) and callable(mod.decode_predictions)
    assert {"preprocess_input", "decode_predictions"} <= set(getattr(mod, "__all__", dir(mod)))


def test_imagenet_utils_preprocess_input():
    x = np.array([[[0.0, 127.5, 255.0]]], np.float32)
    np.testing.assert_allclose(apps.imagenet_utils.preprocess_input(x, mode="tf"),
                               [[[-1.0, 0.0, 1.0]]])
    np.testing.assert_allclose(apps.imagenet_utils.preprocess_input(x),
                               [[[255.0 - 103.939, 127.5 - 116.779, -123.68]]], rtol=1e-6)
    with pytest.raises(ValueError, match="Expected mode to be one of"):
        apps.imagenet_utils.preprocess_input(x, mode="bgr")
