"""tf.float16 and tf.bfloat16: creation, NumPy round trips, arithmetic rounded as NumPy's
float16 / ml_dtypes' bfloat16 round it, eagerly and traced, gradients, casts and errors."""
import ml_dtypes
import numpy as np
import pytest

import kiln as tf

NP = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
DTYPES = {"float16": tf.float16, "bfloat16": tf.bfloat16}


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_creation_and_numpy_round_trip(name):
    dt, npt = DTYPES[name], NP[name]
    t = tf.constant([1.5, -0.1, 70000.0], dtype=dt)
    assert t.dtype == dt and t.dtype.is_floating and dt.name == name
    with np.errstate(over="ignore"):
        want = np.array([1.5, -0.1, 70000.0], np.float32).astype(npt)
    assert t.numpy().dtype == npt
    np.testing.assert_array_equal(t.numpy().astype(np.float32), want.astype(np.float32))
    back = tf.constant(want)  # a NumPy array keeps its dtype
    assert back.dtype == dt
    assert f"dtype={name}" in repr(t)
    assert tf.as_dtype(name) == dt
    assert tf.zeros([2], dt).dtype == dt and tf.ones([2], dt).numpy().astype(float).tolist() == [1, 1]
    assert tf.half == tf.float16


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_arithmetic_rounds_once_like_numpy(name):
    dt, npt = DTYPES[name], NP[name]
    rng = np.random.default_rng(3)
    a = rng.standard_normal(64).astype(npt)
    b = rng.standard_normal(64).astype(npt)
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    cases = {
        "add": (lambda x, y: x + y, fa + fb),
        "mul": (lambda x, y: x * y, fa * fb),
        "div": (lambda x, y: x / y, fa / fb),
        "exp": (lambda x, y: tf.exp(x), np.exp(fa)),
        "tanh": (lambda x, y: tf.tanh(x), np.tanh(fa)),
    }
    for op, (fn, want32) in cases.items():
        want = want32.astype(npt).astype(np.float32)
        for got in (fn(tf.constant(a), tf.constant(b)),
                    tf.function(fn)(tf.constant(a), tf.constant(b))):
            assert got.dtype == dt, op
            np.testing.assert_allclose(got.numpy().astype(np.float32), want,
                                       rtol=1e-6 if op in ("add", "mul", "div") else 2e-2,
                                       err_msg=op)
    s = tf.reduce_sum(tf.constant(a))
    assert s.dtype == dt
    np.testing.assert_allclose(float(s.numpy().astype(np.float32)), fa.sum(), rtol=1e-2)
    m = tf.matmul(tf.reshape(tf.constant(a), [8, 8]), tf.reshape(tf.constant(b), [8, 8]))
    assert m.dtype == dt
    np.testing.assert_allclose(m.numpy().astype(np.float32),
                               (fa.reshape(8, 8) @ fb.reshape(8, 8)).astype(npt).astype(np.float32),
                               rtol=1e-2, atol=1e-2)


def test_gradients_casts_and_errors():
    x = tf.constant([1.0, -2.0, 0.5], tf.float16)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * x)
    g = tape.gradient(y, x)
    assert g.dtype == tf.float16
    np.testing.assert_array_equal(g.numpy(), np.array([2, -4, 1], np.float16))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_mean(tf.nn.softmax(x) * tf.constant([1.0, 2.0, 3.0], tf.float16))
        return tape.gradient(y, x)
    assert step(x).dtype == tf.float16
    assert tf.cast(tf.constant([65504.0, 1e6]), tf.float16).numpy().tolist() == [65504, np.inf]
    assert tf.cast(tf.constant([1.7, -1.7], tf.bfloat16), tf.int32).numpy().tolist() == [1, -1]
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype mismatch"):
        x + tf.constant([1.0, 2.0, 3.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype mismatch"):
        x + tf.constant([1.0, 2.0, 3.0], tf.bfloat16)
    assert (x + 1).dtype == tf.float16  # a Python number takes the tensor's dtype
