"""tf.math's segment reductions on kiln's UnsortedSegmentSum: values against NumPy eagerly
and traced, gradients, and the error paths."""
import numpy as np
import pytest

import kiln as tf


def ref(data, ids, n, kind):
    out = np.zeros((n,) + data.shape[ids.ndim:], np.float64)
    cnt = np.zeros(n)
    for idx in np.ndindex(*ids.shape):
        s = ids[idx]
        if 0 <= s < n:
            out[s] += data[idx]
            cnt[s] += 1
    c = np.maximum(cnt, 1).reshape((n,) + (1,) * (out.ndim - 1))
    return {"sum": out, "mean": out / c, "sqrt_n": out / np.sqrt(c)}[kind]


CASES = [  # data shape, ids, num_segments
    ((4, 3), [0, 2, 0, 1], 3),
    ((5,), [1, 1, -1, 3, 0], 4),  # a dropped id and an empty segment
    ((2, 3, 2), [[0, 1, 0], [2, 2, 1]], 3),  # 2-D ids
    ((0, 2), [], 2),
]


@pytest.mark.parametrize("kind", ["sum", "mean", "sqrt_n"])
@pytest.mark.parametrize("shape,ids,n", CASES)
def test_unsorted_segment_ops_match_numpy(kind, shape, ids, n):
    rng = np.random.default_rng(0)
    data = rng.standard_normal(shape).astype(np.float32)
    ids = np.asarray(ids, np.int32).reshape(shape[:np.asarray(ids).ndim] if ids else (0,))
    fn = getattr(tf.math, f"unsorted_segment_{kind}")
    want = ref(data, ids, n, kind)
    eager = fn(tf.constant(data), tf.constant(ids), n)
    traced = tf.function(lambda d, i: fn(d, i, n), autograph=False)(tf.constant(data),
                                                                    tf.constant(ids))
    for got in (eager, traced):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


def test_sorted_segment_ops():
    data = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    ids = tf.constant([0, 0, 1, 3])
    np.testing.assert_allclose(tf.math.segment_sum(data, ids).numpy(),
                               [[4, 6], [5, 6], [0, 0], [7, 8]])
    np.testing.assert_allclose(tf.math.segment_mean(data, ids).numpy(),
                               [[2, 3], [5, 6], [0, 0], [7, 8]])
    f = tf.function(lambda d, i: tf.math.segment_sum(d, i), autograph=False)
    np.testing.assert_allclose(f(data, ids).numpy(), [[4, 6], [5, 6], [0, 0], [7, 8]])
    # integer means truncate, as TensorFlow's
    np.testing.assert_array_equal(
        tf.math.segment_mean(tf.constant([1, 2, 4]), tf.constant([0, 0, 2])).numpy(), [1, 0, 4])
    assert tf.math.segment_sum(tf.zeros([0, 2]), tf.zeros([0], tf.int32)).shape == (0, 2)


def test_segment_gradients():
    data = tf.constant([1.0, 2.0, 3.0, 4.0])
    ids = tf.constant([0, 1, 0, 1])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(data)
        s = tf.reduce_sum(tf.math.unsorted_segment_sum(data, ids, 2) * tf.constant([1.0, 10.0]))
        m = tf.reduce_sum(tf.math.unsorted_segment_mean(data, ids, 2) * tf.constant([1.0, 10.0]))
    np.testing.assert_allclose(tape.gradient(s, data).numpy(), [1, 10, 1, 10])
    np.testing.assert_allclose(tape.gradient(m, data).numpy(), [0.5, 5, 0.5, 5])


def test_segment_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="segment_ids\\[1\\] = 5"):
        tf.math.unsorted_segment_sum(tf.constant([1.0, 2.0]), tf.constant([0, 5]), 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_segments must be non-negative"):
        tf.math.unsorted_segment_sum(tf.constant([1.0]), tf.constant([0]), -1)
    with pytest.raises(TypeError, match="float32 or float64"):
        tf.math.unsorted_segment_sqrt_n(tf.constant([1, 2]), tf.constant([0, 0]), 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="must be 1-D"):
        tf.math.segment_sum(tf.constant([[1.0]]), tf.constant([[0]]))
