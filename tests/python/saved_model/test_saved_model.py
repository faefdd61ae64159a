"""kiln.saved_model: Python save -> Python load round trips (modules, functions with
several traces, Keras models with BatchNormalization, control flow, the seed
layers), signatures, re-saving after training, and the error paths."""
import os

import numpy as np
import pytest

import kiln as tf
from kiln import keras


class Dense(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 4, name="w")
        self.b = tf.Variable([0.5, -1.0], name="b")
        self.step = tf.Variable(0, trainable=False, name="step")

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def __call__(self, x):
        self.step.assign_add(1)
        return tf.nn.relu(tf.matmul(x, self.w) + self.b)


X = np.array([[1, 2, 3], [-1, 0.5, 2]], np.float32)


def test_module_round_trip_with_default_signature(tmp_path):
    m = Dense()
    want = m(X).numpy()
    tf.saved_model.save(m, str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["saved_model.pb", "variables"]
    r = tf.saved_model.load(str(tmp_path))
    np.testing.assert_allclose(r(X).numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(r.w.numpy(), m.w.numpy())
    assert r.step.numpy() == 2  # saved after one call; the loaded call added one
    assert {v.name for v in r.trainable_variables} == {"w:0", "b:0"}
    out = r.signatures["serving_default"](x=tf.constant(X))
    assert list(out) == ["output_0"]
    np.testing.assert_allclose(out["output_0"].numpy(), want, rtol=1e-6)
    sig = r.signatures["serving_default"].structured_input_signature
    assert sig[1]["x"].shape.as_list() == [None, 3]
    assert r.signatures["serving_default"].structured_outputs["output_0"].shape.as_list() == \
        [None, 2]
    with pytest.raises(TypeError, match="missing inputs: x"):
        r.signatures["serving_default"]()
    with pytest.raises(TypeError, match="unexpected keyword argument 'y'"):
        r.signatures["serving_default"](x=X, y=X)


def test_every_trace_is_saved_and_calls_dispatch(tmp_path):
    class M(tf.Module):
        def __init__(self):
            super().__init__()
            self.scale = tf.Variable(2.0)

        @tf.function
        def f(self, x, mode="mul"):
            return x * self.scale if mode == "mul" else x + self.scale

    m = M()
    a, b = m.f(tf.constant([1.0, 2.0])), m.f(tf.constant([[1.0]]), mode="add")
    m.f(tf.constant(3.0))
    tf.saved_model.save(m, str(tmp_path))
    r = tf.saved_model.load(str(tmp_path))
    assert len(r.f.concrete_functions) == 3
    np.testing.assert_array_equal(r.f(tf.constant([1.0, 2.0])).numpy(), a.numpy())
    np.testing.assert_array_equal(r.f(tf.constant([[1.0]]), mode="add").numpy(), b.numpy())
    np.testing.assert_array_equal(r.f(tf.constant(5.0)).numpy(), 10.0)
    with pytest.raises(ValueError, match="Could not find matching concrete function"):
        r.f(tf.constant([1, 2]))  # int32: never traced
    with pytest.raises(ValueError, match="Could not find matching concrete function"):
        r.f(tf.constant([1.0]), mode="pow")


def test_explicit_signatures_dict_outputs_and_nested_objects(tmp_path):
    root = tf.Module()
    root.inner = Dense()
    root.layers = [tf.Variable(1.0), {"k": tf.Variable([3, 4])}]

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="features")])
    def predict(features):
        y = root.inner(features)
        return {"scores": y, "best": tf.argmax(y, axis=1)}

    root.predict = predict
    tf.saved_model.save(root, str(tmp_path), signatures={"classify": predict,
                                                         "plain": predict.get_concrete_function()})
    r = tf.saved_model.load(str(tmp_path))
    assert sorted(r.signatures) == ["classify", "plain"]
    out = r.signatures["classify"](features=X)
    assert sorted(out) == ["best", "scores"]
    np.testing.assert_array_equal(out["best"].numpy(), predict(X)["best"].numpy())
    assert isinstance(r.layers, list) and r.layers[0].numpy() == 1.0
    np.testing.assert_array_equal(r.layers[1]["k"].numpy(), [3, 4])
    np.testing.assert_array_equal(r.inner.w.numpy(), root.inner.w.numpy())


