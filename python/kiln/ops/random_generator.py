"""tf.random.Generator, create_rng_state and the global generator.

A Generator's state is an int64 kiln Variable laid out as TensorFlow's: Philox
[counter_lo, counter_hi, key], ThreeFry [counter, key]. Each draw hashes the state
into a stateless seed (kiln.ops.stateless_random) and advances the counter by 256 per
value drawn, as TensorFlow does, so states match TensorFlow's step for step while the
values drawn do not (kiln's hash, not Philox). Draws inside a kiln.function read and
advance the variable on every call. The state variable checkpoints with the Generator.
"""
import os

from kiln import _kiln
from kiln.ops import _helpers as h
from kiln.ops import math_ops as m
from kiln.ops import stateless_random as sr
from kiln.ops.stateless_random import Algorithm, INT64

raw = h.raw
_STATE_SIZE = {1: 3, 2: 2}
_WORD = 2 ** 64
_DELTA = 256  # counter steps per value drawn (TensorFlow's)


def _state_size(alg):
    a = sr.alg_value(alg)
    return _STATE_SIZE[1 if a == 3 else a]


def _signed(word):
    word &= _WORD - 1
    return word - _WORD if word >= 2 ** 63 else word


def create_rng_state(seed, alg):
    """An int64 RNG state for alg from an int (cut into 64-bit words, lowest first)
    or a list (truncated, or padded with zeros on the left) (tf.random.create_rng_state)."""
    size = _state_size(alg)
    if isinstance(seed, int) and not isinstance(seed, bool):
        words = [_signed(seed >> (64 * i)) for i in range(size)]
    else:
        vals = h.int_list(seed, "seed", "create_rng_state")
        words = [_signed(v) for v in vals[:size]]
        words = [0] * (size - len(words)) + words
    return h.int_array(words, "int64")


def _words(x):
    """The low and high 32 bits of int64 x, as int64 values in [0, 2**32)."""
    lo = raw.BitwiseAnd(x, sr.i64(0xFFFFFFFF))
    return lo, raw.BitwiseAnd(raw.RightShift(x, sr.i64(32)), sr.i64(0xFFFFFFFF))


def _state_seed(state):
    """A stateless seed (shape [2], int64) hashed from every bit of a state."""
    words = [w for x in raw.Unpack(state, num=state.shape[0], axis=0) for w in _words(x)]
    a, b = sr.i64(0x243F6A88), sr.i64(0x85A308D3)
    for w in words:
        a = sr.mix(raw.BitwiseXor(a, w))
        b = sr.mix(raw.BitwiseXor(b, raw.BitwiseXor(w, a)))
    return raw.Pack([a, b], axis=0)


def _count(shape):
    """The number of values of a shape, as an int64 scalar tensor."""
    if h.is_tensor(shape):
        return m.reduce_prod(raw.Cast(h.tensor(shape), DstT=INT64))
    n = 1
    for d in shape:
        n *= d
    return sr.i64(n)


