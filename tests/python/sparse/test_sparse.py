"""kiln.SparseTensor and kiln.sparse: construction, dense conversion, matmul, add,
reorder, reductions and joins against NumPy and TensorFlow's documented outputs, eagerly
and inside kiln.function (built there and passed in), gradients and error paths."""
import numpy as np
import pytest

import kiln as tf


def st(indices, values, shape):
    return tf.sparse.SparseTensor(indices=indices, values=values, dense_shape=shape)


def dense_ref(indices, values, shape, default=0):
    out = np.full(shape, default, np.asarray(values).dtype if len(values) else np.float32)
    for i, v in zip(indices, values):
        out[tuple(i)] = v
    return out


# ---- construction ----

def test_components_shape_and_repr():
    sp = st([[0, 0], [1, 2]], [1, 2], [3, 4])
    assert sp.indices.dtype == tf.int64 and sp.dense_shape.dtype == tf.int64
    assert sp.dtype == tf.int32 and sp.shape.as_list() == [3, 4]
    assert repr(sp) == (
        "SparseTensor(indices=kiln.Tensor(\n[[0 0]\n [1 2]], shape=(2, 2), dtype=int64), "
        "values=kiln.Tensor([1 2], shape=(2,), dtype=int32), "
        "dense_shape=kiln.Tensor([3 4], shape=(2,), dtype=int64))")
    assert tf.SparseTensor is tf.sparse.SparseTensor
    empty = st(np.empty((0, 2), np.int64), tf.constant([], tf.float32), [2, 2])
    np.testing.assert_array_equal(tf.sparse.to_dense(empty).numpy(), np.zeros((2, 2)))


@pytest.mark.parametrize("args,match", [
    (([[0, 3]], [10, 20], [3, 10]), "different numbers of entries"),
    (([0, 3], [10], [3, 10]), "rank 2"),
    (([[0, 3, 1]], [10], [3, 10]), "rank in dense_shape"),
    (([[0, 3]], [[10]], [3, 10]), "rank 1"),
])
def test_construction_errors(args, match):
    with pytest.raises(ValueError, match=match):
        st(*args)


def test_indices_must_be_int64():
    with pytest.raises(ValueError, match="int64"):
        st(tf.constant([[0, 3]]), [10], [3, 10])


def test_not_a_dense_tensor():
    sp = st([[0, 0]], [1], [2, 2])
    with pytest.raises(TypeError, match="to_dense"):
        tf.reduce_sum(sp)
    with pytest.raises(TypeError, match="unsupported operand"):
        sp + 1
    assert tf.nest.flatten({"a": sp})[0] is sp


# ---- dense conversion ----

