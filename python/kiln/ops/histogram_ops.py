"""Counting and histograms (tf.math.bincount, tf.histogram_fixed_width,
tf.histogram_fixed_width_bins), composed of UnsortedSegmentSum and elementwise ops
with TensorFlow's arithmetic, so the bins are TensorFlow's bit for bit.

Checks that need the values (negative counts, NaN, an empty range) run eagerly; inside a
kiln.function a negative value is dropped and a NaN lands in no bin."""
from kiln import _kiln, errors
from kiln.ops import _helpers as h

raw = h.raw

_INT_INDEX = ("int32", "int64")
_COUNT_TYPES = ("int32", "int64", "float32", "float64")
_TF_NAMES = {"float32": "float", "float64": "double"}


def _tf_name(dtype):
    return _TF_NAMES.get(dtype.name, dtype.name)


def _not_allowed(op, attr, dtype, allowed):
    names = ", ".join(_TF_NAMES.get(a, a) for a in allowed)
    return errors.InvalidArgumentError(
        f"{op}: Value for attr '{attr}' of {_tf_name(dtype)} is not in the list of allowed "
        f"values: {names}")


def _concrete(t):
    """t's NumPy value when known now, else None."""
    return None if t.is_symbolic else t.numpy()


def _bincount_size(x, minlength, maxlength):
    """TensorFlow's output size: max(arr) + 1 (0 when empty), then clamped by
    minlength and maxlength (in arr's dtype)."""
    nonempty = raw.Cast(raw.Greater(raw.Size(x, out_type=x.dtype), h.zero_of(x.dtype)),
                        DstT=x.dtype)
    size = raw.Mul(nonempty, raw.AddV2(raw.Max(x, axis=list(range(x.ndim)), keepdims=False),
                                       h.one_of(x.dtype)))
    if minlength is not None:
        size = raw.Maximum(h.tensor(minlength, dtype=x.dtype, op="bincount"), size)
    if maxlength is not None:
        size = raw.Minimum(h.tensor(maxlength, dtype=x.dtype, op="bincount"), size)
    return size


def _bincount_args(arr, weights, dtype, binary_output, axis):
    """(arr, weights or None, output dtype, axis) checked as TensorFlow checks them."""
    x = h.tensor(arr)
    w = None if weights is None else h.tensor(weights)
    if w is not None and binary_output:
        raise ValueError("Arguments `binary_output` and `weights` are mutually exclusive. "
                         "Please specify only one.")
    if not x.dtype.is_integer:
        x = raw.Cast(x, DstT=_kiln.as_dtype("int32"))
    if x.dtype.name not in _INT_INDEX:
        raise _not_allowed("DenseBincount", "Tidx", x.dtype, _INT_INDEX)
    axis = 0 if axis is None else axis
    if axis not in (0, -1):
        raise ValueError(f"Unsupported value for argument axis={axis}. Only 0 and -1 are "
                         "currently supported.")
    out = w.dtype if w is not None else _kiln.as_dtype(dtype)
    if out.name not in _COUNT_TYPES:
        raise _not_allowed("DenseBincount", "T", out, _COUNT_TYPES)
    if axis == 0 or x.ndim == 1:
        x = raw.Reshape(x, h.const_ints([-1]))
        w = None if w is None else raw.Reshape(w, h.const_ints([-1]))
    elif x.ndim != 2:
        raise errors.InvalidArgumentError(
            f"DenseBincount: Shape must be at most rank 2 but is rank {x.ndim}")
    return x, w, out


def _check_counts(x, w):
    if w is not None and w.shape.as_list() != x.shape.as_list():
        raise errors.InvalidArgumentError(
            "DenseBincount: `weights` must be the same shape as `arr` or a length-0 `Tensor`, "
            "in which case it acts as all weights equal to 1. Received "
            f"{w.shape.as_list()}")
    vals = _concrete(x)
    if vals is not None and (vals < 0).any():
        if x.ndim == 1:
            raise errors.InvalidArgumentError("DenseBincount: Input arr must be non-negative!")
        raise errors.InvalidArgumentError(
            "DenseBincount: Input 'in' must be non-negative! Negative input value found: "
            f"{int(vals[vals < 0][0])}")


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype="int32", name=None,
             axis=None, binary_output=False):
    """How often each value 0, 1, ... occurs in arr (the sum of weights there when
    given; 1 where it occurs when binary_output) (tf.math.bincount). axis None or 0
    counts over all of arr; axis -1 counts each row of a rank-2 arr, every row as long
    as the whole result (max(arr) + 1, clamped by minlength and maxlength). Values at
    or past maxlength are dropped."""
    x, w, out = _bincount_args(arr, weights, dtype, binary_output, axis)
    _check_counts(x, w)
    size = _bincount_size(x, minlength, maxlength)
    data = w if w is not None else raw.OnesLike(raw.Cast(x, DstT=out))
    keep = raw.Less(x, size)
    minus_one = raw.Neg(h.one_of(x.dtype))
    if x.ndim == 2:
        rows = raw.Shape(x, out_type=x.dtype)[0]
        first = raw.ExpandDims(raw.Range(h.zero_of(x.dtype), rows, h.one_of(x.dtype)), axis=1)
        ids = raw.SelectV2(keep, raw.AddV2(raw.Mul(first, size), x), minus_one)
        counts = raw.UnsortedSegmentSum(data, ids, raw.Mul(rows, size))
        counts = raw.Reshape(counts, raw.Pack([rows, size], axis=0))
    else:
        counts = raw.UnsortedSegmentSum(data, raw.SelectV2(keep, x, minus_one), size)
    if binary_output:
        counts = raw.Cast(raw.Greater(counts, h.zero_of(out)), DstT=out)
    return counts


