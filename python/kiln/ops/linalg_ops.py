"""Matrix products (tf.linalg.* names)."""
import numpy as np

from kiln import _kiln, errors
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


def einsum(equation, *inputs, **kwargs):
    """Einstein summation (tf.einsum): "ij,jk->ik", implicit outputs, "..."
    broadcasting, diagonals; a contraction of two float operands is one batched
    matmul."""
    kwargs.pop("name", None)
    kwargs.pop("optimize", None)
    if kwargs:
        raise TypeError(f"einsum() got unexpected keyword arguments {sorted(kwargs)}")
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
        inputs = tuple(inputs[0])
    tensors = [_kiln.convert_to_tensor(x) for x in inputs]
    return _kiln._einsum(equation, tensors)


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


def eye(num_rows, num_columns=None, batch_shape=None, dtype="float32", name=None):
    """The identity matrix [num_rows, num_columns] (default square), optionally
    repeated over batch_shape (tf.eye)."""
    rows = h.one_int(num_rows, "num_rows", "Eye")
    cols = rows if num_columns is None else h.one_int(num_columns, "num_columns", "Eye")
    if rows < 0 or cols < 0:
        raise errors.InvalidArgumentError(
            f"Eye: num_rows and num_columns must be >= 0, got {rows} and {cols}")
    batch = [] if batch_shape is None else h.int_list(batch_shape, "batch_shape", "Eye")
    if any(d < 0 for d in batch):
        raise errors.InvalidArgumentError(f"Eye: batch_shape must be >= 0, got {batch}")
    i, j = (h.int_array(np.arange(n)) for n in (rows, cols))
    diag = raw.Equal(raw.ExpandDims(i, axis=1), raw.ExpandDims(j, axis=0))
    out = raw.Cast(diag, DstT=_kiln.as_dtype(dtype))
    if batch:
        out = raw.BroadcastTo(out, h.const_ints(batch + [rows, cols], "int32"))
    return out


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):  # noqa: A002
    """The vector norm over axis (an int, or None for all elements) or the matrix norm
    over a pair of axes (tf.norm). Vector ords: "euclidean" / 2, 1, np.inf; matrix ords:
    "fro" / "euclidean", 1, np.inf. Other ords raise ValueError, as TensorFlow does for
    ords it does not support."""
    x = h.tensor(tensor)
    if not x.dtype.is_floating:
        raise TypeError(f"norm: tensor must be float32 or float64, got {x.dtype.name}")
    keep = bool(keepdims)
    if axis is None or not isinstance(axis, (list, tuple)) or len(axis) == 1:
        axes = None if axis is None else h.int_list(axis, "axis", "norm")
        if ord in ("euclidean", "fro", 2, 2.0):
            kw = {} if axes is None else {"axis": axes}
            return raw.Sqrt(raw.Sum(raw.Square(x), keepdims=keep, **kw))
        if ord in (1, 1.0):
            kw = {} if axes is None else {"axis": axes}
            return raw.Sum(raw.Abs(x), keepdims=keep, **kw)
        if ord == float("inf"):
            kw = {} if axes is None else {"axis": axes}
            return raw.Max(raw.Abs(x), keepdims=keep, **kw)
        raise ValueError(f"norm: ord {ord!r} is not supported for vectors "
                         "(use 'euclidean', 1, 2 or np.inf)")
    rows, cols = h.int_list(axis, "axis", "norm")
    if ord in ("euclidean", "fro"):
        return raw.Sqrt(raw.Sum(raw.Square(x), axis=[rows, cols], keepdims=keep))
    if ord in (1, 1.0, float("inf")):
        inner, outer = (rows, cols) if ord in (1, 1.0) else (cols, rows)
        s = raw.Sum(raw.Abs(x), axis=[inner], keepdims=True)
        out = raw.Max(s, axis=[outer], keepdims=True)
        return out if keep else raw.Squeeze(out, squeeze_dims=sorted([rows, cols]))
    raise ValueError(f"norm: ord {ord!r} is not supported for matrices (use 'fro', "
                     "'euclidean', 1 or np.inf)")


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """a with its last two dimensions swapped (rank >= 2), conjugated too when conjugate
    is true and a is complex (tf.linalg.matrix_transpose)."""
    x = h.tensor(a)
    r = x.ndim
    if r is not None and r < 2:
        raise ValueError("Argument `a` should be a (batch) matrix with rank >= 2.  Received "
                         f"`a` = {a} with shape: {tuple(x.shape.as_list())}")
    r = h.static_rank(x, "matrix_transpose")
    out = raw.Transpose(x, perm=list(range(r - 2)) + [r - 1, r - 2])
    return raw.Conj(out) if conjugate and x.dtype.is_complex else out


def adjoint(matrix, name=None):
    """The conjugate transpose of the innermost matrices (tf.linalg.adjoint)."""
    return matrix_transpose(matrix, conjugate=True)


def _band_bound(value, other):
    """num_lower/num_upper as an int32/int64 scalar tensor; a Python int takes the
    other bound's dtype when that one is a tensor (int64 otherwise)."""
    if h.is_tensor(value):
        t = h.tensor(value)
        if t.dtype.name not in ("int32", "int64"):
            raise errors.InvalidArgumentError(
                f"MatrixBandPart: num_lower and num_upper must be int32 or int64, got "
                f"{t.dtype.name}")
        return t
    dtype = h.tensor(other).dtype.name if h.is_tensor(other) else "int64"
    dtype = dtype if dtype == "int32" else "int64"
    return _kiln.convert_to_tensor(h.one_int(value, "num_lower/num_upper", "MatrixBandPart"),
                                   dtype=dtype)


def band_part(input, num_lower, num_upper, name=None):  # noqa: A002 -- TensorFlow's name
    """input with the entries outside the band zeroed: num_lower subdiagonals and
    num_upper superdiagonals are kept, a negative count keeps that whole triangle
    (tf.linalg.band_part)."""
    lo, up = _band_bound(num_lower, num_upper), _band_bound(num_upper, num_lower)
    if lo.dtype != up.dtype:
        raise errors.InvalidArgumentError(
            f"MatrixBandPart: num_lower and num_upper must have one dtype, got "
            f"{lo.dtype.name} and {up.dtype.name}")
    return raw.MatrixBandPart(h.tensor(input), lo, up)


__all__ = ["matmul", "eye", "norm"]
LINALG_ONLY = ["matvec", "matrix_transpose", "adjoint", "band_part"]
