"""kiln.keras.losses against NumPy references, eagerly and inside kiln.function."""
import warnings

import numpy as np
import pytest

import kiln as tf
from kiln.keras import losses

EPS = 1e-7


def _np_log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _np_sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _data(seed=0, n=6, c=4):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((n, c)).astype(np.float32) * 3
    labels = rng.integers(0, c, n)
    onehot = np.eye(c, dtype=np.float32)[labels]
    return logits, labels, onehot


def _both(loss, *args, **kwargs):
    """loss(*args) eagerly and inside a kiln.function, as NumPy."""
    eager = loss(*args, **kwargs).numpy()
    tensors = [tf.constant(a) for a in args]
    traced = tf.function(lambda *a: loss(*a, **kwargs))(*tensors).numpy()
    return eager, traced


def _check(loss, expected, *args, rtol=1e-5, atol=1e-6, **kwargs):
    eager, traced = _both(loss, *args, **kwargs)
    np.testing.assert_allclose(eager, expected, rtol=rtol, atol=atol)
    np.testing.assert_allclose(traced, expected, rtol=rtol, atol=atol)


# ---- values ----

def test_mean_squared_error():
    rng = np.random.default_rng(1)
    y, p = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal(
        (5, 3)).astype(np.float32)
    per = ((p - y) ** 2).mean(-1)
    _check(losses.MeanSquaredError(), per.mean(), y, p)
    _check(losses.mean_squared_error, per, y, p)
    assert losses.mse is losses.mean_squared_error is losses.MSE
    np.testing.assert_allclose(losses.MeanAbsoluteError()(y, p).numpy(),
                               np.abs(p - y).mean(), rtol=1e-6)


def test_mse_labels_without_last_axis_do_not_broadcast():
    # [B] targets against [B, 1] predictions: per-sample, not a [B, B] grid.
    y = np.array([1.0, 2.0, 3.0], np.float32)
    p = np.array([[1.5], [2.0], [2.0]], np.float32)
    _check(losses.MeanSquaredError(), np.mean((p[:, 0] - y) ** 2), y, p)


def test_categorical_crossentropy():
    logits, _, onehot = _data()
    expected = -(onehot * _np_log_softmax(logits)).sum(-1)
    _check(losses.CategoricalCrossentropy(from_logits=True), expected.mean(), onehot, logits)
    probs = np.exp(_np_log_softmax(logits))
    _check(losses.CategoricalCrossentropy(), expected.mean(), onehot, probs, rtol=1e-4)
    # unnormalized probabilities are normalized first
    _check(losses.categorical_crossentropy, expected, onehot, probs * 3.0, rtol=1e-4)


def test_categorical_crossentropy_label_smoothing():
    logits, _, onehot = _data(2)
    s = 0.2
    smooth = onehot * (1 - s) + s / onehot.shape[-1]
    expected = -(smooth * _np_log_softmax(logits)).sum(-1).mean()
    _check(losses.CategoricalCrossentropy(from_logits=True, label_smoothing=s), expected,
           onehot, logits)


def test_sparse_categorical_crossentropy():
    logits, labels, _ = _data(3)
    expected = -_np_log_softmax(logits)[np.arange(len(labels)), labels]
    _check(losses.SparseCategoricalCrossentropy(from_logits=True), expected.mean(), labels,
           logits)
    probs = np.exp(_np_log_softmax(logits))
    _check(losses.SparseCategoricalCrossentropy(), expected.mean(), labels, probs, rtol=1e-4)
    # [B, 1] labels and float labels work too
    _check(losses.sparse_categorical_crossentropy, expected, labels[:, None].astype(np.float32),
           logits, from_logits=True)


def test_binary_crossentropy():
    logits, _, onehot = _data(4)
    p = _np_sigmoid(logits)
    expected = -(onehot * np.log(p) + (1 - onehot) * np.log(1 - p)).mean(-1)
    _check(losses.BinaryCrossentropy(from_logits=True), expected.mean(), onehot, logits)
    clipped = np.clip(p, EPS, 1 - EPS)
    expected_p = -(onehot * np.log(clipped) + (1 - onehot) * np.log(1 - clipped)).mean(-1)
    _check(losses.BinaryCrossentropy(), expected_p.mean(), onehot, p, rtol=1e-4)
    s = 0.1
    smooth = onehot * (1 - s) + 0.5 * s
    expected_s = -(smooth * np.log(p) + (1 - smooth) * np.log(1 - p)).mean()
    _check(losses.BinaryCrossentropy(from_logits=True, label_smoothing=s), expected_s, onehot,
           logits)


