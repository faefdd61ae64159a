"""tf.linalg's determinants, solves, decompositions and diagonals: values against NumPy
(float32 and float64, batched) eagerly, inside a kiln.function and under
jit_compile=True; gradients against central differences in float64; the error paths.
Decompositions with a sign gauge (qr, svd, eigh) are compared through quantities
the gauge leaves alone (|r|, |u|, reconstructions)."""
import numpy as np
import pytest

import kiln as tf

L = tf.linalg
RTOL = {"float32": 2e-4, "float64": 1e-9}


def _rng(seed):
    return np.random.default_rng(seed)


def well(shape, seed=0):
    """A well-conditioned (batch of) matrices: 2 I + small noise."""
    m, n = shape[-2:]
    return _rng(seed).standard_normal(shape) * 0.3 + 2 * np.eye(m, n)


def spd(shape, seed=0):
    a = well(shape, seed)
    return a @ np.swapaxes(a, -1, -2) + np.eye(shape[-1])


def rand(shape, seed=0):
    return _rng(seed).standard_normal(shape)


def run_all(fn, *arrays):
    """fn on tensors of arrays eagerly, in a kiln.function and under jit_compile=True."""
    ts = [tf.constant(a) for a in arrays]
    outs = [fn(*ts), tf.function(fn)(*ts), tf.function(fn, jit_compile=True)(*ts)]
    return [tf.nest.map_structure(lambda t: np.asarray(t.numpy()), o) for o in outs]


def assert_all_close(fn, ref, dtype, *arrays):
    arrays = [np.asarray(a, dtype) for a in arrays]
    want = ref(*[a.astype(np.float64) for a in arrays])
    for got in run_all(fn, *arrays):
        got_l = got if isinstance(got, (list, tuple)) else [got]
        want_l = want if isinstance(want, (list, tuple)) else [want]
        assert len(got_l) == len(want_l)
        for g, w in zip(got_l, want_l):
            assert g.dtype == np.dtype(dtype) and g.shape == np.shape(w)
            np.testing.assert_allclose(g, w, rtol=RTOL[dtype], atol=RTOL[dtype])


def _t(x):
    return np.swapaxes(x, -1, -2)


def _qr_inv(q, r):
    """What the sign gauge leaves of a QR: q @ r, q^T q and |r|."""
    return tf.matmul(q, r), tf.matmul(q, q, transpose_a=True), tf.abs(r)


def _np_qr_inv(x):
    q, r = np.linalg.qr(x)
    return x, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2), abs(r)


def _svd_inv(x):
    s, u, v = L.svd(x)
    return s, tf.abs(u), tf.abs(v), tf.matmul(u * s[..., None, :], v, transpose_b=True)


def _np_svd_inv(x):
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    return s, abs(u), abs(_t(vh)), x


def _eigh_inv(x):
    e, v = L.eigh(x)
    return e, tf.abs(v), tf.matmul(v * e[..., None, :], v, transpose_b=True)


def _np_eigh_inv(x):
    e, v = np.linalg.eigh(x)
    return e, abs(v), x


def _lstsq_ref(a, b, l2=0.0):
    n = a.shape[-1]
    return np.linalg.solve(_t(a) @ a + l2 * np.eye(n), _t(a) @ b)


def _lstsq_wide_ref(a, b):
    return _t(a) @ np.linalg.solve(a @ _t(a), b)


