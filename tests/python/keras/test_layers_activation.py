"""ReLU, LeakyReLU, PReLU, ELU, Softmax layers against NumPy (Keras 3's arguments and errors)."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import assert_layer, randn

layers = tf.keras.layers


def _relu_ref(x, max_value=None, negative_slope=0.0, threshold=0.0):
    y = np.where(x > threshold, x, 0.0)
    if max_value is not None:
        y = np.minimum(y, max_value)
    return (y - negative_slope * np.maximum(threshold - x, 0)).astype(np.float32)


def _softmax_ref(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


X = np.linspace(-4, 8, 48).astype(np.float32).reshape(2, 4, 6)

CASES = [
    (lambda: layers.ReLU(), lambda x: np.maximum(x, 0)),
    (lambda: layers.ReLU(max_value=6.0), lambda x: np.clip(x, 0, 6)),
    (lambda: layers.ReLU(negative_slope=0.1), lambda x: _relu_ref(x, None, 0.1)),
    (lambda: layers.ReLU(threshold=1.5), lambda x: _relu_ref(x, None, 0.0, 1.5)),
    (lambda: layers.ReLU(max_value=5.0, negative_slope=0.2, threshold=1.0),
     lambda x: _relu_ref(x, 5.0, 0.2, 1.0)),
    (lambda: layers.LeakyReLU(), lambda x: np.where(x > 0, x, 0.3 * x)),
    (lambda: layers.LeakyReLU(negative_slope=0.05), lambda x: np.where(x > 0, x, 0.05 * x)),
    (lambda: layers.LeakyReLU(alpha=0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
    (lambda: layers.ELU(), lambda x: np.where(x > 0, x, np.expm1(x))),
    (lambda: layers.ELU(alpha=0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    (lambda: layers.Softmax(), lambda x: _softmax_ref(x, -1)),
    (lambda: layers.Softmax(axis=1), lambda x: _softmax_ref(x, 1)),
    (lambda: layers.Softmax(axis=[1, 2]), lambda x: _softmax_ref(x, (1, 2))),
]


@pytest.mark.parametrize("make,ref", CASES)
def test_layer_matches_numpy_eager_traced_and_jit(make, ref):
    layer = make()
    want = ref(X.astype(np.float64)).astype(np.float32)
    assert_layer(layer, X, want, rtol=1e-5, atol=1e-6)
    jit = tf.function(lambda t: layer(t), jit_compile=True)(tf.constant(X))
    np.testing.assert_allclose(jit.numpy(), want, rtol=1e-5, atol=1e-6)
    assert layer.compute_output_shape((None, 4, 6)) == (None, 4, 6)
    clone = type(layer).from_config(layer.get_config())
    np.testing.assert_allclose(clone(tf.constant(X)).numpy(), want, rtol=1e-5, atol=1e-6)


def test_relu_and_leaky_relu_configs_and_errors():
    assert layers.ReLU(max_value=2.0, threshold=0.5).get_config()["max_value"] == 2.0
    assert layers.LeakyReLU(alpha=0.2).get_config()["negative_slope"] == pytest.approx(0.2)
    for kwargs, name in [({"max_value": -1.0}, "max_value"),
                         ({"negative_slope": -0.1}, "negative_slope"),
                         ({"threshold": -2.0}, "threshold"),
                         ({"threshold": None}, "threshold")]:
        with pytest.raises(ValueError, match=f"{name} of a ReLU layer cannot be"):
            layers.ReLU(**kwargs)
    for bad in (None, -0.5):
        with pytest.raises(ValueError, match="negative_slope value of a Leaky ReLU layer"):
            layers.LeakyReLU(negative_slope=bad)


def test_prelu_weights_shared_axes_gradient_and_config():
    x = randn(3, 4, 5, 2)
    layer = layers.PReLU(alpha_initializer=tf.keras.initializers.Constant(0.25),
                         shared_axes=[1, 2])
    out = layer(tf.constant(x))
    assert [w.name for w in layer.weights] == ["alpha"]
    assert layer.alpha.shape == (1, 1, 2) and layer.count_params() == 2
    np.testing.assert_allclose(out.numpy(), np.where(x > 0, x, 0.25 * x), rtol=1e-6)
    alpha = np.array([[[0.1, 0.7]]], np.float32)
    layer.set_weights([alpha])
    assert_layer(layer, x, np.where(x > 0, x, alpha * x), rtol=1e-6)
    # d/d alpha of sum(prelu(x)) is the sum of the negative inputs per channel.
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(tf.constant(x)))
    (g,) = tape.gradient(loss, [layer.alpha])
    np.testing.assert_allclose(g.numpy().ravel(), np.minimum(x, 0).sum(axis=(0, 1, 2)),
                               rtol=1e-5)
    full = layers.PReLU()
    full(tf.constant(x))
    assert full.alpha.shape == (4, 5, 2) and full.count_params() == 40
    np.testing.assert_array_equal(full.alpha.numpy(), 0)  # "Zeros" by default: relu
    cfg = layer.get_config()
    assert cfg["shared_axes"] == [1, 2]
    assert cfg["alpha_initializer"]["class_name"] == "Constant"
    with pytest.raises(ValueError, match="shared_axes"):
        layers.PReLU(shared_axes=[4])(tf.constant(x))


def test_softmax_masks_positions_and_whole_rows():
    x = randn(2, 3, 5)
    mask = np.ones((2, 3, 5), bool)
    mask[0, 0, 3:] = False
    mask[1, 2, :] = False  # a row masked whole gives zeros
    layer = layers.Softmax()
    got = layer(tf.constant(x), mask=tf.constant(mask)).numpy()
    want = _softmax_ref(np.where(mask, x, -1e9).astype(np.float64), -1) * mask
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(got[1, 2], 0)
    # A float mask keeps the positions above 0.5.
    fmask = mask.astype(np.float32) * 0.9
    np.testing.assert_allclose(layer(tf.constant(x), mask=tf.constant(fmask)).numpy(), want,
                               rtol=1e-5, atol=1e-7)
    traced = tf.function(lambda a, m: layer(a, mask=m))(tf.constant(x), tf.constant(mask))
    np.testing.assert_allclose(traced.numpy(), want, rtol=1e-5, atol=1e-7)


def test_activation_layers_train_in_a_model():
    model = tf.keras.Sequential([layers.Dense(8, input_shape=(4,)), layers.PReLU(),
                                 layers.LeakyReLU(0.1), layers.Dense(3), layers.Softmax()])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    x = randn(32, 4)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0)
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=20, verbose=0)
    assert model.evaluate(x, y, verbose=0) < before
    assert model.count_params() == 4 * 8 + 8 + 8 + 8 * 3 + 3
    restored = tf.keras.Sequential.from_config(model.get_config())
    restored.set_weights(model.get_weights())
    np.testing.assert_allclose(restored.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
