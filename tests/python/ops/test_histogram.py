"""tf.math.bincount, tf.histogram_fixed_width(_bins) and tf.linspace of integers: the
values TensorFlow 2.21 printed for the same calls (hard-coded), eagerly, inside a
kiln.function and under jit_compile=True, and the error paths."""
import numpy as np
import pytest

import kiln as tf

V = [1, 1, 2, 3, 3, 3, 0, 5]
W8 = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
M = [[1, 2], [2, 3], [0, 0]]


def run_all(fn, *args):
    ts = [tf.constant(a) for a in args]
    outs = [fn(*ts), tf.function(fn)(*ts), tf.function(fn, jit_compile=True)(*ts)]
    return [o.numpy() for o in outs]


BINCOUNT = [  # arr, kwargs, TensorFlow 2.21's value, its dtype
    (V, {}, [1, 2, 1, 3, 0, 1], "int32"),
    (V, {"minlength": 8}, [1, 2, 1, 3, 0, 1, 0, 0], "int32"),
    (V, {"maxlength": 3}, [1, 2, 1], "int32"),
    (V, {"minlength": 5, "maxlength": 3}, [1, 2, 1], "int32"),
    (V, {"weights": W8}, [7.0, 3.0, 3.0, 15.0, 0.0, 8.0], "float32"),
    (V, {"weights": [1, 2, 3, 4, 5, 6, 7, 8]}, [7, 3, 3, 15, 0, 8], "int32"),
    (V, {"weights": np.arange(8.0)}, [6.0, 1.0, 2.0, 12.0, 0.0, 7.0], "float64"),
    (V, {"dtype": tf.float32}, [1.0, 2.0, 1.0, 3.0, 0.0, 1.0], "float32"),
    (V, {"dtype": tf.int64}, [1, 2, 1, 3, 0, 1], "int64"),
    (V, {"weights": W8, "dtype": tf.float64}, [7.0, 3.0, 3.0, 15.0, 0.0, 8.0], "float32"),
    (V, {"binary_output": True}, [1, 1, 1, 1, 0, 1], "int32"),
    (V, {"binary_output": True, "dtype": tf.float32}, [1.0, 1.0, 1.0, 1.0, 0.0, 1.0], "float32"),
    (V, {"maxlength": 0}, [], "int32"),
    (V, {"minlength": -1}, [1, 2, 1, 3, 0, 1], "int32"),
    (V, {"axis": -1}, [1, 2, 1, 3, 0, 1], "int32"),
    ([[1, 2], [2, 3]], {}, [0, 1, 2, 1], "int32"),
    ([[1, 2], [2, 3]], {"axis": 0}, [0, 1, 2, 1], "int32"),
    (M, {"axis": -1}, [[0, 1, 1, 0], [0, 0, 1, 1], [2, 0, 0, 0]], "int32"),
    (M, {"axis": -1, "minlength": 5}, [[0, 1, 1, 0, 0], [0, 0, 1, 1, 0], [2, 0, 0, 0, 0]],
     "int32"),
    (M, {"axis": -1, "maxlength": 2}, [[0, 1], [0, 0], [2, 0]], "int32"),
    (M, {"axis": -1, "weights": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]},
     [[0.0, 1.0, 2.0, 0.0], [0.0, 0.0, 3.0, 4.0], [11.0, 0.0, 0.0, 0.0]], "float32"),
    ([[1, 2], [2, 2], [0, 0]], {"axis": -1, "binary_output": True},
     [[0, 1, 1], [0, 0, 1], [1, 0, 0]], "int32"),
    ([1.0, 2.0], {}, [0, 1, 1], "int32"),
    (np.asarray([1, 2], np.int64), {}, [0, 1, 1], "int32"),
    (3, {}, [0, 0, 0, 1], "int32"),
]


@pytest.mark.parametrize("arr,kwargs,want,dtype", BINCOUNT)
def test_bincount_matches_tensorflow(arr, kwargs, want, dtype):
    kw = dict(kwargs)
    w = kw.pop("weights", None)
    args = [arr] + ([] if w is None else [w])  # lists convert as TensorFlow converts them
    for got in run_all(lambda a, *ws: tf.math.bincount(a, *ws, **kw), *args):
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, np.asarray(want, dtype))


def test_bincount_empty_and_tensor_minlength():
    empty = tf.constant([], tf.int32)
    assert tf.math.bincount(empty).shape == (0,)
    np.testing.assert_array_equal(tf.math.bincount(empty, minlength=3).numpy(), [0, 0, 0])
    np.testing.assert_array_equal(tf.math.bincount(V, minlength=tf.constant(7)).numpy(),
                                  [1, 2, 1, 3, 0, 1, 0])


