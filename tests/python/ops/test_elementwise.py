"""Elementwise ops against NumPy, eagerly and traced (table-driven)."""
import math

import numpy as np
import pytest

import kiln as tf
from ops_harness import ALL, FLOATS, INTS, NUMERIC, SIGNED, check, sample

# Shapes of (x, y): equal, broadcast both ways, scalar, empty.
BINARY_SHAPES = [((2, 3), (2, 3)), ((3, 1), (1, 4)), ((), (2, 3)), ((2, 3), ()),
                 ((0, 3), (1, 3)), ((), ())]


def _truediv_ref(x, y):
    if x.dtype.kind in "iu":
        ft = np.float32 if x.dtype.itemsize == 1 else np.float64
        return x.astype(ft) / y.astype(ft)
    return x / y


def _floordiv_ref(x, y):
    return np.floor(x / y).astype(x.dtype) if x.dtype.kind == "f" else np.floor_divide(x, y)


def _pow_ref(x, y):
    return np.power(x, y)


# name -> (wrapper, reference, dtypes, data options for y)
BINARY = {
    "add": (tf.add, np.add, NUMERIC, {}),
    "subtract": (tf.subtract, np.subtract, NUMERIC, {}),
    "multiply": (tf.multiply, np.multiply, NUMERIC, {}),
    "divide": (tf.divide, _truediv_ref, NUMERIC, {"positive": True}),
    "truediv": (tf.math.truediv, _truediv_ref, NUMERIC, {"positive": True}),
    "floordiv": (tf.math.floordiv, _floordiv_ref, FLOATS + SIGNED, {"positive": True}),
    "floormod": (tf.math.floormod, np.mod, FLOATS + SIGNED, {"positive": True}),
    "mod": (tf.math.mod, np.mod, FLOATS + SIGNED, {"positive": True}),
    "maximum": (tf.maximum, np.maximum, NUMERIC, {}),
    "minimum": (tf.minimum, np.minimum, NUMERIC, {}),
    "squared_difference": (tf.math.squared_difference, lambda x, y: (x - y) * (x - y),
                           FLOATS + SIGNED, {}),
    "equal": (tf.equal, np.equal, ALL, {}),
    "not_equal": (tf.not_equal, np.not_equal, ALL, {}),
    "less": (tf.less, np.less, NUMERIC, {}),
    "less_equal": (tf.less_equal, np.less_equal, NUMERIC, {}),
    "greater": (tf.greater, np.greater, NUMERIC, {}),
    "greater_equal": (tf.greater_equal, np.greater_equal, NUMERIC, {}),
    "logical_and": (tf.logical_and, np.logical_and, ("bool",), {}),
    "logical_or": (tf.logical_or, np.logical_or, ("bool",), {}),
    "logical_xor": (tf.logical_xor, np.logical_xor, ("bool",), {}),
    "bitwise_and": (tf.bitwise.bitwise_and, np.bitwise_and, INTS + ("int8",), {}),
    "bitwise_or": (tf.bitwise.bitwise_or, np.bitwise_or, INTS + ("int8",), {}),
    "bitwise_xor": (tf.bitwise.bitwise_xor, np.bitwise_xor, INTS + ("int8",), {}),
}

BINARY_CASES = [(name, dt, sx, sy) for name, (_, _, dts, _) in BINARY.items() for dt in dts
                for sx, sy in BINARY_SHAPES]


@pytest.mark.parametrize("name,dtype,sx,sy", BINARY_CASES)
def test_binary(name, dtype, sx, sy):
    fn, ref, _, opts = BINARY[name]
    x = sample(dtype, sx, seed=1)
    y = sample(dtype, sy, seed=2, **opts)
    check(fn, ref, x, y, what=f"{name} {dtype} {sx} {sy}")


