"""Stateless random numbers: tf.random.stateless_* , fold_in, split, Algorithm.

A stateless op is a function of (seed, shape): seed = (a, b), a shape-[2] int32/int64
value (a tensor while tracing). The values come from a counter-based integer hash
composed of kiln's integer ops (so they trace, compile and run anywhere): each element
hashes its position with two keys derived from the seed, and independent "streams"
(several uniforms per element: Box-Muller, rejection rounds, 53-bit doubles) rehash the
first key with the stream number. The same seed gives the same values on every call,
another seed other values.

The values are NOT TensorFlow's Philox/ThreeFry bits: the distributions are the same,
the numbers differ, and `alg` (Philox, ThreeFry, auto-select) is checked but draws the
same stream. tf.image's stateless_* ops (image_random.py) draw from this module.
"""
import enum
import math

from kiln import _kiln, errors
from kiln.ops import _helpers as h
from kiln.ops import math_ops as m
from kiln.ops.array_ops import reshape, unstack, gather, get_static_value
from kiln.ops.sort_ops import argsort
from kiln.tensor_shape import TensorShape

raw = h.raw
INT32, INT64 = _kiln.as_dtype("int32"), _kiln.as_dtype("int64")
FLOAT32, FLOAT64 = _kiln.as_dtype("float32"), _kiln.as_dtype("float64")
HALF = ("float16", "bfloat16")
_HALF_BITS = {"float16": 10, "bfloat16": 7}  # mantissa bits, as TF draws them
_MASK, _MUL, _GOLDEN = 0xFFFFFFFF, 0x45D9F3B, 0x9E3779B9
_TRUNC_ROUNDS = 8  # rejection rounds: P(|z| > 2 after all) = 0.0455**8 < 2e-11


class Algorithm(enum.Enum):
    """The RNG algorithms of tf.random.Algorithm (kiln draws one stream for all)."""
    PHILOX = 1
    THREEFRY = 2
    AUTO_SELECT = 3


def alg_value(alg):
    """The int of an algorithm given as an Algorithm, an int or a name (TF's rules)."""
    if isinstance(alg, Algorithm):
        return alg.value
    if isinstance(alg, int) and not isinstance(alg, bool) and alg in (1, 2, 3):
        return alg
    if isinstance(alg, str):
        canon = alg.strip().lower().replace("-", "").replace("_", "")
        names = {"philox": 1, "threefry": 2, "autoselect": 3}
        if canon in names:
            return names[canon]
    raise ValueError(f"Argument `alg` got unsupported value {alg}. Supported values are "
                     "philox for the Philox algorithm, threefry for the ThreeFry algorithm, "
                     "and auto_select for auto-selection.")


# ---- the hash ----

def i64(v):
    return _kiln.convert_to_tensor(v, dtype=INT64)


def mix(x):
    """A 32-bit integer finalizer on int64 values in [0, 2**32) (products stay < 2**59)."""
    for _ in range(2):
        x = raw.BitwiseXor(raw.RightShift(x, i64(16)), x)
        x = raw.BitwiseAnd(raw.Mul(x, i64(_MUL)), i64(_MASK))
    return raw.BitwiseXor(raw.RightShift(x, i64(16)), x)


def seed_tensor(seed):
    """seed as a checked shape-[2] int32/int64 tensor."""
    s = h.tensor(seed)
    if s.dtype not in (INT32, INT64):
        raise errors.InvalidArgumentError(
            f"StatelessRandomGetKeyCounter: seed must be int32 or int64, got {s.dtype.name}")
    if s.ndim is not None and (s.ndim != 1 or s.shape[0] not in (2, None)):
        raise errors.InvalidArgumentError(
            f"StatelessRandomGetKeyCounter: seed must have shape [2], not {s.shape.as_list()}")
    return s


