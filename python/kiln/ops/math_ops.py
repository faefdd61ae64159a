"""Elementwise math, comparisons, logical ops, reductions and scans
(tf.math.* names; most are also top-level kiln.* names)."""
from kiln import _kiln
from kiln import errors
from kiln.ops import _helpers as h

raw = h.raw
Tensor = h.Tensor


def _binary(op_name, doc):
    op = getattr(raw, op_name)

    def fn(x, y, name=None):
        try:
            if type(x) is Tensor and type(y) is Tensor:  # h.pair would return them as they are
                return op(x, y)
            return op(*h.pair(x, y, op_name))
        except TypeError:  # a RaggedTensor or SparseTensor operand?
            out = h.dispatch(fn, x, y)
            if out is NotImplemented:
                raise
            return out

    fn.__doc__ = doc
    fn._kiln_kind = "binary"
    return fn


def _unary(op_name, doc):
    op = getattr(raw, op_name)

    def fn(x, name=None):
        try:
            return op(h.tensor(x))
        except TypeError:  # a RaggedTensor or SparseTensor?
            out = h.dispatch(fn, x)
            if out is NotImplemented:
                raise
            return out

    fn.__doc__ = doc
    fn._kiln_kind = "unary"
    return fn


add = _binary("AddV2", "x + y elementwise, with broadcasting (tf.math.add).")
subtract = _binary("Sub", "x - y elementwise (tf.math.subtract).")
multiply = _binary("Mul", "x * y elementwise (tf.math.multiply).")
floordiv = _binary("FloorDiv", "floor(x / y) elementwise (tf.math.floordiv).")
floormod = _binary("FloorMod", "Remainder with the divisor's sign (tf.math.floormod).")
mod = floormod
maximum = _binary("Maximum", "The larger of x and y elementwise; NaN propagates "
                             "(tf.math.maximum).")
minimum = _binary("Minimum", "The smaller of x and y elementwise; NaN propagates "
                             "(tf.math.minimum).")
squared_difference = _binary("SquaredDifference", "(x - y)**2 elementwise.")
equal = _binary("Equal", "x == y elementwise, a bool tensor (tf.math.equal).")
not_equal = _binary("NotEqual", "x != y elementwise (tf.math.not_equal).")
less = _binary("Less", "x < y elementwise (tf.math.less).")
less_equal = _binary("LessEqual", "x <= y elementwise (tf.math.less_equal).")
greater = _binary("Greater", "x > y elementwise (tf.math.greater).")
greater_equal = _binary("GreaterEqual", "x >= y elementwise (tf.math.greater_equal).")
logical_and = _binary("LogicalAnd", "x AND y for bool tensors (tf.math.logical_and).")
logical_or = _binary("LogicalOr", "x OR y for bool tensors (tf.math.logical_or).")
logical_xor = _binary("LogicalXor", "x XOR y for bool tensors (tf.math.logical_xor).")

negative = _unary("Neg", "-x elementwise (tf.math.negative).")
_real_abs = _unary("Abs", "|x| elementwise (tf.math.abs).")


def abs(x, name=None):  # noqa: A001
    """|x| elementwise (tf.math.abs); the modulus (a real tensor) for complex x."""
    try:
        t = h.tensor(x)
    except TypeError:
        return _real_abs(x)  # ragged / sparse values dispatch there
    return raw.ComplexAbs(t) if t.dtype.is_complex else _real_abs(t)
sign = _unary("Sign", "-1, 0 or 1 by the sign of x (tf.math.sign).")
square = _unary("Square", "x * x elementwise (tf.math.square).")
sqrt = _unary("Sqrt", "Square root elementwise (tf.math.sqrt).")
rsqrt = _unary("Rsqrt", "1 / sqrt(x) elementwise (tf.math.rsqrt).")
exp = _unary("Exp", "e**x elementwise (tf.math.exp).")
log = _unary("Log", "Natural logarithm elementwise (tf.math.log).")
log1p = _unary("Log1p", "log(1 + x), accurate for small x (tf.math.log1p).")
expm1 = _unary("Expm1", "exp(x) - 1, accurate for small x (tf.math.expm1).")
tanh = _unary("Tanh", "Hyperbolic tangent elementwise (tf.math.tanh).")
sigmoid = _unary("Sigmoid", "1 / (1 + exp(-x)) elementwise (tf.math.sigmoid).")
sin = _unary("Sin", "Sine elementwise (tf.math.sin).")
cos = _unary("Cos", "Cosine elementwise (tf.math.cos).")
floor = _unary("Floor", "Largest integer <= x, elementwise (tf.math.floor).")
ceil = _unary("Ceil", "Smallest integer >= x, elementwise (tf.math.ceil).")
round = _unary("Round", "Round half to even, elementwise (tf.math.round).")  # noqa: A001
logical_not = _unary("LogicalNot", "NOT x for a bool tensor (tf.math.logical_not).")
is_nan = _unary("IsNan", "True where x is NaN (tf.math.is_nan).")
is_finite = _unary("IsFinite", "True where x is neither infinite nor NaN (tf.math.is_finite).")

