"""Seed 001: eager vs kiln.function, print at trace time vs kiln.print at run time,
variables created on the first call only, variables as arguments or attributes."""
import numpy as np
import pytest

import kiln as tf
from seed_helpers import guide, Interleaved

EXPECTED = np.array([[22., 22.], [23., 13.]], np.float32)


def test_eager_function(capsys):
    def f():
        a = tf.constant([[10, 10], [11., 1.]])
        x = tf.constant([[1., 0.], [0., 1.]])
        b = tf.Variable(12.)
        y = tf.matmul(a, x) + b
        return y

    print(f().numpy())
    assert capsys.readouterr().out == "[[22. 22.]\n [23. 13.]]\n"


def test_eager_without_function(capsys):
    a = tf.constant([[10, 10], [11., 1.]])
    x = tf.constant([[1., 0.], [0., 1.]])
    b = tf.Variable(12.)
    y = tf.matmul(a, x) + b
    print(y.numpy())
    assert capsys.readouterr().out == "[[22. 22.]\n [23. 13.]]\n"


def _f_creating_variable():
    @tf.function
    def f():
        a = tf.constant([[10, 10], [11., 1.]])
        x = tf.constant([[1., 0.], [0., 1.]])
        b = tf.Variable(12.)
        y = tf.matmul(a, x) + b
        print("PRINT: ", y)
        tf.print("TF-PRINT: ", y)
        return y
    return f


def test_variable_in_body_raises_value_error():
    with Interleaved() as out:
        f = _f_creating_variable()
        with pytest.raises(ValueError):
            f()
    # Tracing ran the Python print; no tf.print ran.
    assert out.text == 'PRINT:  Tensor("add:0", shape=(2, 2), dtype=float32)\n'


def test_variable_in_body_later_trace_raises():
    @tf.function
    def f(x):
        b = tf.Variable(12.)
        return x + b

    try:
        f(tf.constant(1.0))  # TF raises here already (see the xfail above)
    except ValueError:
        pass
    with pytest.raises(ValueError, match="first call"):
        f(tf.constant([1.0, 2.0]))  # a new shape: a second trace, a second variable


def test_print_at_trace_kiln_print_at_run():
    with Interleaved() as out:
        @tf.function
        def f(b):
            a = tf.constant([[10, 10], [11., 1.]])
            x = tf.constant([[1., 0.], [0., 1.]])
            y = tf.matmul(a, x) + b
            print("PRINT: ", y)
            tf.print("TF-PRINT: ", y)
            return y

        b = tf.Variable(12.)
        r1 = f(b)
        r2 = f(b)
    assert out.text == ('PRINT:  Tensor("add:0", shape=(2, 2), dtype=float32)\n'
                        "TF-PRINT:  [[22 22]\n [23 13]]\n"
                        "TF-PRINT:  [[22 22]\n [23 13]]\n")
    np.testing.assert_array_equal(r1.numpy(), EXPECTED)
    np.testing.assert_array_equal(r2.numpy(), EXPECTED)


def test_variable_as_argument_sees_updates():
    @tf.function
    def f(b):
        a = tf.constant([[10, 10], [11., 1.]])
        x = tf.constant([[1., 0.], [0., 1.]])
        y = tf.matmul(a, x) + b
        return y

    b = tf.Variable(12.)
    np.testing.assert_array_equal(f(b).numpy(), EXPECTED)
    b.assign(0.)
    np.testing.assert_array_equal(f(b).numpy(), EXPECTED - 12)
    assert f.experimental_get_tracing_count() == 1


def test_class_attribute_variable_created_once():
    class F():
        def __init__(self):
            self._b = None

        @tf.function
        def __call__(self):
            a = tf.constant([[10, 10], [11., 1.]])
            x = tf.constant([[1., 0.], [0., 1.]])
            if self._b is None:
                self._b = tf.Variable(12.)
            y = tf.matmul(a, x) + self._b
            print("PRINT: ", y)
            tf.print("TF-PRINT: ", y)
            return y

    with Interleaved() as out:
        f = F()
        r = f()
        b = f._b
        r2 = f()
    # The first call traces twice, as in TensorFlow: the trace that created
    # the variable, then one with variable creation disallowed (the one kept).
    assert out.text == ('PRINT:  Tensor("add:0", shape=(2, 2), dtype=float32)\n' * 2 +
                        "TF-PRINT:  [[22 22]\n [23 13]]\n"
                        "TF-PRINT:  [[22 22]\n [23 13]]\n")
    assert isinstance(b, tf.Variable) and f._b is b
    np.testing.assert_array_equal(r.numpy(), EXPECTED)
    np.testing.assert_array_equal(r2.numpy(), EXPECTED)
    b.assign(2.)
    np.testing.assert_array_equal(f().numpy(), EXPECTED - 10)


def test_assign_add_through_argument(capsys):
    a = tf.Variable(0)

    @tf.function
    def g(x):
        x.assign_add(1)
        return x

    print(g(a))
    print(g(a))
    print(g(a))
    assert capsys.readouterr().out == guide("""
        tf.Tensor(1, shape=(), dtype=int32)
        tf.Tensor(2, shape=(), dtype=int32)
        tf.Tensor(3, shape=(), dtype=int32)
        """)
    assert a.numpy() == 3
    assert repr(a) == "<kiln.Variable 'Variable:0' shape=() dtype=int32, numpy=3>"
    assert g.experimental_get_tracing_count() == 1


def test_assign_add_program_order():
    # Automatic control dependencies: reads after an update see it, in program order.
    v = tf.Variable(1)

    @tf.function
    def h():
        before = v.read_value()
        v.assign_add(10)
        after = v.read_value()
        v.assign(v * 2)
        return before, after, v.read_value()

    assert [int(t) for t in h()] == [1, 11, 22]
    assert [int(t) for t in h()] == [22, 32, 64]
