"""Matrix products (tf.linalg.* names)."""
from kiln import errors
from kiln.ops import _helpers as h

raw = h.raw


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, output_type=None, name=None):
    """The matrix product of a and b (rank >= 2; batch dims broadcast) (tf.linalg.matmul).
    For real dtypes adjoint is transpose."""
    if transpose_a and adjoint_a:
        raise ValueError("matmul: only one of transpose_a and adjoint_a can be True")
    if transpose_b and adjoint_b:
        raise ValueError("matmul: only one of transpose_b and adjoint_b can be True")
    x, y = h.pair(a, b, "BatchMatMulV2")
    for what, t in (("a", x), ("b", y)):
        if t.ndim is not None and t.ndim < 2:
            raise errors.InvalidArgumentError(
                f"BatchMatMulV2: {what} must have rank >= 2, got shape {t.shape}")
    out = raw.BatchMatMulV2(x, y, adj_x=bool(transpose_a or adjoint_a),
                            adj_y=bool(transpose_b or adjoint_b))
    if output_type is not None and out.dtype != output_type:
        out = raw.Cast(out, DstT=output_type)
    return out


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False,
           name=None):
    """The matrix-vector product a @ b for a of shape [..., M, N] and b of shape
    [..., N] (tf.linalg.matvec)."""
    x, y = h.pair(a, b, "BatchMatMulV2")
    if y.ndim is not None and y.ndim < 1:
        raise errors.InvalidArgumentError(
            f"BatchMatMulV2: b must have rank >= 1, got shape {y.shape}")
    out = matmul(x, raw.ExpandDims(y, axis=-1), transpose_a=transpose_a, adjoint_a=adjoint_a)
    return raw.Squeeze(out, squeeze_dims=[-1])


__all__ = ["matmul"]
LINALG_ONLY = ["matvec"]