B = np.asarray([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]])  # a right-hand side [3, 2]
FORWARD = [  # name, kiln fn, NumPy reference, inputs
    ("det", L.det, np.linalg.det, [well((2, 3, 3))]),
    ("det_1x1", L.det, np.linalg.det, [well((1, 1))]),
    ("slogdet", lambda x: tuple(L.slogdet(x)), lambda x: tuple(np.linalg.slogdet(x)),
     [well((2, 3, 3)) * np.asarray([1.0, -1.0])[:, None, None]]),
    ("logdet", L.logdet, lambda x: np.linalg.slogdet(x)[1], [spd((2, 3, 3))]),
    ("inv", L.inv, np.linalg.inv, [well((2, 4, 4))]),
    ("inv_adjoint", lambda x: L.inv(x, adjoint=True), lambda x: np.linalg.inv(_t(x)),
     [well((3, 3))]),
    ("solve", L.solve, np.linalg.solve, [well((2, 3, 3)), np.stack([B, -B])]),
    ("solve_adjoint", lambda a, b: L.solve(a, b, adjoint=True),
     lambda a, b: np.linalg.solve(_t(a), b), [well((3, 3)), B]),
    ("triangular_lower", L.triangular_solve,
     lambda a, b: np.linalg.solve(np.tril(a), b), [well((2, 3, 3)), np.stack([B, B])]),
    ("triangular_upper_adjoint", lambda a, b: L.triangular_solve(a, b, lower=False,
                                                                 adjoint=True),
     lambda a, b: np.linalg.solve(_t(np.triu(a)), b), [well((3, 3)), B]),
    ("triangular_broadcast", L.triangular_solve,
     lambda a, b: np.linalg.solve(np.tril(a), b), [well((3, 3)), np.stack([B, -B])]),
    ("cholesky", L.cholesky, np.linalg.cholesky, [spd((2, 4, 4))]),
    ("cholesky_solve", lambda a, b: L.cholesky_solve(L.cholesky(a), b), np.linalg.solve,
     [spd((2, 3, 3)), np.stack([B, B])]),
    ("qr_square", lambda x: _qr_inv(*L.qr(x)), _np_qr_inv, [rand((2, 3, 3))]),
    ("qr_tall", lambda x: _qr_inv(*L.qr(x)), _np_qr_inv, [rand((2, 5, 3))]),
    ("qr_wide", lambda x: _qr_inv(*L.qr(x)), _np_qr_inv, [rand((2, 3, 5))]),
    ("svd_s", lambda x: L.svd(x, compute_uv=False), lambda x: np.linalg.svd(x, compute_uv=False),
     [rand((2, 4, 3))]),
    ("svd_square", _svd_inv, _np_svd_inv, [rand((2, 3, 3))]),
    ("svd_tall", _svd_inv, _np_svd_inv, [rand((2, 5, 3))]),
    ("svd_wide", _svd_inv, _np_svd_inv, [rand((3, 5))]),
    ("eigh", _eigh_inv, _np_eigh_inv, [spd((2, 4, 4)) - 3 * np.eye(4)]),
    ("eigvalsh", L.eigvalsh, np.linalg.eigvalsh, [spd((2, 4, 4))]),
    ("band_part", lambda x: L.band_part(x, 1, 0), lambda x: np.tril(np.triu(x, -1)),
     [rand((2, 3, 4))]),
    ("band_part_upper", lambda x: L.band_part(x, 0, -1), np.triu, [rand((4, 3))]),
    ("matrix_transpose", L.matrix_transpose, _t, [rand((2, 3, 4))]),
    ("adjoint", L.adjoint, _t, [rand((3, 4))]),
    ("trace", L.trace, lambda x: np.trace(x, axis1=-2, axis2=-1), [rand((2, 3, 4))]),
    ("diag_part", L.diag_part, lambda x: np.diagonal(x, axis1=-2, axis2=-1),
     [rand((2, 4, 3))]),
    ("diag_part_k", lambda x: L.diag_part(x, k=-2),
     lambda x: np.diagonal(x, -2, axis1=-2, axis2=-1), [rand((2, 4, 3))]),
    ("diag", L.diag, lambda d: d[..., None] * np.eye(d.shape[-1]), [rand((2, 3))]),
    ("set_diag", lambda x, d: L.set_diag(x, d),
     lambda x, d: x * (1 - np.eye(3, 4)) + np.eye(3, 4) * np.pad(d, [(0, 0), (0, 1)])[:, None],
     [rand((2, 3, 4)), rand((2, 3), 1)]),
    ("lstsq_tall", L.lstsq, _lstsq_ref, [rand((2, 5, 3)), rand((2, 5, 2), 1)]),
    ("lstsq_tall_l2", lambda a, b: L.lstsq(a, b, l2_regularizer=0.5),
     lambda a, b: _lstsq_ref(a, b, 0.5), [rand((5, 3)), rand((5, 2), 1)]),
    ("lstsq_wide", L.lstsq, _lstsq_wide_ref, [rand((2, 3, 5)), rand((2, 3, 2), 1)]),
    ("lstsq_slow", lambda a, b: L.lstsq(a, b, fast=False), _lstsq_ref,
     [rand((5, 3)), rand((5, 2), 1)]),
    ("pinv_tall", L.pinv, np.linalg.pinv, [rand((2, 5, 3))]),
    ("pinv_wide", L.pinv, np.linalg.pinv, [rand((3, 5))]),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn,ref,inputs", FORWARD, ids=[c[0] for c in FORWARD])
def test_forward_matches_numpy(name, fn, ref, inputs, dtype):
    assert_all_close(fn, ref, dtype, *inputs)


def test_result_types_follow_tensorflow():
    x = tf.constant(well((3, 3)))
    sl = L.slogdet(x)
    assert type(sl).__name__ == "LogMatrixDeterminant"
    assert sl._fields == ("sign", "log_abs_determinant") and sl.sign.numpy() == 1.0
    qr = L.qr(x)
    assert type(qr).__name__ == "Qr" and qr._fields == ("q", "r") and qr.q is qr[0]
    assert isinstance(L.svd(x), tuple) and len(L.svd(x)) == 3
    assert isinstance(L.svd(x, compute_uv=False), tf.Tensor)
    assert isinstance(L.eigh(x + L.matrix_transpose(x)), tuple)
    traced = tf.function(lambda t: L.qr(t))(x)
    assert type(traced).__name__ == "Qr"


def test_full_matrices_shapes_and_orthogonality():
    a = rand((2, 5, 3))
    q, r = L.qr(tf.constant(a), full_matrices=True)
    assert q.shape == (2, 5, 5) and r.shape == (2, 5, 3)
    np.testing.assert_allclose(np.matmul(q.numpy(), r.numpy()), a, atol=1e-12)
    np.testing.assert_allclose(_t(q.numpy()) @ q.numpy(), np.broadcast_to(np.eye(5), (2, 5, 5)),
                               atol=1e-12)
    s, u, v = L.svd(tf.constant(a), full_matrices=True)
    assert s.shape == (2, 3) and u.shape == (2, 5, 5) and v.shape == (2, 3, 3)
    rebuilt = (u.numpy()[..., :3] * s.numpy()[..., None, :]) @ _t(v.numpy())
    np.testing.assert_allclose(rebuilt, a, atol=1e-12)


def test_singular_matrices():
    sing = tf.constant([[1.0, 2.0], [2.0, 4.0]])
    assert L.det(sing).numpy() == 0.0
    sign, logabs = L.slogdet(sing)
    assert sign.numpy() == 0.0 and logabs.numpy() == -np.inf
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input is not invertible."):
        L.inv(sing)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input matrix is not invertible."):
        L.solve(sing, tf.ones([2, 1]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input is not invertible."):
        tf.function(L.inv)(sing)
    # pinv drops the zero singular value: pinv of a rank-one matrix is its own (NumPy's).
    np.testing.assert_allclose(L.pinv(sing).numpy(), np.linalg.pinv(sing.numpy()), rtol=1e-5)
    assert L.matrix_rank(sing).numpy() == 1 and L.matrix_rank(sing).dtype == tf.int32


def test_not_positive_definite_cholesky():
    # TensorFlow 2.21 on CPU returns NaNs here; kiln's kernel raises (see the report).
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cholesky decomposition was not"):
        L.cholesky(tf.constant([[1.0, 2.0], [2.0, 1.0]]))


@pytest.mark.parametrize("fn", [L.det, L.slogdet, L.inv, L.cholesky, L.qr, L.svd, L.eigh,
                                L.eigvalsh, L.logdet])
def test_errors_of_the_kernels(fn):
    with pytest.raises(tf.errors.InvalidArgumentError, match="float32 or float64, got int32"):
        fn(tf.constant([[1, 2], [3, 4]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank >= 2"):
        fn(tf.constant([1.0, 2.0]))
    if fn not in (L.qr, L.svd):
        with pytest.raises(tf.errors.InvalidArgumentError, match="square"):
            fn(tf.ones([2, 3]))


def test_errors_of_solves():
    eye = tf.eye(2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="float32 or float64"):
        L.solve(tf.constant([[1, 0], [0, 1]]), tf.constant([[1], [1]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype mismatch"):
        L.solve(eye, tf.ones([2, 1], tf.float64))
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank >= 2"):
        L.solve(eye, tf.ones([2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="same rank"):
        L.solve(eye, tf.ones([3, 2, 1]))  # TensorFlow's MatrixSolve does not broadcast
    with pytest.raises(tf.errors.InvalidArgumentError, match="rows"):
        L.solve(eye, tf.ones([3, 1]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank >= 2"):
        L.triangular_solve(eye, tf.ones([2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="square"):
        L.triangular_solve(tf.ones([2, 3]), tf.ones([2, 1]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank >= 2"):
        L.lstsq(tf.ones([3]), tf.ones([3, 1]))


def test_errors_of_composites():
    with pytest.raises(TypeError, match=r"Input `a` must have `float`-like `dtype` \(saw int32\)"):
        L.pinv(tf.constant([[1, 2], [3, 4]]))
    with pytest.raises(ValueError, match=r"at least 2 dimensions \(saw: 1\)"):
        L.pinv(tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="should be a \\(batch\\) matrix with rank >= 2"):
        L.matrix_transpose(tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="should be a \\(batch\\) matrix with rank >= 2"):
        L.adjoint(tf.constant([1.0, 2.0]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_lower must be negative or"):
        L.band_part(tf.ones([3, 3]), 5, 0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank >= 2"):
        L.band_part(tf.ones([3]), 0, 0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="one dtype"):
        L.band_part(tf.ones([3, 3]), tf.constant(1), tf.constant(1, tf.int64))


def test_band_part_dtypes_and_tensor_bounds():
    x = tf.constant([[1, 2], [3, 4]])
    np.testing.assert_array_equal(L.band_part(x, 0, 0).numpy(), [[1, 0], [0, 4]])
    b = tf.constant([[True, False], [True, True]])
    np.testing.assert_array_equal(L.band_part(b, 0, 0).numpy(), [[True, False], [False, True]])
    got = tf.function(lambda t, lo: L.band_part(t, lo, 0))(tf.ones([3, 3]), tf.constant(1))
    np.testing.assert_array_equal(got.numpy(), np.tril(np.triu(np.ones((3, 3)), -1)))


# ---- diagonals: values TensorFlow 2.21 printed ----

A34 = np.arange(1.0, 13.0).reshape(3, 4)
D3 = np.asarray([1.0, 2.0, 3.0])
DIAG_PART = [  # kwargs, TensorFlow 2.21's value
    ({}, [1.0, 6.0, 11.0]),
    ({"k": 1}, [2.0, 7.0, 12.0]),
    ({"k": -1}, [5.0, 10.0]),
    ({"k": 3}, [4.0]),
    ({"k": (-1, 2)}, [[0.0, 3.0, 8.0], [2.0, 7.0, 12.0], [1.0, 6.0, 11.0], [5.0, 10.0, 0.0]]),
    ({"k": (-1, 2), "align": "LEFT_RIGHT"},
     [[3.0, 8.0, 0.0], [2.0, 7.0, 12.0], [1.0, 6.0, 11.0], [0.0, 5.0, 10.0]]),
    ({"k": (-1, 2), "padding_value": 9},
     [[9.0, 3.0, 8.0], [2.0, 7.0, 12.0], [1.0, 6.0, 11.0], [5.0, 10.0, 9.0]]),
    ({"k": (1, 1)}, [2.0, 7.0, 12.0]),
    ({"k": (-2, -1)}, [[5.0, 10.0], [9.0, 0.0]]),
]


@pytest.mark.parametrize("kwargs,want", DIAG_PART)
def test_diag_part_matches_tensorflow(kwargs, want):
    for got in run_all(lambda x: L.diag_part(x, **kwargs), A34):
        np.testing.assert_array_equal(got, want)


DIAG = [  # diagonal, kwargs, TensorFlow 2.21's value
    (D3, {"k": 1}, [[0, 1, 0, 0], [0, 0, 2, 0], [0, 0, 0, 3], [0, 0, 0, 0]]),
    (D3, {"k": -1}, [[0, 0, 0, 0], [1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 3, 0]]),
    (D3, {"num_rows": 4}, [[1, 0, 0], [0, 2, 0], [0, 0, 3], [0, 0, 0]]),
    (D3, {"num_cols": 4}, [[1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 3, 0]]),
    (D3, {"num_rows": 3, "num_cols": 5}, [[1, 0, 0, 0, 0], [0, 2, 0, 0, 0], [0, 0, 3, 0, 0]]),
    (D3, {"padding_value": 9}, [[1, 9, 9], [9, 2, 9], [9, 9, 3]]),
    (D3, {"k": 1, "num_rows": 3}, [[0, 1, 0, 0], [0, 0, 2, 0], [0, 0, 0, 3]]),
    (np.asarray([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), {"k": (-1, 1)}, [[3, 2], [5, 4]]),
    (np.asarray([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), {"k": (-1, 1), "align": "LEFT_LEFT"},
     [[3, 1], [5, 4]]),
    (np.asarray([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), {"k": (0, 1), "num_rows": 3,
                                                     "num_cols": 4},
     [[4, 1, 0, 0], [0, 5, 2, 0], [0, 0, 6, 3]]),
    (np.arange(1.0, 10.0).reshape(3, 3), {"k": (-2, 0), "num_rows": 4, "num_cols": 3},
     [[1, 0, 0], [4, 2, 0], [7, 5, 3], [0, 8, 6]]),
    (np.arange(1.0, 10.0).reshape(3, 3), {"k": (-2, 0), "num_rows": 4, "num_cols": 3,
                                          "align": "LEFT_RIGHT"},
     [[1, 0, 0], [4, 2, 0], [8, 5, 3], [0, 9, 6]]),
]


@pytest.mark.parametrize("diagonal,kwargs,want", DIAG)
def test_diag_matches_tensorflow(diagonal, kwargs, want):
    for got in run_all(lambda d: L.diag(d, **kwargs), diagonal):
        np.testing.assert_array_equal(got, np.asarray(want, np.float64))


def test_diag_int_bool_batch_and_tensor_k():
    np.testing.assert_array_equal(L.diag(tf.constant([1, 2])).numpy(), [[1, 0], [0, 2]])
    np.testing.assert_array_equal(L.diag(tf.constant([True, False])).numpy(),
                                  [[True, False], [False, False]])
    assert L.diag(tf.ones([2, 3])).shape == (2, 3, 3)
    np.testing.assert_array_equal(L.diag(D3, k=tf.constant(1)).numpy(), L.diag(D3, k=1).numpy())
    np.testing.assert_array_equal(L.diag_part(tf.constant([[0, 1], [2, 3]])).numpy(), [0, 3])
    np.testing.assert_array_equal(L.trace(tf.constant([[1, 2], [3, 4]])).numpy(), 5)


SET_DIAG = [  # diagonal, k, TensorFlow 2.21's value
    ([0.0, 0.0, 0.0], 0, [[0, 2, 3, 4], [5, 0, 7, 8], [9, 10, 0, 12]]),
    ([0.0, 0.0, 0.0], 1, [[1, 0, 3, 4], [5, 6, 0, 8], [9, 10, 11, 0]]),
    ([0.0, 0.0], -1, [[1, 2, 3, 4], [0, 6, 7, 8], [9, 0, 11, 12]]),
    (-np.arange(1.0, 10.0).reshape(3, 3), (-1, 1),
     [[-4, -1, 3, 4], [-7, -5, -2, 8], [9, -8, -6, -3]]),
]


@pytest.mark.parametrize("diagonal,k,want", SET_DIAG)
def test_set_diag_matches_tensorflow(diagonal, k, want):
    for got in run_all(lambda x, d: L.set_diag(x, d, k=k), A34, np.asarray(diagonal)):
        np.testing.assert_array_equal(got, np.asarray(want, np.float64))


def test_diagonals_with_unknown_batch_dims():
    spec = [tf.TensorSpec([None, 3, 4], tf.float64)]
    f = tf.function(lambda x: (L.trace(x), L.diag_part(x, k=(-1, 1)), L.set_diag(x, x[:, 0, :3])),
                    input_signature=spec)
    x = rand((2, 3, 4))
    tr, dp, sd = f(tf.constant(x))
    np.testing.assert_allclose(tr.numpy(), np.trace(x, axis1=1, axis2=2))
    np.testing.assert_allclose(dp.numpy(), L.diag_part(x, k=(-1, 1)).numpy())
    np.testing.assert_allclose(sd.numpy(), L.set_diag(x, x[:, 0, :3]).numpy())


def test_diag_errors():
    err = tf.errors.InvalidArgumentError
    with pytest.raises(err, match="The number of rows or columns is not consistent"):
        L.diag(D3, num_rows=4, num_cols=5)
    with pytest.raises(err, match="The number of rows is too small."):
        L.diag(D3, num_rows=2)
    with pytest.raises(err, match=r"diagonal must be at least 1-dim, received shape: \[\]"):
        L.diag(tf.constant(3.0))
    with pytest.raises(err, match="Value for attr 'align' of \"FOO\" is not in the list"):
        L.diag(D3, align="FOO")
    with pytest.raises(err, match="lower_diag_index must not be larger than upper_diag_index"):
        L.diag(D3, k=(1, 0))
    with pytest.raises(err, match="lower_diag_index is out of bound: 4. It must be between -3 "
                                  "and 4"):
        L.diag_part(A34, k=4)
    with pytest.raises(err, match=r"input must be at least 2-dim, received shape: \[3\]"):
        L.diag_part(D3)
    with pytest.raises(err, match=r"input must be at least 2-dim, received shape: \[3\]"):
        L.trace(D3)
    with pytest.raises(err, match="Either first dimensions of diagonal don't match"):
        L.set_diag(A34, [0.0, 0.0])
    with pytest.raises(err, match="does not match the lower_diag_index and upper_diag_index"):
        L.diag(np.ones((2, 3)), k=(-2, 0))


# ---- gradients: GradientTape against central differences (float64) ----

def _weights(shape, seed):
    return tf.constant(_rng(100 + seed).standard_normal(shape))


def wsum(y, seed=0):
    """A fixed random linear functional of y: sum(y * w)."""
    return tf.reduce_sum(y * _weights(y.shape.as_list(), seed))


def sym(x):
    """The symmetric part: functions of symmetric inputs are differentiated through it, so
    the convention for the unread triangle (kernels read the lower one) does not matter."""
    return (x + L.matrix_transpose(x)) / 2


def numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        g[i] = (f(tf.constant(hi)).numpy() - f(tf.constant(lo)).numpy()) / (2 * eps)
    return g


def tape_grad(f, x):
    t = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(t)
        y = f(t)
    return tape.gradient(y, t).numpy()


def assert_grad(f, x, traced=False):
    want = numeric_grad(f, x)
    got = tape_grad(tf.function(f) if traced else f, x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(want).max()))


RHS = rand((2, 3, 2), 7)
SQ = well((2, 3, 3), 3)
GRADS = [  # name, loss of one float64 input, the input
    ("det", lambda x: wsum(L.det(x)), SQ),
    ("slogdet", lambda x: wsum(L.slogdet(x).log_abs_determinant),
     SQ * np.asarray([1.0, -1.0])[:, None, None]),
    ("inv", lambda x: wsum(L.inv(x)), SQ),
    ("inv_adjoint", lambda x: wsum(L.inv(x, adjoint=True)), SQ),
    ("solve_matrix", lambda x: wsum(L.solve(x, tf.constant(RHS))), SQ),
    ("solve_matrix_adjoint", lambda x: wsum(L.solve(x, tf.constant(RHS), adjoint=True)), SQ),
    ("solve_rhs", lambda b: wsum(L.solve(tf.constant(SQ), b)), RHS),
    ("solve_rhs_adjoint", lambda b: wsum(L.solve(tf.constant(SQ), b, adjoint=True)), RHS),
    ("cholesky", lambda x: wsum(L.cholesky(sym(x))), spd((2, 3, 3))),
    ("logdet", lambda x: wsum(L.logdet(sym(x))), spd((2, 3, 3))),
    ("cholesky_solve", lambda x: wsum(L.cholesky_solve(L.cholesky(sym(x)), tf.constant(RHS))),
     spd((2, 3, 3))),
    ("eigh_values", lambda x: wsum(L.eigh(sym(x))[0]), rand((2, 4, 4))),
    ("eigh_vectors", lambda x: wsum(tf.square(L.eigh(sym(x))[1])), rand((2, 4, 4))),
    ("eigh_raw_lower", lambda x: wsum(L.eigh(x)[0]) + wsum(tf.square(L.eigh(x)[1]), 1),
     rand((4, 4))),
    ("eigvalsh", lambda x: wsum(L.eigvalsh(sym(x))), rand((2, 4, 4))),
    ("band_part", lambda x: wsum(L.band_part(x, 1, 0)), rand((2, 3, 4))),
    ("diag_part_band", lambda x: wsum(L.diag_part(x, k=(-1, 1))), rand((2, 3, 4))),
    ("diag", lambda d: wsum(L.diag(d, k=1)), rand((2, 3))),
    ("set_diag_input", lambda x: wsum(L.set_diag(x, tf.ones([2, 3], tf.float64))),
     rand((2, 3, 4))),
    ("set_diag_diagonal", lambda d: wsum(L.set_diag(tf.ones([2, 3, 4], tf.float64), d)),
     rand((2, 3))),
    ("trace", lambda x: wsum(L.trace(x)), rand((2, 3, 4))),
    ("matrix_transpose", lambda x: wsum(L.matrix_transpose(x)), rand((2, 3, 4))),
    ("triangular_broadcast_matrix", lambda x: wsum(L.triangular_solve(x, tf.constant(RHS))),
     SQ[0]),
    ("triangular_broadcast_rhs", lambda b: wsum(L.triangular_solve(tf.constant(SQ), b)),
     RHS[0]),
]
for _lower in (True, False):
    for _adj in (False, True):
        _kw = {"lower": _lower, "adjoint": _adj}
        GRADS.append((f"triangular_matrix_{_lower}_{_adj}",
                      lambda x, kw=_kw: wsum(L.triangular_solve(x, tf.constant(RHS), **kw)), SQ))
        GRADS.append((f"triangular_rhs_{_lower}_{_adj}",
                      lambda b, kw=_kw: wsum(L.triangular_solve(tf.constant(SQ), b, **kw)), RHS))
for _shape in [(2, 3, 3), (2, 4, 3), (2, 3, 4)]:
    _x = rand(_shape, 11)
    _rhs = tf.constant(rand(_shape[:-1] + (2,), 12))
    GRADS += [
        (f"svd_s_only_{_shape}", lambda x: wsum(L.svd(x, compute_uv=False)), _x),
        (f"svd_s_{_shape}", lambda x: wsum(L.svd(x)[0]), _x),
        # |u| and |v| are free of the sign gauge; u diag(s) v^T rebuilds x.
        (f"svd_u_{_shape}", lambda x: wsum(tf.square(L.svd(x)[1]), 1), _x),
        (f"svd_v_{_shape}", lambda x: wsum(tf.square(L.svd(x)[2]), 2), _x),
        (f"svd_usv_{_shape}",
         lambda x: wsum(tf.matmul(L.svd(x)[1] * L.svd(x)[0][..., None, :], L.svd(x)[2],
                                  transpose_b=True), 3), _x),
        (f"pinv_{_shape}", lambda x: wsum(L.pinv(x)), _x),
        (f"lstsq_{_shape}", lambda x, b=_rhs: wsum(L.lstsq(x, b)), _x),
        (f"lstsq_l2_{_shape}", lambda x, b=_rhs: wsum(L.lstsq(x, b, l2_regularizer=0.3)), _x),
    ]
GRADS.append(("svd_full_square", lambda x: wsum(L.svd(x, full_matrices=True)[0]) + wsum(
    tf.square(L.svd(x, full_matrices=True)[1]), 1) + wsum(
    tf.square(L.svd(x, full_matrices=True)[2]), 2), rand((2, 3, 3))))


@pytest.mark.parametrize("name,f,x", GRADS, ids=[g[0] for g in GRADS])
def test_gradient_matches_finite_differences(name, f, x):
    assert_grad(f, x)


@pytest.mark.parametrize("name", ["det", "solve_matrix_adjoint", "cholesky", "eigh_vectors",
                                  "svd_u_(2, 4, 3)", "lstsq_(2, 3, 4)", "diag_part_band"])
def test_gradient_inside_function(name):
    _, f, x = next(g for g in GRADS if g[0] == name)
    assert_grad(f, x, traced=True)


QR_GRADS = [(f"qr_{s}_full={full}", full, rand(s, 13)) for s in [(2, 3, 3), (2, 4, 3), (2, 3, 4)]
            for full in (False, True) if not (full and s[1] > s[2])]


@pytest.mark.parametrize("name,full,x", QR_GRADS, ids=[g[0] for g in QR_GRADS])
def test_qr_gradient_matches_finite_differences(name, full, x):
    assert_grad(lambda t: wsum(L.qr(t, full_matrices=full).q) +
                wsum(L.qr(t, full_matrices=full).r, 1), x)


def test_gradients_not_implemented_say_so():
    with pytest.raises(tf.errors.UnimplementedError, match="rows > columns and full_matrices"):
        tape_grad(lambda t: wsum(L.qr(t, full_matrices=True).r), rand((4, 3)))
    with pytest.raises(tf.errors.UnimplementedError, match="full_matrices=True on non-square"):
        tape_grad(lambda t: wsum(L.svd(t, full_matrices=True)[1]), rand((4, 3)))