# TensorFlow's truediv: integers are cast to a float type first.
_TRUEDIV_FLOAT = {"int8": "float32", "uint8": "float32", "int32": "float64", "int64": "float64"}


def truediv(x, y, name=None):
    """x / y in floating point: integer inputs are cast first (int8/uint8 to
    float32, int32/int64 to float64), as tf.math.truediv."""
    try:
        x, y = h.pair(x, y, "RealDiv")
    except TypeError:
        out = h.dispatch(truediv, x, y)
        if out is NotImplemented:
            raise
        return out
    h.check_same_dtype("RealDiv", x=x, y=y)
    target = _TRUEDIV_FLOAT.get(x.dtype.name)
    if target is not None:
        x = raw.Cast(x, DstT=target)
        y = raw.Cast(y, DstT=target)
    return raw.RealDiv(x, y)


def divide(x, y, name=None):
    """x / y with Python's true-division semantics (tf.math.divide)."""
    return truediv(x, y)


def pow(x, y, name=None):  # noqa: A001
    """x ** y elementwise; an integer negative exponent is an error (tf.math.pow)."""
    try:
        return raw.Pow(*h.pair(x, y, "Pow"))
    except TypeError:
        out = h.dispatch(pow, x, y)
        if out is NotImplemented:
            raise
        return out


truediv._kiln_kind = pow._kiln_kind = "binary"


def is_inf(x, name=None):
    """True where x is +inf or -inf (tf.math.is_inf)."""
    x = h.tensor(x)
    return raw.LogicalAnd(raw.LogicalNot(raw.IsFinite(x)), raw.LogicalNot(raw.IsNan(x)))


def reciprocal(x, name=None):
    """1 / x elementwise (tf.math.reciprocal)."""
    x = h.tensor(x)
    return raw.RealDiv(h.one_of(x.dtype, "Reciprocal"), x)


def softplus(features, name=None):
    """log(1 + exp(x)), computed stably as max(x, 0) + log1p(exp(-|x|))."""
    x = h.tensor(features)
    _require_float(x, "Softplus")
    return raw.AddV2(raw.Relu(x), raw.Log1p(raw.Exp(raw.Neg(raw.Abs(x)))))


def log_sigmoid(x, name=None):
    """log(sigmoid(x)), computed stably as -softplus(-x) (tf.math.log_sigmoid)."""
    x = h.tensor(x)
    _require_float(x, "LogSigmoid")
    return raw.Neg(softplus(raw.Neg(x)))


def count_nonzero(input, axis=None, keepdims=False, dtype="int64", name=None):  # noqa: A002
    """The number of non-zero elements over axis (tf.math.count_nonzero)."""
    x = h.tensor(input)
    nz = raw.NotEqual(x, h.zero_of(x.dtype))
    return _reduce("Sum", raw.Cast(nz, DstT=_kiln.as_dtype(dtype)), axis, keepdims)


def divide_no_nan(x, y, name=None):
    """x / y, but 0 wherever y is 0 (tf.math.divide_no_nan)."""
    x, y = h.pair(x, y, "DivNoNan")
    h.check_same_dtype("DivNoNan", x=x, y=y)
    _require_float(x, "DivNoNan")
    zero = raw.Equal(y, h.zero_of(y.dtype))
    safe = raw.SelectV2(zero, h.one_of(y.dtype), y)
    return raw.SelectV2(zero, h.zero_of(x.dtype), raw.RealDiv(x, safe))


def _require_float(x, op):
    if not x.dtype.is_floating:
        raise errors.InvalidArgumentError(
            f"{op}: expected a float32 or float64 tensor, got {x.dtype.name}")


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """t with values limited to [clip_value_min, clip_value_max] (tf.clip_by_value)."""
    t = h.tensor(t)
    lo = h.tensor(clip_value_min, t.dtype if not h.is_tensor(clip_value_min) else None)
    hi = h.tensor(clip_value_max, t.dtype if not h.is_tensor(clip_value_max) else None)
    return raw.ClipByValue(t, lo, hi)