def _histogram_args(values, value_range, nbins, op):
    """(values, value_range, nbins as an int32 scalar) converted and checked."""
    v, rng = h.pair(values, value_range, op)
    h.check_same_dtype(op, values=v, value_range=rng)
    if v.dtype.name not in _COUNT_TYPES:
        raise _not_allowed(op, "T", v.dtype, _COUNT_TYPES)
    if rng.shape.as_list() != [2]:
        raise errors.InvalidArgumentError(f"{op}: value_range should be a vector of 2 elements.")
    n = h.tensor(nbins) if h.is_tensor(nbins) else _kiln.convert_to_tensor(
        h.one_int(nbins, "nbins", op), dtype="int32")
    if n.dtype.name not in _INT_INDEX:
        raise TypeError(f"{op}: nbins must be an int, got a {n.dtype.name} tensor")
    n = raw.Cast(n, DstT=_kiln.as_dtype("int32")) if n.dtype.name != "int32" else n
    nb, r = _concrete(n), _concrete(rng)
    if nb is not None and nb <= 0:
        raise errors.InvalidArgumentError(
            f"{op}: nbins should be a positive number, but got '{int(nb)}'")
    if r is not None and not r[0] < r[1]:
        raise errors.InvalidArgumentError(
            f"{op}: value_range should satisfy value_range[0] < value_range[1], but got "
            f"'[{r[0]:g}, {r[1]:g}]'")
    return v, rng, n


def histogram_fixed_width(values, value_range, nbins=100, dtype="int32", name=None):
    """How many values fall in each of nbins equal bins of value_range = [lo, hi]
    (tf.histogram_fixed_width); values below lo count in the first bin, values at or
    above hi in the last. The bin of x is (max(x, lo) - lo) / ((hi - lo) / nbins) in
    float64, as TensorFlow's kernel computes it."""
    op = "HistogramFixedWidth"
    out = _kiln.as_dtype(dtype)
    if out.name not in _INT_INDEX:
        raise _not_allowed(op, "dtype", out, _INT_INDEX)
    v, rng, n = _histogram_args(values, value_range, nbins, op)
    vals = _concrete(v)
    if vals is not None and v.dtype.is_floating and (vals != vals).any():
        raise errors.InvalidArgumentError(f"{op}: Histogram values must not contain NaN")
    f64 = _kiln.as_dtype("float64")
    lo, hi = rng[0], rng[1]
    nbins_f = raw.Cast(n, DstT=f64)
    step = raw.RealDiv(raw.Cast(raw.Sub(hi, lo), DstT=f64), nbins_f)
    scaled = raw.RealDiv(raw.Cast(raw.Sub(raw.Maximum(v, lo), lo), DstT=f64), step)
    last = raw.Sub(nbins_f, h.one_of(f64))
    bins = raw.Cast(raw.Minimum(scaled, last), DstT=_kiln.as_dtype("int32"))
    flat = raw.Reshape(bins, h.const_ints([-1]))
    return raw.UnsortedSegmentSum(raw.OnesLike(raw.Cast(flat, DstT=out)), flat, n)


def histogram_fixed_width_bins(values, value_range, nbins=100, dtype="int32", name=None):
    """The bin (0 ... nbins - 1) of each value, shaped like values, with TensorFlow's
    float arithmetic: floor(nbins * (x - lo) / (hi - lo)) clipped to the bins
    (tf.histogram_fixed_width_bins). The result is int32 whatever dtype says, as in
    TensorFlow 2.21; integer values fail there and are an InvalidArgumentError here."""
    op = "histogram_fixed_width_bins"
    v, rng, n = _histogram_args(values, value_range, nbins, op)
    if not v.dtype.is_floating:
        raise errors.InvalidArgumentError(
            f"{op}: values must be float32 or float64, got {v.dtype.name} (TensorFlow "
            "2.21 fails on integer values too)")
    nbins_f = raw.Cast(n, DstT=v.dtype)
    scaled = raw.RealDiv(raw.Sub(v, rng[0]), raw.Sub(rng[1], rng[0]))
    idx = raw.Floor(raw.Mul(nbins_f, scaled))
    idx = raw.ClipByValue(idx, h.zero_of(v.dtype), raw.Sub(nbins_f, h.one_of(v.dtype)))
    return raw.Cast(idx, DstT=_kiln.as_dtype("int32"))


__all__ = ["histogram_fixed_width", "histogram_fixed_width_bins"]
MATH_ONLY = ["bincount"]
