"""Weight initializers by name (kiln.keras.initializers).

An initializer is called as ``init(shape, dtype=None)`` and returns a kiln
Tensor. Unseeded random initializers draw from kiln's random streams, so
``kiln.random.set_seed`` / ``kiln.keras.utils.set_random_seed`` make model
construction repeatable; a seeded initializer returns the same values on every
call (as in Keras).
"""
import math
import re

import numpy as np

from kiln import _kiln
from kiln.ops import array_ops, random_ops

# Truncating N(0, 1) to [-2, 2] leaves a standard deviation of this value.
_TRUNC_STD = 0.87962566103423978


def _fans(shape, input_axes=None, output_axes=None):
    shape = tuple(shape)
    if input_axes is not None and output_axes is not None:  # Keras 3.15's einsum kernels
        return (int(np.prod([shape[a] for a in input_axes])),
                int(np.prod([shape[a] for a in output_axes])))
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return shape[-2] * receptive, shape[-1] * receptive


def _dtype(dtype):
    d = _kiln.as_dtype(dtype if dtype is not None else "float32")
    return d


def _float_dtype(dtype, who):
    d = _dtype(dtype)
    if not d.is_floating:
        raise ValueError(f"{who}: expected a floating dtype, got {d.name}")
    return d


def _shape(shape):
    if hasattr(shape, "as_list"):
        shape = shape.as_list()
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    out = tuple(int(d) for d in shape)
    if any(d < 0 for d in out):
        raise ValueError(f"initializer: shape must be non-negative, got {out}")
    return out


def _check_seed(seed):
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))
                             or seed < 0):
        raise ValueError(f"seed must be None or a non-negative int, got {seed!r}")
    return None if seed is None else int(seed)


class Initializer:
    """Base class: returns a tensor for (shape, dtype)."""

    def __call__(self, shape, dtype=None):
        raise NotImplementedError

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def _rng(self):
        return np.random.default_rng(getattr(self, "seed", None))


def _from_numpy(a, dtype):
    return _kiln.convert_to_tensor(np.ascontiguousarray(a, dtype=dtype.name))


def _normal(shape, mean, std, dtype, seed_init):
    """N(mean, std) values: kiln's stream when unseeded, NumPy when seeded."""
    if seed_init.seed is not None:
        return _from_numpy(seed_init._rng().normal(mean, std, size=shape), dtype)
    return random_ops.normal(shape, mean=float(mean), stddev=float(std), dtype=dtype)


def _uniform(shape, lo, hi, dtype, seed_init):
    if seed_init.seed is not None:
        return _from_numpy(seed_init._rng().uniform(lo, hi, size=shape), dtype)
    return random_ops.uniform(shape, minval=float(lo), maxval=float(hi), dtype=dtype)


def _redraw_outside(x, rng):
    """Redraws the values of a standard-normal array outside [-2, 2], in place."""
    bad = np.abs(x) > 2
    while bad.any():
        x[bad] = rng.standard_normal(size=int(bad.sum()))
        bad = np.abs(x) > 2
    return x


def _truncated_normal(shape, mean, std, dtype, seed_init):
    """N(mean, std) restricted to [mean - 2 std, mean + 2 std]: the values
    outside (about 4.6%) are drawn again."""
    if seed_init.seed is not None:
        rng = seed_init._rng()
        x = _redraw_outside(rng.standard_normal(size=shape), rng)
        return _from_numpy(x * std + mean, dtype)
    raw = _kiln.raw
    if _kiln.executing_eagerly():
        # The bulk comes from kiln's stream; the few redraws from a NumPy
        # generator seeded by that stream, so kiln.random.set_seed repeats both.
        x = np.array(random_ops.normal(shape, dtype=dtype).numpy())
        key = random_ops.uniform([2], minval=0, maxval=2 ** 31 - 1, dtype="int32").numpy()
        x = _redraw_outside(x, np.random.default_rng([int(k) for k in key]))
        return _from_numpy(x * std + mean, dtype)
    x = random_ops.normal(shape, dtype=dtype)
    two = _kiln.constant(2.0, dtype=dtype)
    for _ in range(8):
        x = raw.SelectV2(raw.Greater(raw.Abs(x), two), random_ops.normal(shape, dtype=dtype), x)
    x = raw.ClipByValue(x, raw.Neg(two), two)  # leaves ~1e-11 of the values at the edges
    return raw.AddV2(raw.Mul(x, _kiln.constant(float(std), dtype=dtype)),
                     _kiln.constant(float(mean), dtype=dtype))


