"""Denormal results are flushed to zero inside kiln's ops, as TensorFlow's CPU
ops do (TensorFlow's denormal_test): eagerly, in a function and under
jit_compile, on the calling thread and the pool's; Python's and NumPy's own
arithmetic keeps IEEE denormals afterwards."""
import numpy as np
import pytest

import kiln as tf


def python_has_denormals():
    for dtype in (np.float32, np.float64):
        tiny = np.finfo(dtype).tiny
        assert tiny == tiny / 16 * 16
        assert dtype(tiny) / dtype(16) != 0


@pytest.mark.parametrize("mode", ["eager", "function", "jit"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_denormal_results_are_flushed_and_the_caller_keeps_its_mode(mode, dtype):
    def scale(x):
        return 0.1 * x

    f = {"eager": scale, "function": tf.function(scale),
         "jit": tf.function(scale, jit_compile=True)}[mode]
    python_has_denormals()
    tiny = np.finfo(dtype).tiny
    # A scalar runs on the calling thread, 2^20 values on the pool's threads.
    for shape in ((), (1 << 20,)):
        flushed = f(tf.constant(tiny, shape=shape, dtype=dtype))
        np.testing.assert_array_equal(flushed.numpy(), np.zeros(shape, dtype))
        python_has_denormals()  # the flags do not leak out


def test_denormal_inputs_are_read_as_themselves():
    d = np.finfo(np.float32).smallest_subnormal
    x = tf.constant([d, -d], dtype=tf.float32)
    np.testing.assert_array_equal(tf.sign(x).numpy(), [1, -1])
    assert (x * 1e30).numpy()[0] > 0


def test_flushing_can_be_switched_off():
    tiny = np.finfo(np.float32).tiny
    x = tf.constant(tiny, dtype=tf.float32)
    assert tf.config.experimental.get_flush_denormals()
    old = tf.config.experimental.set_flush_denormals(False)
    try:
        assert old is True
        kept = (0.1 * x).numpy()
        assert 0 < kept < tiny
    finally:
        tf.config.experimental.set_flush_denormals(True)
    assert (0.1 * x).numpy() == 0
