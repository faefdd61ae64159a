"""tf.complex64 / complex128: creation from Python and NumPy, arithmetic against NumPy,
tf.complex, tf.math.real/imag/conj/abs, casts, eager and traced, and the errors."""
import numpy as np
import pytest

import kiln as tf


def test_creation_defaults_and_numpy():
    z = tf.constant([1 + 2j, -0.5j])
    assert z.dtype == tf.complex128 and z.dtype.is_complex and not z.dtype.is_floating
    np.testing.assert_array_equal(z.numpy(), np.array([1 + 2j, -0.5j]))
    assert tf.constant(3j).dtype == tf.complex128
    c64 = tf.constant(np.array([1 + 1j], np.complex64))
    assert c64.dtype == tf.complex64 and c64.numpy().dtype == np.complex64
    assert tf.constant([1.0, 2.0], dtype=tf.complex64).numpy().tolist() == [1 + 0j, 2 + 0j]
    assert "1.+2.j" in repr(z)  # NumPy prints the values, as in TensorFlow
    with pytest.raises(TypeError):
        tf.constant(1 + 2j, dtype=tf.float32)


@pytest.mark.parametrize("dtype,np_dtype", [(tf.complex64, np.complex64),
                                            (tf.complex128, np.complex128)])
def test_arithmetic_and_parts_match_numpy(dtype, np_dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(8) + 1j * rng.standard_normal(8)).astype(np_dtype)
    b = (rng.standard_normal(8) + 1j * rng.standard_normal(8)).astype(np_dtype)
    rtol = 1e-6 if np_dtype == np.complex64 else 1e-12

    def program(x, y):
        return (x + y, x - y, x * y, x / y, -x, tf.math.conj(x), tf.math.real(x),
                tf.math.imag(y), tf.abs(x), tf.equal(x, x), x * 2)

    want = (a + b, a - b, a * b, a / b, -a, np.conj(a), a.real, b.imag, np.abs(a),
            np.ones(8, bool), a * 2)
    for got in (program(tf.constant(a), tf.constant(b)),
                tf.function(program)(tf.constant(a), tf.constant(b))):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w, rtol=rtol)
    assert tf.math.real(tf.constant(a)).dtype == (tf.float32 if dtype == tf.complex64
                                                   else tf.float64)


def test_complex_constructor_casts_and_errors():
    re, im = tf.constant([1.0, 2.0]), tf.constant([3.0, -4.0])
    z = tf.complex(re, im)
    assert z.dtype == tf.complex64
    np.testing.assert_array_equal(z.numpy(), np.array([1 + 3j, 2 - 4j], np.complex64))
    np.testing.assert_allclose(tf.abs(z).numpy(), [np.sqrt(10), np.sqrt(20)], rtol=1e-7)
    assert tf.complex(tf.constant(1.0, tf.float64), tf.constant(2.0, tf.float64)).dtype == \
        tf.complex128
    assert tf.cast(z, tf.float32).numpy().tolist() == [1.0, 2.0]  # the real part
    assert tf.cast(tf.cast(z, tf.complex128), tf.complex64).numpy().tolist() == [1 + 3j, 2 - 4j]
    np.testing.assert_array_equal(tf.math.real(re).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(tf.math.imag(re).numpy(), [0.0, 0.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Complex"):
        tf.complex(tf.constant([1]), tf.constant([2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Less"):
        tf.less(z, z)
