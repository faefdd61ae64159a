"""kiln.RaggedTensor and kiln.ragged: construction, conversion, indexing, math and
reductions against Python/NumPy references and TensorFlow's documented outputs, eagerly
and inside kiln.function (built there, passed in, returned), gradients and error paths."""
import numpy as np
import pytest

import kiln as tf

DIGITS = [[3, 1, 4, 1], [], [5, 9, 2], [6], []]


def digits():
    return tf.ragged.constant(DIGITS)


def rows_ref(rows, fn, empty):
    return [fn(r) if r else empty for r in rows]


# ---- construction and properties ----

def test_constant_repr_shape_and_components():
    rt = digits()
    assert isinstance(rt, tf.RaggedTensor)
    assert repr(rt) == "<kiln.RaggedTensor [[3, 1, 4, 1], [], [5, 9, 2], [6], []]>"
    assert str(rt) == repr(rt)
    assert rt.shape.as_list() == [5, None]
    assert str(rt.shape) == "(5, None)"
    assert rt.dtype == tf.int32 and rt.ragged_rank == 1
    assert rt.row_splits.dtype == tf.int64
    assert rt.row_splits.numpy().tolist() == [0, 4, 4, 7, 8, 8]
    assert rt.values.numpy().tolist() == [3, 1, 4, 1, 5, 9, 2, 6]
    assert rt.row_lengths().numpy().tolist() == [4, 0, 3, 1, 0]
    assert int(rt.nrows()) == 5
    assert rt.value_rowids().numpy().tolist() == [0, 0, 0, 0, 2, 2, 2, 3]
    assert rt.bounding_shape().numpy().tolist() == [5, 4]
    assert rt.to_list() == DIGITS


def test_constant_dtypes_and_printing():
    assert repr(tf.ragged.constant([["Hi"], ["How", "are", "you"]])) == \
        "<kiln.RaggedTensor [[b'Hi'], [b'How', b'are', b'you']]>"
    f = tf.ragged.constant([[1.0, 2.5], [3]])
    assert f.dtype == tf.float32 and repr(f) == "<kiln.RaggedTensor [[1.0, 2.5], [3.0]]>"
    assert tf.ragged.constant([[1, 2], [3]], dtype=tf.float64).dtype == tf.float64
    assert tf.ragged.constant([[True], [False, True]]).dtype == tf.bool
    assert tf.ragged.constant([[], []]).dtype == tf.float32
    # Uniform rows print as NumPy prints a 2-D array, as TensorFlow's.
    assert repr(tf.ragged.constant([[1, 2], [3, 4]])) == "<kiln.RaggedTensor [[1, 2],\n [3, 4]]>"


def test_constant_flat_lists_are_tensors():
    t = tf.ragged.constant([1, 2, 3])
    assert isinstance(t, tf.Tensor) and t.numpy().tolist() == [1, 2, 3]
    assert tf.ragged.constant(5).numpy() == 5


def test_nested_ragged_rank_2():
    pylist = [[[1, 2], [3]], [[4, 5, 6]], []]
    rt = tf.ragged.constant(pylist)
    assert rt.ragged_rank == 2 and rt.shape.as_list() == [3, None, None]
    assert rt.to_list() == pylist
    assert repr(rt) == "<kiln.RaggedTensor [[[1, 2], [3]], [[4, 5, 6]], []]>"
    assert len(rt.nested_row_splits) == 2
    assert rt.flat_values.numpy().tolist() == [1, 2, 3, 4, 5, 6]
    dense = rt.to_tensor().numpy()
    ref = np.zeros((3, 2, 3), np.int32)
    ref[0, 0, :2], ref[0, 1, :1], ref[1, 0] = [1, 2], [3], [4, 5, 6]
    np.testing.assert_array_equal(dense, ref)
    assert rt.row_lengths(axis=2).to_list() == [[2, 1], [3], []]


def test_constant_ragged_rank_1_with_uniform_inner_dims():
    rt = tf.ragged.constant([[[1, 2], [3, 4]], [[5, 6]]], ragged_rank=1)
    assert rt.shape.as_list() == [2, None, 2] and rt.ragged_rank == 1
    assert rt.to_list() == [[[1, 2], [3, 4]], [[5, 6]]]
    rt = tf.ragged.constant([[[1, 2], [3, 4]], [[5, 6]]], inner_shape=(2,))
    assert rt.shape.as_list() == [2, None, 2]


