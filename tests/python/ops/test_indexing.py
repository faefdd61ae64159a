"""Tensor indexing: basic and tensor-valued indices, eagerly and in functions."""
import numpy as np
import pytest

import kiln as tf
from ops_harness import check, sample

X = sample("int32", (4, 5, 6), seed=1)
T = tf.constant


@pytest.mark.parametrize("key", [
    (1,), (-1,), (slice(1, 3),), (slice(None, None, -1),), (Ellipsis, 2), (None, 0),
    (slice(None), None, -2), (2, slice(None, None, 2), slice(4, 0, -2)), (Ellipsis,),
    (slice(-100, 100),), (0, 0, 0), (),
], ids=str)
def test_basic_indexing(key):
    check(lambda t: t[key], lambda v: v[key], X)


@pytest.mark.parametrize("make", [
    lambda: (T(1),), lambda: (T(-1, tf.int64),), lambda: (slice(T(1), T(3)),),
    lambda: (slice(None, None, T(-2)),), lambda: (Ellipsis, T(2)),
    lambda: (T(2), slice(1, T(4)), None), lambda: (np.int64(2), np.int32(1)),
    lambda: (slice(np.int64(1), None),),
], ids=range(8))
def test_tensor_and_numpy_indices(make):
    key = make()
    np_key = tuple(slice(*(None if p is None else int(p) for p in (k.start, k.stop, k.step)))
                   if isinstance(k, slice) else (k if k is None or k is Ellipsis else int(k))
                   for k in key)
    want = X[np_key]
    np.testing.assert_array_equal(T(X)[key].numpy(), want)

    @tf.function
    def f(t, *parts):
        it = iter(parts)
        rebuilt = tuple(
            slice(*(next(it) if isinstance(p, tf.Tensor) else p
                    for p in (k.start, k.stop, k.step))) if isinstance(k, slice)
            else (next(it) if isinstance(k, tf.Tensor) else k) for k in key)
        return t[rebuilt]

    tensors = [p for k in key for p in ((k.start, k.stop, k.step) if isinstance(k, slice)
                                        else (k,)) if isinstance(p, tf.Tensor)]
    np.testing.assert_array_equal(f(T(X), *tensors).numpy(), want)


def test_symbolic_index_in_while_loop():
    x = T(sample("float64", (5, 3), seed=2))

    @tf.function
    def row_sums(t):
        n = tf.shape(t)[0]
        ta = tf.TensorArray(tf.float64, size=n)

        def body(i, ta):
            return i + 1, ta.write(i, tf.reduce_sum(t[i]) + t[i, -1] + tf.reduce_sum(t[:i + 1, 0]))

        _, ta = tf.while_loop(lambda i, ta: i < n, body, (tf.constant(0), ta))
        return ta.stack()

    v = x.numpy()
    want = v.sum(1) + v[:, -1] + np.cumsum(v[:, 0])
    np.testing.assert_allclose(row_sums(x).numpy(), want, rtol=1e-12)


def test_variable_indexing():
    v = tf.Variable(X)
    np.testing.assert_array_equal(v[T(1), 2].numpy(), X[1, 2])
    np.testing.assert_array_equal(v[1:3].numpy(), X[1:3])


@pytest.mark.parametrize("key,match", [
    ([0, 1], "gather"), (T([0, 1]), "gather"), (T(1.0), "float32"), (True, "valid indices"),
    ("a", "valid indices"), (np.array([1, 2]), "gather"), ((slice(T(1.0), None),), "float32"),
])
def test_invalid_keys_are_type_errors(key, match):
    with pytest.raises(TypeError, match=match):
        T(X)[key]


def test_index_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="StridedSlice"):
        T(X)[T(7)]
    with pytest.raises(tf.errors.InvalidArgumentError, match="StridedSlice"):
        T(X)[0, 0, 0, T(0)]
    with pytest.raises(ValueError, match="step"):
        T(X)[np.int64(0)::0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="non-zero"):
        T(X)[::T(0)]
    with pytest.raises(IndexError, match="ellipsis"):
        T(X)[..., T(0), ...]

    @tf.function
    def f(t, i):
        return t[i]

    with pytest.raises(tf.errors.InvalidArgumentError, match="StridedSlice"):
        f(T(X), T(9))


def test_bool_mask_indexing_eager_and_traced():
    x = T(X)
    np.testing.assert_array_equal(x[x > 3].numpy(), X[X > 3])
    m = np.array([True, False, True, True])
    np.testing.assert_array_equal(x[m].numpy(), X[m])
    np.testing.assert_array_equal(x[T(m)].numpy(), X[m])
    np.testing.assert_array_equal(tf.boolean_mask(x, [True, False, True, True, False], axis=1)
                                  .numpy(), X[:, [0, 2, 3]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="boolean_mask"):
        x[np.array([True, False])]

    @tf.function
    def f(t):
        return t[t > 3]

    np.testing.assert_array_equal(f(x).numpy(), X[X > 3])
    g = tf.function(lambda t, m: tf.boolean_mask(t, m, axis=1),
                    input_signature=[tf.TensorSpec([None, None], x.dtype),
                                     tf.TensorSpec([None], tf.bool)])
    m5 = np.array([True, False, True, True, False])
    np.testing.assert_array_equal(g(T(X[:, :, 0]), T(m5)).numpy(), X[:, :, 0][:, m5])
    assert g.get_concrete_function().structured_outputs.shape.as_list() == [None, None]


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_eager_scalar_tensor_keys_take_the_int_path(dtype):
    # x[i] in an eager loop over kiln.range (the guide's dynamic_rnn): the value of i.
    x = T(X)
    for i in range(-len(X), len(X)):
        np.testing.assert_array_equal(x[tf.constant(i, dtype)].numpy(), np.asarray(X)[i])
    for i in tf.range(len(X)):
        np.testing.assert_array_equal(x[i].numpy(), np.asarray(X)[int(i)])
    with pytest.raises(tf.errors.InvalidArgumentError, match="StridedSlice"):
        x[tf.constant(len(X), dtype)]
