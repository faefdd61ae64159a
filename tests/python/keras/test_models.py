"""Sequential, functional and subclassed models: calls, weights, summary, predict."""
import re

import numpy as np
import pytest

import kiln as tf
from keras_helpers import randn

keras = tf.keras
layers = keras.layers


def _summary(model, **kwargs):
    lines = []
    model.summary(print_fn=lines.append, **kwargs)
    return "\n".join(lines)


# ---- Sequential ----

def test_sequential_with_input_shape_builds_and_runs():
    model = keras.Sequential([layers.Dense(4, activation="relu", input_shape=(3,)),
                              layers.Dense(2)], name="seq")
    assert model.built and len(model.layers) == 2 and model.count_params() == 16 + 10
    x = randn(5, 3)
    k1, b1, k2, b2 = model.get_weights()
    want = np.maximum(x @ k1 + b1, 0) @ k2 + b2
    np.testing.assert_allclose(model(tf.constant(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tf.function(model)(tf.constant(x)).numpy(), want, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(model.predict(x, batch_size=2), want, rtol=1e-5, atol=1e-6)
    text = _summary(model)
    assert text.startswith('Model: "seq"')
    assert re.search(r"Layer \(type\)\s+Output Shape\s+Param #", text)
    assert re.search(r"dense \(Dense\)\s+\(None, 4\)\s+16", text)
    assert re.search(r"dense_1 \(Dense\)\s+\(None, 2\)\s+10", text)
    assert "Total params: 26 (104.00 B)" in text
    assert "Trainable params: 26" in text and "Non-trainable params: 0" in text
    assert "Connected to" not in text


def test_sequential_add_build_pop_and_input():
    model = keras.Sequential()
    model.add(keras.Input((8, 8, 3)))
    model.add(layers.Conv2D(4, 3, padding="same"))
    model.add(layers.BatchNormalization())
    model.add(layers.GlobalAveragePooling2D())
    assert model.built and model.count_params() == 3 * 3 * 3 * 4 + 4 + 16
    assert [w.trainable for w in model.weights] == [True, True, True, True, False, False]
    assert model.get_layer(index=-1).name == "global_average_pooling2d"
    assert model.pop().name == "global_average_pooling2d" and len(model.layers) == 2
    assert model(tf.ones([1, 8, 8, 3])).shape == (1, 8, 8, 4)

    lazy = keras.Sequential([layers.Dense(3), layers.Dense(1)])
    assert not lazy.built
    with pytest.raises(ValueError, match="not yet been built"):
        lazy.summary()
    lazy.build((None, 5))
    assert lazy.count_params() == 18 + 4
    assert "(None, 1)" in _summary(lazy)

    called = keras.Sequential([layers.Dense(3)])
    assert called(tf.ones([2, 7])).shape == (2, 3) and called.count_params() == 24


def test_sequential_errors():
    with pytest.raises(TypeError, match="instance of class Layer"):
        keras.Sequential([lambda x: x])
    with pytest.raises(ValueError, match="unique names"):
        keras.Sequential([layers.Dense(1, name="d"), layers.Dense(1, name="d")])
    with pytest.raises(ValueError, match="input_shape"):
        keras.Sequential([layers.Dense(1)]).build()
    with pytest.raises(ValueError, match="no layers"):
        keras.Sequential()(tf.ones([1, 2]))
    m = keras.Sequential([layers.Dense(1)])
    m.add(layers.Dense(2))
    with pytest.raises(ValueError, match="first layer"):
        m.add(keras.Input((2,)))


# ---- functional ----

def _functional():
    inp = keras.Input(shape=(6, 6, 2), name="image")
    x = layers.Conv2D(4, 3, padding="same", use_bias=False, name="conv")(inp)
    x = layers.BatchNormalization(name="bn")(x)
    x = layers.Activation("relu", name="act")(x)
    y = layers.DepthwiseConv2D(3, padding="same", name="dw")(x)
    x = layers.add([x, y], name="res")
    x = layers.GlobalAveragePooling2D(name="gap")(x)
    out = layers.Dense(3, activation="softmax", name="head")(x)
    return keras.Model(inp, out, name="small")


def test_functional_model_matches_manual_layer_calls():
    model = _functional()
    assert [layer.name for layer in model.layers] == [
        "image", "conv", "bn", "act", "dw", "res", "gap", "head"]
    x = tf.constant(randn(2, 6, 6, 2))
    manual = x
    for name in ("conv", "bn", "act"):
        manual = model.get_layer(name)(manual)
    manual = model.get_layer("res")([manual, model.get_layer("dw")(manual)])
    manual = model.get_layer("head")(model.get_layer("gap")(manual))
    out = model(x)
    np.testing.assert_allclose(out.numpy(), manual.numpy(), rtol=1e-6)
    np.testing.assert_allclose(out.numpy().sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(tf.function(model)(x).numpy(), out.numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(model.predict(x.numpy(), batch_size=1), out.numpy(), rtol=1e-5,
                               atol=1e-6)
    assert model.inputs[0].shape == (None, 6, 6, 2) and model.outputs[0].shape == (None, 3)


def test_functional_weights_counts_and_set_weights():
    model = _functional()
    conv, bn, dw, head = 3 * 3 * 2 * 4, 4 * 4, 3 * 3 * 4 + 4, 4 * 3 + 3
    assert model.count_params() == conv + bn + dw + head
    assert sum(w.shape.num_elements() for w in model.non_trainable_weights) == 8
    assert len(model.trainable_weights) == 7 and len(model.weights) == 9
    values = [np.full(w.shape.as_list(), 0.5, np.float32) for w in model.weights]
    model.set_weights(values)
    for v in model.get_weights():
        np.testing.assert_array_equal(v, 0.5)


def test_functional_summary_lists_layers_shapes_params_and_connections():
    text = _summary(_functional())
    assert text.startswith('Model: "small"')
    assert re.search(r"Layer \(type\)\s+Output Shape\s+Param #\s+Connected to", text)
    assert re.search(r"image \(InputLayer\)\s+\(None, 6, 6, 2\)\s+0\s+\[\]", text)
    assert re.search(r"conv \(Conv2D\)\s+\(None, 6, 6, 4\)\s+72\s+image\[0\]\[0\]", text)
    assert re.search(r"res \(Add\)\s+\(None, 6, 6, 4\)\s+0\s+act\[0\]\[0\]\n\s+dw\[0\]\[0\]",
                     text)
    assert re.search(r"head \(Dense\)\s+\(None, 3\)\s+15\s+gap\[0\]\[0\]", text)
    assert "Total params: 143 (572.00 B)" in text
    assert "Trainable params: 135 (540.00 B)" in text
    assert "Non-trainable params: 8 (32.00 B)" in text
    assert "Trainable" in _summary(_functional(), show_trainable=True).splitlines()[2]
    with pytest.raises(NotImplementedError):
        _functional().summary(expand_nested=True)


def test_functional_multi_input_output_shared_layer_and_dicts():
    a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    shared = layers.Dense(3, name="shared")
    xa, xb = shared(a), shared(b)
    model = keras.Model([a, b], [layers.add([xa, xb]), layers.concatenate([xa, xb])])
    va, vb = randn(2, 4, seed=1), randn(2, 4, seed=2)
    k, bias = shared.get_weights()
    s, c = model([va, vb])
    np.testing.assert_allclose(s.numpy(), va @ k + vb @ k + 2 * bias, rtol=1e-5, atol=1e-6)
    assert c.shape == (2, 6)
    ps, pc = model.predict([va, vb], batch_size=1)
    np.testing.assert_allclose(ps, s.numpy(), rtol=1e-5, atol=1e-6)
    assert "multiple" in _summary(model) and "shared[1][0]" in _summary(model)
    named = keras.Model({"a": a, "b": b}, {"sum": layers.add([xa, xb])})
    out = named({"b": tf.constant(vb), "a": tf.constant(va)})
    np.testing.assert_allclose(out["sum"].numpy(), s.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="expects 2 input"):
        model(tf.constant(va))


def test_functional_custom_layers_lambda_arithmetic_and_nesting():
    class SumSquares(layers.Layer):  # no compute_output_shape: shapes come from a trace
        def call(self, x):
            return tf.reduce_sum(x * x, axis=-1, keepdims=True)

    inp = keras.Input((4,))
    sq = SumSquares()(inp)
    assert sq.shape == (None, 1)
    z = sq * 2.0 + 1.0
    lam = layers.Lambda(lambda t: t - 1.0)(z)
    inner = keras.Sequential([layers.Dense(2, input_shape=(1,))])
    out = inner(lam)
    model = keras.Model(inp, out)
    x = randn(3, 4)
    k, b = inner.get_weights()
    want = ((x * x).sum(-1, keepdims=True) * 2) @ k + b
    np.testing.assert_allclose(model(tf.constant(x)).numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tf.function(model)(tf.constant(x)).numpy(), want, rtol=1e-5,
                               atol=1e-5)
    assert model.count_params() == 4 and model.get_layer(inner.name) is inner


def test_functional_errors():
    a, b = keras.Input((3,)), keras.Input((3,))
    y = layers.Dense(2)(a)
    with pytest.raises(ValueError, match="Graph disconnected"):
        keras.Model(b, y)
    with pytest.raises(TypeError, match="Keras tensors"):
        keras.Model(a, tf.ones([1]))
    with pytest.raises(ValueError, match="inputs and outputs"):
        keras.Model(inputs=a)
    c = layers.Dense(2, name="dup")(a)
    with pytest.raises(ValueError, match="unique"):
        keras.Model(a, layers.Dense(2, name="dup")(c))
    model = keras.Model(a, y)
    with pytest.raises(ValueError, match="incompatible"):
        model(tf.ones([1, 4]))
    with pytest.raises(ValueError, match="No such layer"):
        model.get_layer("nope")
    with pytest.raises(ValueError, match="index"):
        model.get_layer(index=7)
    with pytest.raises(ValueError, match="batch_size"):
        model.predict(np.ones((2, 3)), batch_size=0)
    with pytest.raises(ValueError, match="same number of samples"):
        keras.Model([a, b], layers.add([a, b])).predict([np.ones((2, 3)), np.ones((3, 3))])
    with pytest.raises(TypeError, match="symbolic"):
        np.asarray(a)
    with pytest.raises(ValueError, match="shape"):
        keras.Input()


def test_model_input_conversion_numpy_float64_and_uint8():
    inp = keras.Input((2, 2, 3))
    model = keras.Model(inp, layers.Rescaling(0.5)(inp))
    out = model(np.ones((1, 2, 2, 3)))  # float64 NumPy, cast to the input's float32
    assert out.dtype == tf.float32
    np.testing.assert_array_equal(out.numpy(), 0.5)
    out8 = model(tf.constant(np.full((1, 2, 2, 3), 4, np.uint8)))
    np.testing.assert_array_equal(out8.numpy(), 2.0)
    f = tf.function(model)
    np.testing.assert_array_equal(f(np.ones((1, 2, 2, 3))).numpy(), 0.5)


# ---- subclassed ----

class Net(keras.Model):
    def __init__(self):
        super().__init__(name="net")
        self.conv = layers.Conv2D(3, 3, padding="same")
        self.bn = layers.BatchNormalization()
        self.pool = layers.GlobalAveragePooling2D()
        self.drop = layers.Dropout(0.5)
        self.head = layers.Dense(2)

    def call(self, x, training=None):
        x = self.pool(self.bn(self.conv(x)))
        return self.head(self.drop(x))


def test_subclassed_model_build_weights_summary_and_training():
    net = Net()
    net.build((None, 5, 5, 2))
    assert net.built and net.count_params() == (3 * 3 * 2 * 3 + 3) + 12 + (3 * 2 + 2)
    assert [layer.name for layer in net.layers] == ["conv2d", "batch_normalization",
                                                    "global_average_pooling2d", "dropout",
                                                    "dense"]
    text = _summary(net)
    assert re.search(r"conv2d \(Conv2D\)\s+multiple\s+57", text) and "Total params: 77" in text
    x = tf.constant(randn(4, 5, 5, 2))
    np.testing.assert_allclose(net(x).numpy(), net(x, training=False).numpy())
    np.testing.assert_allclose(tf.function(net)(x).numpy(), net(x).numpy(), rtol=1e-5,
                               atol=1e-6)
    assert len(net.submodules) == 5
    with pytest.raises(ValueError, match="input_shape"):
        Net().build()
    with pytest.raises(NotImplementedError, match="override call"):
        keras.Model()(tf.ones([1]))


def test_seed003_calling_pattern():
    """tf.function(model, jit_compile=...) called with float64 NumPy images."""
    model = _functional()
    x = np.random.default_rng(0).random((1, 6, 6, 2))
    eager = model(x).numpy()
    for jit in (None, False, True):
        np.testing.assert_allclose(tf.function(model, jit_compile=jit)(x).numpy(), eager,
                                   rtol=1e-5, atol=1e-6)


def test_sequential_built_from_input_shape_has_input_and_output_shapes():
    model = tf.keras.Sequential([tf.keras.layers.Embedding(20, 8, input_shape=(6,)),
                                 tf.keras.layers.LSTM(4), tf.keras.layers.Dense(2)])
    assert model.input_shape == (None, 6)
    assert model.output_shape == (None, 2)
    with pytest.raises(AttributeError, match="never been called"):
        tf.keras.Sequential([tf.keras.layers.Dense(3)]).output_shape
