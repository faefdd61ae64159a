"""Diagonals of matrices (tf.linalg.diag, diag_part, set_diag, trace).

TensorFlow's MatrixDiagV3 family, composed: the positions of the diagonals in a matrix
are worked out with NumPy from the static matrix dimensions, then one GatherV2 moves the
values and one SelectV2 fills the rest (gradients follow from those two ops). k is one
diagonal or a band (lo, hi); a band's diagonals are stacked from hi down to lo, each
aligned as `align` says ("RIGHT_LEFT": superdiagonals to the right, subdiagonals to the
left), shorter ones padded."""
import numpy as np

from kiln import _kiln, errors
from kiln.ops import _helpers as h

raw = h.raw

_ALIGNS = ("LEFT_RIGHT", "RIGHT_LEFT", "LEFT_LEFT", "RIGHT_RIGHT")


def _band(k, op):
    """(lo, hi) of a k given as an int, a list of one or two ints or a tensor."""
    ks = h.int_list(k, "k", op)
    if len(ks) not in (1, 2):
        raise errors.InvalidArgumentError(
            f"{op}: diag_index must have only one or two elements, received {len(ks)} "
            "elements.")
    lo, hi = ks[0], ks[-1]
    if lo > hi:
        raise errors.InvalidArgumentError(
            f"{op}: lower_diag_index must not be larger than upper_diag_index: {lo} > {hi}")
    return lo, hi


def _check_align(align, op):
    if align not in _ALIGNS:
        raise errors.InvalidArgumentError(
            f"{op}: Value for attr 'align' of \"{align}\" is not in the list of allowed "
            "values: \"LEFT_RIGHT\", \"RIGHT_LEFT\", \"LEFT_LEFT\", \"RIGHT_RIGHT\"")


def _diag_len(d, m, n):
    """How many entries diagonal d of an m x n matrix has (NumPy arrays or ints)."""
    return np.minimum(m + np.minimum(d, 0), n - np.maximum(d, 0))


def _offset(d, max_len, m, n, align):
    """Where diagonal d starts in its padded row of length max_len."""
    sup, sub = align.split("_")
    left = ((d >= 0) & (sup == "LEFT")) | ((d <= 0) & (sub == "LEFT"))
    return np.where(left, 0, max_len - _diag_len(d, m, n))


def _matrix_layout(m, n, lo, hi, max_len, align):
    """For each (i, j) of an m x n matrix: its flat position in the diagonals
    [hi - lo + 1, max_len] (0 when off the band) and whether it is on the band."""
    i, j = np.arange(m)[:, None], np.arange(n)[None, :]
    d = j - i
    on = (d >= lo) & (d <= hi)
    pos = (hi - d) * max_len + _offset(d, max_len, m, n, align) + np.minimum(i, j)
    return np.where(on, pos, 0), np.broadcast_to(on, (m, n))


def _diagonals_layout(m, n, lo, hi, max_len, align):
    """For each slot of the diagonals [hi - lo + 1, max_len]: its flat position i * n + j
    in the m x n matrix (0 for padding) and whether it holds an entry."""
    d = hi - np.arange(hi - lo + 1)[:, None]
    p = np.arange(max_len)[None, :] - _offset(d, max_len, m, n, align)
    valid = (p >= 0) & (p < _diag_len(d, m, n))
    pos = (p + np.maximum(-d, 0)) * n + p + np.maximum(d, 0)
    return np.where(valid, pos, 0), valid


def _matrix_dims(x, op):
    """(batch shape as a list, m, n) of a rank >= 2 tensor whose last two dims are known."""
    r = h.static_rank(x, op)
    dims = x.shape.as_list()
    if r < 2:
        raise errors.InvalidArgumentError(
            f"{op}: input must be at least 2-dim, received shape: {dims}")
    if dims[-1] is None or dims[-2] is None:
        raise errors.InvalidArgumentError(
            f"{op}: the last two dimensions of input must be known, got shape {dims}")
    return dims[:-2], dims[-2], dims[-1]


