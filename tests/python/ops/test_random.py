"""kiln.random: shapes, dtypes, ranges, seeds and rough statistics."""
import numpy as np
import pytest

import kiln as tf


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_uniform_float(dtype):
    x = tf.random.uniform([1000, 10], dtype=dtype, seed=1)
    assert x.dtype == dtype and x.shape == [1000, 10]
    v = x.numpy()
    assert v.min() >= 0 and v.max() < 1
    assert abs(v.mean() - 0.5) < 0.02
    y = tf.random.uniform((2000,), minval=-2.0, maxval=tf.constant(3.0, dtype), dtype=dtype)
    assert y.numpy().min() >= -2 and y.numpy().max() < 3


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_uniform_int(dtype):
    v = tf.random.uniform([5000], minval=-3, maxval=4, dtype=dtype, seed=2).numpy()
    assert v.dtype == dtype
    assert set(np.unique(v)) == set(range(-3, 4))
    with pytest.raises(ValueError, match="maxval"):
        tf.random.uniform([2], dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normal(dtype):
    v = tf.random.normal([20000], mean=2.0, stddev=3.0, dtype=dtype, seed=4).numpy()
    assert v.dtype == dtype
    assert abs(v.mean() - 2.0) < 0.1 and abs(v.std() - 3.0) < 0.1


def test_seeds_repeat_after_set_seed():
    tf.random.set_seed(7)
    a1 = tf.random.uniform([3], seed=1).numpy()
    a2 = tf.random.uniform([3], seed=1).numpy()
    b1 = tf.random.normal([3]).numpy()
    assert not np.array_equal(a1, a2)  # one stream per (op, seed): calls continue it
    tf.random.set_seed(7)
    np.testing.assert_array_equal(tf.random.uniform([3], seed=1).numpy(), a1)
    np.testing.assert_array_equal(tf.random.uniform([3], seed=1).numpy(), a2)
    np.testing.assert_array_equal(tf.random.normal([3]).numpy(), b1)


def test_random_in_functions_draws_new_values_each_call():
    @tf.function
    def f(n):
        return tf.random.uniform(tf.stack([n]), seed=5) + tf.random.normal([2]).shape[0]

    a = f(tf.constant(4)).numpy()
    b = f(tf.constant(4)).numpy()
    assert a.shape == (4,) and not np.array_equal(a, b)


def test_random_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="RandomStandardNormal"):
        tf.random.normal([2], dtype=tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="RandomUniform"):
        tf.random.uniform([2], minval=3, maxval=3, dtype=tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="seed"):
        tf.random.uniform([2], seed=-4)
    with pytest.raises(TypeError):
        tf.random.set_seed("x")
