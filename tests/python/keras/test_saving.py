"""Keras saving: model.save / load_model (.keras), save_weights / load_weights,
configs, custom objects, and damaged files."""
import json
import os
import shutil
import zipfile

import numpy as np
import pytest

import kiln as tf
from keras_helpers import randn

keras = tf.keras
layers = keras.layers
DLE = tf.errors.DataLossError
X = randn(16, 4)
Y = randn(16, 2, seed=1)


def predict(model, x=X):
    return model.predict(x, verbose=0)


def assert_same(a, b, x=X):
    np.testing.assert_allclose(predict(a, x), predict(b, x), rtol=1e-6, atol=1e-7)


def fit_losses(model, epochs=2):
    h = model.fit(X, Y, epochs=epochs, batch_size=8, shuffle=False, verbose=0)
    return h.history["loss"]


@keras.saving.register_keras_serializable(package="Test")
class Scale(layers.Layer):
    """A custom layer with a weight created in build()."""

    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.w = self.add_weight(name="w", shape=(input_shape[-1],), initializer="ones")

    def call(self, x):
        return x * self.w * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


@keras.saving.register_keras_serializable(package="Test")
def half_relu(x):
    return tf.nn.relu(x) * 0.5


@keras.saving.register_keras_serializable(package="Test")
class Net(keras.Model):
    """A subclassed model: its weights exist only after the first call."""

    def __init__(self, units=3, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.hidden = layers.Dense(units, activation="relu")
        self.out = layers.Dense(2)

    def call(self, x):
        return self.out(self.hidden(x))

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def sequential():
    model = keras.Sequential([keras.Input((4,)), layers.Dense(8, activation="relu"),
                              layers.Dense(2)])
    model.compile(keras.optimizers.Adam(0.01), "mse", metrics=["mae"])
    return model


def functional():
    a = keras.Input((4,), name="a")
    b = keras.Input((2,), name="b")
    h = layers.Dense(3, name="h")(a)
    g = layers.Dense(3, name="g")(a)
    merged = layers.add([h, g]) * 2.0 + h
    out = layers.Dense(2, name="out")(layers.Concatenate()([merged, b]))
    aux = layers.Dense(1, name="aux")(h)
    return keras.Model({"a": a, "b": b}, [out, aux])


# ---- .keras round trips ----

def test_sequential_round_trip_keeps_predictions_and_training(tmp_path):
    model = sequential()
    fit_losses(model)
    path = str(tmp_path / "seq.keras")
    model.save(path)
    with zipfile.ZipFile(path) as z:
        assert sorted(z.namelist()) == ["config.json", "metadata.json", "model.weights.h5"]
        config = json.loads(z.read("config.json"))
    assert config["class_name"] == "Sequential"
    assert [e["class_name"] for e in config["config"]["layers"]] == ["InputLayer", "Dense",
                                                                     "Dense"]
    assert config["compile_config"]["loss"] == "mse"
    loaded = keras.models.load_model(path)
    assert_same(model, loaded)
    assert type(loaded.optimizer).__name__ == "Adam" and loaded.optimizer.learning_rate == 0.01
    assert int(loaded.optimizer.iterations.numpy()) == 4
    # The optimizer's moments come back too: training goes on identically.
    np.testing.assert_allclose(fit_losses(loaded), fit_losses(model), rtol=1e-5)
    assert loaded.metrics_names == model.metrics_names
    assert_same(model, loaded)


def test_functional_round_trip_with_op_layers_and_several_inputs(tmp_path):
    model = functional()
    data = {"a": X, "b": randn(16, 2, seed=3)}
    path = str(tmp_path / "f.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert [layer.name for layer in loaded.layers] == [layer.name for layer in model.layers]
    for got, want in zip(loaded.predict(data, verbose=0), model.predict(data, verbose=0)):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    traced = tf.function(loaded)({k: tf.constant(v) for k, v in data.items()})
    np.testing.assert_allclose(traced[0].numpy(), model.predict(data, verbose=0)[0], rtol=1e-6)


def test_functional_config_is_keras_3_layout():
    config = functional().get_config()
    assert config["input_layers"] == {"a": ["a", 0, 0], "b": ["b", 0, 0]}
    assert config["output_layers"] == [["out", 0, 0], ["aux", 0, 0]]
    h = next(e for e in config["layers"] if e["name"] == "h")
    arg = h["inbound_nodes"][0]["args"][0]
    assert arg["class_name"] == "__keras_tensor__"
    assert arg["config"]["keras_history"] == ["a", 0, 0]
    rebuilt = keras.Model.from_config(config)
    assert len(rebuilt.weights) == len(functional().weights)
    json.dumps(config)


def test_shared_layer_nodes_are_rebuilt(tmp_path):
    inp = keras.Input((4,))
    shared = layers.Dense(4, name="shared")
    out = shared(shared(inp))
    model = keras.Model(inp, out)
    path = str(tmp_path / "shared.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert len(loaded.weights) == 2
    assert_same(model, loaded)


def test_custom_layer_and_function_round_trip(tmp_path):
    model = keras.Sequential([keras.Input((4,)), Scale(3.0),
                              layers.Dense(2, activation=half_relu)])
    model.compile("sgd", "mse")
    fit_losses(model, 1)
    path = str(tmp_path / "custom.keras")
    model.save(path)
    entry = json.loads(zipfile.ZipFile(path).read("config.json"))["config"]["layers"][1]
    assert entry["registered_name"] == "Test>Scale"
    loaded = keras.models.load_model(path)
    assert isinstance(loaded.layers[0], Scale) and loaded.layers[0].factor == 3.0
    assert loaded.layers[1].activation is half_relu
    assert_same(model, loaded)


def test_unregistered_custom_layer_needs_custom_objects(tmp_path):
    class Doubler(layers.Layer):
        def call(self, x):
            return x * 2.0

    model = keras.Sequential([keras.Input((4,)), Doubler(), layers.Dense(1)])
    path = str(tmp_path / "u.keras")
    model.save(path)
    with pytest.raises(TypeError, match="Could not locate class 'Doubler'"):
        keras.models.load_model(path)
    loaded = keras.models.load_model(path, custom_objects={"Doubler": Doubler})
    assert_same(model, loaded)
    with keras.saving.custom_object_scope({"Doubler": Doubler}):
        assert_same(model, keras.models.load_model(path))


def test_subclassed_model_is_built_from_its_build_config(tmp_path):
    model = Net(5)
    model.compile(keras.optimizers.Adam(0.01), "mse")
    fit_losses(model, 1)
    path = str(tmp_path / "net.keras")
    model.save(path)
    config = json.loads(zipfile.ZipFile(path).read("config.json"))
    assert config["build_config"] == {"input_shape": [None, 4]}
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, Net) and loaded.units == 5 and len(loaded.weights) == 4
    assert int(loaded.optimizer.iterations.numpy()) == 2
    assert_same(model, loaded)
    np.testing.assert_allclose(fit_losses(loaded, 1), fit_losses(model, 1), rtol=1e-5)


def test_unbuilt_subclassed_model_fills_on_first_call(tmp_path):
    model = Net(5)
    path = str(tmp_path / "w.weights.h5")
    model(tf.constant(X))
    model.save_weights(path)
    lazy = Net(5)
    lazy.load_weights(path)  # no weights yet: assigned when the layers are built
    assert not lazy.weights
    assert_same(model, lazy)


@keras.saving.register_keras_serializable(package="Test")
class GuideNet(keras.Model):
    """The checkpoint guide's model: no constructor arguments at all."""

    def __init__(self):
        super().__init__()
        self.l1 = layers.Dense(5)

    def call(self, x):
        return self.l1(x)


@keras.saving.register_keras_serializable(package="Test")
class Apply(layers.Layer):
    """A layer whose get_config holds a function object."""

    def __init__(self, fn=None, **kwargs):
        super().__init__(**kwargs)
        self.fn = fn

    def call(self, x):
        return self.fn(x)

    def get_config(self):
        return {**super().get_config(), "fn": self.fn}

    @classmethod
    def from_config(cls, config):
        config["fn"] = keras.saving.get_registered_object(config["fn"]["registered_name"])
        return cls(**config)


def test_model_without_arguments_and_function_objects_in_configs(tmp_path):
    def triple(x):
        return x * 3.0

    model = GuideNet()
    model(tf.constant(X))
    path = str(tmp_path / "guide.keras")
    model.save(path)
    assert_same(model, keras.models.load_model(path))
    seq = keras.Sequential([keras.Input((4,)), Apply(triple), layers.Dense(1)])
    seq.save(path)
    loaded = keras.models.load_model(path, custom_objects={"triple": triple})
    assert loaded.layers[0].fn is triple
    assert_same(seq, loaded)


def test_lambda_layers_need_safe_mode_off(tmp_path):
    model = keras.Sequential([keras.Input((4,)), layers.Lambda(lambda t: t * 2.0 + 1.0),
                              layers.Dense(1)])
    path = str(tmp_path / "lambda.keras")
    model.save(path)
    with pytest.raises(ValueError, match="safe_mode=False"):
        keras.models.load_model(path)
    assert_same(model, keras.models.load_model(path, safe_mode=False))


def test_to_json_and_model_from_json():
    model = sequential()
    rebuilt = keras.models.model_from_json(model.to_json())
    assert [type(layer) for layer in rebuilt.layers] == [type(layer)
                                                         for layer in model.layers]
    assert rebuilt.count_params() == model.count_params()
    assert keras.Sequential.from_config(model.get_config()).count_params() == 58


def test_compile_false_and_uncompiled_models(tmp_path):
    model = sequential()
    path = str(tmp_path / "m.keras")
    model.save(path)
    assert not keras.models.load_model(path, compile=False).compiled
    plain = keras.Sequential([keras.Input((4,)), layers.Dense(2)])
    plain.save(path)
    loaded = keras.saving.load_model(path)
    assert not loaded.compiled
    assert_same(plain, loaded)


def test_unserializable_loss_saves_an_uncompiled_model(tmp_path):
    model = keras.Sequential([keras.Input((4,)), layers.Dense(2)])
    model.compile("sgd", loss=lambda y, p: tf.reduce_mean((y - p) ** 2))
    path = str(tmp_path / "m.keras")
    with pytest.warns(UserWarning, match="cannot be saved"):
        model.save(path)
    assert not keras.models.load_model(path).compiled


# ---- weights ----

def test_save_weights_h5_and_load_weights(tmp_path):
    model = sequential()
    fit_losses(model, 1)
    path = str(tmp_path / "w.weights.h5")
    model.save_weights(path)
    other = sequential()
    assert other.load_weights(path) is None
    assert_same(model, other)
    other.load_weights(str(tmp_path / "w.weights.h5"))
    model.save(str(tmp_path / "full.keras"))
    third = sequential()
    third.load_weights(str(tmp_path / "full.keras"))  # weights of a .keras file
    assert_same(model, third)


def test_load_weights_mismatch(tmp_path):
    path = str(tmp_path / "w.weights.h5")
    sequential().save_weights(path)
    wider = keras.Sequential([keras.Input((4,)), layers.Dense(9), layers.Dense(2)])
    with pytest.raises(ValueError, match="shape"):
        wider.load_weights(path)
    deeper = keras.Sequential([keras.Input((4,)), layers.Dense(8), layers.Dense(2),
                               layers.Dense(1)])
    with pytest.raises(ValueError, match="expected 2 variables, the file has 0"):
        deeper.load_weights(path)
    with pytest.warns(UserWarning, match="skip_mismatch"):
        deeper.load_weights(path, skip_mismatch=True)
    with pytest.warns(UserWarning, match="skipped"):
        wider.load_weights(path, skip_mismatch=True)


def test_load_weights_into_an_unbuilt_model(tmp_path):
    model = keras.Sequential([layers.Dense(3), layers.Dense(1)])
    model.build((None, 4))
    path = str(tmp_path / "w.weights.h5")
    model.save_weights(path)
    lazy = keras.Sequential([layers.Dense(3), layers.Dense(1)])
    lazy.load_weights(path)  # assigned when the layers are built
    assert_same(model, lazy)


def test_save_weights_checkpoint_prefix(tmp_path):
    model = Net()
    model(tf.constant(X))
    prefix = str(tmp_path / "easy_checkpoint")
    model.save_weights(prefix)
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix
    assert "hidden/_kernel/.ATTRIBUTES/VARIABLE_VALUE" in dict(tf.train.list_variables(prefix))
    fresh = Net()
    status = fresh.load_weights(prefix)
    assert_same(model, fresh)
    status.assert_consumed()


# ---- paths and damaged files ----

def test_bad_extensions(tmp_path):
    model = sequential()
    with pytest.raises(ValueError, match="Invalid filepath extension"):
        model.save(str(tmp_path / "model"))
    with pytest.raises(NotImplementedError, match="HDF5"):
        model.save(str(tmp_path / "model.h5"))
    with pytest.raises(ValueError, match="weights.h5"):
        model.save_weights(str(tmp_path / "w.keras"))
    with pytest.raises(ValueError, match="File format not supported"):
        keras.models.load_model(str(tmp_path / "model.pb"))
    with pytest.raises(FileNotFoundError, match="File not found"):
        keras.models.load_model(str(tmp_path / "missing.keras"))
    path = str(tmp_path / "m.keras")
    model.save(path)
    with pytest.raises(FileExistsError):
        model.save(path, overwrite=False)


def rewrite(path, replace=None, drop=None, extra=None):
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members.update(replace or {})
    members.pop(drop, None)
    members.update(extra or {})
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)


V1 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures",
                  "tf_written", "keras", "kiln_v1")