def seed_keys(seed, stream=0):
    """Two int64 key scalars of a stateless seed; stream > 0 rehashes the first."""
    s = raw.BitwiseAnd(raw.Cast(seed_tensor(seed), DstT=INT64), i64(_MASK))
    a, b = unstack(s, 2)
    ka = mix(raw.BitwiseXor(a, i64(_GOLDEN)))
    kb = mix(raw.BitwiseXor(b, ka))
    if stream:
        ka = mix(raw.BitwiseXor(ka, i64((stream * _GOLDEN) & _MASK)))
    return ka, kb


def bits(shape, seed, stream=0):
    """int64 values in [0, 2**32) of the given shape (a list of ints or a 1-D int tensor),
    a function of seed, stream and each value's position only."""
    ka, kb = seed_keys(seed, stream)
    if h.is_tensor(shape):
        n = m.reduce_prod(raw.Cast(h.tensor(shape), DstT=INT64))
    else:
        n = i64(math.prod(shape))
    count = raw.Range(i64(0), n, i64(1))
    mixed = mix(raw.BitwiseAnd(raw.AddV2(count, kb), i64(_MASK)))
    return reshape(mix(raw.BitwiseXor(mixed, ka)), shape)


def wide_bits(shape, seed, stream=0):
    """int64 values in [0, 2**63) from streams (stream, stream + 1)."""
    hi = raw.RightShift(bits(shape, seed, stream), i64(1))
    return raw.AddV2(raw.Mul(hi, i64(2 ** 32)), bits(shape, seed, stream + 1))


def full_int(shape, seed, dtype):
    """int32 / int64 values over the dtype's whole range."""
    hi = raw.Sub(bits(shape, seed), i64(2 ** 31))
    if dtype == INT32:
        return raw.Cast(hi, DstT=INT32)
    return raw.AddV2(raw.Mul(hi, i64(2 ** 32)), bits(shape, seed, 1))


def unit(shape, seed, dtype, k=0, offset=0.0):
    """Uniform k of an element (streams 2k, 2k + 1): float32 (24 bits) or float64
    (53 bits) values (j + offset) * 2**-bits, j an integer in [0, 2**bits)."""
    if dtype == FLOAT64:
        hi = raw.RightShift(bits(shape, seed, 2 * k), i64(5))
        lo = raw.RightShift(bits(shape, seed, 2 * k + 1), i64(6))
        j, scale = raw.AddV2(raw.Mul(hi, i64(2 ** 26)), lo), 2.0 ** -53
    else:
        j, scale = raw.RightShift(bits(shape, seed, 2 * k), i64(8)), 2.0 ** -24
    u = raw.Cast(j, DstT=dtype)
    if offset:
        u = raw.AddV2(u, _kiln.convert_to_tensor(offset, dtype=dtype))
    return raw.Mul(u, _kiln.convert_to_tensor(scale, dtype=dtype))


def uniform_float32(shape, seed, minval=0.0, maxval=1.0):
    """float32 values in [minval, maxval) drawn from seed (24 bits each)."""
    lo, hi = (h.tensor(v) if h.is_tensor(v) else h.tensor(float(v), FLOAT32)
              for v in (minval, maxval))
    return raw.AddV2(raw.Mul(unit(shape, seed, FLOAT32), raw.Sub(hi, lo)), lo)


def std_normal(shape, seed, dtype, k=0):
    """N(0, 1) values by Box-Muller from uniforms 2k and 2k + 1 (float32 / float64)."""
    u1 = unit(shape, seed, dtype, 2 * k, offset=1.0)  # in (0, 1]: log is finite
    u2 = unit(shape, seed, dtype, 2 * k + 1)
    r = raw.Sqrt(raw.Mul(raw.Log(u1), _kiln.convert_to_tensor(-2.0, dtype=dtype)))
    return raw.Mul(r, raw.Cos(raw.Mul(u2, _kiln.convert_to_tensor(2 * math.pi, dtype=dtype))))