@pytest.mark.parametrize("dtype", FLOATS + SIGNED)
def test_pow(dtype):
    x = sample(dtype, (2, 3), seed=3, positive=True, high=4)
    y = sample(dtype, (2, 3), seed=4, low=0, high=3)
    if dtype in FLOATS:
        y = y - 1.5  # negative float exponents are fine
    check(tf.pow, _pow_ref, x, y, kind="transcendental", what=f"pow {dtype}")


def test_python_numbers_take_the_tensor_dtype():
    for dt in ("float64", "int64", "uint8"):
        x = tf.constant(sample(dt, (3,), positive=True))
        assert tf.add(x, 2).dtype == dt
        assert tf.multiply(3, x).dtype == dt
        assert tf.maximum(x, 1).dtype == dt
    assert tf.divide(tf.constant([1, 2]), 2).dtype == tf.float64
    assert tf.divide(tf.constant([1, 2], tf.uint8), 2).dtype == tf.float32
    np.testing.assert_allclose(tf.subtract(10.0, tf.constant([1.5])).numpy(), [8.5])


def _erf_ref(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x).astype(x.dtype)


def _sigmoid_ref(x):
    return (1 / (1 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


def _f64(fn):
    """A float reference computed in float64 and rounded to the input dtype."""
    return lambda x: fn(x.astype(np.float64)).astype(x.dtype)


# name -> (wrapper, reference, dtypes, tolerance kind, data options)
UNARY = {
    "negative": (tf.negative, np.negative, FLOATS + SIGNED, "default", {}),
    "abs": (tf.abs, np.abs, FLOATS + SIGNED, "default", {}),
    "sign": (tf.sign, np.sign, FLOATS + SIGNED, "default", {}),
    "square": (tf.square, np.square, FLOATS + SIGNED, "default", {}),
    "sqrt": (tf.sqrt, np.sqrt, FLOATS, "default", {"positive": True}),
    "rsqrt": (tf.math.rsqrt, _f64(lambda x: 1 / np.sqrt(x)), FLOATS, "default",
              {"positive": True}),
    "exp": (tf.exp, _f64(np.exp), FLOATS, "transcendental", {}),
    "log": (tf.math.log, _f64(np.log), FLOATS, "transcendental", {"positive": True}),
    "log1p": (tf.math.log1p, _f64(np.log1p), FLOATS, "transcendental", {"positive": True}),
    "expm1": (tf.math.expm1, _f64(np.expm1), FLOATS, "transcendental", {}),
    "tanh": (tf.tanh, _f64(np.tanh), FLOATS, "transcendental", {}),
    "sigmoid": (tf.sigmoid, _sigmoid_ref, FLOATS, "transcendental", {}),
    "sin": (tf.sin, _f64(np.sin), FLOATS, "transcendental", {}),
    "cos": (tf.cos, _f64(np.cos), FLOATS, "transcendental", {}),
    "floor": (tf.floor, np.floor, FLOATS, "default", {}),
    "ceil": (tf.math.ceil, np.ceil, FLOATS, "default", {}),
    "round": (tf.round, np.round, FLOATS, "default", {}),
    "logical_not": (tf.logical_not, np.logical_not, ("bool",), "default", {}),
    "invert": (tf.bitwise.invert, np.invert, INTS + ("int8",), "default", {}),
    "reciprocal": (tf.math.reciprocal, lambda x: 1 / x, FLOATS, "default", {"positive": True}),
    "softplus": (tf.math.softplus, _f64(lambda x: np.logaddexp(0, x)), FLOATS,
                 "transcendental", {}),
    "erf": (tf.math.erf, _erf_ref, FLOATS, "transcendental", {}),
    "erfc": (tf.math.erfc, lambda x: (1 - _erf_ref(x.astype(np.float64))).astype(x.dtype),
             FLOATS, "transcendental", {"low": -1.9, "high": 1.9}),
    "relu": (tf.nn.relu, lambda x: np.maximum(x, 0).astype(x.dtype), FLOATS + SIGNED,
             "default", {}),
    "relu6": (tf.nn.relu6, lambda x: np.minimum(np.maximum(x, 0), 6).astype(x.dtype), FLOATS,
              "default", {"low": -9, "high": 9}),
    "silu": (tf.nn.silu, lambda x: x * _sigmoid_ref(x), FLOATS, "transcendental", {}),
    "elu": (tf.nn.elu, _f64(lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0)))), FLOATS,
            "transcendental", {}),
    "leaky_relu": (tf.nn.leaky_relu, lambda x: np.where(x > 0, x, x * x.dtype.type(0.2)),
                   FLOATS, "default", {}),
}