def _check_bounds(lo, hi, m, n, op):
    for what, k in (("lower", lo), ("upper", hi)):
        if not (-m < k < n or k == 0):
            raise errors.InvalidArgumentError(
                f"{op}: {what}_diag_index is out of bound: {k}. It must be between {-m} "
                f"and {n}")


def _flatten_last(x, keep, size):
    """x reshaped to [...keep leading dims..., size] (the batch dims may be dynamic)."""
    lead = x.shape.as_list()[:keep]
    if all(d is not None for d in lead):
        return raw.Reshape(x, h.const_ints(lead + [size]))
    batch = raw.Shape(x)[:keep]
    return raw.Reshape(x, raw.ConcatV2([batch, h.const_ints([size])], axis=0))


def _gather(params, pos, valid, fill):
    """params[..., pos] where valid, else fill (pos and valid: NumPy arrays)."""
    if valid.size == 0 or not valid.any():
        shape = raw.ConcatV2([raw.Shape(params)[:-1], h.const_ints(list(pos.shape))], axis=0)
        return raw.Fill(shape, fill)
    got = raw.GatherV2(params, h.int_array(pos), axis=-1, batch_dims=0)
    if valid.all():
        return got
    return raw.SelectV2(h.int_array(valid, "bool"), got, fill)


def _padding(value, dtype, op):
    """padding_value as a scalar of dtype (a Python value is converted)."""
    if not h.is_tensor(value):
        return _kiln.convert_to_tensor(np.asarray(value, dtype=dtype.as_numpy_dtype))
    p = h.tensor(value)
    if p.dtype != dtype:
        raise errors.InvalidArgumentError(
            f"{op}: padding_value must be {dtype.name}, got {p.dtype.name}")
    return p


def diag_part(input, name="diag_part", k=0, padding_value=0,  # noqa: A002 -- TF's name
              align="RIGHT_LEFT"):
    """The k-th diagonal of the innermost matrices ([..., len]), or for k = (lo, hi)
    the diagonals hi down to lo ([..., hi - lo + 1, max_len], padded with
    padding_value) (tf.linalg.diag_part)."""
    x = h.tensor(input)
    op = "MatrixDiagPartV3"
    _check_align(align, op)
    batch, m, n = _matrix_dims(x, op)
    lo, hi = _band(k, op)
    _check_bounds(lo, hi, m, n, op)
    max_len = max(0, min(m + min(hi, 0), n - max(lo, 0)))
    pos, valid = _diagonals_layout(m, n, lo, hi, max_len, align)
    if lo == hi:
        pos, valid = pos[0], valid[0]
    flat = _flatten_last(x, len(batch), m * n)
    return _gather(flat, pos, valid, _padding(padding_value, x.dtype, op))


def _diag_size(max_len, lo, hi, num_rows, num_cols, op):
    """The output's (rows, cols) as TensorFlow's MatrixDiagV3 works them out."""
    min_rows, min_cols = max_len - min(hi, 0), max_len + max(lo, 0)
    if num_rows != -1 and num_rows < min_rows:
        raise errors.InvalidArgumentError(f"{op}: The number of rows is too small.")
    if num_cols != -1 and num_cols < min_cols:
        raise errors.InvalidArgumentError(f"{op}: The number of columns is too small.")
    if num_rows == -1 and num_cols == -1:
        num_rows = num_cols = max(min_rows, min_cols)
    elif num_rows == -1:
        num_rows = min_rows
    elif num_cols == -1:
        num_cols = min_cols
    if num_rows != min_rows and num_cols != min_cols:
        raise errors.InvalidArgumentError(
            f"{op}: The number of rows or columns is not consistent with the specified "
            "d_lower, d_upper, and diagonal.")
    return num_rows, num_cols


