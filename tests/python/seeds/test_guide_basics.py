"""Guide 002, "Lo esencial / Uso": Functions as ops, Functions inside Functions.

The GradientTape example runs too (a Function called under a tape).
"""
import re
import timeit

import numpy as np
import pytest

import kiln as tf
from seed_helpers import guide


def test_add_function_value_and_repr():
    @tf.function  # The decorator converts `add` into a `Function`.
    def add(a, b):
        return a + b

    r = add(tf.ones([2, 2]), tf.ones([2, 2]))  # [[2., 2.], [2., 2.]]
    np.testing.assert_array_equal(r.numpy(), [[2., 2.], [2., 2.]])
    assert r.dtype == tf.float32 and r.shape == (2, 2)
    assert isinstance(add, tf.Function)


def test_add_function_repr_matches_guide():
    @tf.function
    def add(a, b):
        return a + b

    assert repr(add(tf.ones([2, 2]), tf.ones([2, 2]))) == guide("""
        <tf.Tensor: shape=(2, 2), dtype=float32, numpy=
        array([[2., 2.],
               [2., 2.]], dtype=float32)>""")


def test_gradient_through_function_matches_guide():
    @tf.function  # The decorator converts `add` into a `Function`.
    def add(a, b):
        return a + b

    v = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        result = add(v, 1.0)
    assert repr(tape.gradient(result, v)) == guide(
        "<tf.Tensor: shape=(), dtype=float32, numpy=1.0>")


def test_scalar_repr_matches_guide():
    # The form of the guide's one-line reprs, e.g. the GradientTape result.
    assert repr(tf.constant(1.0)) == guide("<tf.Tensor: shape=(), dtype=float32, numpy=1.0>")


def test_function_inside_function():
    @tf.function
    def add(a, b):
        return a + b

    @tf.function
    def dense_layer(x, w, b):
        return add(tf.matmul(x, w), b)

    r = dense_layer(tf.ones([3, 2]), tf.ones([2, 2]), tf.ones([2]))
    np.testing.assert_array_equal(r.numpy(), np.full((3, 2), 3.0, np.float32))
    assert r.dtype == tf.float32


def test_function_inside_function_repr():
    @tf.function
    def add(a, b):
        return a + b

    @tf.function
    def dense_layer(x, w, b):
        return add(tf.matmul(x, w), b)

    assert repr(dense_layer(tf.ones([3, 2]), tf.ones([2, 2]), tf.ones([2]))) == guide("""
        <tf.Tensor: shape=(3, 2), dtype=float32, numpy=
        array([[3., 3.],
               [3., 3.],
               [3., 3.]], dtype=float32)>""")


def test_conv_layer_eager_vs_function(capsys):
    conv_layer = tf.keras.layers.Conv2D(100, 3)

    @tf.function
    def conv_fn(image):
        return conv_layer(image)

    image = tf.zeros([1, 20, 20, 10])  # the guide uses [1, 200, 200, 100]; smaller for speed
    # Warm up
    a = conv_layer(image)
    b = conv_fn(image)
    assert a.shape == b.shape == (1, 18, 18, 100)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    print("Eager conv:", timeit.timeit(lambda: conv_layer(image), number=2))
    print("Function conv:", timeit.timeit(lambda: conv_fn(image), number=2))
    print("Note how there's not much difference in performance for convolutions")
    out = capsys.readouterr().out
    assert re.fullmatch(r"Eager conv: [0-9.e-]+\nFunction conv: [0-9.e-]+\n"
                        r"Note how there's not much difference in performance for convolutions\n",
                        out)
