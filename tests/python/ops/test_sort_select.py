"""tf.math.top_k, tf.sort, tf.argsort, one-argument tf.where, the segment max/min/prod ops and
tf.tensor_scatter_nd_update/max/min against NumPy, eagerly and traced, with gradients and the
error paths."""
import numpy as np
import pytest

import kiln as tf

RNG = np.random.default_rng(5)


def both(fn, *args):
    """fn's result eagerly and inside a kiln.function (as NumPy arrays)."""
    eager = fn(*args)
    traced = tf.function(fn, autograph=False)(*args)
    return eager, traced


def test_top_k_values_indices_and_named_fields():
    x = tf.constant([[3.0, 1.0, 4.0, 1.0], [5.0, 9.0, 2.0, 6.0]])
    for r in both(lambda v: tf.math.top_k(v, k=2), x):
        np.testing.assert_array_equal(r.values.numpy(), [[4, 3], [9, 6]])
        np.testing.assert_array_equal(r.indices.numpy(), [[2, 0], [1, 3]])
        assert r.indices.dtype == tf.int32
    assert repr(tf.nn.top_k(x, 1)).startswith("TopKV2(values=")
    ties = tf.math.top_k(tf.constant([1, 2, 2, 1]), 4)
    np.testing.assert_array_equal(ties.indices.numpy(), [1, 2, 0, 3])  # lower index first


def test_top_k_k_fed_at_call_time_and_errors():
    f = tf.function(lambda x, k: tf.math.top_k(x, k).values,
                    input_signature=[tf.TensorSpec([None, 3]), tf.TensorSpec([], tf.int32)])
    np.testing.assert_array_equal(f(tf.constant([[1.0, 3.0, 2.0]]), tf.constant(2)).numpy(),
                                  [[3, 2]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="at least k = 4"):
        tf.math.top_k(tf.constant([1.0, 2.0]), 4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank >= 1"):
        tf.math.top_k(tf.constant(1.0), 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="at least k = 4"):
        f(tf.constant([[1.0, 3.0, 2.0]]), tf.constant(4))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_sort_and_argsort_match_numpy_stable(dtype, axis):
    info = np.iinfo(dtype) if np.issubdtype(dtype, np.integer) else None
    lo, hi = (info.min, info.max) if info else (-5, 5)
    v = RNG.integers(max(lo, -4), min(hi, 4), size=(3, 5), endpoint=True).astype(dtype)
    if info:
        v[0, 0], v[1, 1] = info.min, info.max  # ~x keeps the extremes exact
    for direction in ("ASCENDING", "DESCENDING"):
        key = v if direction == "ASCENDING" else (-v.astype(np.float64))
        want_i = np.argsort(key, axis=axis, kind="stable")
        want_v = np.take_along_axis(v, want_i, axis=axis)
        for s in both(lambda x: tf.sort(x, axis=axis, direction=direction), tf.constant(v)):
            np.testing.assert_array_equal(s.numpy(), want_v)
        for a in both(lambda x: tf.argsort(x, axis=axis, direction=direction), tf.constant(v)):
            np.testing.assert_array_equal(a.numpy(), want_i)


def test_sort_gradient_and_errors():
    x = tf.constant([3.0, 1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.sort(x) * tf.constant([1.0, 10.0, 100.0]))
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [100, 1, 10])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.math.top_k(x, 2).values * tf.constant([1.0, 10.0]))
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1, 0, 10])
    with pytest.raises(ValueError, match="direction"):
        tf.sort(x, direction="UP")
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        tf.sort(x, axis=1)
    with pytest.raises(TypeError, match="numeric"):
        tf.sort(tf.constant([True, False]))


def test_where_one_argument_eager_and_traced():
    c = np.array([[0, 3, 0], [1, 0, -2]], np.int32)
    want = np.argwhere(c != 0)
    for r in both(lambda x: tf.where(x), tf.constant(c)):
        assert r.dtype == tf.int64
        np.testing.assert_array_equal(r.numpy(), want)
    f = tf.function(lambda x: tf.shape(tf.where(x > 0)), input_signature=[tf.TensorSpec([None])])
    np.testing.assert_array_equal(f(tf.constant([1.0, -1.0, 2.0])).numpy(), [2, 1])
    g = f.get_concrete_function()
    assert g.structured_outputs.shape.as_list() == [2]
    with pytest.raises(tf.errors.InvalidArgumentError, match="bool or numeric"):
        tf.where(tf.constant(["a"]))