def test_bincount_errors():
    err = tf.errors.InvalidArgumentError
    with pytest.raises(ValueError, match="`binary_output` and `weights` are mutually exclusive"):
        tf.math.bincount(V, weights=np.arange(8.0), binary_output=True)
    with pytest.raises(err, match="Input arr must be non-negative!"):
        tf.math.bincount([1, -1, 2])
    with pytest.raises(err, match="Input 'in' must be non-negative! Negative input value "
                                  "found: -2"):
        tf.math.bincount([[1, -2]], axis=-1)
    with pytest.raises(err, match="Shape must be at most rank 2 but is rank 3"):
        tf.math.bincount(np.zeros((2, 2, 2), np.int32), axis=-1)
    with pytest.raises(ValueError, match="Unsupported value for argument axis=1. Only 0 and -1"):
        tf.math.bincount([[1, 2]], axis=1)
    with pytest.raises(err, match="Value for attr 'Tidx' of uint8 is not in the list"):
        tf.math.bincount(tf.constant([1, 2], tf.uint8))
    with pytest.raises(err, match="`weights` must be the same shape as `arr`"):
        tf.math.bincount([1, 2], weights=[1.0, 2.0, 3.0])
    with pytest.raises(err, match="Value for attr 'T' of bool is not in the list of allowed "
                                  "values: int32, int64, float, double"):
        tf.math.bincount(V, dtype=tf.bool)


VALS = [-1.0, 0.0, 1.5, 2.0, 5.0, 15.0]
F32_FINE = np.float32([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])
HISTOGRAM = [  # values, value_range, kwargs, TensorFlow 2.21's counts, dtype
    (VALS, [0.0, 5.0], {"nbins": 5}, [2, 1, 1, 0, 2], "int32"),
    ([-1, 0, 1, 2, 5, 15], [0, 5], {"nbins": 5}, [2, 1, 1, 0, 2], "int32"),
    (VALS, [0.0, 5.0], {"nbins": 5, "dtype": tf.int64}, [2, 1, 1, 0, 2], "int64"),
    ([[0.1, 0.6], [0.9, 0.2]], [0.0, 1.0], {"nbins": 2}, [2, 2], "int32"),
    (np.asarray([0.5, 0.1]), [0.0, 1.0], {"nbins": 2}, [1, 1], "int32"),
    ([0.2, 0.4, 0.6, 0.8, 1.0, 0.0], [0.0, 1.0], {"nbins": 5}, [1, 1, 1, 1, 2], "int32"),
    # TensorFlow's kernel bins in float64: 0.7f is 0.69999998... and lands in bin 6.
    (F32_FINE, [0.0, 1.0], {"nbins": 10}, [0, 1, 1, 1, 1, 1, 2, 0, 2, 0], "int32"),
]


@pytest.mark.parametrize("values,value_range,kwargs,want,dtype", HISTOGRAM)
def test_histogram_fixed_width_matches_tensorflow(values, value_range, kwargs, want, dtype):
    vals = tf.constant(values)  # Python lists convert as in TensorFlow (float32, int32)
    rng = np.asarray(value_range, vals.dtype.name)
    for got in run_all(lambda v, r: tf.histogram_fixed_width(v, r, **kwargs), vals, rng):
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, want)


def test_histogram_defaults_and_tensor_nbins():
    assert tf.histogram_fixed_width(np.linspace(0, 1, 7), [0.0, 1.0]).shape == (100,)
    np.testing.assert_array_equal(
        tf.histogram_fixed_width([0.5], [0.0, 1.0], nbins=tf.constant(3)).numpy(), [0, 1, 0])
    f = tf.function(lambda v, n: tf.histogram_fixed_width(v, [0.0, 5.0], nbins=n))
    np.testing.assert_array_equal(f(tf.constant(VALS), tf.constant(5)).numpy(), [2, 1, 1, 0, 2])


