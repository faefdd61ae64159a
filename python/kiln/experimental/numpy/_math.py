"""NumPy's math over kiln's ops (tnp.add, exp, sum, dot, where, clip, ...): operands are
promoted with NumPy's rules first (`_dtypes.result_type`), then kiln's op computes."""
import numpy as np

from kiln import _kiln
from kiln.experimental.numpy import _dtypes as D
from kiln.experimental.numpy._arrays import asarray, ravel
from kiln.ops import array_ops, linalg_ops, math_ops

raw = _kiln.raw
_BOOL, _INT64, _FLOAT64 = (_kiln.as_dtype(n) for n in ("bool", "int64", "float64"))


def promote(*xs):
    """The operands as tensors of their NumPy result dtype."""
    dtype = D.result_type(*xs)
    return [D.cast(x, dtype) for x in xs]


def _binary(fn, doc):
    def op(x1, x2):
        return fn(*promote(x1, x2))
    op.__doc__ = doc
    return op


add = _binary(math_ops.add, "x1 + x2 (NumPy's dtype promotion).")
subtract = _binary(math_ops.subtract, "x1 - x2.")
multiply = _binary(math_ops.multiply, "x1 * x2.")
floor_divide = _binary(math_ops.floordiv, "x1 // x2.")
mod = remainder = _binary(math_ops.floormod, "x1 % x2 (the divisor's sign).")
maximum = _binary(math_ops.maximum, "The larger of x1 and x2 elementwise.")
minimum = _binary(math_ops.minimum, "The smaller of x1 and x2 elementwise.")
equal = _binary(math_ops.equal, "x1 == x2.")
not_equal = _binary(math_ops.not_equal, "x1 != x2.")
less = _binary(math_ops.less, "x1 < x2.")
less_equal = _binary(math_ops.less_equal, "x1 <= x2.")
greater = _binary(math_ops.greater, "x1 > x2.")
greater_equal = _binary(math_ops.greater_equal, "x1 >= x2.")


def power(x1, x2):
    return math_ops.pow(*promote(x1, x2))


def _to_float(x):
    """x as a float (or complex) tensor: integers and bools become float64, as NumPy."""
    x = asarray(x)
    return x if D.is_float_like(x.dtype) else D.cast(x, _FLOAT64)


def true_divide(x1, x2):
    x1, x2 = promote(x1, x2)
    return math_ops.truediv(_to_float(x1), _to_float(x2))


divide = true_divide


def _logical(fn):
    def op(x1, x2):
        return fn(D.cast(asarray(x1), _BOOL), D.cast(asarray(x2), _BOOL))
    return op


logical_and = _logical(math_ops.logical_and)
logical_or = _logical(math_ops.logical_or)
logical_xor = _logical(math_ops.logical_xor)


def logical_not(x):
    return math_ops.logical_not(D.cast(asarray(x), _BOOL))


def _float_unary(fn):
    def op(x):
        return fn(_to_float(x))
    op.__doc__ = f"{fn.__name__} elementwise (integers computed in float64)."
    return op


exp, log, log1p, expm1 = (_float_unary(f) for f in
                          (math_ops.exp, math_ops.log, math_ops.log1p, math_ops.expm1))
sqrt, sin, cos, tanh = (_float_unary(f) for f in
                        (math_ops.sqrt, math_ops.sin, math_ops.cos, math_ops.tanh))
floor, ceil = _float_unary(math_ops.floor), _float_unary(math_ops.ceil)


def log2(x):
    x = _to_float(x)
    return math_ops.log(x) / D.cast(np.log(2.0), x.dtype)


def log10(x):
    x = _to_float(x)
    return math_ops.log(x) / D.cast(np.log(10.0), x.dtype)


def tan(x):
    x = _to_float(x)
    return math_ops.sin(x) / math_ops.cos(x)


def sigmoid(x):
    return math_ops.sigmoid(_to_float(x))


def _same_dtype(fn):
    def op(x):
        return fn(asarray(x))
    return op


abs = absolute = _same_dtype(math_ops.abs)  # noqa: A001
negative, square, sign = (_same_dtype(f) for f in
                          (math_ops.negative, math_ops.square, math_ops.sign))
isnan, isfinite, isinf = (_same_dtype(f) for f in
                          (math_ops.is_nan, math_ops.is_finite, math_ops.is_inf))


def around(a, decimals=0):
    """Rounded to `decimals` places, halves to even (integers unchanged for decimals >= 0)."""
    a = asarray(a)
    if not D.is_float_like(a.dtype):
        return a
    if decimals == 0:
        return math_ops.round(a)
    factor = D.cast(10.0 ** decimals, a.dtype)
    return math_ops.round(a * factor) / factor


round = round_ = around  # noqa: A001


def clip(a, a_min, a_max):
    """a limited to [a_min, a_max] (NumPy's promotion over the three)."""
    a, lo, hi = promote(a, a_min, a_max)
    return math_ops.clip_by_value(a, lo, hi)