@pytest.fixture
def saved(tmp_path):
    """A copy of a .keras file in kiln's earlier zip format (still read)."""
    path = str(tmp_path / "m.keras")
    shutil.copy(os.path.join(V1, "model.keras"), path)
    return path


def meta(**changes):
    doc = {"format": "kiln.keras", "version": 1}
    doc.update(changes)
    return json.dumps(doc)


@pytest.mark.parametrize("change, error, match", [
    (dict(replace={"config.json": b"{oops"}), DLE, "config.json is not valid JSON"),
    (dict(replace={"config.json": b"[1]"}), DLE, "does not describe a model"),
    (dict(drop="model.weights.data"), DLE, "model.weights.data is missing"),
    (dict(drop="metadata.json"), DLE, "metadata.json is missing"),
    (dict(replace={"metadata.json": meta(version=9)}), tf.errors.UnimplementedError,
     "version 9 is newer"),
    (dict(replace={"metadata.json": meta(format="keras")}), DLE, "bad metadata"),
    (dict(replace={"model.weights.data": b"\x00" * 8}), DLE, "not the expected size"),
    (dict(replace={"model.weights.index": b"{]"}), DLE, "not valid JSON"),
    (dict(replace={"config.json": json.dumps({"class_name": "Nope", "config": {}})}),
     TypeError, "Could not locate class 'Nope'"),
])
def test_damaged_kiln_v1_files(saved, change, error, match):
    rewrite(saved, **change)
    with pytest.raises(error, match=match):
        keras.models.load_model(saved)