@pytest.mark.parametrize("pylist,kwargs,match", [
    ([[1, [2]], [3]], {}, "same nesting depth"),
    ([[[1], []], [2]], {}, "same nesting depth"),
    ([[[1, 2], [3]], [[5, 6]]], {"ragged_rank": 1}, "inconsistent shape"),
    ([[1, 2], [3]], {"ragged_rank": 2}, "ragged_rank=2"),
    ([[1, 2], [3]], {"ragged_rank": -1}, "nonnegative"),
    ([[[]], [[1]]], {"ragged_rank": 5}, "max depth"),
])
def test_constant_errors(pylist, kwargs, match):
    with pytest.raises(ValueError, match=match):
        tf.ragged.constant(pylist, **kwargs)


def test_factories_match_the_guide():
    values = [3, 1, 4, 1, 5, 9, 2]
    want = [[3, 1, 4, 1], [], [5, 9], [2]]
    assert tf.RaggedTensor.from_value_rowids(values, [0, 0, 0, 0, 2, 2, 3]).to_list() == want
    assert tf.RaggedTensor.from_row_lengths(values, [4, 0, 2, 1]).to_list() == want
    assert tf.RaggedTensor.from_row_splits(values, [0, 4, 4, 6, 7]).to_list() == want
    assert tf.RaggedTensor.from_row_starts(values, [0, 4, 4, 6]).to_list() == want
    assert tf.RaggedTensor.from_row_limits(values, [4, 4, 6, 7]).to_list() == want
    assert tf.RaggedTensor.from_value_rowids(values[:3], [0, 0, 2], nrows=5).to_list() == \
        [[3, 1], [], [4], [], []]
    nested = tf.RaggedTensor.from_nested_row_lengths([3, 1, 4, 1, 5, 9, 2, 6],
                                                     ([2, 0, 1], [3, 1, 4]))
    assert nested.to_list() == [[[3, 1, 4], [1]], [], [[5, 9, 2, 6]]]
    nested = tf.RaggedTensor.from_nested_row_splits([1, 2, 3], ([0, 2, 2], [0, 1, 3]))
    assert nested.to_list() == [[[1], [2, 3]], []]


@pytest.mark.parametrize("make,match", [
    (lambda: tf.RaggedTensor.from_row_splits([1, 2, 3], [0, 2, 1]), "sorted"),
    (lambda: tf.RaggedTensor.from_row_splits([1, 2, 3], [1, 2, 3]), r"row_splits\[0\]"),
    (lambda: tf.RaggedTensor.from_row_splits([1, 2, 3], [0, 2]), "number of values"),
    (lambda: tf.RaggedTensor.from_row_lengths([1, 2, 3], [2, 2]), "number of values"),
    (lambda: tf.RaggedTensor.from_row_lengths([1, 2, 3], [4, -1]), ">= 0"),
    (lambda: tf.RaggedTensor.from_value_rowids([1, 2, 3], [0, 2, 1]), "sorted"),
])
def test_invalid_partitions_are_invalid_argument(make, match):
    with pytest.raises(tf.errors.InvalidArgumentError, match=match):
        make()


def test_values_need_rank_1_and_equality_with_none():
    with pytest.raises(ValueError, match="rank >= 1"):
        tf.RaggedTensor.from_row_splits(5, [0, 1])
    rt = digits()
    assert (rt == None) is False and (rt != None) is True  # noqa: E711


def test_partition_dtype_errors():
    with pytest.raises(ValueError, match="int32 or int64"):
        tf.RaggedTensor.from_row_splits([1.0], tf.constant([0.0, 1.0]))
    inner = tf.ragged.constant([[1], [2]])
    with pytest.raises(ValueError, match="dtype mismatch"):
        tf.RaggedTensor.from_row_splits(inner, tf.constant([0, 2], tf.int32))
    r32 = digits().with_row_splits_dtype(tf.int32)
    assert r32.row_splits.dtype == tf.int32 and r32.to_list() == DIGITS


# ---- conversion ----

