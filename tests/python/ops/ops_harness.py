"""Shared harness for the op tests: every case runs eagerly and inside a
kiln.function (the same wrapper call traced) and is compared with a NumPy
reference under one tolerance table."""
import numpy as np

import kiln as tf

# (dtype, kind) -> (rtol, atol); kind is "default" or "transcendental".
TOLERANCES = {
    ("float32", "default"): (1e-5, 1e-6),
    ("float32", "transcendental"): (1e-5, 1e-5),
    ("float64", "default"): (1e-12, 1e-12),
    ("float64", "transcendental"): (1e-12, 1e-12),
}

FLOATS = ("float32", "float64")
SIGNED = ("int32", "int64")
INTS = ("int32", "int64", "uint8")
NUMERIC = FLOATS + INTS
ALL = NUMERIC + ("bool",)


def tol(dtype, kind="default"):
    return TOLERANCES.get((np.dtype(dtype).name, kind), (0, 0))


def assert_close(got, want, kind="default", what=""):
    """got (a kiln tensor) equals want (NumPy) in dtype, shape and value."""
    want = np.asarray(want)
    got_np = np.asarray(got.numpy())
    assert got_np.dtype == want.dtype, f"{what}: dtype {got_np.dtype} != {want.dtype}"
    assert got_np.shape == want.shape, f"{what}: shape {got_np.shape} != {want.shape}"
    if want.dtype.kind == "f":
        rtol, atol = tol(want.dtype, kind)
        np.testing.assert_allclose(got_np, want, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(got_np, want, err_msg=what)


def to_tensor(a):
    """A kiln tensor of a NumPy array, keeping its dtype and shape."""
    a = np.asarray(a)
    if a.ndim == 0:
        # Converted through a Python scalar: the 0-d NumPy conversion is tested
        # on its own in test_array.py.
        return tf.constant(a.item(), dtype=a.dtype.name)
    return tf.constant(a)


def run_both(fn, *arrays):
    """fn(*tensors) eagerly and traced in a kiln.function: (eager, traced)."""
    tensors = [to_tensor(a) if isinstance(a, (np.ndarray, np.generic)) else a for a in arrays]
    eager = fn(*tensors)

    def traced_fn(*ts):
        assert all(t.is_symbolic for t in ts if isinstance(t, tf.Tensor)), "not traced"
        return fn(*ts)

    traced = tf.function(traced_fn)(*tensors)
    return eager, traced


def check(fn, ref, *arrays, kind="default", what=""):
    """fn on tensors of arrays, eagerly and traced, against ref on the arrays."""
    want = ref(*arrays)
    eager, traced = run_both(fn, *arrays)
    if isinstance(want, (list, tuple)):
        assert len(eager) == len(want) and len(traced) == len(want), what
        for i, (w, e, t) in enumerate(zip(want, eager, traced)):
            assert_close(e, w, kind, f"{what} eager[{i}]")
            assert_close(t, w, kind, f"{what} traced[{i}]")
        return
    assert_close(eager, want, kind, f"{what} eager")
    assert_close(traced, want, kind, f"{what} traced")


def sample(dtype, shape, seed=0, low=-5, high=5, positive=False):
    """Deterministic test data of a dtype and shape."""
    return np.asarray(_sample(dtype, shape, seed, low, high, positive))


def _sample(dtype, shape, seed, low, high, positive):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind == "u":
        return rng.integers(0 if not positive else 1, 200, shape).astype(dt)
    if dt.kind == "i":
        lo = 1 if positive else low
        return rng.integers(lo, high + 1, shape).astype(dt)
    lo = 0.1 if positive else low
    return rng.uniform(lo, high, shape).astype(dt)


def eager_and_traced(fn, *args):
    """fn's result eagerly and inside a kiln.function (traced with the same arguments)."""
    return fn(*args), tf.function(fn, autograph=False)(*args)


def as_list(t):
    """A tensor's or RaggedTensor's value as nested Python lists."""
    if isinstance(t, tf.RaggedTensor):
        return t.to_list()
    v = t.numpy()
    return v.tolist() if hasattr(v, "tolist") else v
