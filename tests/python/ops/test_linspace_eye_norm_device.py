"""tf.linspace, tf.eye, tf.norm, tf.nn.softplus and tf.device (issue 18's first items):
values against NumPy eagerly and inside a function, gradients, and the error paths."""
import numpy as np
import pytest

import kiln as tf


def both(fn, *args):
    """fn's result eagerly and traced, as NumPy."""
    eager = fn(*args)
    traced = tf.function(fn, autograph=False)(*args)
    return np.asarray(eager), np.asarray(traced)


@pytest.mark.parametrize("start,stop,num,axis", [
    (0.0, 1.0, 5, 0), (-3.0, 7.0, 1, 0), (2.0, -2.0, 4, 0),
    ([0.0, 10.0], [1.0, 20.0], 3, 0), ([0.0, 10.0], [1.0, 20.0], 3, 1),
    ([0.0, 10.0], [1.0, 20.0], 3, -1), ([[0.0], [1.0]], 5.0, 6, 1),
])
def test_linspace_matches_numpy(start, stop, num, axis):
    def f(a, b):
        return tf.linspace(a, b, num, axis=axis)
    a = tf.constant(np.asarray(start, np.float32))
    b = tf.constant(np.asarray(stop, np.float32))
    want = np.linspace(np.asarray(start, np.float32), np.asarray(stop, np.float32), num,
                       axis=axis).astype(np.float32)
    for got in both(f, a, b):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        assert got.shape == want.shape


def test_linspace_float64_endpoint_exact_and_tensor_num():
    got = tf.linspace(tf.constant(0.1, tf.float64), 0.7, tf.constant(7)).numpy()
    assert got.dtype == np.float64 and got[-1] == 0.7 and got[0] == 0.1
    np.testing.assert_allclose(got, np.linspace(0.1, 0.7, 7))


def test_linspace_gradient():
    a, b = tf.constant(1.0), tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = tf.reduce_sum(tf.linspace(a, b, 5) * tf.constant([1.0, 2.0, 3.0, 4.0, 5.0]))
    ga, gb = tape.gradient(y, [a, b])
    # value_i = a + i/4 (b - a): d/da = sum (1 - i/4) w_i, d/db = sum (i/4) w_i
    w = np.arange(1.0, 6.0)
    t = np.arange(5) / 4
    np.testing.assert_allclose([ga.numpy(), gb.numpy()], [((1 - t) * w).sum(), (t * w).sum()],
                               rtol=1e-6)


def test_linspace_errors():
    with pytest.raises(TypeError, match="a float or an integer"):
        tf.linspace(tf.constant(True), False, 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="num must be >= 0"):
        tf.linspace(0.0, 1.0, -1)
    with pytest.raises(TypeError, match="num must be an int"):
        tf.linspace(0.0, 1.0, 2.5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="axis 2 is out of range"):
        tf.linspace(0.0, 1.0, 3, axis=2)


@pytest.mark.parametrize("rows,cols,batch,dtype", [
    (3, None, None, "float32"), (2, 4, None, "int32"), (4, 2, [3], "float64"),
    (0, 2, None, "float32"), (2, 2, [2, 1], "bool"),
])
def test_eye_matches_numpy(rows, cols, batch, dtype):
    want = np.eye(rows, cols, dtype=dtype)
    if batch:
        want = np.broadcast_to(want, batch + list(want.shape))
    got = tf.eye(rows, cols, batch_shape=batch, dtype=dtype)
    assert got.dtype == tf.as_dtype(dtype)
    np.testing.assert_array_equal(got.numpy(), want)
    traced = tf.function(lambda: tf.eye(rows, cols, batch_shape=batch, dtype=dtype))()
    np.testing.assert_array_equal(traced.numpy(), want)
    assert tf.linalg.eye is tf.eye


def test_eye_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match=">= 0"):
        tf.eye(-1)


X = np.array([[3.0, -4.0, 0.5], [1.0, 2.0, -7.0]], np.float32)


@pytest.mark.parametrize("ord_,axis,want", [
    ("euclidean", None, np.linalg.norm(X)), (2, 1, np.linalg.norm(X, axis=1)),
    (1, 0, np.abs(X).sum(axis=0)), (np.inf, -1, np.abs(X).max(axis=-1)),
    ("fro", [0, 1], np.linalg.norm(X, "fro")), (1, [0, 1], np.linalg.norm(X, 1)),
    (np.inf, [-2, -1], np.linalg.norm(X, np.inf)),
])
def test_norm_matches_numpy(ord_, axis, want):
    for got in both(lambda x: tf.norm(x, ord=ord_, axis=axis), tf.constant(X)):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    kept = tf.norm(tf.constant(X), ord=ord_, axis=axis, keepdims=True)
    assert kept.ndim == 2
    assert tf.linalg.norm is tf.norm


def test_norm_gradient_is_x_over_norm():
    x = tf.constant([3.0, 4.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        n = tf.norm(x)
    np.testing.assert_allclose(tape.gradient(n, x).numpy(), [0.6, 0.8], rtol=1e-6)


def test_norm_errors():
    with pytest.raises(ValueError, match="not supported for vectors"):
        tf.norm(tf.constant(X), ord=3)
    with pytest.raises(ValueError, match="not supported for matrices"):
        tf.norm(tf.constant(X), ord=2, axis=[0, 1])
    with pytest.raises(TypeError, match="float32 or float64"):
        tf.norm(tf.constant([1, 2]))


def test_nn_softplus_is_math_softplus():
    x = tf.constant([-30.0, 0.0, 2.0, 40.0])
    np.testing.assert_allclose(tf.nn.softplus(x).numpy(), np.logaddexp(0, x.numpy()), rtol=1e-6)
    assert tf.nn.softplus is tf.math.softplus


@pytest.mark.parametrize("name", ["CPU:0", "/CPU:0", "cpu:0", "/device:CPU:0", "/cpu:*",
                                  "/job:localhost/replica:0/task:0/device:CPU:0", "", None])
def test_device_accepts_the_cpu(name):
    with tf.device(name):
        y = tf.constant(2.0) * 3.0
    assert y.numpy() == 6.0

    @tf.function(autograph=False)
    def f(x):
        with tf.device(name):
            return x + 1.0
    assert f(tf.constant(1.0)).numpy() == 2.0


@pytest.mark.parametrize("name", ["GPU:0", "/device:GPU:1", "CPU:1", "TPU:0",
                                  "/job:worker/task:0/device:CPU:0"])
def test_device_rejects_devices_that_do_not_exist(name):
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not exist"):
        with tf.device(name):
            pass


@pytest.mark.parametrize("name", ["CPU::0", "/dev ice:CPU:0", 3])
def test_device_rejects_malformed_names(name):
    with pytest.raises(ValueError, match="device name"):
        with tf.device(name):
            pass


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("args", [[[1, 2, 3], [4, 5]], [[1.0, 2.0], [3.0], [4.0, 5.0, 6.0]],
                                  [[7, 8]]])
def test_meshgrid_matches_numpy_eager_and_traced(indexing, args):
    want = np.meshgrid(*[np.asarray(a) for a in args], indexing=indexing)
    ts = [tf.constant(a) for a in args]
    eager = tf.meshgrid(*ts, indexing=indexing)
    traced = tf.function(lambda *xs: tf.meshgrid(*xs, indexing=indexing))(*ts)
    for got in (eager, traced):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w)
    with pytest.raises(ValueError, match="indexing"):
        tf.meshgrid(*ts, indexing="yx")