def test_not_a_zip_and_truncated_zip(tmp_path):
    junk = str(tmp_path / "junk.keras")
    with open(junk, "wb") as f:
        f.write(b"not a zip file at all")
    with pytest.raises(DLE, match="not a Keras file"):
        keras.models.load_model(junk)
    path = str(tmp_path / "m.keras")
    sequential().save(path)
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])
    with pytest.raises(DLE):
        keras.models.load_model(path)


def test_corrupted_weights_in_a_kiln_v1_weights_file(tmp_path):
    path = str(tmp_path / "w.weights.h5")
    shutil.copy(os.path.join(V1, "model.weights.h5"), path)
    with zipfile.ZipFile(path) as z:
        data = bytearray(z.read("model.weights.data"))
    data[3] ^= 0xFF
    rewrite(path, replace={"model.weights.data": bytes(data)})
    model = keras.Sequential([keras.Input((4,)), layers.Dense(8), layers.Dense(2)])
    with pytest.raises(DLE, match="checksum mismatch"):
        model.load_weights(path)


def test_save_is_atomic(tmp_path, monkeypatch):
    path = str(tmp_path / "m.keras")
    model = sequential()
    model.save(path)
    before = open(path, "rb").read()

    def crash(*args, **kwargs):
        raise RuntimeError("crash while saving")
    monkeypatch.setattr(zipfile.ZipFile, "writestr", crash)
    with pytest.raises(RuntimeError, match="crash while saving"):
        model.save(path)
    assert open(path, "rb").read() == before and os.listdir(tmp_path) == ["m.keras"]


def test_registration_api():
    assert keras.saving.get_registered_name(Scale) == "Test>Scale"
    assert keras.saving.get_registered_object("Test>Scale") is Scale
    assert keras.utils.register_keras_serializable is keras.saving.register_keras_serializable
    assert keras.saving.get_custom_objects()["Test>half_relu"] is half_relu
    with pytest.raises(ValueError, match="get_config"):
        keras.saving.register_keras_serializable()(type("NoConfig", (), {}))

    def plus_one(x):
        return x + 1.0
    keras.utils.register_keras_serializable(package="Pkg", name="inc")(plus_one)
    assert keras.saving.get_registered_name(plus_one) == "Pkg>inc"
    assert keras.saving.get_registered_name(len) == "len"
    assert keras.saving.get_registered_object("nothing") is None
    entry = keras.saving.serialize_keras_object(Scale(2.0, name="s"))
    assert entry["class_name"] == "Scale" and entry["config"]["factor"] == 2.0
    assert isinstance(keras.saving.deserialize_keras_object(entry), Scale)
