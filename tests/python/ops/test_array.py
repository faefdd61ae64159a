"""Shape, data-movement and creation ops against NumPy, eagerly and traced."""
import numpy as np
import pytest

import kiln as tf
from ops_harness import ALL, FLOATS, check, sample

X234 = sample("float32", (2, 3, 4), seed=1)


@pytest.mark.parametrize("dtype", ALL + ("int8",))
def test_reshape_all_dtypes(dtype):
    x = sample(dtype, (2, 3, 4), seed=2)
    check(lambda t: tf.reshape(t, [4, -1]), lambda v: v.reshape(4, -1), x)
    check(lambda t: tf.reshape(t, [24]), lambda v: v.reshape(24), x)


def test_reshape_shape_arguments():
    check(lambda t: tf.reshape(t, (6, 4)), lambda v: v.reshape(6, 4), X234)
    check(lambda t: tf.reshape(t, tf.TensorShape([3, 8])), lambda v: v.reshape(3, 8), X234)
    check(lambda t: tf.reshape(t, [tf.shape(t)[0], -1]), lambda v: v.reshape(2, -1), X234)
    check(lambda t: tf.reshape(t, tf.constant([4, 6], tf.int64)), lambda v: v.reshape(4, 6),
          X234)
    one = np.array([7.0], np.float64)
    check(lambda t: tf.reshape(t, []), lambda v: v.reshape(()), one)
    empty = np.zeros((0, 4), np.int32)
    check(lambda t: tf.reshape(t, [2, 0, 5]), lambda v: v.reshape(2, 0, 5), empty)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Reshape"):
        tf.reshape(tf.constant(empty), [2, 0, -1])  # -1 cannot be inferred for a size-0 tensor


@pytest.mark.parametrize("axis", [0, 1, -1, 3, -4])
def test_expand_dims(axis):
    check(lambda t: tf.expand_dims(t, axis), lambda v: np.expand_dims(v, axis), X234)


def test_squeeze():
    x = sample("int64", (1, 3, 1, 2), seed=3)
    check(tf.squeeze, np.squeeze, x)
    check(lambda t: tf.squeeze(t, [0]), lambda v: np.squeeze(v, 0), x)
    check(lambda t: tf.squeeze(t, axis=[-2, 0]), lambda v: np.squeeze(v, (0, 2)), x)
    check(lambda t: tf.squeeze(t, axis=[]), lambda v: v, x)


@pytest.mark.parametrize("perm", [None, [0, 2, 1], [2, 0, 1], (1, 0, 2)])
def test_transpose(perm):
    for dt in ("float32", "bool", "uint8"):
        x = sample(dt, (2, 3, 4), seed=4)
        check(lambda t: tf.transpose(t, perm), lambda v: np.transpose(v, perm), x)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_stack_unstack(axis):
    a = sample("float64", (2, 3), seed=5)
    b = sample("float64", (2, 3), seed=6)
    check(lambda x, y: tf.concat([x, y], axis), lambda x, y: np.concatenate([x, y], axis), a, b)
    check(lambda x, y: tf.stack([x, y], axis), lambda x, y: np.stack([x, y], axis), a, b)
    check(lambda x: tf.unstack(x, axis=axis),
          lambda x: [np.take(x, i, axis) for i in range(x.shape[axis])], a)
    check(lambda x: tf.concat([x], axis), lambda x: x, a)


def test_concat_and_stack_convert_python_values():
    a = np.array([1, 2], np.int64)
    check(lambda x: tf.concat([x, [3, 4]], 0), lambda x: np.array([1, 2, 3, 4], np.int64), a)
    check(lambda x: tf.stack([x, [3, 4]]), lambda x: np.array([[1, 2], [3, 4]], np.int64), a)
    check(lambda x: tf.stack([x[0], 5]), lambda x: np.array([1, 5], np.int64), a)


def test_split():
    x = sample("int32", (6, 4), seed=7)
    check(lambda t: tf.split(t, 3), lambda v: np.split(v, 3), x)
    check(lambda t: tf.split(t, 2, axis=1), lambda v: np.split(v, 2, axis=1), x)
    check(lambda t: tf.split(t, [1, -1, 2]), lambda v: [v[:1], v[1:4], v[4:]], x)
    check(lambda t: tf.split(t, [4, 0], axis=-1), lambda v: [v, v[:, 4:]], x)