def test_from_logits_is_stable_for_large_logits():
    logits = np.array([[1000.0, -1000.0, 0.0], [-500.0, 500.0, 20.0]], np.float32)
    labels = np.array([1, 0])
    out = losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")(
        labels, logits).numpy()
    np.testing.assert_allclose(out, [2000.0, 1000.0], rtol=1e-6)
    b = losses.BinaryCrossentropy(from_logits=True, reduction="none")(
        np.array([[0.0], [1.0]], np.float32), np.array([[1000.0], [-1000.0]], np.float32))
    np.testing.assert_allclose(b.numpy(), [1000.0, 1000.0], rtol=1e-6)
    assert np.all(np.isfinite(out))


def test_probability_paths_clip_zero_probabilities():
    out = losses.CategoricalCrossentropy()(np.array([[0.0, 1.0]], np.float32),
                                           np.array([[1.0, 0.0]], np.float32)).numpy()
    np.testing.assert_allclose(out, -np.log(EPS), rtol=1e-3)
    out = losses.BinaryCrossentropy()(np.array([[1.0]], np.float32),
                                      np.array([[0.0]], np.float32)).numpy()
    np.testing.assert_allclose(out, -np.log(EPS), rtol=1e-3)


def test_softmax_and_sigmoid_outputs_use_their_logits():
    """Keras 3: a cross-entropy of a softmax/sigmoid activation's output computes from
    its logits (TensorFlow's numbers, checked with TF 2.21: 30.2038, 60, 40), so
    saturated probabilities keep their gradient; eagerly, traced and in evaluate()."""
    x = np.array([[30.0, -30.0, 0.0], [1.0, 2.0, 3.0]], np.float32)
    y = np.array([1, 2], np.int32)
    m = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(
        3, activation="softmax", kernel_initializer="identity", bias_initializer="zeros")])
    loss = losses.SparseCategoricalCrossentropy()
    want = -_np_log_softmax(x)[np.arange(2), y].mean()
    np.testing.assert_allclose(float(loss(y, m(x))), want, rtol=1e-6)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            value = loss(y, m(x))
        return value, tape.gradient(value, m.trainable_variables)[0]

    value, grad = step(tf.constant(x), tf.constant(y))
    np.testing.assert_allclose(float(value), want, rtol=1e-6)
    assert float(tf.reduce_sum(tf.abs(grad))) > 30  # the clipped path's is ~1e-6
    m.compile("sgd", "sparse_categorical_crossentropy")
    np.testing.assert_allclose(m.evaluate(x, y, verbose=0), want, rtol=1e-6)
    onehot = np.eye(3, dtype=np.float32)[y]
    np.testing.assert_allclose(
        float(losses.categorical_crossentropy(onehot, m(x))[0]), 60.0, rtol=1e-6)
    sig = tf.keras.activations.sigmoid(tf.constant([[-40.0]]))
    np.testing.assert_allclose(
        float(losses.binary_crossentropy(np.float32([[1.0]]), sig)[0]), 40.0, rtol=1e-6)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        losses.sparse_categorical_crossentropy(y, m(x), from_logits=True)
    assert any("does not represent logits" in str(e.message) for e in w)
    # Plain probabilities (not an activation's output) still take the clipped path.
    p = tf.constant(np.array([[1.0, 0.0]], np.float32))
    np.testing.assert_allclose(float(losses.categorical_crossentropy(
        np.float32([[0.0, 1.0]]), p)[0]), -np.log(EPS), rtol=1e-3)


# ---- reductions and sample weights ----

def test_reductions_and_sample_weight():
    y = np.array([[0.0], [1.0], [2.0], [3.0]], np.float32)
    p = np.array([[1.0], [1.0], [1.0], [1.0]], np.float32)
    per = ((p - y) ** 2)[:, 0]  # [1, 0, 1, 4]
    w = np.array([1.0, 2.0, 0.5, 0.0], np.float32)
    _check(losses.MeanSquaredError(reduction="none"), per, y, p)
    _check(losses.MeanSquaredError(reduction="sum"), per.sum(), y, p)
    _check(losses.MeanSquaredError(), per.mean(), y, p)
    assert losses.MeanSquaredError(reduction="auto").reduction == "sum_over_batch_size"
    mse = losses.MeanSquaredError()
    # sum_over_batch_size divides the weighted sum by the number of values
    np.testing.assert_allclose(mse(y, p, sample_weight=w).numpy(), (per * w).sum() / 4)
    np.testing.assert_allclose(mse(y, p, sample_weight=w[:, None]).numpy(), (per * w).sum() / 4)
    np.testing.assert_allclose(mse(y, p, sample_weight=2.0).numpy(), per.mean() * 2)
    none = losses.MeanSquaredError(reduction="none")(y, p, sample_weight=w).numpy()
    np.testing.assert_allclose(none, per * w)
    sw_fn = tf.function(lambda a, b, c: mse(a, b, sample_weight=c))
    np.testing.assert_allclose(sw_fn(tf.constant(y), tf.constant(p), tf.constant(w)).numpy(),
                               (per * w).sum() / 4)