def add_n(inputs, name=None):
    """The elementwise sum of a list of same-shape, same-dtype tensors (tf.math.add_n)."""
    if h.is_tensor(inputs):
        inputs = [inputs]
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError("AddN: inputs must be a non-empty list of tensors")
    ts = [h.tensor(x) for x in inputs]
    first = ts[0]
    for i, t in enumerate(ts[1:], 1):
        if t.dtype != first.dtype:
            raise errors.InvalidArgumentError(
                f"AddN: dtype mismatch: inputs[0] is {first.dtype.name} but inputs[{i}] is "
                f"{t.dtype.name}")
        a, b = first.shape, t.shape
        if a.rank is not None and b.rank is not None and not a.is_compatible_with(b):
            raise errors.InvalidArgumentError(
                f"AddN: shapes must be equal: inputs[0] has shape {a} but inputs[{i}] has "
                f"shape {b}")
    out = ts[0]
    for t in ts[1:]:
        out = raw.AddV2(out, t)
    return out if len(ts) > 1 else raw.Identity(out)


# ---- reductions ----

def _reduce(op_name, input_tensor, axis, keepdims):
    try:
        x = h.tensor(input_tensor)
    except TypeError:  # a RaggedTensor?
        out = h.dispatch(_reduce, op_name, input_tensor, axis, keepdims)
        if out is NotImplemented:
            raise
        return out
    if axis is None:
        return getattr(raw, op_name)(x, axis=[], keepdims=bool(keepdims))
    axes = h.int_list(axis, "axis", op_name)
    if not axes:  # TensorFlow's axis=[]: nothing is reduced
        _check_reduce_dtype(op_name, x)
        return raw.Identity(x)
    return getattr(raw, op_name)(x, axis=axes, keepdims=bool(keepdims))


_reduce._kiln_kind = "reduce"


def _check_reduce_dtype(op_name, x):
    if op_name in ("Any", "All") and not x.dtype.is_bool:
        raise errors.InvalidArgumentError(f"{op_name}: input must be bool, got {x.dtype.name}")
    if op_name not in ("Any", "All") and (x.dtype.is_bool or x.dtype.name == "string"):
        raise errors.InvalidArgumentError(
            f"{op_name}: input must be numeric, got {x.dtype.name}")


def _reduction(op_name, what):
    def fn(input_tensor, axis=None, keepdims=False, name=None):
        return _reduce(op_name, input_tensor, axis, keepdims)

    fn.__doc__ = (f"The {what} of input_tensor over axis (None: all axes; []: none), "
                  f"keeping reduced dims as 1 when keepdims.")
    return fn