class Zeros(Initializer):
    """All zeros."""

    def __call__(self, shape, dtype=None):
        return array_ops.zeros(_shape(shape), dtype=_dtype(dtype))


class Ones(Initializer):
    """All ones."""

    def __call__(self, shape, dtype=None):
        return array_ops.ones(_shape(shape), dtype=_dtype(dtype))


class Constant(Initializer):
    """Every element equal to ``value``."""

    def __init__(self, value=0):
        self.value = value

    def __call__(self, shape, dtype=None):
        d = _dtype(dtype)
        return _from_numpy(np.full(_shape(shape), self.value), d)

    def get_config(self):
        return {"value": self.value}


class RandomNormal(Initializer):
    """Normal values with ``mean`` and ``stddev``."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, _check_seed(seed)

    def __call__(self, shape, dtype=None):
        d = _float_dtype(dtype, "RandomNormal")
        return _normal(_shape(shape), self.mean, self.stddev, d, self)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class TruncatedNormal(Initializer):
    """Normal values redrawn when more than two ``stddev`` from ``mean``."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, _check_seed(seed)

    def __call__(self, shape, dtype=None):
        d = _float_dtype(dtype, "TruncatedNormal")
        return _truncated_normal(_shape(shape), self.mean, self.stddev, d, self)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class RandomUniform(Initializer):
    """Uniform values in [minval, maxval)."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = minval, maxval, _check_seed(seed)

    def __call__(self, shape, dtype=None):
        d = _float_dtype(dtype, "RandomUniform")
        return _uniform(_shape(shape), self.minval, self.maxval, d, self)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


_DISTRIBUTIONS = ("truncated_normal", "untruncated_normal", "uniform", "normal")


class VarianceScaling(Initializer):
    """Values with variance ``scale / n``; n is fan_in, fan_out or their mean
    (``mode``); ``distribution`` is 'truncated_normal', 'untruncated_normal'
    or 'uniform'."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 input_axes=None, output_axes=None):
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or scale <= 0:
            raise ValueError(f"VarianceScaling: scale must be a positive float, got {scale!r}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"VarianceScaling: invalid mode {mode!r} "
                             "(expected 'fan_in', 'fan_out' or 'fan_avg')")
        distribution = str(distribution).lower()
        if distribution not in _DISTRIBUTIONS:
            raise ValueError(f"VarianceScaling: invalid distribution {distribution!r} "
                             f"(expected one of {_DISTRIBUTIONS[:3]})")
        self.scale, self.mode, self.distribution = float(scale), mode, distribution
        self.seed = _check_seed(seed)
        self.input_axes = None if input_axes is None else [int(a) for a in input_axes]
        self.output_axes = None if output_axes is None else [int(a) for a in output_axes]

    def __call__(self, shape, dtype=None):
        shape = _shape(shape)
        d = _float_dtype(dtype, type(self).__name__)
        fan_in, fan_out = _fans(shape, self.input_axes, self.output_axes)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        var = self.scale / max(1.0, n)
        if self.distribution == "uniform":
            lim = math.sqrt(3.0 * var)
            return _uniform(shape, -lim, lim, d, self)
        if self.distribution == "untruncated_normal":
            return _normal(shape, 0.0, math.sqrt(var), d, self)
        return _truncated_normal(shape, 0.0, math.sqrt(var) / _TRUNC_STD, d, self)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed, "input_axes": self.input_axes,
                "output_axes": self.output_axes}


class _Preset(VarianceScaling):
    _ARGS = (1.0, "fan_in", "truncated_normal")

    def __init__(self, seed=None, input_axes=None, output_axes=None):
        super().__init__(*self._ARGS, seed=seed, input_axes=input_axes, output_axes=output_axes)

    def get_config(self):
        return {"seed": self.seed, "input_axes": self.input_axes,
                "output_axes": self.output_axes}


class GlorotUniform(_Preset):
    """Uniform in +-sqrt(6 / (fan_in + fan_out)) (Xavier uniform)."""
    _ARGS = (1.0, "fan_avg", "uniform")