def _diagonal_dims(dg, lo, hi, op):
    """(batch rank, max_len) of a diagonal [..., max_len] or band [..., num_diags, max_len]."""
    dims = dg.shape.as_list()
    need = 1 if lo == hi else 2
    if h.static_rank(dg, op) < need:
        raise errors.InvalidArgumentError(
            f"{op}: diagonal must be at least {need}-dim{'' if need == 1 else ' for a band'}"
            f", received shape: {dims}")
    if dims[-1] is None or (need == 2 and dims[-2] is None):
        raise errors.InvalidArgumentError(
            f"{op}: the diagonals' last {need} dimensions must be known, got shape {dims}")
    if need == 2 and dims[-2] != hi - lo + 1:
        raise errors.InvalidArgumentError(
            f"{op}: The number of diagonals provided in the input does not match the "
            f"lower_diag_index and upper_diag_index range.")
    return len(dims) - need, dims[-1]


def diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0,
         align="RIGHT_LEFT"):
    """Matrices with the given diagonal(s), padding_value elsewhere (tf.linalg.diag).
    The size is square unless num_rows/num_cols say otherwise, as TensorFlow works it out."""
    dg = h.tensor(diagonal)
    op = "MatrixDiagV3"
    _check_align(align, op)
    lo, hi = _band(k, op)
    keep, max_len = _diagonal_dims(dg, lo, hi, op)
    rows, cols = _diag_size(max_len, lo, hi, h.one_int(num_rows, "num_rows", op),
                            h.one_int(num_cols, "num_cols", op), op)
    pos, on = _matrix_layout(rows, cols, lo, hi, max_len, align)
    flat = _flatten_last(dg, keep, (hi - lo + 1) * max_len)
    return _gather(flat, pos, on, _padding(padding_value, dg.dtype, op))


def set_diag(input, diagonal, name="set_diag", k=0,  # noqa: A002 -- TensorFlow's name
             align="RIGHT_LEFT"):
    """input with its k-th diagonal (or band of diagonals, laid out as diag_part
    returns them) replaced by diagonal (tf.linalg.set_diag)."""
    x = h.tensor(input)
    dg = h.tensor(diagonal, dtype=x.dtype, op="MatrixSetDiagV3") if not h.is_tensor(
        diagonal) else h.tensor(diagonal)
    op = "MatrixSetDiagV3"
    h.check_same_dtype(op, input=x, diagonal=dg)
    _check_align(align, op)
    batch, m, n = _matrix_dims(x, op)
    lo, hi = _band(k, op)
    _check_bounds(lo, hi, m, n, op)
    max_len = max(0, min(m + min(hi, 0), n - max(lo, 0)))
    want = batch + ([max_len] if lo == hi else [hi - lo + 1, max_len])
    got = dg.shape.as_list()
    if len(got) != len(want) or any(a is not None and b is not None and a != b
                                    for a, b in zip(got, want)):
        raise errors.InvalidArgumentError(
            f"{op}: Either first dimensions of diagonal don't match input.shape[:-2], or "
            "diagonal.shape[:-1] is not equal to the longests diagonal in range "
            f"[lower_diag_index:upper_diag_index].\nInput shape: {x.shape.as_list()}\n"
            f"Diagonal shape: {got}")
    pos, on = _matrix_layout(m, n, lo, hi, max_len, align)
    flat = _flatten_last(dg, len(batch), (hi - lo + 1) * max_len)
    if not on.any():
        return x
    got = raw.GatherV2(flat, h.int_array(pos), axis=-1, batch_dims=0)
    return raw.SelectV2(h.int_array(on, "bool"), got, x)


def trace(x, name=None):
    """The sum of the main diagonal of the innermost matrices (tf.linalg.trace)."""
    return raw.Sum(diag_part(x), axis=[-1], keepdims=False)


__all__ = []
LINALG_ONLY = ["diag", "diag_part", "set_diag", "trace"]
