"""Weight initializers by name (kiln.keras.initializers)."""
import math

import numpy as np


def _fans(shape):
    shape = tuple(shape)
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    """Returns a NumPy array for (shape, dtype)."""

    def __call__(self, shape, dtype=None):
        raise NotImplementedError

    def _rng(self):
        seed = getattr(self, "seed", None)
        return np.random.default_rng(seed)


class Zeros(Initializer):
    def __call__(self, shape, dtype=None):
        return np.zeros(shape, dtype="float32")


class Ones(Initializer):
    def __call__(self, shape, dtype=None):
        return np.ones(shape, dtype="float32")


class Constant(Initializer):
    def __init__(self, value=0):
        self.value = value

    def __call__(self, shape, dtype=None):
        return np.full(shape, self.value, dtype="float32")


class RandomNormal(Initializer):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None):
        return self._rng().normal(self.mean, self.stddev, size=shape).astype("float32")


class RandomUniform(Initializer):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=None):
        return self._rng().uniform(self.minval, self.maxval, size=shape).astype("float32")


class VarianceScaling(Initializer):
    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None):
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"VarianceScaling: invalid mode {mode!r}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape, dtype=None):
        fan_in, fan_out = _fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        var = self.scale / max(1.0, n)
        rng = self._rng()
        if self.distribution == "uniform":
            lim = math.sqrt(3.0 * var)
            return rng.uniform(-lim, lim, size=shape).astype("float32")
        std = math.sqrt(var)
        if self.distribution in ("truncated_normal", "normal"):
            std = std / 0.87962566103423978 if self.distribution == "truncated_normal" else std
            x = rng.normal(0.0, std, size=shape)
            if self.distribution == "truncated_normal":
                bad = np.abs(x) > 2 * std
                while bad.any():
                    x[bad] = rng.normal(0.0, std, size=int(bad.sum()))
                    bad = np.abs(x) > 2 * std
            return x.astype("float32")
        if self.distribution == "untruncated_normal":
            return rng.normal(0.0, std, size=shape).astype("float32")
        raise ValueError(f"VarianceScaling: invalid distribution {self.distribution!r}")


class GlorotUniform(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(1.0, "fan_avg", "uniform", seed)


class GlorotNormal(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed)


class HeNormal(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(2.0, "fan_in", "truncated_normal", seed)


class HeUniform(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(2.0, "fan_in", "uniform", seed)


_BY_NAME = {
    "zeros": Zeros, "ones": Ones, "constant": Constant, "random_normal": RandomNormal,
    "random_uniform": RandomUniform, "glorot_uniform": GlorotUniform,
    "glorot_normal": GlorotNormal, "he_normal": HeNormal, "he_uniform": HeUniform,
    "variance_scaling": VarianceScaling,
}


def get(identifier):
    """An initializer from a name, an Initializer, or a callable(shape, dtype)."""
    if identifier is None:
        return Zeros()
    if isinstance(identifier, str):
        key = identifier.lower()
        if key not in _BY_NAME:
            raise ValueError(f"Unknown initializer: {identifier!r} (known: {sorted(_BY_NAME)})")
        return _BY_NAME[key]()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}")