reduce_sum = _reduction("Sum", "sum")
reduce_mean = _reduction("Mean", "mean (integers truncate)")
reduce_max = _reduction("Max", "maximum")
reduce_min = _reduction("Min", "minimum")
reduce_prod = _reduction("Prod", "product")
reduce_any = _reduction("Any", "logical OR")
reduce_all = _reduction("All", "logical AND")


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """The variance over axis (tf.math.reduce_variance); float only."""
    x = h.tensor(input_tensor)
    _require_float(x, "ReduceVariance")
    mean = reduce_mean(x, axis, keepdims=True)
    return reduce_mean(raw.SquaredDifference(x, mean), axis, keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """The standard deviation over axis (tf.math.reduce_std); float only."""
    return raw.Sqrt(reduce_variance(input_tensor, axis, keepdims))


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """log(sum(exp(x))) over axis, computed stably (tf.math.reduce_logsumexp)."""
    x = h.tensor(input_tensor)
    _require_float(x, "ReduceLogSumExp")
    m = reduce_max(x, axis, keepdims=True)
    # An infinite max would give inf - inf = NaN: shift by 0 there instead.
    m = raw.SelectV2(raw.IsFinite(m), m, h.zero_of(x.dtype))
    out = raw.AddV2(raw.Log(reduce_sum(raw.Exp(raw.Sub(x, m)), axis, keepdims=True)), m)
    if keepdims:
        return out
    if axis is None:
        return raw.Reshape(out, h.int_array([]))
    axes = h.int_list(axis, "axis", "ReduceLogSumExp")
    return raw.Squeeze(out, squeeze_dims=axes) if axes else out


def _arg(op_name, input, axis, output_type):
    x = h.tensor(input)
    axis = 0 if axis is None else h.one_int(axis, "axis", op_name)
    return getattr(raw, op_name)(x, axis=axis, output_type=_kiln.as_dtype(output_type))


def argmax(input, axis=None, output_type="int64", name=None):  # noqa: A002
    """The index of the largest value along axis (default 0); ties take the first
    index, NaNs are ignored (tf.math.argmax)."""
    return _arg("ArgMax", input, axis, output_type)


def argmin(input, axis=None, output_type="int64", name=None):  # noqa: A002
    """The index of the smallest value along axis (default 0) (tf.math.argmin)."""
    return _arg("ArgMin", input, axis, output_type)


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative sum along axis (tf.math.cumsum)."""
    return raw.Cumsum(h.tensor(x), axis=h.one_int(axis, "axis", "Cumsum"),
                      exclusive=bool(exclusive), reverse=bool(reverse))


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative product along axis (tf.math.cumprod); exclusive starts at 1. As in
    TensorFlow, the gradient is 0 at elements equal to 0."""
    return raw.Cumprod(h.tensor(x), axis=h.one_int(axis, "axis", "Cumprod"),
                       exclusive=bool(exclusive), reverse=bool(reverse))


def _num_segments(num_segments):
    if h.is_tensor(num_segments):
        return h.tensor(num_segments)
    return _kiln.convert_to_tensor(h.one_int(num_segments, "num_segments", "UnsortedSegmentSum"),
                                   dtype="int32")


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """out[s] = the sum of data's slices whose segment id is s, for s < num_segments
    (tf.math.unsorted_segment_sum). Negative ids are dropped; an id >= num_segments is
    an InvalidArgumentError; empty segments are 0."""
    return raw.UnsortedSegmentSum(h.tensor(data), h.tensor(segment_ids),
                                  _num_segments(num_segments))


def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    """The max of each segment's slices (tf.math.unsorted_segment_max); empty segments
    hold the dtype's lowest value."""
    return raw.UnsortedSegmentMax(h.tensor(data), h.tensor(segment_ids),
                                  _num_segments(num_segments))


def unsorted_segment_min(data, segment_ids, num_segments, name=None):
    """The min of each segment's slices (tf.math.unsorted_segment_min); empty segments
    hold the dtype's highest value."""
    return raw.UnsortedSegmentMin(h.tensor(data), h.tensor(segment_ids),
                                  _num_segments(num_segments))


def unsorted_segment_prod(data, segment_ids, num_segments, name=None):
    """The product of each segment's slices (tf.math.unsorted_segment_prod); empty
    segments are 1."""
    return raw.UnsortedSegmentProd(h.tensor(data), h.tensor(segment_ids),
                                   _num_segments(num_segments))


def _segment_counts(x, ids, n):
    """How many slices each segment got, shaped to divide the segment sums."""
    if x.ndim is None or ids.ndim is None:
        raise errors.InvalidArgumentError(
            "unsorted_segment_mean: data and segment_ids need a known rank")
    counts = raw.UnsortedSegmentSum(raw.Cast(raw.OnesLike(ids), DstT=x.dtype), ids, n)
    one = _kiln.convert_to_tensor(1, dtype=x.dtype)
    counts = raw.Maximum(counts, one)  # empty segments: 0 / 1
    for _ in range(x.ndim - ids.ndim):
        counts = raw.ExpandDims(counts, axis=-1)
    return counts


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """The mean of each segment's slices (tf.math.unsorted_segment_mean); empty segments
    are 0; integer data divides with truncation, as TensorFlow's."""
    x, ids, n = h.tensor(data), h.tensor(segment_ids), _num_segments(num_segments)
    return raw.RealDiv(raw.UnsortedSegmentSum(x, ids, n), _segment_counts(x, ids, n))


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    """Each segment's sum divided by the square root of its size
    (tf.math.unsorted_segment_sqrt_n); float data only; empty segments are 0."""
    x, ids, n = h.tensor(data), h.tensor(segment_ids), _num_segments(num_segments)
    if not x.dtype.is_floating:
        raise TypeError(f"unsorted_segment_sqrt_n: data must be float32 or float64, got "
                        f"{x.dtype.name}")
    return raw.RealDiv(raw.UnsortedSegmentSum(x, ids, n), raw.Sqrt(_segment_counts(x, ids, n)))


def _sorted_num_segments(ids):
    """max(segment_ids) + 1 (0 for no ids), as the sorted segment ops size their output."""
    one = _kiln.convert_to_tensor(1, dtype=ids.dtype)
    top = raw.AddV2(raw.Max(ids, axis=list(range(ids.ndim or 0))), one) if ids.ndim else one
    return raw.Maximum(top, _kiln.convert_to_tensor(0, dtype=ids.dtype))


def segment_sum(data, segment_ids, name=None):
    """Sums by a sorted 1-D segment_ids; the result has max(segment_ids) + 1 rows
    (tf.math.segment_sum; ids are not checked for order, as TensorFlow's CPU kernel)."""
    x, ids = h.tensor(data), h.tensor(segment_ids)
    if ids.ndim != 1:
        raise errors.InvalidArgumentError(
            f"SegmentSum: segment_ids must be 1-D, got shape {ids.shape}")
    return raw.UnsortedSegmentSum(x, ids, _sorted_num_segments(ids))


def _sorted_segment(op, name, empty):
    def segment(data, segment_ids, name=None):
        x, ids = h.tensor(data), h.tensor(segment_ids)
        if ids.ndim != 1:
            raise errors.InvalidArgumentError(
                f"{name}: segment_ids must be 1-D, got shape {ids.shape}")
        return op(x, ids, _sorted_num_segments(ids))
    segment.__name__ = name.replace("Segment", "segment_").lower()
    segment.__doc__ = (f"{name} by a sorted 1-D segment_ids (tf.math.{segment.__name__}); "
                       f"empty segments are {empty}, as TensorFlow's.")
    return segment


def _fill_empty(op):
    """op's unsorted result with empty segments set to 0 (the sorted ops' rule)."""
    def run(x, ids, n):
        count = raw.UnsortedSegmentSum(raw.OnesLike(ids), ids, n)
        out = op(x, ids, n)
        mask = raw.Greater(count, raw.ZerosLike(count))
        if x.ndim is None:
            raise errors.InvalidArgumentError("segment ops: data needs a known rank")
        for _ in range(x.ndim - ids.ndim):
            mask = raw.ExpandDims(mask, axis=-1)
        return raw.SelectV2(mask, out, raw.ZerosLike(out))
    return run


segment_max = _sorted_segment(_fill_empty(raw.UnsortedSegmentMax), "SegmentMax", 0)
segment_min = _sorted_segment(_fill_empty(raw.UnsortedSegmentMin), "SegmentMin", 0)
segment_prod = _sorted_segment(raw.UnsortedSegmentProd, "SegmentProd", 1)


def segment_mean(data, segment_ids, name=None):
    """Means by a sorted 1-D segment_ids (tf.math.segment_mean); empty segments are 0."""
    x, ids = h.tensor(data), h.tensor(segment_ids)
    if ids.ndim != 1:
        raise errors.InvalidArgumentError(
            f"SegmentMean: segment_ids must be 1-D, got shape {ids.shape}")
    n = _sorted_num_segments(ids)
    return raw.RealDiv(raw.UnsortedSegmentSum(x, ids, n), _segment_counts(x, ids, n))


__all__ = [
    "add", "subtract", "multiply", "divide", "truediv", "floordiv", "floormod", "mod", "pow",
    "maximum", "minimum", "squared_difference", "negative", "abs", "sign", "square", "sqrt",
    "rsqrt", "exp", "log", "log1p", "tanh", "sigmoid", "sin", "cos", "floor", "ceil", "round",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "logical_xor", "logical_not", "clip_by_value", "add_n", "reduce_sum",
    "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_any", "reduce_all",
    "argmax", "argmin", "cumsum",
]
# tf.math only (not top-level names in TensorFlow 2).
MATH_ONLY = ["cumprod", "expm1", "is_nan", "is_finite", "is_inf", "reciprocal", "softplus", "log_sigmoid",
             "count_nonzero", "divide_no_nan",
             "reduce_variance", "reduce_std", "reduce_logsumexp", "unsorted_segment_sum",
             "unsorted_segment_mean", "unsorted_segment_sqrt_n", "unsorted_segment_max",
             "unsorted_segment_min", "unsorted_segment_prod", "segment_sum", "segment_mean",
             "segment_max", "segment_min", "segment_prod"]