def std_truncated(shape, seed, dtype):
    """N(0, 1) values redrawn while beyond 2: fixed rounds, so it traces."""
    z = std_normal(shape, seed, dtype)
    two = _kiln.convert_to_tensor(2.0, dtype=dtype)
    for k in range(1, _TRUNC_ROUNDS):
        z = raw.SelectV2(raw.Greater(raw.Abs(z), two), std_normal(shape, seed, dtype, k), z)
    return raw.ClipByValue(z, raw.Neg(two), two)


# ---- arguments ----

def shape_arg(shape, op):
    """A static shape as a list of ints, else a 1-D int tensor."""
    if isinstance(shape, TensorShape):
        return h.int_list(h.shape_tensor(shape, op), "shape", op)
    if isinstance(shape, (list, tuple)) and not any(h.is_tensor(d) for d in shape):
        return h.int_list(list(shape), "shape", op)
    if h.is_tensor(shape):
        t = h.shape_tensor(shape, op)
        return t if t.is_symbolic else h.int_list(t, "shape", op)
    return h.int_list(shape, "shape", op) if hasattr(shape, "__index__") or hasattr(
        shape, "tolist") else h.shape_tensor(shape, op)


def check_dtype(dtype, allowed):
    d = _kiln.as_dtype(dtype)
    if d.name not in allowed:
        names = ", ".join("tf." + a for a in allowed)
        raise ValueError(f"Argument `dtype` got invalid value {d}. Accepted dtypes are "
                         f"({names}).")
    return d


def float_arg(v, dtype, op):
    """A float bound / parameter in dtype (a tensor must have it)."""
    if dtype.name in HALF:
        if h.is_tensor(v):
            t = h.tensor(v)
            return t if t.dtype == FLOAT32 else raw.Cast(t, DstT=FLOAT32)
        dtype = FLOAT32
    return h.tensor(v, dtype, op)


def float_dtype(dtype, value):
    """dtype of a float-only draw: TF's TypeError for others (it converts `value`)."""
    d = _kiln.as_dtype(dtype)
    if not d.is_floating:
        raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {d.name}")
    return d


def _affine(z, scale, shift, dtype, op):
    """z * scale + shift; half dtypes are drawn in float32 and cast."""
    out = raw.AddV2(raw.Mul(z, float_arg(scale, dtype, op)), float_arg(shift, dtype, op))
    return raw.Cast(out, DstT=dtype) if dtype.name in HALF else out


def _work(dtype):
    return FLOAT32 if dtype.name in HALF else dtype


# ---- stateless ops ----

UNIFORM_DTYPES = ("float16", "bfloat16", "float32", "float64", "int32", "int64")


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype="float32", name=None,
                      alg="auto_select"):
    """Uniform values in [minval, maxval) from seed (tf.random.stateless_uniform).
    Integer dtypes take both bounds, or minval=maxval=None for the whole range."""
    d = check_dtype(dtype, UNIFORM_DTYPES)
    alg_value(alg)
    op = "StatelessRandomUniform"
    shape = shape_arg(shape, op)
    if d.is_integer:
        if (minval is None) != (maxval is None):
            raise ValueError(f"For integer `dtype` argument {d}, argument `minval` and "
                             "`maxval` must be both None or not None. Got `minval`="
                             f"{minval} and `maxval`={maxval}.")
        if minval is None:
            return full_int(shape, seed, d)
        return _int_range(shape, seed, minval, maxval, d)
    maxval = 1 if maxval is None else maxval
    u = unit(shape, seed, _work(d))
    if d.name in HALF:  # keep the bits the dtype holds, so u < 1 after the cast
        p = _kiln.convert_to_tensor(2.0 ** _HALF_BITS[d.name], dtype=FLOAT32)
        u = raw.RealDiv(raw.Floor(raw.Mul(u, p)), p)
    lo = float_arg(minval, d, op)
    return _affine(u, raw.Sub(float_arg(maxval, d, op), lo), lo, d, op)