def test_control_flow_and_tensor_array(tmp_path):
    class Loop(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def cumsum_squares(self, x):
            ta = tf.TensorArray(tf.float32, size=tf.shape(x)[0])
            total = tf.constant(0.0)
            for i in tf.range(tf.shape(x)[0]):
                v = x[i]
                if v > 0:
                    total += v * v
                else:
                    total -= 1.0
                ta = ta.write(i, total)
            return ta.stack()

    m = Loop()
    x = np.array([1, -2, 3, 0.5], np.float32)
    want = m.cumsum_squares(x).numpy()
    tf.saved_model.save(m, str(tmp_path))
    r = tf.saved_model.load(str(tmp_path))
    np.testing.assert_allclose(r.cumsum_squares(x).numpy(), want)
    np.testing.assert_allclose(r.signatures["serving_default"](x=x)["output_0"].numpy(), want)


def _bn_model():
    inputs = keras.Input(shape=(4,), name="features")
    h = keras.layers.Dense(8, activation="relu")(inputs)
    h = keras.layers.BatchNormalization()(h)
    outputs = keras.layers.Dense(3, activation="softmax", name="probs")(h)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return model


def test_keras_model_with_batch_norm_fine_tuned_and_saved_again(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = rng.integers(0, 3, size=64)
    model = _bn_model()
    model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    tf.saved_model.save(model, str(tmp_path))
    r = tf.saved_model.load(str(tmp_path))
    sig = r.signatures["serving_default"]
    out = sig(features=x[:5])
    assert list(out) == ["probs"]
    np.testing.assert_allclose(out["probs"].numpy(), model(x[:5], training=False).numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r(x[:5]).numpy(), out["probs"].numpy())  # the model's __call__
    before = out["probs"].numpy()
    model.fit(x, y, epochs=2, batch_size=16, verbose=0)  # fine-tune, save again
    tf.saved_model.save(model, str(tmp_path))
    again = tf.saved_model.load(str(tmp_path)).signatures["serving_default"](features=x[:5])
    np.testing.assert_allclose(again["probs"].numpy(), model(x[:5], training=False).numpy(),
                               rtol=1e-5, atol=1e-6)
    assert not np.allclose(again["probs"].numpy(), before)
    # The first load is unaffected by the second save.
    np.testing.assert_allclose(sig(features=x[:5])["probs"].numpy(), before)


def test_keras_model_without_input_shape_is_an_error(tmp_path):
    model = keras.Sequential([keras.layers.Dense(2)])
    with pytest.raises(ValueError, match="input shape is unknown"):
        tf.saved_model.save(model, str(tmp_path))


def test_seed000_charunpack_layer(tmp_path):
    from tests.python.seeds.test_seed000_charunpack import CharUnpack
    layer = CharUnpack()
    fn = tf.function(layer.call, input_signature=[tf.TensorSpec([None, 4], tf.uint8)])
    root = tf.Module()
    root.unpack = fn
    data = np.array([[1, 2, 255, 128], [0, 7, 16, 3]], np.uint8)
    want = fn(data).numpy()
    tf.saved_model.save(root, str(tmp_path))
    r = tf.saved_model.load(str(tmp_path))
    np.testing.assert_array_equal(r.signatures["serving_default"](inputs=data)["output_0"].numpy(),
                                  want)
    np.testing.assert_array_equal(r.unpack(data).numpy(), want)


def test_jit_compile_function_round_trip(tmp_path):
    root = tf.Module()
    root.f = tf.function(lambda x: tf.tanh(x) * 2.0 + 1.0, jit_compile=True,
                         input_signature=[tf.TensorSpec([None], tf.float32)])
    x = np.linspace(-2, 2, 9).astype(np.float32)
    want = root.f(x).numpy()
    tf.saved_model.save(root, str(tmp_path))
    r = tf.saved_model.load(str(tmp_path))
    np.testing.assert_allclose(r.f(x).numpy(), want, rtol=1e-6)
    assert r.f.concrete_functions[0]._cf._jit_compile


def test_what_cannot_be_saved(tmp_path):
    root = tf.Module()
    root.f = tf.function(lambda x: tf.py_function(lambda a: a * 2, [x], tf.float32),
                         input_signature=[tf.TensorSpec([2], tf.float32)])
    with pytest.raises(tf.errors.InvalidArgumentError, match="runs without Python"):
        tf.saved_model.save(root, str(tmp_path / "a"))
    g = tf.function(lambda x: x + 1)
    with pytest.raises(ValueError, match="needs an input_signature"):
        tf.saved_model.save(tf.Module(), str(tmp_path / "b"), signatures=g)
    with pytest.raises(ValueError, match="Expected an object"):
        tf.saved_model.save(3, str(tmp_path / "c"))


def test_damaged_exports_are_clear_errors(tmp_path):
    m = Dense()
    tf.saved_model.save(m, str(tmp_path))
    with pytest.raises(tf.errors.NotFoundError):
        tf.saved_model.load(str(tmp_path / "missing"))
    data = tmp_path / "variables" / "variables.data-00000-of-00001"
    raw = bytearray(data.read_bytes())
    raw[3] ^= 1
    data.write_bytes(bytes(raw))
    with pytest.raises(tf.errors.DataLossError, match="checksum"):
        tf.saved_model.load(str(tmp_path))
    pb = tmp_path / "saved_model.pb"
    pb.write_bytes(pb.read_bytes()[:100])
    with pytest.raises(tf.errors.DataLossError, match="truncated or corrupt"):
        tf.saved_model.load(str(tmp_path))


def test_keras_model_variables_are_restored(tmp_path):
    model = _bn_model()
    model(np.zeros((1, 4), np.float32))
    tf.saved_model.save(model, str(tmp_path))
    r = tf.saved_model.load(str(tmp_path))
    want = sorted((v.shape.as_list(), float(np.sum(v.numpy()))) for v in model.weights)
    got = sorted((v.shape.as_list(), float(np.sum(v.numpy()))) for v in r.variables)
    assert got == want
    assert len(r.trainable_variables) == len(model.trainable_weights)


def test_seed001_variables_updated_by_the_saved_function(tmp_path):
    class Counter(tf.Module):
        def __init__(self):
            super().__init__()
            self.count = tf.Variable(0)

        @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
        def add(self, n):
            self.count.assign_add(n)
            return self.count.read_value()

    c = Counter()
    c.add(tf.constant(2))
    tf.saved_model.save(c, str(tmp_path))
    r = tf.saved_model.load(str(tmp_path))
    assert r.count.numpy() == 2
    assert r.add(tf.constant(3)).numpy() == 5 and r.count.numpy() == 5
    assert r.signatures["serving_default"](n=tf.constant(1))["output_0"].numpy() == 6
    assert c.count.numpy() == 2  # the original is untouched


def test_seed001_variable_passed_as_an_argument(tmp_path):
    @tf.function
    def add(v, x):
        v.assign_add(x)
        return v.read_value()

    root = tf.Module()
    root.v = tf.Variable(1.0)
    root.add = add
    add(root.v, tf.constant(2.0))
    tf.saved_model.save(root, str(tmp_path))
    r = tf.saved_model.load(str(tmp_path))
    assert r.v.numpy() == 3.0
    assert r.add(r.v, tf.constant(0.5)).numpy() == 3.5 and r.v.numpy() == 3.5
    with pytest.raises(ValueError, match="Could not find matching concrete function"):
        r.add(tf.Variable(1.0), tf.constant(0.5))  # another variable: never traced


def test_seed002_dynamic_rnn(tmp_path):
    def rnn_step(inp, state):
        return tf.tanh(inp + state)

    @tf.function
    def dynamic_rnn(rnn_step, input_data, initial_state):
        input_data = tf.transpose(input_data, [1, 0, 2])
        max_seq_len = input_data.shape[0]
        states = tf.TensorArray(tf.float32, size=max_seq_len)
        state = initial_state
        for i in tf.range(max_seq_len):
            state = rnn_step(input_data[i], state)
            states = states.write(i, state)
        return tf.transpose(states.stack(), [1, 0, 2])

    root = tf.Module()
    root.rnn = tf.function(lambda x, s: dynamic_rnn(rnn_step, x, s), input_signature=[
        tf.TensorSpec([None, 3, 4], tf.float32), tf.TensorSpec([None, 4], tf.float32)])
    x = np.random.default_rng(0).random((2, 3, 4), np.float32)
    s = np.zeros((2, 4), np.float32)
    want = root.rnn(x, s).numpy()
    tf.saved_model.save(root, str(tmp_path))
    r = tf.saved_model.load(str(tmp_path))
    np.testing.assert_allclose(r.rnn(x, s).numpy(), want, rtol=1e-6)


def test_seed003_efficientnetv2s(tmp_path):
    model = keras.applications.EfficientNetV2S(weights=None, input_shape=(64, 64, 3))
    x = np.random.default_rng(0).random((2, 64, 64, 3), np.float32)
    # Graph mode, as the export runs (eager differs by float rounding, ~1e-5).
    want = tf.function(lambda v: model(v, training=False))(x).numpy()
    tf.saved_model.save(model, str(tmp_path))
    sig = tf.saved_model.load(str(tmp_path)).signatures["serving_default"]
    (key,) = sig.structured_input_signature[1]
    out = sig(**{key: x})
    assert list(out) == ["predictions"]
    np.testing.assert_allclose(out["predictions"].numpy(), want, rtol=1e-5, atol=1e-8)


def test_subclassed_model_and_layer_saved_after_one_call(tmp_path):
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.d1 = keras.layers.Dense(4, activation="relu")
            self.d2 = keras.layers.Dense(2)

        def call(self, x, training=False):
            return self.d2(self.d1(x))

    net = Net()
    x = np.random.default_rng(0).random((3, 5), np.float32)
    want = net(x).numpy()
    tf.saved_model.save(net, str(tmp_path / "net"))
    r = tf.saved_model.load(str(tmp_path / "net"))
    np.testing.assert_allclose(r(x).numpy(), want, rtol=1e-6)
    (out,) = r.signatures["serving_default"](inputs=x).values()
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    assert len(r.variables) == 4

    from tests.python.seeds.test_seed000_charunpack import CharUnpack
    layer = CharUnpack()
    data = np.array([[1, 2, 255, 128]], np.uint8)
    bits = layer(data).numpy()
    tf.saved_model.save(layer, str(tmp_path / "layer"))
    r = tf.saved_model.load(str(tmp_path / "layer"))
    np.testing.assert_array_equal(r(np.array([[1, 2, 255, 128], [0, 0, 0, 1]], np.uint8))[:1],
                                  bits)
    assert r.signatures == {}  # a layer gets no default signature, as in TensorFlow


def test_keras_model_export_serves_and_keeps_variable_lists(tmp_path, capsys):
    """Keras 3's model.export: a `serve` endpoint, the serving_default signature
    (a dict), the variable lists; TensorFlow 2.21 runs the same export in
    `make test-peers` (tests/peers/write_kiln_saved_models.py, keras_export)."""
    L = keras.layers
    model = keras.Sequential([keras.Input((5, 3)), L.LSTM(4), L.Dense(2)])
    x = np.random.RandomState(0).randn(2, 5, 3).astype(np.float32)
    model.export(str(tmp_path / "m"))
    assert "Saved artifact at" in capsys.readouterr().out
    r = tf.saved_model.load(str(tmp_path / "m"))
    np.testing.assert_allclose(r.serve(x).numpy(), model(x).numpy(), rtol=1e-6, atol=1e-7)
    key = model.inputs[0].name  # the signature's input key: the Input's name
    (out,) = r.signatures["serving_default"](**{key: tf.constant(x)}).values()
    np.testing.assert_allclose(out.numpy(), model(x).numpy(), rtol=1e-6, atol=1e-7)
    assert len(r.variables) == len(model.variables) == 5
    assert len(r.trainable_variables) == 5
    model.export(str(tmp_path / "q"), verbose=False)
    assert capsys.readouterr().out == ""
    with pytest.raises(ValueError, match="format"):
        model.export(str(tmp_path / "o"), format="litert")

    class Sub(keras.Model):
        def call(self, x):
            return x * 2.0
    with pytest.raises(ValueError, match="input shape is unknown"):
        Sub().export(str(tmp_path / "s"))
    r = Sub()
    r.export(str(tmp_path / "t"), verbose=False,
             input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    assert tf.saved_model.load(str(tmp_path / "t")).serve(tf.ones([1, 3])).numpy().tolist() == [
        [2.0, 2.0, 2.0]]


def test_save_makes_missing_parent_folders_and_names_a_file_in_the_way(tmp_path):
    class Twice(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def __call__(self, x):
            return x * 2.0

    path = tmp_path / "a" / "b" / "model"  # TensorFlow's save makes the parents too
    tf.saved_model.save(Twice(), str(path))
    assert np.allclose(tf.saved_model.load(str(path))(tf.constant([1.0, 2.0])), [2.0, 4.0])
    (tmp_path / "file").write_text("")
    with pytest.raises(tf.errors.FailedPreconditionError, match="cannot create directory"):
        tf.saved_model.save(Twice(), str(tmp_path / "file" / "model"))