def test_slice_and_strided_slice():
    x = sample("float32", (4, 5, 6), seed=8)
    check(lambda t: tf.slice(t, [1, 0, 2], [2, -1, 3]), lambda v: v[1:3, :, 2:5], x)
    check(lambda t: tf.strided_slice(t, [0, 1], [4, 5], [2, 2]), lambda v: v[0:4:2, 1:5:2], x)
    check(lambda t: tf.strided_slice(t, [3, 0], [0, 0], [-1, 1], end_mask=2),
          lambda v: v[3:0:-1, :], x)
    check(lambda t: tf.strided_slice(t, [1, 0], [2, 0], shrink_axis_mask=1, end_mask=2),
          lambda v: v[1], x)
    check(lambda t: tf.strided_slice(t, [0, 0], [1, 2], ellipsis_mask=1, new_axis_mask=0),
          lambda v: v[..., 0:2], x)
    check(lambda t: tf.slice(t, [tf.constant(1), 1, 1], [1, 1, 1]), lambda v: v[1:2, 1:2, 1:2],
          x)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_gather(axis):
    params = sample("float32", (4, 3), seed=9)
    for idt in ("int32", "int64"):
        idx = np.array([[0, 2], [1, 1]], idt)
        ax = 0 if axis is None else axis
        check(lambda p, i: tf.gather(p, i, axis=axis), lambda p, i: np.take(p, i, ax),
              params, idx)
    check(lambda p: tf.gather(p, 1), lambda p: p[1], params)


def test_tile_broadcast_to():
    x = sample("int64", (2, 1, 3), seed=10)
    check(lambda t: tf.tile(t, [1, 2, 2]), lambda v: np.tile(v, (1, 2, 2)), x)
    check(lambda t: tf.tile(t, [0, 1, 1]), lambda v: np.tile(v, (0, 1, 1)), x)
    check(lambda t: tf.broadcast_to(t, [4, 2, 5, 3]), lambda v: np.broadcast_to(v, (4, 2, 5, 3)),
          x)
    check(lambda t: tf.broadcast_to(t, tf.shape(t)), lambda v: v, x)


@pytest.mark.parametrize("mode", ["CONSTANT", "REFLECT", "SYMMETRIC", "reflect"])
def test_pad(mode):
    x = sample("float32", (3, 4), seed=11)
    pads = [[1, 2], [2, 1]]
    check(lambda t: tf.pad(t, pads, mode=mode), lambda v: np.pad(v, pads, mode=mode.lower()), x)
    check(lambda t: tf.pad(t, [[0, 0], [3, 0]], mode=mode),
          lambda v: np.pad(v, [[0, 0], [3, 0]], mode=mode.lower()), x)


def test_pad_constant_value_and_dtypes():
    x = sample("int32", (2, 2), seed=12)
    check(lambda t: tf.pad(t, [[1, 1], [0, 2]], constant_values=7),
          lambda v: np.pad(v, [[1, 1], [0, 2]], constant_values=7), x)
    s = np.asarray(np.float64(3.0))
    check(lambda t: tf.pad(t, []), lambda v: v, s)


def test_shape_size_rank():
    x = sample("float32", (2, 0, 3), seed=13)
    check(tf.shape, lambda v: np.array(v.shape, np.int32), x)
    check(lambda t: tf.shape(t, out_type=tf.int64), lambda v: np.array(v.shape, np.int64), x)
    check(tf.size, lambda v: np.int32(v.size), x)
    check(tf.rank, lambda v: np.int32(v.ndim), x)

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def dyn(t):
        return tf.shape(t), tf.size(t), tf.zeros(tf.shape(t)[:1])

    s, n, z = dyn(tf.constant(sample("float32", (5, 3))))
    np.testing.assert_array_equal(s.numpy(), [5, 3])
    assert n.numpy() == 15
    assert z.shape == [5]


def test_one_hot():
    idx = np.array([0, 2, -1, 5], np.int32)
    eye = np.eye(3, dtype=np.float32)

    def ref(i, on=1, off=0, dtype=np.float32):
        out = np.full((len(i), 3), off, dtype)
        for r, j in enumerate(i):
            if 0 <= j < 3:
                out[r, j] = on
        return out

    check(lambda t: tf.one_hot(t, 3), ref, idx)
    check(lambda t: tf.one_hot(t, 3, on_value=5, off_value=-1),
          lambda i: ref(i, 5, -1, np.int32), idx)
    check(lambda t: tf.one_hot(t, 3, dtype=tf.float64), lambda i: ref(i, dtype=np.float64), idx)
    check(lambda t: tf.one_hot(t, 3, axis=0), lambda i: ref(i).T, idx)
    assert eye.shape == (3, 3)


