"""tf.linalg: matrix products, eye, norm, diagonals, determinants, solves and
decompositions."""
from kiln.ops.linalg_ops import (einsum, matmul, matvec, eye, norm,  # noqa: F401
                                 matrix_transpose, adjoint, band_part)
from kiln.ops.linalg_diag import diag, diag_part, set_diag, trace  # noqa: F401
from kiln.ops.linalg_decomp import (det, slogdet, logdet, inv, solve,  # noqa: F401
                                    triangular_solve, cholesky, cholesky_solve, qr, svd,
                                    eigh, eigvalsh, lstsq, pinv, matrix_rank)
from kiln.ops.nn_ops import l2_normalize  # noqa: F401

__all__ = ["matmul", "matvec", "eye", "norm", "l2_normalize", "einsum", "matrix_transpose",
           "adjoint", "band_part", "diag", "diag_part", "set_diag", "trace", "det", "slogdet",
           "logdet", "inv", "solve", "triangular_solve", "cholesky", "cholesky_solve", "qr",
           "svd", "eigh", "eigvalsh", "lstsq", "pinv", "matrix_rank"]