def _int_range(shape, seed, minval, maxval, dtype):
    op = "StatelessRandomUniformIntV2"
    lo, hi = h.tensor(minval, dtype, op), h.tensor(maxval, dtype, op)
    a, b = get_static_value(lo), get_static_value(hi)
    if a is not None and b is not None and (a >= b).any():
        raise errors.InvalidArgumentError(
            f"{op}: Need minval < maxval, got {a} >= {b}")
    lo64 = raw.Cast(lo, DstT=INT64)
    span = raw.Sub(raw.Cast(hi, DstT=INT64), lo64)
    w = wide_bits(shape, seed) if dtype == INT64 else bits(shape, seed)
    return raw.Cast(raw.AddV2(raw.FloorMod(w, span), lo64), DstT=dtype)


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype="float32", name=None,
                     alg="auto_select"):
    """Normal values mean + stddev * N(0, 1) from seed (tf.random.stateless_normal)."""
    d = float_dtype(dtype, mean)
    alg_value(alg)
    z = std_normal(shape_arg(shape, "StatelessRandomNormal"), seed, _work(d))
    return _affine(z, stddev, mean, d, "StatelessRandomNormal")


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype="float32",
                               name=None, alg="auto_select"):
    """Normal values redrawn when more than 2 stddev from mean
    (tf.random.stateless_truncated_normal)."""
    d = float_dtype(dtype, mean)
    alg_value(alg)
    z = std_truncated(shape_arg(shape, "StatelessTruncatedNormal"), seed, _work(d))
    return _affine(z, stddev, mean, d, "StatelessTruncatedNormal")


def _dim(x, i):
    d = x.shape[i]
    if d is not None:
        return d
    return raw.GatherV2(raw.Shape(x, out_type=INT32), _kiln.convert_to_tensor(i, dtype=INT32),
                        axis=0, batch_dims=0)


def _check_logits(x, num_samples, op):
    if not x.dtype.is_floating:
        raise errors.InvalidArgumentError(f"{op}: logits must be a float tensor, got "
                                          f"{x.dtype.name}")
    if x.ndim is not None and x.ndim != 2:
        raise errors.InvalidArgumentError(
            f"{op}: logits should be a matrix, got shape [{','.join(map(str, x.shape.as_list()))}]")
    if x.ndim is not None and x.shape[1] == 0:
        raise errors.InvalidArgumentError(f"{op}: num_classes should be positive, got 0")
    n = get_static_value(num_samples)
    if n is not None and int(n) < 0:
        raise errors.InvalidArgumentError(
            f"{op}: num_samples should be non-negative, got {int(n)}")


def categorical_from_seed(logits, num_samples, seed, dtype, op):
    """[batch, num_samples] class indices with P(i) = softmax(logits)[i] (Gumbel-max:
    argmax of logits + Gumbel noise)."""
    d = check_dtype(dtype or "int64", ("int32", "int64"))
    x = h.tensor(logits)
    _check_logits(x, num_samples, op)
    work = FLOAT64 if x.dtype == FLOAT64 else FLOAT32
    xw = x if x.dtype == work else raw.Cast(x, DstT=work)
    n = num_samples if h.is_tensor(num_samples) else h.one_int(num_samples, "num_samples", op)
    parts = [_dim(x, 0), n, _dim(x, 1)]
    noise_shape = parts if all(type(p) is int for p in parts) else h.pack_ints(parts, op, "shape")
    u = unit(noise_shape, seed, work, offset=0.5)  # in (0, 1)
    gumbel = raw.Neg(raw.Log(raw.Neg(raw.Log(u))))
    scores = raw.AddV2(raw.ExpandDims(xw, axis=1), gumbel)
    return raw.ArgMax(scores, axis=2, output_type=d)


