"""tf.linalg: matrix products."""
from kiln.ops.linalg_ops import matmul, matvec  # noqa: F401
from kiln.ops.nn_ops import l2_normalize  # noqa: F401

__all__ = ["matmul", "matvec", "l2_normalize"]