def test_to_tensor_default_and_shape():
    rt = digits()
    ref = np.zeros((5, 4), np.int32)
    for i, r in enumerate(DIGITS):
        ref[i, :len(r)] = r
    np.testing.assert_array_equal(rt.to_tensor().numpy(), ref)
    np.testing.assert_array_equal(rt.to_tensor(default_value=-1).numpy(),
                                  np.where(np.arange(4) < [[4], [0], [3], [1], [0]], ref, -1))
    np.testing.assert_array_equal(rt.to_tensor(shape=[3, 2]).numpy(), [[3, 1], [0, 0], [5, 9]])
    np.testing.assert_array_equal(rt.to_tensor(default_value=9, shape=[6, None]).numpy()[5],
                                  [9] * 4)
    strings = tf.ragged.constant([["a", "b"], ["c"]]).to_tensor()
    assert strings.numpy().tolist() == [[b"a", b"b"], [b"c", b""]]
    assert tf.ragged.constant([[True], [False, True]]).to_tensor().numpy().tolist() == \
        [[True, False], [False, True]]
    with pytest.raises(ValueError, match="rank 2"):
        rt.to_tensor(shape=[5])


def test_from_tensor_lengths_padding():
    x = tf.constant([[1, 2, 0], [3, 0, 0], [4, 5, 6]])
    assert tf.RaggedTensor.from_tensor(x).to_list() == x.numpy().tolist()
    assert tf.RaggedTensor.from_tensor(x, lengths=[2, 1, 3]).to_list() == [[1, 2], [3],
                                                                           [4, 5, 6]]
    assert tf.RaggedTensor.from_tensor(x, padding=0).to_list() == [[1, 2], [3], [4, 5, 6]]
    x3 = tf.constant([[[1, 1], [0, 0]], [[2, 2], [3, 0]]])
    assert tf.RaggedTensor.from_tensor(x3, padding=[0, 0]).to_list() == [[[1, 1]],
                                                                         [[2, 2], [3, 0]]]
    assert tf.RaggedTensor.from_tensor(x3, ragged_rank=2).to_list() == x3.numpy().tolist()
    with pytest.raises(ValueError, match="not both"):
        tf.RaggedTensor.from_tensor(x, lengths=[1, 1, 1], padding=0)
    with pytest.raises(ValueError, match="ragged_rank"):
        tf.RaggedTensor.from_tensor(x, ragged_rank=2)


def test_numpy_and_sparse_round_trip():
    rt = tf.ragged.constant([[1, 2], [3, 4, 5], [6]])
    arr = rt.numpy()
    assert arr.dtype == object and [a.tolist() for a in arr] == [[1, 2], [3, 4, 5], [6]]
    np.testing.assert_array_equal(tf.ragged.constant([[1, 2], [3, 4]]).numpy(), [[1, 2], [3, 4]])
    sp = digits().to_sparse()
    assert sp.indices.numpy().tolist() == [[0, 0], [0, 1], [0, 2], [0, 3], [2, 0], [2, 1],
                                           [2, 2], [3, 0]]
    assert sp.dense_shape.numpy().tolist() == [5, 4]
    assert tf.RaggedTensor.from_sparse(sp).to_list() == DIGITS


def test_cast_and_map_flat_values():
    rt = digits()
    f = tf.cast(rt, tf.float32)
    assert f.dtype == tf.float32 and f.to_list() == DIGITS
    out = tf.ragged.map_flat_values(lambda v: v * 2 + 1, rt)
    assert out.to_list() == [[2 * v + 1 for v in r] for r in DIGITS]
    out = tf.ragged.map_flat_values(tf.add, rt, rt)
    assert out.to_list() == [[2 * v for v in r] for r in DIGITS]


# ---- indexing ----

