"""Determinants, inverses, solves and decompositions (tf.linalg.det ... pinv).

The kernels (MatrixDeterminant, Cholesky, Qr, Svd, SelfAdjointEigV2, ...) are C++ ops
with gradients (src/ops/linalg.cpp); float32/float64, batched over leading dims. The
composites (logdet, cholesky_solve, lstsq, pinv, matrix_rank) follow TensorFlow's
Python definitions, so they give its values and errors."""
import collections

import numpy as np

from kiln import _kiln, errors
from kiln.ops import _helpers as h
from kiln.ops.linalg_ops import matmul
from kiln.ops.linalg_diag import diag_part

raw = h.raw

LogMatrixDeterminant = collections.namedtuple("LogMatrixDeterminant",
                                              ["sign", "log_abs_determinant"])
Qr = collections.namedtuple("Qr", ["q", "r"])


def det(input, name=None):  # noqa: A002 -- TensorFlow's argument name
    """The determinants of the innermost square matrices (tf.linalg.det)."""
    return raw.MatrixDeterminant(h.tensor(input))


def slogdet(input, name=None):  # noqa: A002
    """(sign, log_abs_determinant) of the innermost square matrices, a namedtuple as
    TensorFlow's (tf.linalg.slogdet); a singular matrix gives (0, -inf)."""
    sign, log_abs = raw.LogMatrixDeterminant(h.tensor(input))
    return LogMatrixDeterminant(sign, log_abs)


def logdet(matrix, name=None):
    """log(det(matrix)) of Hermitian positive definite matrices, through their
    Cholesky factor as TensorFlow computes it (tf.linalg.logdet)."""
    chol = raw.Cholesky(h.tensor(matrix))
    two = _kiln.convert_to_tensor(2.0, dtype=chol.dtype)
    return raw.Mul(two, raw.Sum(raw.Log(diag_part(chol)), axis=[-1], keepdims=False))


def inv(input, adjoint=False, name=None):  # noqa: A002
    """The inverses (of the adjoints when adjoint is true) of the innermost square
    matrices (tf.linalg.inv); a singular one is InvalidArgumentError."""
    return raw.MatrixInverse(h.tensor(input), adjoint=bool(adjoint))


def _operands(matrix, rhs, op):
    """matrix and rhs as tensors of one dtype (a Python value takes the other's)."""
    a, b = h.pair(matrix, rhs, op)
    h.check_same_dtype(op, matrix=a, rhs=b)
    return a, b


def solve(matrix, rhs, adjoint=False, name=None):
    """x with matrix @ x = rhs (adjoint(matrix) @ x = rhs when adjoint) for square
    matrix [..., M, M] and rhs [..., M, K] of the same batch dims (tf.linalg.solve)."""
    a, b = _operands(matrix, rhs, "MatrixSolve")
    return raw.MatrixSolve(a, b, adjoint=bool(adjoint))


def _broadcast_batch(a, b, op):
    """a [..., M, M] and b [..., M, K] with their batch dims broadcast to each other."""
    for what, t in (("matrix", a), ("rhs", b)):
        if t.ndim is not None and t.ndim < 2:
            raise errors.InvalidArgumentError(
                f"{op}: {what} must have rank >= 2, got shape {t.shape.as_list()}")
    sa, sb = a.shape.as_list(), b.shape.as_list()
    if a.ndim is not None and a.ndim == b.ndim and None not in sa[:-2] and sa[:-2] == sb[:-2]:
        return a, b
    a2 = raw.AddV2(a, raw.ZerosLike(b[..., :1, :1]))
    b2 = raw.AddV2(b, raw.ZerosLike(a[..., :1, :1]))
    return a2, b2


def triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """x with matrix @ x = rhs for triangular matrix (its lower triangle when lower,
    else its upper one; adjoint(matrix) when adjoint); batch dims broadcast
    (tf.linalg.triangular_solve)."""
    a, b = _operands(matrix, rhs, "MatrixTriangularSolve")
    a, b = _broadcast_batch(a, b, "MatrixTriangularSolve")
    return raw.MatrixTriangularSolve(a, b, lower=bool(lower), adjoint=bool(adjoint))


def cholesky(input, name=None):  # noqa: A002
    """The lower-triangular Cholesky factors L (L @ L^H = input) of Hermitian positive
    definite matrices; only the lower triangle of input is read (tf.linalg.cholesky)."""
    return raw.Cholesky(h.tensor(input))


def cholesky_solve(chol, rhs, name=None):
    """x with A @ x = rhs, given chol = cholesky(A) (tf.linalg.cholesky_solve)."""
    y = triangular_solve(chol, rhs, lower=True, adjoint=False)
    return triangular_solve(chol, y, lower=True, adjoint=True)


def qr(input, full_matrices=False, name=None):  # noqa: A002
    """The QR decompositions: a namedtuple (q, r) as TensorFlow's, q [..., M, P] with
    orthonormal columns and r [..., P, N] upper triangular, P = min(M, N) (M when
    full_matrices) (tf.linalg.qr)."""
    q, r = raw.Qr(h.tensor(input), full_matrices=bool(full_matrices))
    return Qr(q, r)


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """The singular values s (descending), and when compute_uv the singular vectors:
    (s, u, v) with tensor = u @ diag(s) @ adjoint(v) (tf.linalg.svd)."""
    s, u, v = raw.Svd(h.tensor(tensor), compute_uv=bool(compute_uv),
                      full_matrices=bool(full_matrices))
    return (s, u, v) if compute_uv else s


