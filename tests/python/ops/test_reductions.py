"""Reductions, arg-reductions and scans against NumPy, eagerly and traced."""
import numpy as np
import pytest

import kiln as tf
from ops_harness import FLOATS, SIGNED, check, sample


def _np_reduce(fn, cast_mean=False):
    def ref(x, axis, keepdims):
        ax = None if axis is None else (tuple(axis) if isinstance(axis, list) else axis)
        if isinstance(axis, list) and not axis:
            return x
        out = fn(x, axis=ax, keepdims=keepdims)
        return np.asarray(out).astype(x.dtype) if not cast_mean else np.asarray(out)
    return ref


def _int_mean(x, axis=None, keepdims=False):
    # Integer mean truncates toward zero, as TensorFlow.
    s = np.sum(x.astype(np.int64), axis=axis, keepdims=keepdims)
    n = x.size // max(np.asarray(s).size, 1) if x.size else 1
    return (np.trunc(s / n) if x.size else np.zeros_like(s)).astype(x.dtype)


REDUCTIONS = {
    "reduce_sum": (tf.reduce_sum, np.sum, FLOATS + SIGNED),
    "reduce_prod": (tf.reduce_prod, np.prod, FLOATS + SIGNED),
    "reduce_max": (tf.reduce_max, np.max, FLOATS + SIGNED + ("uint8",)),
    "reduce_min": (tf.reduce_min, np.min, FLOATS + SIGNED + ("uint8",)),
    "reduce_mean": (tf.reduce_mean, np.mean, FLOATS),
    "reduce_any": (tf.reduce_any, np.any, ("bool",)),
    "reduce_all": (tf.reduce_all, np.all, ("bool",)),
}
AXES = [None, 0, 1, -1, [0, 2], (1, -1), []]


@pytest.mark.parametrize("name", list(REDUCTIONS))
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction(name, axis, keepdims):
    fn, npfn, dtypes = REDUCTIONS[name]
    for dt in dtypes:
        x = sample(dt, (2, 3, 4), seed=3, low=-3, high=3)
        check(lambda t: fn(t, axis=axis, keepdims=keepdims),
              lambda v: _np_reduce(npfn)(v, axis, keepdims), x, what=f"{name} {dt} {axis}")


def test_integer_mean_truncates():
    x = np.array([[1, 2], [-3, -4], [5, 8]], np.int32)
    check(lambda t: tf.reduce_mean(t, axis=1), lambda v: np.array([1, -3, 6], np.int32), x)
    check(tf.reduce_mean, lambda v: np.int32(1), x)


def test_empty_reductions():
    x = np.zeros((0, 3), np.float32)
    check(lambda t: tf.reduce_sum(t, 0), lambda v: np.zeros(3, np.float32), x)
    check(lambda t: tf.reduce_prod(t, 0), lambda v: np.ones(3, np.float32), x)
    check(lambda t: tf.reduce_max(t, 0), lambda v: np.full(3, -np.inf, np.float32), x)
    check(lambda t: tf.reduce_min(t, 0), lambda v: np.full(3, np.inf, np.float32), x)
    with np.errstate(invalid="ignore"):
        check(lambda t: tf.reduce_mean(t, 0), lambda v: np.full(3, np.nan, np.float32), x)
    check(lambda t: tf.reduce_any(t, 0), lambda v: np.zeros(3, bool), x.astype(bool))
    check(lambda t: tf.reduce_all(t, 0), lambda v: np.ones(3, bool), x.astype(bool))


def test_scalar_reductions():
    x = np.asarray(np.float64(2.5))
    check(tf.reduce_sum, lambda v: v, x)
    check(lambda t: tf.reduce_max(t, keepdims=True), lambda v: v, x)


def test_composed_math_reductions():
    x = sample("float64", (3, 4), seed=4)
    check(lambda t: tf.math.reduce_variance(t, axis=1), lambda v: np.var(v, axis=1), x)
    check(lambda t: tf.math.reduce_std(t, keepdims=True), lambda v: np.std(v, keepdims=True), x)
    check(lambda t: tf.math.reduce_logsumexp(t, axis=0),
          lambda v: np.log(np.sum(np.exp(v), axis=0)), x)
    check(tf.math.reduce_logsumexp, lambda v: np.log(np.sum(np.exp(v))), x)
    big = np.array([1000.0, 1000.0], np.float32)
    check(tf.math.reduce_logsumexp, lambda v: np.float32(1000 + np.log(2)), big,
          kind="transcendental")


@pytest.mark.parametrize("dtype", FLOATS + SIGNED + ("uint8",))
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_argmax_argmin(dtype, axis):
    x = sample(dtype, (4, 5), seed=9, low=-2, high=2)  # ties: the first index wins
    ax = 0 if axis is None else axis
    check(lambda t: tf.argmax(t, axis=axis), lambda v: np.argmax(v, axis=ax).astype(np.int64), x)
    check(lambda t: tf.math.argmin(t, axis=axis, output_type=tf.int32),
          lambda v: np.argmin(v, axis=ax).astype(np.int32), x)


@pytest.mark.parametrize("dtype", FLOATS + SIGNED)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum(dtype, axis):
    x = sample(dtype, (3, 4), seed=10)

    def ref(v, exclusive, reverse):
        w = np.flip(v, axis) if reverse else v
        c = np.cumsum(w, axis=axis).astype(v.dtype)
        if exclusive:
            c = c - w
        return np.flip(c, axis) if reverse else c

    for exclusive in (False, True):
        for reverse in (False, True):
            check(lambda t: tf.cumsum(t, axis, exclusive=exclusive, reverse=reverse),
                  lambda v: ref(v, exclusive, reverse), x, what=f"{exclusive} {reverse}")


def test_tensor_axis_eager_and_error_when_symbolic():
    x = tf.constant(sample("float32", (2, 3)))
    np.testing.assert_allclose(tf.reduce_sum(x, axis=tf.constant(1)).numpy(),
                               np.sum(x.numpy(), axis=1), rtol=1e-6)

    @tf.function
    def f(t, a):
        return tf.reduce_sum(t, axis=a)

    with pytest.raises(TypeError, match="constant"):
        f(x, tf.constant(1))


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_complex_sum_mean_and_prod_match_numpy_in_every_mode(dt):
    # TensorFlow reduces complex values with sum, mean and prod (not max or min).
    rng = np.random.default_rng(11)
    a = (rng.standard_normal((4, 300)) + 1j * rng.standard_normal((4, 300))).astype(dt)
    p = (1 + 0.05 * a[:, :30]).astype(dt)
    tol = 1e-5 if dt == np.complex64 else 1e-12

    def fn(x, y):
        return (tf.reduce_sum(x, axis=1), tf.reduce_mean(x * 2.0, axis=0),
                tf.reduce_sum(x), tf.reduce_prod(y, axis=1, keepdims=True))

    want = (a.sum(axis=1), (a * 2).mean(axis=0), a.sum(), p.prod(axis=1, keepdims=True))
    for f in (fn, tf.function(fn), tf.function(fn, jit_compile=True)):
        for got, w in zip(f(tf.constant(a), tf.constant(p)), want):
            assert got.dtype.as_numpy_dtype == dt
            np.testing.assert_allclose(got.numpy(), w, rtol=tol, atol=tol)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Max"):
        tf.reduce_max(tf.constant(a))
