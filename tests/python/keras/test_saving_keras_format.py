"""Keras 3's file formats: .keras archives and .weights.h5 files written by TensorFlow's
Keras (tests/fixtures/tf_written/keras, made by make_fixtures.py there), legacy .h5
files, kiln's earlier zip files (kiln_v1/), kiln's own files in Keras' layout, and
damaged files."""
import io
import json
import os
import shutil
import zipfile

import h5py
import numpy as np
import pytest

import kiln as tf

keras = tf.keras
layers = keras.layers
DLE = tf.errors.DataLossError
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "fixtures", "tf_written", "keras")
EXPECTED = np.load(os.path.join(FIXTURES, "expected.npz"))


def fixture(name):
    return os.path.join(FIXTURES, name)


def assert_close(got, want, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0, atol=atol)


class Scale(layers.Layer):
    """make_fixtures.py's custom layer (registered there as KilnTest>Scale)."""

    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.w = self.add_weight(name="w", shape=(input_shape[-1],), initializer="ones")

    def call(self, x):
        return x * self.w * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


# The models of make_fixtures.py, built in kiln.

def conv_model():
    return keras.Sequential([
        keras.Input((8, 8, 3)), layers.Conv2D(4, 3, activation="relu"),
        layers.DepthwiseConv2D(3, padding="same"), layers.SeparableConv2D(5, 3),
        layers.MaxPooling2D(), layers.Flatten(), layers.Dense(3, activation="softmax")])


def functional_model():
    tokens = keras.Input((7,), dtype="int32", name="tokens")
    x = layers.Embedding(20, 6)(tokens)
    x = layers.LSTM(5, return_sequences=True)(x)
    x = layers.Bidirectional(layers.GRU(3, return_sequences=True))(x)
    x = layers.SimpleRNN(4)(x)
    seq = keras.Input((5, 6), name="seq")
    att = layers.MultiHeadAttention(2, 3, name="mha")(seq, seq)
    y = layers.LayerNormalization()(layers.Add()([seq, att]))
    y = layers.Conv1D(4, 2, activation="tanh")(y)
    y = layers.GlobalAveragePooling1D()(y)
    out = layers.Dense(2)(layers.Concatenate()([x, y]))
    return keras.Model({"tokens": tokens, "seq": seq}, out, name="functional_model")


def legacy_model():
    x = keras.Input((4,), name="x")
    h = layers.Dense(3, name="d1")(x)
    b = layers.BatchNormalization(name="bn")(h)
    out = layers.Dense(2, name="out")(layers.Add(name="add")([h, b]))
    return keras.Model(x, out, name="legacy")


FUNC_X = {"tokens": EXPECTED["func_tokens"], "seq": EXPECTED["func_seq"]}


def h5_datasets(source):
    """{path: shape} of every dataset of an HDF5 file (path or bytes)."""
    out = {}
    with h5py.File(io.BytesIO(source) if isinstance(source, bytes) else source, "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, obj.shape)
                     if isinstance(obj, h5py.Dataset) else None)
    return out


def zip_member(path, name):
    with zipfile.ZipFile(path) as z:
        return z.read(name)


# ---- files TensorFlow's Keras wrote ----

@pytest.mark.parametrize("name, x, key", [
    ("sequential_conv.keras", EXPECTED["conv_x"], "conv_y"),
    ("functional_rnn_attention.keras", FUNC_X, "func_y"),
    ("batchnorm_fitted.keras", EXPECTED["bn_x"], "bn_y"),
    ("legacy_functional.h5", EXPECTED["legacy_x"], "legacy_y"),
    ("legacy_keras2.h5", EXPECTED["legacy_x"], "legacy_y"),
])
def test_tf_written_models_load_and_predict(name, x, key):
    model = keras.models.load_model(fixture(name))
    assert_close(model.predict(x, verbose=0), EXPECTED[key])