UNARY_SHAPES = [(2, 3), (), (0,), (4, 1, 2)]
UNARY_CASES = [(name, dt, s) for name, (_, _, dts, _, _) in UNARY.items() for dt in dts
               for s in UNARY_SHAPES]


@pytest.mark.parametrize("name,dtype,shape", UNARY_CASES)
def test_unary(name, dtype, shape):
    fn, ref, _, kind, opts = UNARY[name]
    x = sample(dtype, shape, seed=5, **opts)
    check(fn, ref, x, kind=kind, what=f"{name} {dtype} {shape}")


def test_special_float_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5, 2.5, 0.5], np.float32)
    check(tf.math.is_nan, np.isnan, x)
    check(tf.math.is_finite, np.isfinite, x)
    check(tf.math.is_inf, np.isinf, x)
    check(tf.round, np.round, x)  # half to even
    check(tf.maximum, np.maximum, x, np.zeros_like(x))  # NaN propagates
    check(tf.nn.relu, lambda v: np.where(np.isnan(v), v, np.maximum(v, 0)), x)
    check(tf.math.erf, _erf_ref, x, kind="transcendental")
    with np.errstate(invalid="ignore"):
        check(tf.math.softplus,
              lambda v: np.logaddexp(0, v.astype(np.float64)).astype(v.dtype), x,
              kind="transcendental")


def test_erf_float64_accuracy_over_its_range():
    x = np.linspace(-7, 7, 2001)
    check(tf.math.erf, _erf_ref, x, kind="transcendental")
    check(tf.nn.gelu, lambda v: 0.5 * v * (1 + _erf_ref(v / np.sqrt(2))), x,
          kind="transcendental")


@pytest.mark.parametrize("dtype", FLOATS)
def test_gelu_tanh_approximation(dtype):
    x = sample(dtype, (3, 4), seed=6)

    def ref(v):
        v = v.astype(np.float64)
        c = np.sqrt(2 / np.pi)
        return (0.5 * v * (1 + np.tanh(c * (v + 0.044715 * v ** 3)))).astype(dtype)

    check(lambda t: tf.nn.gelu(t, approximate=True), ref, x, kind="transcendental")
    check(lambda t: tf.nn.gelu(t), lambda v: (0.5 * v * (1 + _erf_ref(v / np.sqrt(2)))
                                              ).astype(dtype), x, kind="transcendental")


def test_integer_edge_cases():
    big = np.array([2**31 - 1, -2**31], np.int32)
    check(lambda t: tf.add(t, 1), lambda v: v + np.int32(1), big)  # wraps
    check(tf.abs, np.abs, big)
    x = np.array([7, -7, 7, -7], np.int32)
    y = np.array([2, 2, -2, -2], np.int32)
    check(tf.math.floordiv, np.floor_divide, x, y)
    check(tf.math.floormod, np.mod, x, y)
    check(tf.bitwise.right_shift, lambda a, b: a >> b, np.array([-8, 8], np.int32),
          np.array([1, 2], np.int32))
    check(tf.bitwise.left_shift, lambda a, b: a << b, np.array([3, 1], np.uint8),
          np.array([1, 7], np.uint8))


def test_clip_by_value():
    for dt in FLOATS + SIGNED:
        x = sample(dt, (3, 4), seed=7)
        check(lambda t: tf.clip_by_value(t, -2, 3), lambda v: np.clip(v, -2, 3), x,
              what=dt)
    x = sample("float32", (2, 3), seed=8)
    lo = np.array([-1.0, 0.0, -3.0], np.float32)
    check(lambda t, l: tf.clip_by_value(t, l, 2.0), lambda v, l: np.clip(v, l, 2.0), x, lo)


