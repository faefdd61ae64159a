"""Dataset.ragged_batch and Dataset.sparse_batch: element specs, cardinalities,
values and error texts as TensorFlow 2.21 printed them (.venv-peers)."""
import numpy as np
import pytest

import kiln as tf
from kiln import errors

D = tf.data.Dataset


def ranges(n):
    return D.range(n).map(lambda x: tf.range(x))


def test_ragged_batch_of_vectors():
    ds = ranges(6).ragged_batch(4)
    assert repr(ds.element_spec) == \
        "RaggedTensorSpec(TensorShape([None, None]), tf.int64, 1, tf.int64)"
    assert int(ds.cardinality()) == 2
    got = [x.to_list() for x in ds]
    assert got == [[[], [0], [0, 1], [0, 1, 2]], [[0, 1, 2, 3], [0, 1, 2, 3, 4]]]
    assert all(isinstance(x, tf.RaggedTensor) for x in ds)


@pytest.mark.parametrize("make,spec,card,want", [
    (lambda: ranges(5).ragged_batch(2, drop_remainder=True),
     "RaggedTensorSpec(TensorShape([2, None]), tf.int64, 1, tf.int64)", 2,
     [[[], [0]], [[0, 1], [0, 1, 2]]]),
    (lambda: ranges(3).ragged_batch(2, row_splits_dtype=tf.int32),
     "RaggedTensorSpec(TensorShape([None, None]), tf.int64, 1, tf.int32)", 2,
     [[[], [0]], [[0, 1]]]),
    (lambda: D.range(3).map(lambda x: tf.reshape(tf.range(2 * x), [-1, 2])).ragged_batch(2),
     "RaggedTensorSpec(TensorShape([None, None, 2]), tf.int64, 1, tf.int64)", 2,
     [[[], [[0, 1]]], [[[0, 1], [2, 3]]]]),
    (lambda: D.range(3).map(lambda x: tf.fill([x, x], x)).ragged_batch(2),
     "RaggedTensorSpec(TensorShape([None, None, None]), tf.int64, 2, tf.int64)", 2,
     [[[], [[1]]], [[[2, 2], [2, 2]]]]),
], ids=["drop_remainder", "int32_splits", "ragged_rows", "two_ragged_dims"])
def test_ragged_batch_as_tensorflow(make, spec, card, want):
    ds = make()
    assert repr(ds.element_spec) == spec and int(ds.cardinality()) == card
    assert [x.to_list() for x in ds] == want


def test_ragged_batch_keeps_fixed_shapes_dense():
    ds = D.range(3).map(lambda x: tf.fill([2], x)).ragged_batch(2)
    assert repr(ds.element_spec) == "TensorSpec(shape=(None, 2), dtype=tf.int64, name=None)"
    assert [x.numpy().tolist() for x in ds] == [[[0, 0], [1, 1]], [[2, 2]]]
    mixed = D.range(3).map(lambda x: (tf.range(x), x, tf.fill([2], "a"))).ragged_batch(2)
    assert repr(mixed.element_spec) == (
        "(RaggedTensorSpec(TensorShape([None, None]), tf.int64, 1, tf.int64), "
        "TensorSpec(shape=(None,), dtype=tf.int64, name=None), "
        "TensorSpec(shape=(None, 2), dtype=tf.string, name=None))")
    r, n, s = next(iter(mixed))
    assert r.to_list() == [[], [0]] and n.numpy().tolist() == [0, 1]
    assert s.numpy().tolist() == [[b"a", b"a"], [b"a", b"a"]]


def test_ragged_batch_numpy_values_and_strings():
    got = list(ranges(3).ragged_batch(2).as_numpy_iterator())
    assert [[r.tolist() for r in b] for b in got] == [[[], [0]], [[0, 1]]]
    words = D.from_tensor_slices(["a", "bb"]).map(
        lambda s: tf.fill([tf.strings.length(s)], s)).ragged_batch(2)
    assert [x.to_list() for x in words] == [[[b"a"], [b"bb", b"bb"]]]


def test_ragged_batches_map_unbatch_and_loop_in_a_function():
    ds = ranges(3).ragged_batch(2)
    m = ds.map(lambda r: r.row_lengths())
    assert repr(m.element_spec) == "TensorSpec(shape=(None,), dtype=tf.int64, name=None)"
    assert [x.numpy().tolist() for x in m] == [[0, 1], [2]]
    u = ds.unbatch()
    assert repr(u.element_spec) == "RaggedTensorSpec(TensorShape([None]), tf.int64, 0, tf.int64)"
    assert [x.numpy().tolist() for x in u] == [[], [0], [0, 1]]

    @tf.function
    def f():
        s = tf.constant(0, tf.int64)
        for r in ds:
            s = s * 10 + tf.reduce_sum(r.flat_values) + r.nrows()
        return s
    assert int(f()) == 22


def sparse_dense(sp):
    return (sp.indices.numpy().tolist(), sp.values.numpy().tolist(),
            sp.dense_shape.numpy().tolist())


@pytest.mark.parametrize("row_shape,spec,want", [
    ([4], "SparseTensorSpec(TensorShape([None, 4]), tf.int64)",
     [([[1, 0]], [1], [2, 4]), ([[0, 0], [0, 1]], [2, 2], [1, 4])]),
    ([None], "SparseTensorSpec(TensorShape([None, None]), tf.int64)",
     [([[1, 0]], [1], [2, 1]), ([[0, 0], [0, 1]], [2, 2], [1, 2])]),
])
def test_sparse_batch_as_tensorflow(row_shape, spec, want):
    ds = D.range(3).map(lambda x: tf.fill([x], x)).sparse_batch(2, row_shape)
    assert repr(ds.element_spec) == spec and int(ds.cardinality()) == 2
    assert [sparse_dense(sp) for sp in ds] == want


def test_sparse_batch_of_matrices():
    ds = D.range(3).map(lambda x: tf.fill([x, 2], x)).sparse_batch(3, [4, 2])
    assert repr(ds.element_spec) == "SparseTensorSpec(TensorShape([None, 4, 2]), tf.int64)"
    (sp,) = list(ds)
    assert sparse_dense(sp) == ([[1, 0, 0], [1, 0, 1], [2, 0, 0], [2, 0, 1], [2, 1, 0],
                                 [2, 1, 1]], [1, 1, 2, 2, 2, 2], [3, 4, 2])
    dense = np.zeros((3, 4, 2), np.int64)
    dense[1, 0], dense[2, :2] = 1, 2
    assert np.array_equal(tf.sparse.to_dense(sp).numpy(), dense)


def test_sparse_batch_errors():
    with pytest.raises(errors.DataLossError,
                       match=r"^Input element had shape \(\[3\]\) that is larger than the row "
                             r"shape \(\[2\]\).$"):
        list(D.range(4).map(lambda x: tf.fill([x], x)).sparse_batch(2, [2]))
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"^Input element had shape \(\[0,2\]\) that is incompatible with "
                             r"the row shape \(\[4\]\).$"):
        list(D.range(3).map(lambda x: tf.fill([x, 2], x)).sparse_batch(2, [4]))
    with pytest.raises(TypeError, match=r"requires an input dataset whose elements have a "
                                        r"single component, but the given dataset has the "
                                        r"following component types: \(tf.int64, tf.int64\)."):
        D.range(3).map(lambda x: (x, x)).sparse_batch(2, [4])
