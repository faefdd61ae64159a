"""Guide 002, "Controlando el retroceso": input_signature, None dimensions,
tensors instead of Python arguments, new Functions to force a retrace."""
import numpy as np
import pytest

import kiln as tf
from seed_helpers import assert_raises, caught, guide, Interleaved


def _next_collatz():
    @tf.function(input_signature=(tf.TensorSpec(shape=[None], dtype=tf.int32),))
    def next_collatz(x):
        print("Tracing with", x)
        return tf.where(x % 2 == 0, x // 2, 3 * x + 1)
    return next_collatz


def test_input_signature_limits_tracing(capsys):
    next_collatz = _next_collatz()
    print(next_collatz(tf.constant([1, 2])))
    # You specified a 1-D tensor in the input signature, so this should fail.
    with assert_raises(ValueError):
        next_collatz(tf.constant([[1, 2], [3, 4]]))

    # You specified an int32 dtype in the input signature, so this should fail.
    with assert_raises(ValueError):
        next_collatz(tf.constant([1.0, 2.0]))
    out = capsys.readouterr()
    assert out.out == guide("""
        Tracing with Tensor("x:0", shape=(None,), dtype=int32)
        tf.Tensor([4 1], shape=(2,), dtype=int32)
        """) + caught(ValueError) + caught(ValueError)
    assert out.err.count("input_signature") >= 2  # the two tracebacks
    assert next_collatz.experimental_get_tracing_count() == 1


def _signature_error(arg):
    next_collatz = _next_collatz()
    next_collatz(tf.constant([1, 2]))
    with pytest.raises(ValueError) as info:
        next_collatz(arg)
    return str(info.value)


def test_input_signature_error_names_inputs_and_signature():
    msg = _signature_error(tf.constant([[1, 2], [3, 4]]))
    assert "input_signature" in msg
    assert "(None,)" in msg and "int32" in msg
    msg = _signature_error(tf.constant([1.0, 2.0]))
    assert "input_signature" in msg and "float32" in msg


def test_input_signature_error_note_names_the_argument():
    next_collatz = _next_collatz()
    with pytest.raises(ValueError) as info:
        next_collatz(tf.constant([[1, 2], [3, 4]]))
    notes = getattr(info.value, "__notes__", [])
    assert any("argument 'x'" in n and "expected" in n for n in notes), notes


def test_input_signature_error_text_matches_guide():
    assert _signature_error(tf.constant([[1, 2], [3, 4]])) == guide("""
        Python inputs incompatible with input_signature:
          inputs: (
            tf.Tensor(
        [[1 2]
         [3 4]], shape=(2, 2), dtype=int32))
          input_signature: (
            TensorSpec(shape=(None,), dtype=tf.int32, name=None)).""")
    assert _signature_error(tf.constant([1.0, 2.0])) == guide("""
        Python inputs incompatible with input_signature:
          inputs: (
            tf.Tensor([1. 2.], shape=(2,), dtype=float32))
          input_signature: (
            TensorSpec(shape=(None,), dtype=tf.int32, name=None)).""")


def test_collatz_values():
    next_collatz = _next_collatz()
    np.testing.assert_array_equal(next_collatz(tf.constant([1, 2, 3, 4, 5, 6])).numpy(),
                                  [4, 1, 10, 2, 16, 3])


def test_none_dimension_reuses_trace(capsys):
    @tf.function(input_signature=(tf.TensorSpec(shape=[None], dtype=tf.int32),))
    def g(x):
        print('Tracing with', x)
        return x

    # No retrace!
    print(g(tf.constant([1, 2, 3])))
    print(g(tf.constant([1, 2, 3, 4, 5])))
    assert capsys.readouterr().out == guide("""
        Tracing with Tensor("x:0", shape=(None,), dtype=int32)
        tf.Tensor([1 2 3], shape=(3,), dtype=int32)
        tf.Tensor([1 2 3 4 5], shape=(5,), dtype=int32)
        """)
    assert g.experimental_get_tracing_count() == 1


def test_python_arguments_retrace_tensor_arguments_do_not():
    def train_one_step():
        pass

    with Interleaved() as out:
        @tf.function
        def train(num_steps):
            print("Tracing with num_steps = ", num_steps)
            tf.print("Executing with num_steps = ", num_steps)
            for _ in tf.range(num_steps):
                train_one_step()

        print("Retracing occurs for different Python arguments.")
        train(num_steps=10)
        train(num_steps=20)

        print()
        print("Traces are reused for Tensor arguments.")
        train(num_steps=tf.constant(10))
        train(num_steps=tf.constant(20))
    assert out.text == guide("""
        Retracing occurs for different Python arguments.
        Tracing with num_steps =  10
        Executing with num_steps =  10
        Tracing with num_steps =  20
        Executing with num_steps =  20

        Traces are reused for Tensor arguments.
        Tracing with num_steps =  Tensor("num_steps:0", shape=(), dtype=int32)
        Executing with num_steps =  10
        Executing with num_steps =  20
        """)
    assert train.experimental_get_tracing_count() == 3


def test_new_function_forces_retrace():
    def f():
        print('Tracing!')
        tf.print('Executing')

    with Interleaved() as out:
        tf.function(f)()
        tf.function(f)()
    assert out.text == "Tracing!\nExecuting\nTracing!\nExecuting\n"


def test_reduce_retracing_generalizes_shapes():
    # Not a guide example: the guide's advice on shape-polymorphic traces via
    # reduce_retracing (experimental_relax_shapes) on kiln.function.
    @tf.function(reduce_retracing=True)
    def h(x):
        return x + 1

    for n in range(1, 6):
        np.testing.assert_array_equal(h(tf.zeros([n], tf.int32)).numpy(), np.ones(n))
    assert h.experimental_get_tracing_count() <= 2