def test_tf_written_optimizer_state_continues_training():
    model = keras.models.load_model(fixture("batchnorm_fitted.keras"))
    assert type(model.optimizer).__name__ == "Adam"
    assert int(model.optimizer.iterations.numpy()) == 1
    model.train_on_batch(EXPECTED["bn_x"], EXPECTED["bn_t"])  # uses the saved Adam moments
    assert_close(model.predict(EXPECTED["bn_x"], verbose=0), EXPECTED["bn_y_after_step"], 1e-4)


def test_tf_written_legacy_h5_is_compiled_with_its_optimizer_state():
    model = keras.models.load_model(fixture("legacy_functional.h5"))
    assert model.compiled and int(model.optimizer.iterations.numpy()) == 1
    assert not keras.models.load_model(fixture("legacy_keras2.h5"), compile=False).compiled


def test_tf_written_weights_files_load_into_kiln_models():
    model = conv_model()
    model.load_weights(fixture("conv.weights.h5"))
    assert_close(model.predict(EXPECTED["conv_x"], verbose=0), EXPECTED["weights_y"])
    for name in ("legacy_functional.h5", "legacy_keras2.h5"):
        legacy = legacy_model()
        legacy.load_weights(fixture(name))
        assert_close(legacy.predict(EXPECTED["legacy_x"], verbose=0), EXPECTED["legacy_y"])


def test_tf_written_custom_layer_needs_its_class():
    with pytest.raises(TypeError, match="Could not locate class 'Scale'"):
        keras.models.load_model(fixture("custom_layer.keras"))
    model = keras.models.load_model(fixture("custom_layer.keras"),
                                    custom_objects={"Scale": Scale})
    assert isinstance(model.layers[0], Scale) and model.layers[0].factor == 3.0
    assert_close(model.predict(EXPECTED["custom_x"], verbose=0), EXPECTED["custom_y"])
    with keras.saving.custom_object_scope({"KilnTest>Scale": Scale}):
        model = keras.models.load_model(fixture("custom_layer.keras"))
    assert_close(model.predict(EXPECTED["custom_x"], verbose=0), EXPECTED["custom_y"])


# ---- kiln's files in Keras' layout ----

def test_kiln_writes_the_dataset_paths_keras_writes(tmp_path):
    model = functional_model()
    path = str(tmp_path / "f.keras")
    model.save(path)
    ours = h5_datasets(zip_member(path, "model.weights.h5"))
    theirs = h5_datasets(zip_member(fixture("functional_rnn_attention.keras"),
                                    "model.weights.h5"))
    assert ours == theirs
    assert "layers/bidirectional/forward_layer/cell/vars/2" in ours
    assert "layers/multi_head_attention/query_dense/vars/0" in ours
    config = json.loads(zip_member(path, "config.json"))
    assert config["module"] == "keras.src.models.functional"
    bidi = next(e for e in config["config"]["layers"] if e["class_name"] == "Bidirectional")
    assert bidi["config"]["layer"]["module"] == "keras.layers"


def test_kiln_round_trip_with_optimizer_state(tmp_path):
    model = keras.Sequential([keras.Input((4,)), layers.Dense(8, activation="relu"),
                              layers.BatchNormalization(), layers.Dense(2)])
    model.compile(keras.optimizers.Adam(0.01), "mse")
    x, t = EXPECTED["bn_x"], EXPECTED["bn_t"]
    model.fit(x, t, batch_size=4, epochs=1, shuffle=False, verbose=0)
    path = str(tmp_path / "bn.keras")
    model.save(path)
    datasets = h5_datasets(zip_member(path, "model.weights.h5"))
    assert datasets == h5_datasets(zip_member(fixture("batchnorm_fitted.keras"),
                                              "model.weights.h5"))
    assert datasets["optimizer/vars/2"] == datasets["optimizer/vars/3"] == (4, 8)  # m, v
    loaded = keras.models.load_model(path)
    assert_close(loaded.predict(x, verbose=0), model.predict(x, verbose=0), 1e-6)
    model.train_on_batch(x, t)
    loaded.train_on_batch(x, t)
    assert_close(loaded.predict(x, verbose=0), model.predict(x, verbose=0), 1e-5)