class GlorotNormal(_Preset):
    """Truncated normal with variance 2 / (fan_in + fan_out) (Xavier normal)."""
    _ARGS = (1.0, "fan_avg", "truncated_normal")


class HeNormal(_Preset):
    """Truncated normal with variance 2 / fan_in."""
    _ARGS = (2.0, "fan_in", "truncated_normal")


class HeUniform(_Preset):
    """Uniform in +-sqrt(6 / fan_in)."""
    _ARGS = (2.0, "fan_in", "uniform")


class LecunNormal(_Preset):
    """Truncated normal with variance 1 / fan_in."""
    _ARGS = (1.0, "fan_in", "truncated_normal")


class LecunUniform(_Preset):
    """Uniform in +-sqrt(3 / fan_in)."""
    _ARGS = (1.0, "fan_in", "uniform")


class Identity(Initializer):
    """``gain`` times the identity matrix (2-D shapes only)."""

    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype=None):
        shape = _shape(shape)
        if len(shape) != 2:
            raise ValueError(f"Identity initializer needs a 2-D shape, got {shape}")
        return _from_numpy(self.gain * np.eye(*shape), _float_dtype(dtype, "Identity"))

    def get_config(self):
        return {"gain": self.gain}


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix times ``gain``, from the QR decomposition of
    a normal matrix; shapes of rank >= 2 are flattened to (prod(shape[:-1]), shape[-1])."""

    def __init__(self, gain=1.0, seed=None):
        self.gain, self.seed = gain, _check_seed(seed)

    def __call__(self, shape, dtype=None):
        shape = _shape(shape)
        if len(shape) < 2:
            raise ValueError(f"Orthogonal initializer needs a shape of rank >= 2, got {shape}")
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
        a = _normal((max(rows, cols), min(rows, cols)), 0.0, 1.0, _dtype("float64"), self)
        q, r = np.linalg.qr(np.asarray(a))
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return _from_numpy(self.gain * q.reshape(shape), _float_dtype(dtype, "Orthogonal"))

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


# Keras' short names and lower-case aliases.
zeros, ones, constant = Zeros, Ones, Constant
random_normal, random_uniform, truncated_normal = RandomNormal, RandomUniform, TruncatedNormal
glorot_uniform, glorot_normal, he_normal, he_uniform = GlorotUniform, GlorotNormal, HeNormal, \
    HeUniform
lecun_normal, lecun_uniform, variance_scaling = LecunNormal, LecunUniform, VarianceScaling
identity, orthogonal = Identity, Orthogonal

_CLASSES = [Zeros, Ones, Constant, RandomNormal, RandomUniform, TruncatedNormal,
            VarianceScaling, GlorotUniform, GlorotNormal, HeNormal, HeUniform, LecunNormal,
            LecunUniform, Identity, Orthogonal]


def _snake(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


_BY_NAME = {_snake(c.__name__): c for c in _CLASSES}
_BY_NAME.update({c.__name__: c for c in _CLASSES})
_BY_NAME.update({"uniform": RandomUniform, "normal": RandomNormal})  # Keras 3's aliases


def serialize(initializer):
    """Keras 3's dict for an Initializer: module, class_name, config, registered_name."""
    return {"module": "keras.initializers", "class_name": type(initializer).__name__,
            "config": initializer.get_config(), "registered_name": None}


def deserialize(config):
    """The Initializer described by serialize()'s dict."""
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Could not interpret initializer config: {config!r}")
    cls = _lookup(config["class_name"])
    return cls.from_config(dict(config.get("config") or {}))


def _lookup(name):
    cls = _BY_NAME.get(name) or _BY_NAME.get(name.lower())
    if cls is None:
        raise ValueError(f"Unknown initializer: {name!r} "
                         f"(known: {sorted(k for k in _BY_NAME if k.islower())})")
    return cls


def get(identifier):
    """An initializer from a name ('he_normal', 'HeNormal'), a config dict, an
    Initializer, or a callable(shape, dtype); None gives None."""
    if identifier is None:
        return None
    if isinstance(identifier, Initializer):
        return identifier
    if isinstance(identifier, str):
        return _lookup(identifier)()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}")