def eigh(tensor, name=None):
    """(e, v): the eigenvalues (ascending) and eigenvectors (columns) of self-adjoint
    matrices; only the lower triangle is read (tf.linalg.eigh)."""
    e, v = raw.SelfAdjointEigV2(h.tensor(tensor), compute_v=True)
    return e, v


def eigvalsh(tensor, name=None):
    """The eigenvalues (ascending) of self-adjoint matrices (tf.linalg.eigvalsh)."""
    e, _ = raw.SelfAdjointEigV2(h.tensor(tensor), compute_v=False)
    return e


def _gramian_cholesky(a, l2_regularizer, first_kind):
    """cholesky(a^H a + l2 I) (first kind) or cholesky(a a^H + l2 I)."""
    gram = matmul(a, a, adjoint_a=first_kind, adjoint_b=not first_kind)
    if h.is_tensor(l2_regularizer) or l2_regularizer != 0:
        l2 = h.tensor(l2_regularizer, dtype=a.dtype, op="MatrixSolveLs")
        zero = _kiln.convert_to_tensor(0, dtype="int64")
        eye = raw.MatrixBandPart(raw.OnesLike(gram), zero, zero)
        gram = raw.AddV2(gram, raw.Mul(l2, eye))
    return raw.Cholesky(gram)


def lstsq(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """The least-squares solutions x of matrix @ x = rhs (tf.linalg.lstsq). fast=True
    is TensorFlow's path: the (l2-regularized) normal equations through a Cholesky
    factor, for tall (M >= N) and wide matrices. fast=False returns pinv(matrix) @ rhs,
    the minimum-norm solution (as TensorFlow's complete orthogonal decomposition), and
    ignores l2_regularizer as TensorFlow does."""
    a, b = _operands(matrix, rhs, "MatrixSolveLs")
    if not fast:
        return matmul(pinv(a), b)
    dims = a.shape.as_list() if a.ndim is not None else [None, None]
    if len(dims) < 2 or dims[-2] is None or dims[-1] is None:
        raise errors.InvalidArgumentError(
            "MatrixSolveLs: matrix must have rank >= 2 and known matrix dimensions, got "
            f"shape {dims}")
    m, n = dims[-2:]
    if m >= n:
        chol = _gramian_cholesky(a, l2_regularizer, True)
        return cholesky_solve(chol, matmul(a, b, adjoint_a=True))
    chol = _gramian_cholesky(a, l2_regularizer, False)
    return matmul(a, cholesky_solve(chol, b), adjoint_a=True)


def _check_float_matrix(a):
    """TensorFlow's checks of pinv's and matrix_rank's argument."""
    if not a.dtype.is_floating:
        raise TypeError(f"Input `a` must have `float`-like `dtype` (saw {a.dtype.name}).")
    if a.ndim is not None and a.ndim < 2:
        raise ValueError(f"Input `a` must have at least 2 dimensions (saw: {a.ndim}).")


def _largest_dim(a):
    """max(M, N) as a Python float, or a scalar tensor of a's dtype when unknown."""
    m, n = a.shape.as_list()[-2:]
    if m is not None and n is not None:
        return float(max(m, n))
    shape = raw.Shape(a)
    return raw.Cast(raw.Maximum(shape[-2], shape[-1]), DstT=a.dtype)


def pinv(a, rcond=None, validate_args=False, name=None):
    """The Moore-Penrose pseudo-inverse through the SVD; singular values at most
    rcond * max(s) count as zero, rcond defaulting to 10 * max(M, N) * eps as
    TensorFlow's (tf.linalg.pinv)."""
    a = h.tensor(a)
    _check_float_matrix(a)
    if rcond is None:
        rcond = raw.Mul(_kiln.convert_to_tensor(10.0 * np.finfo(a.dtype.as_numpy_dtype).eps,
                                                dtype=a.dtype),
                        h.tensor(_largest_dim(a), dtype=a.dtype))
    rcond = h.tensor(rcond, dtype=a.dtype, op="pinv")
    s, u, v = raw.Svd(a, compute_uv=True, full_matrices=False)
    cutoff = raw.Mul(rcond, raw.Max(s, axis=[-1], keepdims=True))
    inf = _kiln.convert_to_tensor(np.inf, dtype=a.dtype)
    s = raw.SelectV2(raw.Greater(s, cutoff), s, inf)
    return matmul(raw.RealDiv(v, raw.ExpandDims(s, axis=-2)), u, adjoint_b=True)


def matrix_rank(a, tol=None, validate_args=False, name=None):
    """How many singular values exceed tol (default eps * max(M, N) * max(s), as
    TensorFlow's), an int32 (tf.linalg.matrix_rank)."""
    a = h.tensor(a)
    _check_float_matrix(a)
    s, _, _ = raw.Svd(a, compute_uv=False, full_matrices=False)
    if tol is None:
        eps = _kiln.convert_to_tensor(np.finfo(a.dtype.as_numpy_dtype).eps, dtype=a.dtype)
        tol = raw.Mul(raw.Mul(eps, h.tensor(_largest_dim(a), dtype=a.dtype)),
                      raw.Max(s, axis=[-1], keepdims=True))
    big = raw.Greater(s, h.tensor(tol, dtype=a.dtype, op="matrix_rank"))
    return raw.Sum(raw.Cast(big, DstT=_kiln.as_dtype("int32")), axis=[-1], keepdims=False)


__all__ = []
LINALG_ONLY = ["det", "slogdet", "logdet", "inv", "solve", "triangular_solve", "cholesky",
               "cholesky_solve", "qr", "svd", "eigh", "eigvalsh", "lstsq", "pinv",
               "matrix_rank"]