def test_kiln_weights_h5_round_trip(tmp_path):
    model = functional_model()
    path = str(tmp_path / "f.weights.h5")
    model.save_weights(path)
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89HDF\r\n\x1a\n"
    with h5py.File(path, "r") as f:
        assert f["vars"].attrs["name"] == "functional_model"
    other = functional_model()
    other.load_weights(path)
    assert_close(other.predict(FUNC_X, verbose=0), model.predict(FUNC_X, verbose=0), 1e-6)


# ---- kiln's earlier zip files ----

def test_kiln_v1_zip_files_still_load():
    v1 = np.load(fixture("kiln_v1/expected.npz"))
    model = keras.models.load_model(fixture("kiln_v1/model.keras"))
    assert_close(model.predict(v1["x"], verbose=0), v1["y"])
    model.train_on_batch(v1["x"], v1["t"])
    assert_close(model.predict(v1["x"], verbose=0), v1["y_after_step"], 1e-5)
    fresh = keras.Sequential([keras.Input((4,)), layers.Dense(8, activation="relu"),
                              layers.Dense(2)])
    fresh.load_weights(fixture("kiln_v1/model.weights.h5"))
    assert_close(fresh.predict(v1["x"], verbose=0), v1["y"])


def test_kiln_v1_damage_is_reported(tmp_path):
    path = str(tmp_path / "m.keras")
    shutil.copy(fixture("kiln_v1/model.keras"), path)
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members["metadata.json"] = json.dumps({"format": "kiln.keras", "version": 9})
    with zipfile.ZipFile(path, "w") as z:
        for n, d in members.items():
            z.writestr(n, d)
    with pytest.raises(tf.errors.UnimplementedError, match="version 9 is newer"):
        keras.models.load_model(path)


# ---- damaged and mismatched files ----

def rewrite_zip(path, replace=None, drop=None):
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members.update(replace or {})
    members.pop(drop, None)
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)


def edit_h5(data, edit):
    """The bytes of an HDF5 file after ``edit(h5py.File)``."""
    buf = io.BytesIO(data)
    with h5py.File(buf, "r+") as f:
        edit(f)
    return buf.getvalue()


@pytest.fixture
def keras_file(tmp_path):
    path = str(tmp_path / "m.keras")
    shutil.copy(fixture("sequential_conv.keras"), path)
    return path


def replace_dataset(name, value):
    def edit(f):
        del f[name]
        f[name] = value
    return edit


