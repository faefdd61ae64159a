"""tf.gather_nd, tf.scatter_nd and tf.tensor_scatter_nd_add/sub against NumPy, eagerly and
traced, with gradients and the error paths."""
import numpy as np
import pytest

import kiln as tf

P = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def np_gather_nd(p, idx):
    idx = np.asarray(idx)
    k = idx.shape[-1]
    out = [p[tuple(row)] for row in idx.reshape(-1, k)]
    return np.asarray(out).reshape(idx.shape[:-1] + p.shape[k:])


@pytest.mark.parametrize("idx", [[[0, 1], [1, 2]], [[1, 0, 3]], [[[1]], [[0]]], [[0, 2, 1]],
                                 np.zeros((0, 2), np.int64)])
def test_gather_nd_matches_numpy(idx):
    idx = np.asarray(idx, np.int32 if np.asarray(idx).size else np.int64)
    want = np_gather_nd(P, idx)
    got = tf.gather_nd(tf.constant(P), tf.constant(idx))
    traced = tf.function(lambda p, i: tf.gather_nd(p, i), autograph=False)(
        tf.constant(P), tf.constant(idx))
    for g in (got, traced):
        np.testing.assert_array_equal(g.numpy(), want)


def test_scatter_nd_and_tensor_scatter():
    got = tf.scatter_nd([[0], [2], [0]], tf.constant([1.0, 2.0, 3.0]), [4])
    np.testing.assert_array_equal(got.numpy(), [4, 0, 2, 0])  # duplicates add up
    got = tf.scatter_nd(tf.constant([[0, 1], [1, 0]]), tf.constant([[5.0, 6.0], [7.0, 8.0]]),
                        [2, 2, 2])
    want = np.zeros((2, 2, 2), np.float32)
    want[0, 1] = [5, 6]
    want[1, 0] = [7, 8]
    np.testing.assert_array_equal(got.numpy(), want)
    f = tf.function(lambda i, u: tf.scatter_nd(i, u, [2, 2, 2]), autograph=False)
    np.testing.assert_array_equal(
        f(tf.constant([[0, 1], [1, 0]]), tf.constant([[5.0, 6.0], [7.0, 8.0]])).numpy(), want)
    t = tf.constant([[1, 1], [1, 1]])
    np.testing.assert_array_equal(tf.tensor_scatter_nd_add(t, [[0, 1]], [5]).numpy(),
                                  [[1, 6], [1, 1]])
    np.testing.assert_array_equal(tf.tensor_scatter_nd_sub(t, [[1]], [[2, 3]]).numpy(),
                                  [[1, 1], [-1, -2]])


def test_gather_nd_and_scatter_nd_gradients():
    p = tf.constant(P)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(p)
        y = tf.reduce_sum(tf.gather_nd(p, [[0, 1], [0, 1], [1, 2]]))
        u = tf.constant([1.0, 2.0])
        tape.watch(u)
        z = tf.reduce_sum(tf.scatter_nd([[1], [3]], u, [4]) * tf.constant([1.0, 10.0, 100.0, 5.0]))
    want = np.zeros_like(P)
    want[0, 1] += 2
    want[1, 2] += 1
    np.testing.assert_array_equal(tape.gradient(y, p).numpy(), want)
    np.testing.assert_array_equal(tape.gradient(z, u).numpy(), [10.0, 5.0])


def test_nd_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[0\] = \[0, 5\]"):
        tf.gather_nd(tf.constant(P), [[0, 5]])  # would alias a valid element if not checked
    with pytest.raises(tf.errors.InvalidArgumentError, match="more than the rank"):
        tf.gather_nd(tf.constant(P), [[0, 0, 0, 0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32 or int64"):
        tf.gather_nd(tf.constant(P), tf.constant([[0.0]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = \[4\]"):
        tf.scatter_nd([[0], [4]], tf.constant([1.0, 2.0]), [4])
    # Traced, the indices are unknown until the call: the gather reports the bad row.
    f = tf.function(lambda i: tf.gather_nd(tf.constant(P), i), autograph=False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="is not in"):
        f(tf.constant([[0, 5]]))