BINS = [  # values, value_range, TensorFlow 2.21's bins
    (VALS, [0.0, 5.0], {"nbins": 5}, [0, 0, 1, 2, 4, 4]),
    ([[-1.0, 0.0], [1.5, 2.0]], [0.0, 5.0], {"nbins": 5}, [[0, 0], [1, 2]]),
    ([0.2, 0.4, 0.6, 0.8, 1.0, 0.0, 0.3, 0.7], [0.0, 1.0], {"nbins": 5},
     [1, 2, 3, 4, 4, 0, 1, 3]),
    # These bins use float32 arithmetic (TensorFlow's Python composite): 0.7f lands in 7.
    (F32_FINE, [0.0, 1.0], {"nbins": 10}, [1, 2, 3, 4, 5, 6, 7, 8, 9]),
    ([0.5, 0.1], [0.0, 1.0], {"nbins": 2, "dtype": tf.int64}, [1, 0]),  # int32 regardless
]


@pytest.mark.parametrize("values,value_range,kwargs,want", BINS)
def test_histogram_fixed_width_bins_matches_tensorflow(values, value_range, kwargs, want):
    vals = np.asarray(values, np.float32)
    rng = np.asarray(value_range, np.float32)
    for got in run_all(lambda v, r: tf.histogram_fixed_width_bins(v, r, **kwargs), vals, rng):
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, want)


def test_histogram_errors():
    err = tf.errors.InvalidArgumentError
    with pytest.raises(err, match="Histogram values must not contain NaN"):
        tf.histogram_fixed_width([np.nan, 0.5], [0.0, 1.0], nbins=2)
    with pytest.raises(err, match=r"value_range\[0\] < value_range\[1\], but got '\[1, 0\]'"):
        tf.histogram_fixed_width([0.5], [1.0, 0.0], nbins=2)
    with pytest.raises(err, match="nbins should be a positive number, but got '0'"):
        tf.histogram_fixed_width([0.5], [0.0, 1.0], nbins=0)
    with pytest.raises(err, match="Value for attr 'dtype' of float is not in the list of "
                                  "allowed values: int32, int64"):
        tf.histogram_fixed_width([0.5], [0.0, 1.0], nbins=2, dtype=tf.float32)
    with pytest.raises(err, match="value_range should be a vector of 2 elements."):
        tf.histogram_fixed_width([0.5], [0.0, 1.0, 2.0], nbins=2)
    with pytest.raises(err, match="values must be float32 or float64, got int32"):
        tf.histogram_fixed_width_bins([-1, 0, 1], [0, 5], nbins=5)


LINSPACE = [  # start, stop, num, kwargs, TensorFlow 2.21's value, dtype
    (0, 10, 5, {}, [0.0, 2.5, 5.0, 7.5, 10.0], "float64"),
    (np.int64(0), np.int64(5), 5, {}, [0.0, 1.25, 2.5, 3.75, 5.0], "float64"),
    (1, 7, 5, {}, [1.0, 2.5, 4.0, 5.5, 7.0], "float64"),
    (0, 1, 1, {}, [0.0], "float64"),
    (0, 10, 0, {}, [], "float64"),
    (0.0, 1.0, 0, {}, [], "float32"),
    ([0, 1], [2, 5], 3, {}, [[0.0, 1.0], [1.0, 3.0], [2.0, 5.0]], "float64"),
    ([0, 1], [2, 5], 3, {"axis": 1}, [[0.0, 1.0, 2.0], [1.0, 3.0, 5.0]], "float64"),
    (np.uint8(0), np.uint8(4), 3, {}, [0.0, 2.0, 4.0], "float32"),
    (np.int8(0), np.int8(3), 4, {}, [0.0, 1.0, 2.0, 3.0], "float32"),
    (-3, 8, 7, {}, [-3.0, -1.1666666666666667, 0.6666666666666665, 2.5, 4.333333333333333,
                    6.166666666666666, 8.0], "float64"),
    (np.int64(1), np.int64(10 ** 12), 3, {}, [1.0, 500000000000.5, 1000000000000.0], "float64"),
]


@pytest.mark.parametrize("start,stop,num,kwargs,want,dtype", LINSPACE)
def test_linspace_of_integers_matches_tensorflow(start, stop, num, kwargs, want, dtype):
    def dt(v):
        return np.asarray(v).dtype if isinstance(v, np.generic) else None

    a = tf.constant(start, dtype=dt(start))
    b = tf.constant(stop, dtype=dt(stop))
    for got in run_all(lambda x, y: tf.linspace(x, y, num, **kwargs), a, b):
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, np.asarray(want, dtype))


def test_linspace_of_integers_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="expected a int32 tensor, got int64"):
        tf.linspace(tf.constant(0), tf.constant(3, tf.int64), 4)
    with pytest.raises(TypeError, match="a float or an integer, got bool"):
        tf.linspace(True, False, 3)