def test_indexing():
    rt = digits()
    assert rt[0].numpy().tolist() == [3, 1, 4, 1]
    assert rt[1].numpy().tolist() == []
    assert rt[-1].numpy().tolist() == []
    assert rt[-3].numpy().tolist() == [5, 9, 2]
    assert int(rt[2, 1]) == 9 and int(rt[2, -1]) == 2
    assert rt[tf.constant(2)].numpy().tolist() == [5, 9, 2]
    assert rt[1:3].to_list() == [[], [5, 9, 2]]
    assert rt[::2].to_list() == DIGITS[::2]
    assert rt[::-1].to_list() == DIGITS[::-1]
    assert rt[:, :2].to_list() == [r[:2] for r in DIGITS]
    assert rt[:, -2:].to_list() == [r[-2:] for r in DIGITS]
    r2 = tf.ragged.constant([[1, 2], [3, 4, 5], [6]])
    assert r2[:, 0].numpy().tolist() == [1, 3, 6]
    nested = tf.ragged.constant([[[1, 2], [3]], [[4, 5, 6]]])
    assert nested[0].to_list() == [[1, 2], [3]]
    assert nested[0, 1].numpy().tolist() == [3]
    assert nested[:, 0].to_list() == [[1, 2], [4, 5, 6]]
    assert nested[:, :, 1:].to_list() == [[[2], []], [[5, 6]]]


def test_indexing_errors():
    rt = digits()
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
        rt[5]
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
        rt[-6]
    with pytest.raises(tf.errors.InvalidArgumentError, match="dimension 1 out of bounds"):
        rt[:, 1]
    with pytest.raises(TypeError, match="slices"):
        rt[..., 0]
    with pytest.raises(ValueError, match="step 1"):
        rt[:, ::2]


# ---- math ----

