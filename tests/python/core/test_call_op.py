"""Nested Functions as StatefulPartitionedCall nodes (inlined by the
optimizer), kiln.name_scope, and gradients through calls and cond."""
import numpy as np
import pytest

import kiln as tf
from kiln import keras


def _listing(graph):
    return [f"{n.input} -> {n.name}" for n in graph.as_graph_def().node]


def test_nested_function_is_one_call_node_then_inlined():
    @tf.function
    def inner(x):
        return x * x + 1.0

    @tf.function
    def outer(x):
        return inner(x) * 2.0

    x = tf.constant([1.0, 2.0])
    np.testing.assert_allclose(outer(x).numpy(), [4.0, 10.0])
    cf = outer.get_concrete_function(x)
    assert "['x'] -> StatefulPartitionedCall" in _listing(cf.graph)
    ops = {n.op for n in cf.optimized_graph.as_graph_def().node}
    assert "StatefulPartitionedCall" not in ops
    assert inner.experimental_get_tracing_count() == 1


def test_name_scope_names_traced_ops():
    @tf.function
    def f(x):
        with tf.name_scope("block") as scope:
            assert scope == "block/"
            y = x + 1.0
        with tf.name_scope("block") as scope:
            assert scope == "block_1/"
            with tf.name_scope("inner") as s2:
                assert s2 == "block_1/inner/"
                y = y * 2.0
        return y

    cf = f.get_concrete_function(tf.TensorSpec([], tf.float32))
    names = [n.name for n in cf.graph.as_graph_def().node]
    assert "block/add" in names and "block_1/inner/mul" in names
    with tf.name_scope("eager") as s:
        assert s == "eager/"
    with pytest.raises(TypeError, match="str"):
        tf.name_scope(3)


def test_layer_whose_call_is_a_function_is_one_scoped_call():
    class Scale(keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(name="w", shape=(), initializer="ones")

        @tf.function
        def call(self, inputs):
            return inputs * self.w

    layer = Scale(name="scale")

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(layer(x))
        return tape.gradient(y, layer.w)

    x = tf.constant([1.0, 2.0, 3.0])
    assert step(x).numpy() == pytest.approx(6.0)
    names = [n.name for n in step.get_concrete_function(x).graph.as_graph_def().node]
    assert "scale/StatefulPartitionedCall" in names


def test_eager_tape_through_a_function_with_captured_variable():
    w = tf.Variable([1.0, 2.0])

    @tf.function
    def f(x):
        return tf.reduce_sum(w * w * x)

    for _ in range(3):
        with tf.GradientTape() as tape:
            y = f(tf.constant([3.0, 4.0]))
        np.testing.assert_allclose(tape.gradient(y, w).numpy(), [6.0, 16.0])
    assert f.experimental_get_tracing_count() == 1


def test_gradient_through_cond_in_a_function():
    v = tf.Variable(3.0)

    @tf.function
    def f(x, flag):
        with tf.GradientTape() as tape:
            tape.watch(x)
            if flag:
                y = x * v
            else:
                y = x * x
        gx, gv = tape.gradient(y, [x, v])
        return y, gx, gv if gv is not None else tf.constant(-1.0)

    y, gx, gv = f(tf.constant(2.0), tf.constant(True))
    assert (y.numpy(), gx.numpy(), gv.numpy()) == (6.0, 3.0, 2.0)
    y, gx, gv = f(tf.constant(2.0), tf.constant(False))
    assert (y.numpy(), gx.numpy()) == (4.0, 4.0)
    assert gv.numpy() == 0.0


def test_eager_call_under_a_tape_keeps_its_random_draws():
    # As in TensorFlow: the forward call keeps what its gradient reads, so
    # dropout inside a function differentiates with the mask it drew.
    @tf.function
    def noisy(x):
        return tf.nn.dropout(x, rate=0.5, seed=3)

    x = tf.constant(np.arange(1.0, 33.0, dtype=np.float32))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = noisy(x)
        total = tf.reduce_sum(y)
    g = tape.gradient(total, x).numpy()
    np.testing.assert_allclose(g, y.numpy() / x.numpy())
    assert set(np.unique(g)) <= {0.0, 2.0} and 0.0 in g and 2.0 in g


def test_eager_gradient_uses_the_variable_value_of_the_forward_call():
    v = tf.Variable(2.0)

    @tf.function
    def f(x):
        return x * x * v

    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    v.assign(100.0)
    gx, gv = tape.gradient(y, [x, v])
    assert (gx.numpy(), gv.numpy()) == (12.0, 9.0)


def test_nested_function_differentiated_in_a_trace_keeps_its_random_draws():
    @tf.function
    def noisy(x):
        return x * tf.random.uniform([3])

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = noisy(x)
        return y, tape.gradient(y, x)

    x = tf.constant([1.0, 2.0, 4.0])
    y, g = step(x)
    np.testing.assert_allclose(g.numpy(), y.numpy() / x.numpy(), rtol=1e-6)