class Generator:
    """A random number generator with its state in a Variable (tf.random.Generator)."""

    _kiln_trackable = True

    def __init__(self, copy_from=None, state=None, alg=None):
        if copy_from is not None:
            if state is not None or alg is not None:
                raise ValueError("When `copy_from` is not None, neither `state` nor `alg` "
                                 "is allowed.")
            state, alg = copy_from.state.read_value(), copy_from.algorithm
        elif state is None:
            raise ValueError("Generator: give `copy_from` or `state` (or use from_seed)")
        self._alg = sr.alg_value(Algorithm.PHILOX if alg is None else alg)
        if self._alg == 3:
            self._alg = 1
        self._state_var = _kiln.Variable(self._checked(state), dtype="int64",
                                         trainable=False, name="StateVar")

    def _checked(self, state):
        t = h.tensor(state)
        t = t if t.dtype == INT64 else raw.Cast(t, DstT=INT64)
        size = _STATE_SIZE[self._alg]
        dims = t.shape.as_list()
        if dims != [size]:
            text = "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"
            raise ValueError(f"Shapes {text} and [{size}] are incompatible")
        return t

    # ---- construction ----

    @classmethod
    def from_state(cls, state, alg):
        return cls(state=state, alg=alg)

    @classmethod
    def from_seed(cls, seed, alg=None):
        alg = Algorithm.PHILOX if alg is None else alg
        return cls(state=create_rng_state(seed, alg), alg=alg)

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        alg = Algorithm.PHILOX if alg is None else alg
        size = _state_size(alg)
        seed = int.from_bytes(os.urandom(8 * size), "little")
        return cls(state=create_rng_state(seed, alg), alg=alg)

    @classmethod
    def from_key_counter(cls, key, counter, alg):
        return cls(state=cls._key_counter_state(key, counter), alg=alg)

    @staticmethod
    def _key_counter_state(key, counter):
        c = h.int_list(counter, "counter", "from_key_counter")
        return h.int_array([_signed(v) for v in c] + [_signed(h.one_int(key, "key", "k"))],
                           "int64")

    # ---- state ----

    @property
    def state(self):
        """The state Variable (int64, shape [3] for Philox, [2] for ThreeFry)."""
        return self._state_var

    @property
    def algorithm(self):
        return self._alg

    @property
    def key(self):
        return raw.GatherV2(self._state_var.read_value(), sr.i64(-1 + self._state_var.shape[0]),
                            axis=0, batch_dims=0)

    def reset(self, state):
        self._state_var.assign(self._checked(state))

    def reset_from_seed(self, seed):
        self.reset(create_rng_state(seed, self._alg))

    def reset_from_key_counter(self, key, counter):
        self.reset(self._key_counter_state(key, counter))

    def skip(self, delta):
        """Advances the state as drawing delta values would."""
        self._advance(sr.i64(h.one_int(delta, "delta", "skip")))

    def _advance(self, n):
        zeros = [sr.i64(0)] * (self._state_var.shape[0] - 1)
        step = raw.Mul(n, sr.i64(_DELTA))
        self._state_var.assign_add(raw.Pack([step] + zeros, axis=0))

    def _seed(self, shape):
        """A stateless seed for one draw of shape; the state advances past it."""
        seed = _state_seed(self._state_var.read_value())
        self._advance(_count(shape))
        return seed

    def _kiln_children(self):
        return [("_state_var", self._state_var)]

    # ---- draws ----

    def normal(self, shape, mean=0.0, stddev=1.0, dtype="float32", name=None):
        sr.float_dtype(dtype, mean)
        shape = sr.shape_arg(shape, "StatefulStandardNormalV2")
        return sr.stateless_normal(shape, self._seed(shape), mean, stddev, dtype)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype="float32", name=None):
        sr.float_dtype(dtype, mean)
        shape = sr.shape_arg(shape, "StatefulTruncatedNormal")
        return sr.stateless_truncated_normal(shape, self._seed(shape), mean, stddev, dtype)

    def uniform(self, shape, minval=0, maxval=None, dtype="float32", name=None):
        d = sr.check_dtype(dtype, sr.UNIFORM_DTYPES)
        if d.is_integer and (minval is None) != (maxval is None):
            raise ValueError(f"For integer dtype {d}, minval and maxval must be both `None` "
                             f"or both non-`None`; got minval={minval} and maxval={maxval}")
        shape = sr.shape_arg(shape, "StatefulUniform")
        return sr.stateless_uniform(shape, self._seed(shape), minval, maxval, d)

    def uniform_full_int(self, shape, dtype="int64", name=None):
        d = sr.check_dtype(dtype, ("int32", "int64"))
        shape = sr.shape_arg(shape, "StatefulUniformFullInt")
        return sr.full_int(shape, self._seed(shape), d)

    def binomial(self, shape, counts, probs, dtype="int32", name=None):
        shape = sr.shape_arg(shape, "StatefulRandomBinomial")
        return sr.stateless_binomial(shape, self._seed(shape), counts, probs, dtype)

    def make_seeds(self, count=1):
        """Seeds for stateless ops, shape [2, count] int64 (second row zero, as TF's)."""
        keys = self.uniform_full_int([count], "int64")
        return raw.Pack([keys, raw.ZerosLike(keys)], axis=0)

    def split(self, count=1):
        """count new Generators keyed by seeds drawn from this one."""
        keys = self.uniform_full_int([count], "int64")
        size = _STATE_SIZE[self._alg]
        return [Generator(state=raw.Pack([sr.i64(0)] * (size - 1) + [k], axis=0), alg=self._alg)
                for k in raw.Unpack(keys, num=count, axis=0)]


_GLOBAL = [None]


def get_global_generator():
    """The global Generator, made from a non-deterministic state on first use."""
    if _GLOBAL[0] is None:
        _GLOBAL[0] = Generator.from_non_deterministic_state()
    return _GLOBAL[0]


def set_global_generator(generator):
    """Replaces the global Generator (tf.random.set_global_generator)."""
    _GLOBAL[0] = generator


__all__ = []
