"""kiln.keras.activations against NumPy, and get()/serialize()."""
import math

import numpy as np
import pytest

import kiln as tf
from keras_helpers import randn

keras = tf.keras
act = keras.activations
_erf = np.vectorize(math.erf)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


REFS = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "swish": lambda x: x / (1 + np.exp(-x)),
    "silu": lambda x: x / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "softmax": _softmax,
    "log_softmax": lambda x: np.log(_softmax(x)),
    "gelu": lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))),
    "linear": lambda x: x,
    "elu": lambda x: np.where(x > 0, x, np.expm1(x)),
    "selu": lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)),
    "softplus": _softplus,
    "softsign": lambda x: x / (1 + np.abs(x)),
    "hard_sigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,  # Keras 3's, not Keras 2's
    "hard_silu": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "exponential": np.exp,
    "leaky_relu": lambda x: np.where(x > 0, x, 0.2 * x),
    "mish": lambda x: x * np.tanh(_softplus(x)),
}


@pytest.mark.parametrize("name", sorted(REFS))
def test_activation_matches_numpy_eager_and_in_function(name):
    x = randn(3, 5) * 4
    fn = act.get(name)
    want = REFS[name](x.astype(np.float64))
    np.testing.assert_allclose(np.asarray(fn(tf.constant(x))), want, rtol=1e-5, atol=1e-5)
    traced = tf.function(lambda t: fn(t))(tf.constant(x))
    np.testing.assert_allclose(traced.numpy(), want, rtol=1e-5, atol=1e-5)
    assert act.serialize(fn) in (name, "swish" if name == "silu" else name)


def test_relu_options_and_gelu_approximate():
    x = np.linspace(-4, 8, 25).astype(np.float32)
    t = tf.constant(x)
    np.testing.assert_allclose(act.relu(t, max_value=5.0).numpy(), np.clip(x, 0, 5))
    np.testing.assert_allclose(act.relu(t, negative_slope=0.1).numpy(),
                               np.where(x > 0, x, 0.1 * x), rtol=1e-6)
    np.testing.assert_allclose(act.relu(t, threshold=1.0).numpy(), np.where(x > 1, x, 0))  # Keras: 0 at it
    approx = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(act.gelu(t, approximate=True).numpy(), approx, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(act.softmax(tf.constant(randn(2, 3)), axis=0).numpy(),
                               _softmax(randn(2, 3), axis=0), rtol=1e-6)


def test_hard_sigmoid_and_hard_silu_are_keras_3s():
    x = np.array([-4, -3, -2.5, -1, 0, 0.5, 1, 2.5, 3, 4], np.float32)
    # written down from TF 2.21's keras.activations
    want = [0, 0, 0.08333334, 0.33333334, 0.5, 0.5833333, 0.6666667, 0.9166667, 1, 1]
    np.testing.assert_allclose(act.hard_sigmoid(tf.constant(x)).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(keras.layers.Activation("hard_sigmoid")(x).numpy(), want,
                               rtol=1e-6)
    silu = [0, 0, -0.20833334, -0.33333334, 0, 0.29166666, 0.6666667, 2.2916667, 3, 4]
    np.testing.assert_allclose(act.hard_swish(tf.constant(x)).numpy(), silu, rtol=1e-6)
    layer = keras.layers.Activation("hard_swish")
    np.testing.assert_allclose(layer(x).numpy(), silu, rtol=1e-6)
    assert layer.get_config()["activation"] == "hard_silu"


def test_swish_is_x_times_sigmoid_in_the_graph():
    f = tf.function(lambda t: act.swish(t))
    ops = [n.op for n in f.get_concrete_function(tf.TensorSpec([3], tf.float32))
           .graph.as_graph_def().node]
    assert "Sigmoid" in ops and "Mul" in ops


def test_get_errors_and_identity():
    assert act.get(None) is act.linear
    assert act.get(np.tanh) is np.tanh
    with pytest.raises(ValueError, match="Unknown activation function"):
        act.get("relu9")
    with pytest.raises(TypeError, match="Could not interpret"):
        act.get(3)
