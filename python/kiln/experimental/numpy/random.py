"""tnp.random: NumPy's random API over kiln's random ops (float64 results, as tnp)."""
from kiln import _kiln
from kiln.experimental.numpy import _dtypes as D
from kiln.ops import random_ops

_FLOAT64 = _kiln.as_dtype("float64")


def _size(size):
    if size is None:
        return []
    return [size] if isinstance(size, int) else list(size)


def seed(s):
    """Sets the global seed (tnp.random.seed)."""
    random_ops.set_seed(s)


def randn(*args):
    """Standard normal samples of shape args (float64)."""
    return random_ops.normal(list(args), dtype=_FLOAT64)


def standard_normal(size=None):
    return random_ops.normal(_size(size), dtype=_FLOAT64)


def normal(loc=0.0, scale=1.0, size=None):
    return random_ops.normal(_size(size), loc, scale, dtype=_FLOAT64)


def uniform(low=0.0, high=1.0, size=None):
    return random_ops.uniform(_size(size), low, high, dtype=_FLOAT64)


def rand(*size):
    """Uniform samples in [0, 1) of shape size (float64)."""
    return random_ops.uniform(list(size), dtype=_FLOAT64)


def random(size=None):  # noqa: A001
    return random_ops.uniform(_size(size), dtype=_FLOAT64)


def randint(low, high=None, size=None, dtype=int):
    """Integers in [low, high) (or [0, low)), int64 by default."""
    if high is None:
        low, high = 0, low
    return random_ops.uniform(_size(size), low, high, dtype=D.to_kiln(dtype))