def test_operators_and_math_ops():
    rt = digits()

    def ref(fn):
        return [[fn(v) for v in r] for r in DIGITS]

    assert (rt + 3).to_list() == ref(lambda v: v + 3)
    assert tf.math.add(rt, 3).to_list() == ref(lambda v: v + 3)
    assert (10 - rt).to_list() == ref(lambda v: 10 - v)
    assert (rt * 2).to_list() == ref(lambda v: v * 2)
    assert (2 * rt).to_list() == ref(lambda v: v * 2)
    assert (rt // 2).to_list() == ref(lambda v: v // 2)
    assert (rt ** 2).to_list() == ref(lambda v: v ** 2)
    assert (-rt).to_list() == ref(lambda v: -v)
    assert abs(-rt).to_list() == DIGITS
    assert (rt > 2).to_list() == ref(lambda v: v > 2)
    assert (rt == 1).to_list() == ref(lambda v: v == 1)
    assert ((rt > 2) & (rt < 6)).to_list() == ref(lambda v: 2 < v < 6)
    assert (rt / 2).to_list() == ref(lambda v: v / 2)
    sq = tf.sqrt(tf.cast(rt, tf.float32))
    np.testing.assert_allclose(sq.flat_values.numpy(), np.sqrt([3, 1, 4, 1, 5, 9, 2, 6]),
                               rtol=1e-6)
    assert (rt + rt).to_list() == ref(lambda v: 2 * v)


def test_broadcasting_with_dense():
    x = tf.ragged.constant([[10, 87, 12], [19, 53], [12, 32]])
    assert (x + [[1000], [2000], [3000]]).to_list() == [[1010, 1087, 1012], [2019, 2053],
                                                       [3012, 3032]]
    assert (x + tf.constant(1)).to_list() == [[11, 88, 13], [20, 54], [13, 33]]
    y = tf.ragged.constant([[[1, 2], [3, 4], [5, 6]], [[7, 8]]], ragged_rank=1)
    assert (y + tf.constant([[10]])).to_list() == [[[11, 12], [13, 14], [15, 16]], [[17, 18]]]
    assert (y + tf.constant([10, 20])).to_list() == [[[11, 22], [13, 24], [15, 26]],
                                                     [[17, 28]]]
    with pytest.raises(ValueError, match="combines with"):
        x + tf.ones([3, 3], tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="identical ragged splits"):
        x + tf.ragged.constant([[1, 2], [3, 4, 5], [6]])


@pytest.mark.parametrize("name,fn,empty", [
    ("reduce_sum", sum, 0),
    ("reduce_max", max, np.iinfo(np.int32).min),
    ("reduce_min", min, np.iinfo(np.int32).max),
    ("reduce_prod", lambda r: int(np.prod(r)), 1),
])
def test_row_reductions(name, fn, empty):
    out = getattr(tf, name)(digits(), axis=1)
    assert out.numpy().tolist() == rows_ref(DIGITS, fn, empty)


def test_reduce_mean_matches_the_guide():
    out = tf.reduce_mean(digits(), axis=1)  # int32 values: float64 means, NaN for empty rows
    assert out.dtype == tf.float64
    np.testing.assert_allclose(out.numpy(), [2.25, np.nan, 16 / 3, 6.0, np.nan])


def test_other_reductions():
    rt = digits()
    assert int(tf.reduce_sum(rt)) == 31
    assert tf.reduce_sum(rt, axis=0).numpy().tolist() == [14, 10, 6, 1]
    assert tf.reduce_max(rt, axis=0).numpy().tolist() == [6, 9, 4, 1]
    assert int(tf.reduce_sum(rt, axis=[0, 1])) == 31
    assert tf.reduce_sum(rt, axis=-1).numpy().tolist() == [9, 0, 16, 6, 0]
    assert tf.reduce_sum(rt, axis=1, keepdims=True).numpy().tolist() == [[9], [0], [16], [6],
                                                                        [0]]
    assert tf.reduce_any(rt > 5, axis=1).numpy().tolist() == [False, False, True, True, False]
    assert tf.reduce_all(rt > 0, axis=1).numpy().tolist() == [True] * 5
    nested = tf.ragged.constant([[[1, 2], [3]], [[4, 5, 6]], []])
    assert tf.reduce_sum(nested, axis=2).to_list() == [[3, 3], [15], []]
    assert tf.reduce_sum(nested, axis=1).to_list() == [[4, 2], [4, 5, 6], []]
    uniform = tf.ragged.constant([[[1, 2], [3, 4]], [[5, 6]]], ragged_rank=1)
    assert tf.reduce_sum(uniform, axis=2).to_list() == [[3, 7], [11]]
    assert tf.reduce_sum(uniform, axis=1).numpy().tolist() == [[4, 6], [5, 6]]


def test_concat_stack_range_mask():
    rt = digits()
    assert tf.concat([rt, [[5, 3]]], axis=0).to_list() == DIGITS + [[5, 3]]
    a = tf.ragged.constant([[1, 2], [3, 4, 5], [6]])
    b = tf.ragged.constant([[7], [], [8, 9]])
    assert tf.concat([a, b], axis=1).to_list() == [[1, 2, 7], [3, 4, 5], [6, 8, 9]]
    with pytest.raises(tf.errors.InvalidArgumentError, match="same number of rows"):
        tf.concat([a, rt], axis=1)
    assert tf.ragged.stack([a, b]).to_list() == [[[1, 2], [3, 4, 5], [6]], [[7], [], [8, 9]]]
    assert tf.ragged.stack([tf.constant([1, 2]), tf.constant([3])]).to_list() == [[1, 2], [3]]
    assert tf.ragged.range([3, 5, 2]).to_list() == [[0, 1, 2], [0, 1, 2, 3, 4], [0, 1]]
    assert tf.ragged.range([0, 5], [3, 8], 2).to_list() == [[0, 2], [5, 7]]
    assert tf.ragged.range(5.0, 0.0, -1.5).to_list() == [[5.0, 3.5, 2.0, 0.5]]
    with pytest.raises(tf.errors.InvalidArgumentError, match="delta != 0"):
        tf.ragged.range(3, 4, 0)
    assert tf.ragged.boolean_mask(a, a > 2).to_list() == [[], [3, 4, 5], [6]]
    assert tf.ragged.row_splits_to_segment_ids([0, 2, 2, 3]).numpy().tolist() == [0, 0, 2]
    assert tf.ragged.segment_ids_to_row_splits([0, 0, 2]).numpy().tolist() == [0, 2, 2, 3]


def test_not_a_sequence():
    rt = digits()
    with pytest.raises(TypeError, match="to_tensor"):
        tf.constant(rt)
    with pytest.raises(TypeError, match="not a sequence"):
        list(rt)
    with pytest.raises(TypeError):
        len(rt)
    assert tf.nest.flatten([rt, 1])[0] is rt  # a leaf, as TensorFlow's composite tensors


# ---- functions and gradients ----

def test_built_inside_a_function():
    @tf.function
    def f(vals, lens):
        rt = tf.RaggedTensor.from_row_lengths(vals, lens)
        return rt.to_tensor(), tf.reduce_sum(rt, axis=1), rt * 2, rt[1:]

    dense, sums, doubled, tail = f(tf.constant([1., 2., 3., 4.]), tf.constant([2, 0, 2],
                                                                              tf.int64))
    np.testing.assert_array_equal(dense.numpy(), [[1, 2], [0, 0], [3, 4]])
    assert sums.numpy().tolist() == [3, 0, 7]
    assert isinstance(doubled, tf.RaggedTensor) and doubled.to_list() == [[2, 4], [], [6, 8]]
    assert tail.to_list() == [[], [3, 4]]


def test_from_tensor_and_padding_inside_a_function():
    @tf.function
    def f(x):
        return (tf.RaggedTensor.from_tensor(x, padding=0),
                tf.RaggedTensor.from_tensor(x, lengths=[1, 2]).to_tensor(default_value=-1))

    rt, dense = f(tf.constant([[1, 0], [2, 3]]))
    assert rt.to_list() == [[1], [2, 3]]
    assert dense.numpy().tolist() == [[1, -1], [2, 3]]


def test_passed_to_and_returned_from_a_function():
    traces = []

    @tf.function
    def g(rt):
        traces.append(rt)
        return rt + 1, tf.reduce_mean(rt, axis=1), rt.to_tensor()

    rt = tf.ragged.constant([[1., 2.], [3.], [4., 5., 6.]])
    plus, means, dense = g(rt)
    assert plus.to_list() == [[2, 3], [4], [5, 6, 7]]
    np.testing.assert_allclose(means.numpy(), [1.5, 3, 5])
    assert dense.shape.as_list() == [3, 3]
    assert isinstance(traces[0], tf.RaggedTensor) and traces[0].values.is_symbolic
    g(tf.ragged.constant([[7., 8.], [9.], [1., 2., 3.]]))  # same component shapes
    assert len(traces) == 1
    nested = tf.ragged.constant([[[1., 2.], [3.]], [[4., 5., 6.]], []])
    assert g(nested)[0].to_list() == [[[2, 3], [4]], [[5, 6, 7]], []]
    cf = g.get_concrete_function(rt)
    assert cf(tf.ragged.constant([[0., 0.], [1.], [2., 2., 2.]]))[0].to_list() == \
        [[1, 1], [2], [3, 3, 3]]


def test_reduce_retracing_relaxes_component_shapes():
    traces = []

    @tf.function(reduce_retracing=True)
    def f(rt):
        traces.append(1)
        return tf.reduce_sum(rt, axis=1)

    for k in range(1, 5):
        assert f(tf.ragged.constant([[1] * k, [2]])).numpy().tolist() == [k, 2]
    assert len(traces) <= 2


def test_gradients_through_values():
    w = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        rt = tf.RaggedTensor.from_row_lengths(tf.constant([1., 2., 3.]) * w, [2, 1])
        loss = tf.reduce_sum(tf.reduce_max(rt, axis=1)) + tf.reduce_sum(rt.to_tensor())
    assert float(tape.gradient(loss, w)) == pytest.approx((2 + 3) + (1 + 2 + 3))
    v = tf.constant([1., 2., 3.])
    with tf.GradientTape() as tape:
        tape.watch(v)
        rt = tf.RaggedTensor.from_row_lengths(v, [2, 1])
        loss = tf.reduce_sum(tf.reduce_mean(rt, axis=1) * tf.constant([1., 10.]))
    np.testing.assert_allclose(tape.gradient(loss, v).numpy(), [0.5, 0.5, 10.0])


def test_gradient_inside_a_function():
    @tf.function
    def grad(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            rt = tf.RaggedTensor.from_row_splits(v, [0, 1, 3])
            loss = tf.reduce_sum(tf.square(rt).to_tensor(default_value=1.0))
        return tape.gradient(loss, v)

    np.testing.assert_allclose(grad(tf.constant([1., 2., 3.])).numpy(), [2., 4., 6.])


def test_to_list_needs_eager():
    @tf.function
    def f(rt):
        return rt.to_list()

    with pytest.raises(ValueError, match="eager"):
        f(digits())