def where(condition, x=None, y=None):
    """x where condition else y; with condition alone, the indices of its nonzero elements
    (a tuple of int64 arrays, one per dimension)."""
    condition = D.cast(asarray(condition), _BOOL)
    if x is None and y is None:
        idx = array_ops.where(condition)
        return tuple(array_ops.unstack(idx, axis=1)) if condition.ndim else ()
    if x is None or y is None:
        raise ValueError("Either both or neither of x and y should be given.")
    x, y = promote(x, y)
    return array_ops.where(condition, x, y)


# ---- reductions ----

def _axes(axis):
    return None if axis is None else axis


def _sum_dtype(a, dtype):
    """NumPy's accumulator dtype for sum/prod/cumsum: bools and narrow ints become int64."""
    if dtype is not None:
        return D.to_kiln(dtype)
    if a.dtype.is_bool or (a.dtype.is_integer and a.dtype.size < 8):
        return _INT64
    return a.dtype


def sum(a, axis=None, dtype=None, keepdims=False):  # noqa: A001
    a = asarray(a)
    return math_ops.reduce_sum(D.cast(a, _sum_dtype(a, dtype)), _axes(axis), keepdims)


def prod(a, axis=None, dtype=None, keepdims=False):
    a = asarray(a)
    return math_ops.reduce_prod(D.cast(a, _sum_dtype(a, dtype)), _axes(axis), keepdims)


def cumsum(a, axis=None, dtype=None):
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    return math_ops.cumsum(D.cast(a, _sum_dtype(a, dtype)), axis)


def mean(a, axis=None, dtype=None, keepdims=False):
    a = _to_float(a) if dtype is None else D.cast(asarray(a), D.to_kiln(dtype))
    return math_ops.reduce_mean(a, _axes(axis), keepdims)


def var(a, axis=None, dtype=None, ddof=0, keepdims=False):
    a = _to_float(a) if dtype is None else D.cast(asarray(a), D.to_kiln(dtype))
    if ddof == 0:
        return math_ops.reduce_variance(a, _axes(axis), keepdims)
    m = math_ops.reduce_mean(a, _axes(axis), keepdims=True)
    total = math_ops.reduce_sum(math_ops.square(a - m), _axes(axis), keepdims)
    n = np.prod(a.shape.as_list()) if axis is None else np.prod(
        [a.shape[i] for i in np.atleast_1d(axis)])
    return total / D.cast(n - ddof, a.dtype)


def std(a, axis=None, dtype=None, ddof=0, keepdims=False):
    return math_ops.sqrt(var(a, axis, dtype, ddof, keepdims))


def amax(a, axis=None, keepdims=False):
    return math_ops.reduce_max(asarray(a), _axes(axis), keepdims)


def amin(a, axis=None, keepdims=False):
    return math_ops.reduce_min(asarray(a), _axes(axis), keepdims)


max, min = amax, amin  # noqa: A001


def _arg(fn, a, axis):
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    return fn(a, axis=axis, output_type=_INT64)


def argmax(a, axis=None):
    return _arg(math_ops.argmax, a, axis)


def argmin(a, axis=None):
    return _arg(math_ops.argmin, a, axis)


def any(a, axis=None, keepdims=False):  # noqa: A001
    return math_ops.reduce_any(D.cast(asarray(a), _BOOL), _axes(axis), keepdims)


def all(a, axis=None, keepdims=False):  # noqa: A001
    return math_ops.reduce_all(D.cast(asarray(a), _BOOL), _axes(axis), keepdims)


# ---- products ----

def dot(a, b):
    """NumPy's dot: scalars multiply, vectors give the inner product, a[..., k] @ b[k, m]."""
    a, b = promote(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if b.ndim == 1:
        return math_ops.reduce_sum(a * b, -1)
    if b.ndim > 2:
        raise NotImplementedError("kiln.experimental.numpy.dot: b with more than 2 dims")
    return matmul(a, b)


def matmul(x1, x2):
    """NumPy's matmul: 1-D operands are promoted to matrices and the added dim removed."""
    a, b = promote(x1, x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    va, vb = a.ndim == 1, b.ndim == 1
    a = array_ops.expand_dims(a, 0) if va else a
    b = array_ops.expand_dims(b, -1) if vb else b
    out = linalg_ops.matmul(a, b)
    if va:
        out = array_ops.squeeze(out, [-2])
    if vb:
        out = array_ops.squeeze(out, [-1])
    return out


def outer(a, b):
    a, b = promote(ravel(a), ravel(b))
    return array_ops.expand_dims(a, 1) * array_ops.expand_dims(b, 0)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    a, b = promote(_to_float(a), _to_float(b))
    close = math_ops.less_equal(math_ops.abs(a - b),
                                D.cast(atol, a.dtype) + D.cast(rtol, a.dtype) * math_ops.abs(b))
    if equal_nan:
        close = math_ops.logical_or(close, math_ops.logical_and(math_ops.is_nan(a),
                                                                math_ops.is_nan(b)))
    return close


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return math_ops.reduce_all(isclose(a, b, rtol, atol, equal_nan))