def test_custom_loss_subclass_and_wrapper():
    class Cube(losses.Loss):
        def call(self, y_true, y_pred):
            return tf.reduce_mean(tf.abs(y_pred - y_true) ** 3, axis=-1)

    y = np.zeros((2, 2), np.float32)
    p = np.array([[1.0, 2.0], [0.0, -1.0]], np.float32)
    c = Cube()
    assert c.name == "cube"
    np.testing.assert_allclose(c(y, p).numpy(), np.mean([4.5, 0.5]))
    w = losses.LossFunctionWrapper(lambda a, b: tf.reduce_sum(b - a, axis=-1),
                                   reduction="sum", name="diff")
    np.testing.assert_allclose(w(y, p).numpy(), 2.0)


# ---- gradients ----

def test_gradient_of_sparse_crossentropy_from_logits():
    logits, labels, onehot = _data(5)
    v = tf.Variable(logits)
    loss = losses.SparseCategoricalCrossentropy(from_logits=True)

    def grad():
        with tf.GradientTape() as tape:
            out = loss(tf.constant(labels), v)
        return tape.gradient(out, v)

    softmax = np.exp(_np_log_softmax(logits))
    expected = (softmax - onehot) / len(labels)
    np.testing.assert_allclose(grad().numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tf.function(grad)().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_gradient_of_binary_crossentropy_from_logits():
    logits, _, onehot = _data(6)
    v = tf.Variable(logits)
    with tf.GradientTape() as tape:
        out = losses.BinaryCrossentropy(from_logits=True)(onehot, v)
    g = tape.gradient(out, v).numpy()
    np.testing.assert_allclose(g, (_np_sigmoid(logits) - onehot) / onehot.size, rtol=1e-5,
                               atol=1e-7)


# ---- lookup and errors ----

def test_get():
    assert losses.get("mse") is losses.mean_squared_error
    assert losses.get("categorical_crossentropy") is losses.categorical_crossentropy
    assert isinstance(losses.get("SparseCategoricalCrossentropy"),
                      losses.SparseCategoricalCrossentropy)
    inst = losses.BinaryCrossentropy(from_logits=True)
    assert losses.get(inst) is inst
    assert losses.get(None) is None
    assert isinstance(losses.get(losses.MeanSquaredError), losses.MeanSquaredError)
    cfg = losses.serialize(inst)
    back = losses.get(cfg)
    assert isinstance(back, losses.BinaryCrossentropy)
    assert back.get_config() == inst.get_config()
    with pytest.raises(ValueError, match="Could not interpret loss"):
        losses.get("not_a_loss")
    with pytest.raises(ValueError, match="Could not interpret loss"):
        losses.get(42)


def test_errors():
    with pytest.raises(ValueError, match="reduction"):
        losses.MeanSquaredError(reduction="mean_of_nothing")
    with pytest.raises(ValueError, match="label_smoothing"):
        losses.CategoricalCrossentropy(label_smoothing=2.0)
    with pytest.raises(ValueError, match="same shape"):
        losses.CategoricalCrossentropy()(np.ones((2, 3), np.float32), np.ones((2, 4), np.float32))
    with pytest.raises(ValueError, match="class indices"):
        losses.SparseCategoricalCrossentropy()(np.ones((2, 3, 2), np.int32),
                                               np.ones((2, 3), np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="outside the valid range"):
        losses.SparseCategoricalCrossentropy(from_logits=True)(np.array([0, 5]),
                                                               np.zeros((2, 3), np.float32))
    with pytest.raises(NotImplementedError, match="ignore_class"):
        losses.SparseCategoricalCrossentropy(ignore_class=0)
    with pytest.raises(ValueError, match="sample_weight"):
        losses.MeanSquaredError()(np.ones((2, 1), np.float32), np.ones((2, 1), np.float32),
                                  sample_weight=np.ones((2, 1, 1, 1), np.float32))
