"""Random tensors (tf.random.*). Values come from Philox streams: an op seed
gives a repeatable stream per (op, seed); set_seed restarts every stream."""
from kiln import _kiln
from kiln import errors
from kiln.ops import _helpers as h
from kiln.ops import stateless_random as sr

raw = h.raw


def _seed(seed, op):
    if seed is None:
        return -1
    s = h.one_int(seed, "seed", op)
    if s < 0:
        raise errors.InvalidArgumentError(f"{op}: seed must be non-negative, got {s}")
    return s


def _bound(v, dtype, op, what):
    t = h.tensor(v, None if h.is_tensor(v) else dtype, op)
    if t.dtype != dtype:
        raise errors.InvalidArgumentError(
            f"{op}: {what} is {t.dtype.name} but dtype is {dtype.name}")
    return t


_HALF = ("float16", "bfloat16")
_FLOAT32 = _kiln.as_dtype("float32")


def _wide(v):
    """A bound of a float16 / bfloat16 draw as float32."""
    if h.is_tensor(v) and h.tensor(v).dtype != _FLOAT32:
        return raw.Cast(h.tensor(v), DstT=_FLOAT32)
    return v


def _half(draw, dtype, a, b, shape, seed):
    """A float16 / bfloat16 draw: the kernels draw float32 / float64 only, so
    float32 values are drawn and cast (TensorFlow draws in the dtype itself)."""
    return raw.Cast(draw(shape, _wide(a), _wide(b), _FLOAT32, seed), DstT=dtype)


def uniform(shape, minval=0, maxval=None, dtype="float32", seed=None, name=None):
    """Uniform values in [minval, maxval) (tf.random.uniform). Floats default to
    [0, 1); integer dtypes need maxval."""
    dtype = _kiln.as_dtype(dtype)
    if dtype.name in _HALF:
        return _half(uniform, dtype, minval, 1 if maxval is None else maxval, shape, seed)
    if maxval is None:
        if dtype.is_integer:
            raise ValueError(f"RandomUniform: maxval must be given for integer dtype "
                             f"{dtype.name}")
        maxval = 1
    lo = _bound(minval, dtype, "RandomUniform", "minval")
    hi = _bound(maxval, dtype, "RandomUniform", "maxval")
    return raw.RandomUniform(h.shape_tensor(shape, "RandomUniform"), lo, hi,
                             seed=_seed(seed, "RandomUniform"))


def normal(shape, mean=0.0, stddev=1.0, dtype="float32", seed=None, name=None):
    """Normally distributed values mean + stddev * N(0, 1) (tf.random.normal)."""
    dtype = _kiln.as_dtype(dtype)
    if not dtype.is_floating:
        raise errors.InvalidArgumentError(
            f"RandomStandardNormal: dtype must be float32 or float64, got {dtype.name}")
    if dtype.name in _HALF:
        return _half(normal, dtype, mean, stddev, shape, seed)
    m = _bound(mean, dtype, "RandomStandardNormal", "mean")
    s = _bound(stddev, dtype, "RandomStandardNormal", "stddev")
    return raw.RandomStandardNormal(h.shape_tensor(shape, "RandomStandardNormal"), m, s,
                                    seed=_seed(seed, "RandomStandardNormal"))


def op_seed(seed):
    """A stateless seed (shape [2], int32) drawn from the stateful stream of an op
    seed: the stateful ops below are their stateless forms fed by it."""
    return uniform([2], h.INT32_MIN, h.INT32_MAX, dtype="int32", seed=seed)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype="float32", seed=None, name=None):
    """Normal values redrawn when more than 2 stddev from mean (tf.random.truncated_normal)."""
    sr.float_dtype(dtype, mean)
    return sr.stateless_truncated_normal(shape, op_seed(seed), mean, stddev, dtype)


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """Samples of the categorical distributions softmax(logits[i]), shape
    [batch, num_samples], int64 unless dtype says int32 (tf.random.categorical)."""
    return sr.categorical_from_seed(logits, num_samples, op_seed(seed), dtype, "Multinomial")


def shuffle(value, seed=None, name=None):
    """value permuted along its first dimension (tf.random.shuffle)."""
    return sr.shuffle_from_seed(value, op_seed(seed))


def set_seed(seed):
    """Sets the global random seed (tf.random.set_seed): every random stream
    restarts, so the same sequence of random calls gives the same values."""
    if isinstance(seed, bool) or not hasattr(seed, "__index__"):
        raise TypeError(f"set_seed: seed must be an int, got {seed!r}")
    _kiln.set_random_seed(int(seed))


RANDOM = ["uniform", "normal", "truncated_normal", "categorical", "shuffle", "set_seed"]
__all__ = []