def test_add_n():
    a, b, c = (sample("float32", (2, 3), seed=s) for s in (1, 2, 3))
    check(lambda x, y, z: tf.add_n([x, y, z]), lambda x, y, z: x + y + z, a, b, c)
    check(lambda x: tf.add_n([x]), lambda x: x, a)


def test_divide_no_nan():
    x = np.array([1.0, 2.0, 0.0, -3.0], np.float64)
    y = np.array([0.0, 4.0, 0.0, 2.0], np.float64)
    check(tf.math.divide_no_nan, lambda a, b: np.where(b == 0, 0.0, a / np.where(b == 0, 1, b)),
          x, y)


def test_where_three_args():
    c = np.array([[True, False, True]])
    x = sample("float32", (2, 3), seed=1)
    y = sample("float32", (2, 1), seed=2)
    check(tf.where, np.where, c, x, y)
    check(lambda cc, xx: tf.where(cc, xx, 0.0), lambda cc, xx: np.where(cc, xx, np.float32(0)),
          c, x)
    for dt in ("int64", "bool", "uint8"):
        check(tf.where, np.where, c, sample(dt, (1, 3), 3), sample(dt, (1, 3), 4))


def test_where_one_arg_eager_and_traced():
    c = np.array([[True, False], [False, True]])
    np.testing.assert_array_equal(tf.where(tf.constant(c)).numpy(), [[0, 0], [1, 1]])
    assert tf.where(tf.constant(c)).dtype == tf.int64

    @tf.function
    def f(t):
        return tf.where(t)

    np.testing.assert_array_equal(f(tf.constant(c)).numpy(), [[0, 0], [1, 1]])


def test_cast():
    x = np.array([1.7, -1.7, 300.0, np.nan], np.float32)
    check(lambda t: tf.cast(t, tf.int32), lambda v: np.array([1, -1, 300, 0], np.int32), x)
    check(lambda t: tf.cast(t, tf.bool), lambda v: v != 0, x)
    check(lambda t: tf.cast(t, "float64"), lambda v: v.astype(np.float64), x)


def test_log_sigmoid_and_count_nonzero():
    x = np.array([-800.0, -2.0, 0.0, 3.0, 800.0])
    check(tf.math.log_sigmoid, lambda v: -np.logaddexp(0, -v), x, kind="transcendental")
    m = np.array([[0, 1, 2], [0, 0, 3]], np.int32)
    check(tf.math.count_nonzero, lambda v: np.int64(np.count_nonzero(v)), m)
    check(lambda t: tf.math.count_nonzero(t, axis=1, dtype=tf.int32),
          lambda v: np.count_nonzero(v, axis=1).astype(np.int32), m)


def test_numpy_scalars_in_wrappers_keep_dtype_and_rank():
    x = tf.constant([1.0, 2.0])
    out = tf.add(x, np.float32(2))
    assert out.shape == [2] and out.dtype == tf.float32
    s = tf.reduce_sum(np.float64(3.0))
    assert s.shape == [] and s.dtype == tf.float64
    assert tf.maximum(np.int64(3), np.int64(4)).shape == []


def test_two_python_operands_take_the_first_ones_dtype():
    # TensorFlow converts the first Python value, then the second to its dtype.
    for f in (lambda: tf.maximum(0.0, [1, -1]),
              tf.function(lambda: tf.maximum(0.0, [1, -1]), autograph=False)):
        got = f()
        assert got.dtype == tf.float32
        np.testing.assert_array_equal(got.numpy(), [1.0, 0.0])
    assert tf.multiply(2.5, 2).dtype == tf.float32
    assert tf.add(1, 2).dtype == tf.int32
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype mismatch"):
        tf.maximum(0, [1.5, 2.0])  # 1.5 is no int32: each keeps its dtype, the op says so