@pytest.mark.parametrize("name,np_fn,empty", [
    ("max", np.max, np.finfo(np.float32).min), ("min", np.min, np.finfo(np.float32).max),
    ("prod", np.prod, 1.0)])
def test_unsorted_segment_max_min_prod(name, np_fn, empty):
    data = RNG.standard_normal((6, 2)).astype(np.float32)
    ids = np.array([0, 3, -1, 0, 3, 3], np.int32)
    want = np.full((4, 2), empty, np.float32)
    for s in (0, 3):
        want[s] = np_fn(data[ids == s], axis=0)
    op = getattr(tf.math, "unsorted_segment_" + name)
    for r in both(lambda d, i: op(d, i, 4), tf.constant(data), tf.constant(ids)):
        np.testing.assert_allclose(r.numpy(), want, rtol=1e-6)
    sorted_op = getattr(tf.math, "segment_" + name)
    got = sorted_op(tf.constant([1.0, 5.0, 3.0]), tf.constant([0, 0, 2])).numpy()
    np.testing.assert_array_equal(got, [np_fn([1.0, 5.0]), 0 if name != "prod" else 1, 3])


def test_segment_max_gradient_shares_ties():
    x = tf.constant([1.0, 3.0, 3.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.math.unsorted_segment_max(x, [0, 0, 0, 1], 2) * tf.constant([2., 5.]))
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0, 1, 1, 5])


def test_tensor_scatter_nd_update_max_min():
    t = np.arange(8, dtype=np.float32).reshape(4, 2)
    idx = np.array([[1], [3], [1]], np.int32)
    upd = np.array([[10, -10], [20, 20], [30, 0]], np.float32)
    want = t.copy()
    want[1], want[3] = upd[2], upd[1]  # the last of the repeated index wins
    for r in both(tf.tensor_scatter_nd_update, tf.constant(t), tf.constant(idx), tf.constant(upd)):
        np.testing.assert_array_equal(r.numpy(), want)
    want_max, want_min = t.copy(), t.copy()
    for i, u in zip(idx[:, 0], upd):
        want_max[i] = np.maximum(want_max[i], u)
        want_min[i] = np.minimum(want_min[i], u)
    for r in both(tf.tensor_scatter_nd_max, tf.constant(t), tf.constant(idx), tf.constant(upd)):
        np.testing.assert_array_equal(r.numpy(), want_max)
    for r in both(tf.tensor_scatter_nd_min, tf.constant(t), tf.constant(idx), tf.constant(upd)):
        np.testing.assert_array_equal(r.numpy(), want_min)
    # element updates (indices of full rank), integers
    got = tf.tensor_scatter_nd_update(tf.constant([[1, 2], [3, 4]]), [[0, 1], [1, 0]], [9, 8])
    np.testing.assert_array_equal(got.numpy(), [[1, 9], [8, 4]])


def test_tensor_scatter_nd_update_gradient_and_errors():
    t = tf.constant([1.0, 2.0, 3.0])
    u = tf.constant([10.0, 20.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([t, u])
        y = tf.reduce_sum(tf.tensor_scatter_nd_update(t, [[2], [0]], u) * tf.constant([1., 2., 3.]))
    np.testing.assert_array_equal(tape.gradient(y, t).numpy(), [0, 2, 0])
    np.testing.assert_array_equal(tape.gradient(y, u).numpy(), [3, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[0\] = \[5\]"):
        tf.tensor_scatter_nd_update(t, [[5]], [1.0])
    with pytest.raises((tf.errors.InvalidArgumentError, TypeError)):
        tf.tensor_scatter_nd_max(t, [[0]], tf.constant([1]))  # int updates, float tensor
