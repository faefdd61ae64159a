"""Guide 002, "Depuración": run_functions_eagerly, print vs kiln.print,
enable_check_numerics. (The guide has no code cells here; these tests check
the behaviour its tips describe.)"""
import numpy as np
import pytest

import kiln as tf
from seed_helpers import Interleaved


def test_run_functions_eagerly_disables_tracing():
    traced = []

    @tf.function
    def f(x):
        traced.append(tf.executing_eagerly())
        return x * 2

    tf.config.run_functions_eagerly(True)
    assert tf.config.functions_run_eagerly()
    assert f(tf.constant(2)).numpy() == 4
    assert f(tf.constant(3)).numpy() == 6
    assert traced == [True, True]        # the Python body ran eagerly, each call
    tf.config.run_functions_eagerly(False)
    assert not tf.config.functions_run_eagerly()
    assert f(tf.constant(4)).numpy() == 8
    assert traced == [True, True, False]  # traced again, as a graph


def test_python_print_at_trace_kiln_print_every_call():
    with Interleaved() as out:
        @tf.function
        def f(x):
            print("python print", x)
            tf.print("kiln print", x)
            return x + 1

        f(tf.constant(1))
        f(tf.constant(2))
        f(tf.constant(3))
    assert out.text == ('python print Tensor("x:0", shape=(), dtype=int32)\n'
                        "kiln print 1\nkiln print 2\nkiln print 3\n")


def test_python_print_every_call_when_run_eagerly():
    tf.config.run_functions_eagerly(True)
    with Interleaved() as out:
        @tf.function
        def f(x):
            print("python print", x.numpy())
            return x + 1

        f(tf.constant(1))
        f(tf.constant(2))
    assert out.text == "python print 1\npython print 2\n"


def test_enable_check_numerics_eager():
    tf.debugging.enable_check_numerics()
    with pytest.raises(tf.errors.InvalidArgumentError, match="Log"):
        tf.math.log(tf.constant([0.0, -1.0]))
    tf.debugging.disable_check_numerics()
    r = tf.math.log(tf.constant([0.0]))
    assert np.isinf(r.numpy()[0])


def test_enable_check_numerics_in_function_raises():
    @tf.function
    def f(x):
        return tf.math.log(x) * 2.0

    tf.debugging.enable_check_numerics()
    assert f(tf.constant([1.0])).numpy()[0] == 0.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="NaN or Inf"):
        f(tf.constant([-1.0]))


def test_enable_check_numerics_names_creating_op():
    @tf.function
    def f(x):
        return tf.math.log(x) * 2.0

    tf.debugging.enable_check_numerics()
    with pytest.raises(tf.errors.InvalidArgumentError, match="Log"):
        f(tf.constant([-1.0]))