@pytest.mark.parametrize("dtype", ALL + ("int8",))
def test_creation(dtype):
    np_dt = np.dtype(dtype)
    check(lambda: tf.zeros([2, 3], dtype), lambda: np.zeros((2, 3), np_dt))
    check(lambda: tf.ones((0, 3), dtype=dtype), lambda: np.ones((0, 3), np_dt))
    x = sample(dtype, (2, 2), seed=14)
    check(tf.zeros_like, np.zeros_like, x)
    check(tf.ones_like, np.ones_like, x)
    check(lambda t: tf.zeros_like(t, dtype=tf.float64), lambda v: np.zeros(v.shape, np.float64), x)
    check(lambda t: tf.ones(tf.shape(t), dtype), lambda v: np.ones(v.shape, np_dt), x)


def test_fill_identity_and_strings():
    check(lambda: tf.fill([2, 2], 1.5), lambda: np.full((2, 2), 1.5, np.float32))
    check(lambda: tf.fill((3,), 7), lambda: np.full(3, 7, np.int32))
    check(lambda: tf.fill([], True), lambda: np.asarray(True))
    x = sample("float64", (3,), seed=15)
    check(tf.identity, lambda v: v, x)
    v = tf.Variable([1.0, 2.0])
    np.testing.assert_array_equal(tf.identity(v).numpy(), [1.0, 2.0])
    z = tf.zeros([2], tf.string)
    assert z.dtype == tf.string and list(z.numpy()) == [b"", b""]


def test_get_static_value():
    np.testing.assert_array_equal(tf.get_static_value(tf.constant([1, 2])), [1, 2])
    assert tf.get_static_value(3) == 3
    seen = []

    @tf.function
    def f(t):
        seen.append(tf.get_static_value(t))
        return t

    f(tf.constant(1.0))
    assert seen == [None]


def test_numpy_scalars_convert_to_scalars():
    assert tf.constant(np.float32(1.5)).shape == []
    assert tf.constant(np.array(2)).shape == []


def test_empty_list_with_int_dtype():
    assert tf.constant([], dtype=tf.int32).shape == [0]
    assert tf.constant([1.0, 2.0], dtype=tf.int32).dtype == tf.int32


@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul_and_matvec(dtype):
    a = sample(dtype, (2, 3, 4), seed=16)
    b = sample(dtype, (4, 5), seed=17)
    check(tf.matmul, np.matmul, a, b)
    check(lambda x, y: tf.matmul(x, y, transpose_a=True),
          lambda x, y: np.matmul(np.swapaxes(x, -1, -2), y), a, sample(dtype, (2, 3, 2), 18))
    check(lambda x, y: tf.linalg.matmul(x, y, adjoint_b=True),
          lambda x, y: np.matmul(x, y.T), sample(dtype, (3, 4), 19), sample(dtype, (5, 4), 20))
    check(tf.linalg.matvec, lambda m, v: np.einsum("...ij,...j->...i", m, v), a,
          sample(dtype, (4,), 21))
    check(lambda x, y: x @ y, np.matmul, a, b)


def test_integer_matmul():
    a = sample("int32", (3, 4), seed=22)
    b = sample("int32", (4, 2), seed=23)
    check(tf.matmul, np.matmul, a, b)


@pytest.mark.parametrize("axis", [[0], [1], [-1], [0, 2], []])
def test_reverse(axis):
    check(lambda t: tf.reverse(t, axis), lambda v: np.flip(v, tuple(axis)) if axis else v, X234)


def test_newaxis():
    assert tf.newaxis is None
    assert tf.constant([1, 2])[tf.newaxis, :].shape == [1, 2]


def test_bare_newaxis_key():
    assert tf.constant([1, 2])[None].shape == [1, 2]


def test_wrappers_trace_with_unknown_dims():
    spec = [tf.TensorSpec([None, None], tf.float32)]

    @tf.function(input_signature=spec)
    def f(t):
        parts = tf.split(t, 2, axis=1)
        return [tf.reshape(t, [-1]), tf.transpose(t), tf.concat([t, t], 0), parts[0],
                tf.pad(t, [[1, 0], [0, 1]], "REFLECT"), tf.nn.softmax(t, axis=0),
                tf.reduce_max(t, axis=1), tf.reverse(t, [1]), tf.zeros_like(t, tf.int32),
                tf.nn.l2_normalize(t, 1), t[1:, tf.shape(t)[1] - 1]]

    x = sample("float32", (3, 4), seed=30)
    got = [o.numpy() for o in f(tf.constant(x))]
    e = np.exp(x - x.max(0))
    want = [x.reshape(-1), x.T, np.concatenate([x, x]), x[:, :2],
            np.pad(x, [[1, 0], [0, 1]], mode="reflect"), e / e.sum(0), x.max(1), x[:, ::-1],
            np.zeros((3, 4), np.int32), x / np.sqrt((x * x).sum(1, keepdims=True)), x[1:, 3]]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
