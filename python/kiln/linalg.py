"""tf.linalg: matrix products, eye and norm."""
from kiln.ops.linalg_ops import einsum, matmul, matvec, eye, norm  # noqa: F401
from kiln.ops.nn_ops import l2_normalize  # noqa: F401

__all__ = ["matmul", "matvec", "eye", "norm", "l2_normalize"]