@pytest.mark.parametrize("change, error, match", [
    (dict(drop="model.weights.h5"), DLE, "model.weights.h5 is missing"),
    (dict(drop="config.json"), DLE, "config.json is missing"),
    (dict(replace={"config.json": b"{oops"}), DLE, "config.json is not valid JSON"),
    (dict(replace={"config.json": b"[1]"}), DLE, "does not describe a model"),
    (dict(replace={"model.weights.h5": b"\x89HDF\r\n\x1a\n garbage"}), DLE,
     "not a readable HDF5 file"),
    (dict(h5=lambda f: f.__delitem__("layers/dense/vars/1")), ValueError,
     "expected 2 variables, the file has 1"),
    (dict(h5=replace_dataset("layers/dense/vars/1", np.zeros(7, "float32"))), ValueError,
     r"shape \(3,\), the file's value has shape \(7,\)"),
    (dict(h5=replace_dataset("layers/dense/vars/1", np.zeros(3, "int32"))), ValueError,
     "holds int32 values for the float32 variable"),
    (dict(h5=replace_dataset("layers/dense/vars/1", np.array([b"a", b"b", b"c"]))),
     ValueError, "not a number type"),
    (dict(h5=lambda f: f["layers/dense/vars"].move("1", "x")), DLE, "not variables named"),
    (dict(h5=lambda f: (f.__delitem__("layers/dense/vars/1"),
                        f["layers/dense/vars"].__setitem__("1", h5py.SoftLink("/vars")))),
     DLE, "SoftLink"),
    (dict(h5=lambda f: (f.__delitem__("layers/dense/vars/1"),
                        f["layers/dense/vars"].__setitem__(
                            "1", h5py.ExternalLink("/etc/passwd", "/x")))), DLE,
     "ExternalLink"),
    (dict(config=lambda c: c["config"]["layers"][1].__setitem__("class_name", "Nope")),
     TypeError, "Could not locate class 'Nope'"),
    (dict(config=lambda c: c["config"]["layers"][1]["config"].__setitem__("lora_rank", 4)),
     ValueError, "does not support the Keras config key lora_rank=4"),
])
def test_damaged_keras_files(keras_file, change, error, match):
    if "h5" in change:
        data = edit_h5(zip_member(keras_file, "model.weights.h5"), change["h5"])
        rewrite_zip(keras_file, replace={"model.weights.h5": data})
    elif "config" in change:
        config = json.loads(zip_member(keras_file, "config.json"))
        change["config"](config)
        rewrite_zip(keras_file, replace={"config.json": json.dumps(config)})
    else:
        rewrite_zip(keras_file, **change)
    with pytest.raises(error, match=match):
        keras.models.load_model(keras_file)


@pytest.mark.parametrize("cut", [0.3, 0.7, 0.98])
def test_truncated_files(tmp_path, cut):
    for name, load in [("sequential_conv.keras", keras.models.load_model),
                       ("conv.weights.h5", lambda p: conv_model().load_weights(p)),
                       ("legacy_functional.h5", keras.models.load_model)]:
        path = str(tmp_path / name)
        with open(fixture(name), "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[: int(len(data) * cut)])
        with pytest.raises((DLE, ValueError)):
            load(path)


def test_not_keras_files(tmp_path):
    for name in ("junk.keras", "junk.weights.h5"):
        with open(tmp_path / name, "wb") as f:
            f.write(b"neither a zip nor HDF5")
    with pytest.raises(DLE, match="not a Keras file"):
        keras.models.load_model(str(tmp_path / "junk.keras"))
    with pytest.raises(DLE, match="not a Keras file"):
        conv_model().load_weights(str(tmp_path / "junk.weights.h5"))


def test_weights_file_mismatches(tmp_path):
    path = str(tmp_path / "w.weights.h5")
    shutil.copy(fixture("conv.weights.h5"), path)
    wider = keras.Sequential([keras.Input((8, 8, 3)), layers.Conv2D(6, 3)])
    with pytest.raises(ValueError, match="shape"):
        wider.load_weights(path)
    with pytest.warns(UserWarning, match="skip_mismatch"):
        wider.load_weights(path, skip_mismatch=True)
    with h5py.File(path, "r+") as f:
        del f["layers/dense/vars/1"]
    with pytest.raises(ValueError, match="expected 2 variables, the file has 1"):
        conv_model().load_weights(path)


def test_legacy_h5_mismatches(tmp_path):
    path = str(tmp_path / "l.h5")
    shutil.copy(fixture("legacy_functional.h5"), path)
    small = keras.Sequential([keras.Input((4,)), layers.Dense(2)])
    with pytest.raises(ValueError, match="Layer count mismatch"):
        small.load_weights(path)
    with h5py.File(path, "r+") as f:
        f.attrs["model_config"] = "{not json"
    with pytest.raises(DLE, match="model_config is not valid JSON"):
        keras.models.load_model(path)
    with h5py.File(path, "r+") as f:
        del f.attrs["model_config"]
    with pytest.raises(ValueError, match="No model config found"):
        keras.models.load_model(path)
    with h5py.File(path, "r+") as f:
        del f["model_weights/d1/d1/kernel"]
    with pytest.raises(DLE, match="d1/d1/kernel is missing"):
        legacy_model().load_weights(path)