def test_to_dense_and_default_value():
    sp = st([[0, 0], [1, 2]], [1, 2], [3, 4])
    np.testing.assert_array_equal(tf.sparse.to_dense(sp).numpy(),
                                  [[1, 0, 0, 0], [0, 0, 2, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(tf.sparse.to_dense(sp, default_value=-1).numpy(),
                                  dense_ref([[0, 0], [1, 2]], [1, 2], (3, 4), -1))
    strings = tf.sparse.to_dense(st([[1]], ["a"], [3]))
    assert strings.numpy().tolist() == [b"", b"a", b""]
    cube = st([[0, 1, 2], [1, 0, 1]], [1.5, 2.5], [2, 2, 3])
    np.testing.assert_array_equal(tf.sparse.to_dense(cube).numpy(),
                                  dense_ref([[0, 1, 2], [1, 0, 1]], [1.5, 2.5], (2, 2, 3)))


@pytest.mark.parametrize("indices,match", [
    ([[5, 0]], r"indices\[0\] = \[5,0\] is out of bounds: need 0 <= index < \[3,4\]"),
    ([[0, -1]], "out of bounds"),
    ([[1, 0], [0, 1]], r"indices\[1\] = \[0,1\] is out of order"),
    ([[1, 0], [1, 0]], r"indices\[1\] = \[1,0\] is repeated"),
])
def test_to_dense_validates_indices(indices, match):
    with pytest.raises(tf.errors.InvalidArgumentError, match=match):
        tf.sparse.to_dense(st(indices, [1] * len(indices), [3, 4]))


def test_to_dense_unordered_without_validation():
    sp = st([[1, 0], [0, 1]], [1, 2], [2, 2])
    np.testing.assert_array_equal(tf.sparse.to_dense(sp, validate_indices=False).numpy(),
                                  [[0, 2], [1, 0]])


def test_out_of_range_index_inside_a_function():
    @tf.function
    def f(sp):
        return tf.sparse.to_dense(sp)

    with pytest.raises(tf.errors.InvalidArgumentError):
        f(st([[5, 0]], [1], [3, 4]))


def test_from_dense():
    sp = tf.sparse.from_dense([[1, 0, 0, 8], [0, 0, 0, 0], [0, 0, 3, 0]])
    assert sp.indices.numpy().tolist() == [[0, 0], [0, 3], [2, 2]]
    assert sp.values.numpy().tolist() == [1, 8, 3]
    assert sp.dense_shape.numpy().tolist() == [3, 4]
    b = tf.sparse.from_dense(tf.constant([[True, False]]))
    assert b.values.numpy().tolist() == [True]


# ---- ops ----

def test_sparse_dense_matmul_matches_numpy():
    rng = np.random.default_rng(0)
    idx = [[0, 1], [1, 0], [1, 3], [2, 2]]
    vals = rng.standard_normal(4).astype(np.float32)
    a = dense_ref(idx, vals, (3, 4))
    sp = st(idx, vals, [3, 4])
    b = rng.standard_normal((4, 2)).astype(np.float32)
    c = rng.standard_normal((3, 5)).astype(np.float32)
    mm = tf.sparse.sparse_dense_matmul
    np.testing.assert_allclose(mm(sp, b).numpy(), a @ b, rtol=1e-5)
    np.testing.assert_allclose(mm(sp, c, adjoint_a=True).numpy(), a.T @ c, rtol=1e-5)
    np.testing.assert_allclose(mm(sp, b.T, adjoint_b=True).numpy(), a @ b, rtol=1e-5)
    np.testing.assert_allclose(mm(c.T, sp).numpy(), c.T @ a, rtol=1e-5)
    np.testing.assert_allclose(mm(b, sp, adjoint_a=True, adjoint_b=True).numpy(), b.T @ a.T,
                               rtol=1e-5)
    guide = mm(st(([0, 1], [1, 0], [1, 1]), [13, 15, 17], (2, 2)), tf.constant([[4], [6]]))
    assert guide.numpy().tolist() == [[78], [162]]


def test_sparse_dense_matmul_errors():
    sp = st([[0, 3]], [1.0], [3, 10])
    with pytest.raises(tf.errors.InvalidArgumentError, match="inner dimension"):
        tf.sparse.sparse_dense_matmul(sp, tf.ones([9, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype"):
        tf.sparse.sparse_dense_matmul(sp, tf.ones([10, 2], tf.int32))


def test_add():
    st_a = st([[0, 2], [3, 4]], [31, 2], [4, 10])
    st_b = st([[0, 2], [7, 0]], [56, 38], [4, 10])
    total = tf.sparse.add(st_a, st_b)  # the guide's example (its [7, 0] is past the shape)
    assert total.indices.numpy().tolist() == [[0, 2], [3, 4], [7, 0]]
    assert total.values.numpy().tolist() == [87, 2, 38]
    dense = tf.sparse.add(st_a, tf.ones([4, 10], tf.int32))
    np.testing.assert_array_equal(dense.numpy(), dense_ref([[0, 2], [3, 4]], [31, 2],
                                                           (4, 10)) + 1)
    x = st([[0, 0], [1, 1]], [1.0, 0.25], [2, 2])
    y = st([[0, 0], [1, 0]], [-1.0, 3.0], [2, 2])
    kept = tf.sparse.add(x, y, threshold=0.5)
    assert kept.indices.numpy().tolist() == [[1, 0]] and kept.values.numpy().tolist() == [3.0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="same shape"):
        tf.sparse.add(x, st([[0, 0]], [1.0], [3, 3]))


def test_reorder_transpose_retain():
    sp = st([[1, 0], [0, 3], [0, 1]], [1, 2, 3], [2, 4])
    r = tf.sparse.reorder(sp)
    assert r.indices.numpy().tolist() == [[0, 1], [0, 3], [1, 0]]
    assert r.values.numpy().tolist() == [3, 2, 1]
    t = tf.sparse.transpose(r)
    np.testing.assert_array_equal(tf.sparse.to_dense(t).numpy(),
                                  tf.sparse.to_dense(r).numpy().T)
    kept = tf.sparse.retain(r, [True, False, True])
    assert kept.values.numpy().tolist() == [3, 1]


def test_reductions():
    idx, vals = [[0, 3], [2, 4], [2, 5]], [10, 20, -5]
    sp = st(idx, vals, [3, 10])
    d = dense_ref(idx, vals, (3, 10))
    assert int(tf.sparse.reduce_sum(sp)) == 25
    np.testing.assert_array_equal(tf.sparse.reduce_sum(sp, axis=1).numpy(), d.sum(1))
    np.testing.assert_array_equal(tf.sparse.reduce_sum(sp, axis=0, keepdims=True).numpy(),
                                  d.sum(0, keepdims=True))
    assert tf.sparse.reduce_max(sp, axis=1).numpy().tolist()[::2] == [10, 20]  # present only
    assert int(tf.sparse.reduce_max(st([[0, 0], [1, 1]], [-7, -3], [2, 2]))) == -3


def test_concat_slice_map_values_eye_and_unary():
    sp = st([[0, 3], [2, 4]], [10, 20], [3, 10])
    wide = tf.sparse.concat(1, [sp, sp])
    np.testing.assert_array_equal(tf.sparse.to_dense(wide).numpy(),
                                  np.concatenate([tf.sparse.to_dense(sp).numpy()] * 2, 1))
    with pytest.raises(tf.errors.InvalidArgumentError, match="must match"):
        tf.sparse.concat(1, [sp, st([[0, 0]], [1], [2, 10])])
    part = tf.sparse.slice(sp, [0, 3], [3, 2])
    assert part.indices.numpy().tolist() == [[0, 0], [2, 1]]
    assert part.dense_shape.numpy().tolist() == [3, 2]
    assert tf.sparse.map_values(tf.add, sp, 5).values.numpy().tolist() == [15, 25]
    assert tf.sparse.map_values(tf.multiply, sp, sp).values.numpy().tolist() == [100, 400]
    np.testing.assert_array_equal(tf.sparse.to_dense(tf.sparse.eye(3)).numpy(), np.eye(3))
    assert tf.abs(st([[0, 0]], [-1.5], [1, 1])).values.numpy().tolist() == [1.5]
    assert tf.cast(sp, tf.float32).dtype == tf.float32
    assert (sp * 2).values.numpy().tolist() == [20, 40]
    assert (sp * tf.range(10)).values.numpy().tolist() == [30, 80]


# ---- functions and gradients ----

def test_matmul_of_a_sparse_tensor_built_inside_a_function():
    @tf.function
    def f(d):
        sp = st([[0, 3], [2, 4]], [15., 25.], [3, 10])
        assert sp.shape.as_list() == [3, 10]  # a constant dense_shape: a static shape
        return tf.sparse.sparse_dense_matmul(sp, d), sp, tf.sparse.to_dense(sp, -1.)

    out, sp, dense = f(tf.ones([10, 2]))
    np.testing.assert_array_equal(out.numpy(), [[15, 15], [0, 0], [25, 25]])
    assert isinstance(sp, tf.SparseTensor) and sp.values.numpy().tolist() == [15, 25]
    assert dense.numpy()[1].tolist() == [-1.0] * 10


def test_sparse_tensor_argument_of_a_function():
    traces = []

    @tf.function
    def f(x, y):
        traces.append(x.shape)
        return tf.sparse.sparse_dense_matmul(x, y), tf.sparse.add(x, x), \
            tf.sparse.from_dense(tf.sparse.to_dense(x))

    a = st([[0, 3], [2, 4]], [15, 25], [3, 10])
    b = tf.sparse.to_dense(tf.sparse.transpose(a))  # the sparse guide's tf.function example
    c, doubled, round_trip = f(a, b)
    np.testing.assert_array_equal(c.numpy(), [[225, 0, 0], [0, 0, 0], [0, 0, 625]])
    assert doubled.values.numpy().tolist() == [30, 50]
    assert round_trip.indices.numpy().tolist() == [[0, 3], [2, 4]]
    assert traces[0].as_list() == [3, 10]  # the static shape travels with the argument
    f(st([[0, 1], [1, 1]], [1, 2], [3, 10]), b)
    assert len(traces) == 1


def test_gradients_through_values():
    vals = tf.constant([1., 2.])
    w = tf.constant([[1., 2.], [3., 4.]])
    with tf.GradientTape() as tape:
        tape.watch(vals)
        sp = st([[0, 1], [1, 0]], vals, [2, 2])
        loss = tf.reduce_sum(tf.sparse.to_dense(sp) * w)
    np.testing.assert_allclose(tape.gradient(loss, vals).numpy(), [2., 3.])
    b = tf.constant([[1., 2.], [3., 4.]])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([vals, b])
        out = tf.reduce_sum(tf.sparse.sparse_dense_matmul(st([[0, 1], [1, 0]], vals, [2, 2]),
                                                          b))
    np.testing.assert_allclose(tape.gradient(out, vals).numpy(), [7., 3.])
    np.testing.assert_allclose(tape.gradient(out, b).numpy(), [[2., 2.], [1., 1.]])


def test_gradient_inside_a_function():
    @tf.function
    def grad(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            loss = tf.reduce_sum(tf.sparse.to_dense(st([[0, 0], [1, 1]], v, [2, 2])) ** 2)
        return tape.gradient(loss, v)

    np.testing.assert_allclose(grad(tf.constant([3., 4.])).numpy(), [6., 8.])
