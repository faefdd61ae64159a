"""Embedding + optimizers on a batch that repeats an index, as TensorFlow's
Keras trains it: the lookup's gradient is an IndexedSlices, so Adam's and
RMSprop's second moments add the squares of a repeated index's rows (the
linear parts, and SGD, see their sum). References: NumPy formulas; the first
rows were also checked against TF 2.21's Keras 3.15."""
import numpy as np
import pytest

import kiln as tf

keras = tf.keras
W0 = np.arange(12, dtype=np.float32).reshape(4, 3) / 10 - 0.5
X = np.array([[1, 1, 2], [1, 3, 3]], np.int32)
Y = np.ones((2, 9), np.float32)
LR = 0.1


def _grads(w):
    """The dense gradient and the per-row sum of squares (mse loss)."""
    pred = w[X].reshape(2, 9)
    dy = (2 * (pred - Y) / pred.size).reshape(-1, 3)
    g, sq = np.zeros_like(w), np.zeros_like(w)
    for i, row in zip(X.ravel(), dy):
        g[i] += row
        sq[i] += row * row
    return g, sq


def _numpy_steps(name, steps):
    w = W0.astype(np.float64)
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t in range(1, steps + 1):
        g, sq = _grads(w)
        if name == "SGD":
            w = w - LR * g
        elif name == "Adam":
            m += (g - m) * 0.1
            v += (sq - v) * 0.001
            alpha = LR * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
            w = w - m * alpha / (np.sqrt(v) + 1e-7)
        else:  # RMSprop
            v = 0.9 * v + 0.1 * sq
            w = w - LR * g / np.sqrt(v + 1e-7)
    return w


def _kiln_steps(name, steps, run_eagerly):
    i = keras.Input((3,), dtype="int32")
    emb = keras.layers.Embedding(4, 3)
    model = keras.Model(i, keras.layers.Flatten()(emb(i)))
    emb.set_weights([W0])
    model.compile(optimizer=getattr(keras.optimizers, name)(learning_rate=LR), loss="mse",
                  run_eagerly=run_eagerly)
    for _ in range(steps):
        model.train_on_batch(X, Y)
    return emb.get_weights()[0]


@pytest.mark.parametrize("run_eagerly", [False, True])
@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop"])
def test_repeated_indices_train_as_tensorflow(name, run_eagerly):
    got = _kiln_steps(name, 2, run_eagerly)
    np.testing.assert_allclose(got, _numpy_steps(name, 2), rtol=2e-5, atol=1e-6)


def test_values_written_down_from_tensorflow():
    # row 1 (looked up three times) after two steps, from TF 2.21's Keras
    tf_rows = {"Adam": [0.1451813280582428, 0.24500484764575958, 0.34477663040161133],
               "RMSprop": [0.6200144290924072, 0.7039196491241455, 0.7834221720695496]}
    for name, row in tf_rows.items():
        np.testing.assert_allclose(_kiln_steps(name, 2, False)[1], row, rtol=1e-6)


def test_outside_a_train_step_the_lookup_is_a_plain_gather():
    emb = keras.layers.Embedding(4, 3)
    emb.build()
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(emb(tf.constant([1, 1, 2])))
    g = tape.gradient(y, emb.embeddings)
    np.testing.assert_array_equal(tf.convert_to_tensor(g).numpy()[:, 0], [0, 2, 1, 0])