def stateless_categorical(logits, num_samples, seed, dtype="int64", name=None):
    """Samples of the categorical distributions softmax(logits[i]) from seed
    (tf.random.stateless_categorical): shape [batch, num_samples]."""
    return categorical_from_seed(logits, num_samples, seed, dtype, "StatelessMultinomial")


def shuffle_from_seed(value, seed):
    """value permuted along its first dimension: rows ordered by 63-bit random keys."""
    x = h.tensor(value)
    if x.ndim == 0:
        return x
    n = [x.shape[0]] if x.shape[0] is not None else raw.Slice(
        raw.Shape(x, out_type=INT32), h.const_ints([0]), h.const_ints([1]))
    return gather(x, argsort(wide_bits(n, seed)))


def stateless_shuffle(value, seed, alg="auto_select", name=None):
    """value permuted along its first dimension from seed
    (tf.random.experimental.stateless_shuffle)."""
    alg_value(alg)
    return shuffle_from_seed(value, seed)


BINOMIAL_DTYPES = ("float16", "float32", "float64", "int32", "int64")
_BINOMIAL_MAX_TRIALS = 2 ** 26


def stateless_binomial(shape, seed, counts, probs, output_dtype="int32", name=None):
    """Binomial(counts, probs) values from seed (tf.random.stateless_binomial): a sum of
    Bernoulli trials, so counts must be known when called (not a traced tensor)."""
    d = check_dtype(output_dtype, BINOMIAL_DTYPES)
    shape = shape_arg(shape, "StatelessRandomBinomial")
    c = get_static_value(counts)
    if c is None or h.is_tensor(shape):
        raise NotImplementedError("stateless_binomial: kiln needs counts and shape known "
                                  "when the op is called (it sums Bernoulli trials)")
    top = int(math.ceil(float(c.max()))) if c.size else 0
    if top * max(1, math.prod(shape)) > _BINOMIAL_MAX_TRIALS:
        raise NotImplementedError(f"stateless_binomial: {top} trials per value is too many "
                                  "for kiln's Bernoulli sums")
    p = h.tensor(probs)
    work = FLOAT64 if p.dtype == FLOAT64 else FLOAT32
    full = h.const_ints(shape)
    p = raw.BroadcastTo(p if p.dtype == work else raw.Cast(p, DstT=work), full)
    n = raw.BroadcastTo(raw.Cast(h.tensor(c.astype("float64")), DstT=work), full)
    u = unit(list(shape) + [top], seed, work)
    trial = raw.Cast(raw.Range(_kiln.convert_to_tensor(0, dtype=INT32),
                               _kiln.convert_to_tensor(top, dtype=INT32),
                               _kiln.convert_to_tensor(1, dtype=INT32)), DstT=work)
    hits = raw.LogicalAnd(raw.Less(u, raw.ExpandDims(p, axis=-1)),
                          raw.Less(trial, raw.ExpandDims(n, axis=-1)))
    total = m.reduce_sum(raw.Cast(hits, DstT=work), -1)
    return raw.Cast(total, DstT=d)


# ---- seeds from seeds ----

def fold_in(seed, data, alg="auto_select"):
    """A new seed from seed and an integer (tf.random.fold_in): [hash(seed), data]."""
    alg_value(alg)
    s = seed_tensor(seed)
    x = h.tensor(data)
    if not x.dtype.is_integer:
        raise TypeError(f"fold_in: data must be an integer, got {x.dtype.name}")
    x = x if x.dtype == s.dtype else raw.Cast(x, DstT=s.dtype)
    return raw.Pack([full_int([], s, s.dtype), x], axis=0)


def split(seed, num=2, alg="auto_select"):
    """num new seeds from seed, shape [num, 2] (tf.random.split)."""
    alg_value(alg)
    s = seed_tensor(seed)
    shape = h.pack_ints([num, 2], "split", "num") if h.is_tensor(num) else [
        h.one_int(num, "num", "split"), 2]
    return full_int(shape, s, s.dtype)


__all__ = []
