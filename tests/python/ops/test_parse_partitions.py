"""tf.io.RaggedFeature partitions and SparseFeature with several index keys
(kiln._parse_partitions): values as TensorFlow 2.21 parsed the same records,
for one Example and a batch, eagerly, in a kiln.function and in Dataset.map."""
import numpy as np
import pytest

import kiln as tf
from tests.python.ops.ops_harness import as_list, eager_and_traced

R, S = tf.io.RaggedFeature, tf.io.SparseFeature


def example(**features):
    ex = tf.train.Example()
    for key, values in features.items():
        f = ex.features.feature[key]
        if isinstance(values[0], float):
            f.float_list.value.extend(values)
        else:
            f.int64_list.value.extend(values)
    return ex.SerializeToString()


RECS = [example(v=[1, 2, 3, 4, 5], splits=[0, 2, 5], lens=[2, 3], starts=[0, 2], limits=[2, 5],
                ids=[0, 0, 1, 1, 1], lens2=[1, 1, 3], i0=[2, 0, 1], i1=[1, 3, 0], val=[10., 20., 30.]),
        example(v=[6, 7, 8, 9], splits=[0, 1, 1, 4], lens=[1, 0, 3], starts=[0, 1, 1],
                limits=[1, 1, 4], ids=[0, 2, 2, 2], lens2=[2, 0, 2], i0=[0], i1=[0], val=[5.])]
ONE = [[1, 2], [3, 4, 5]]
BATCH = [[[1, 2], [3, 4, 5]], [[6], [], [7, 8, 9]]]


@pytest.mark.parametrize("partition", [R.RowSplits("splits"), R.RowLengths("lens"),
                                       R.RowStarts("starts"), R.RowLimits("limits"),
                                       R.ValueRowIds("ids")])
@pytest.mark.parametrize("splits_dtype", [tf.int32, tf.int64])
def test_one_partition(partition, splits_dtype):
    spec = {"x": R(tf.int64, "v", [partition], row_splits_dtype=splits_dtype)}
    for out in eager_and_traced(lambda s: tf.io.parse_single_example(s, spec)["x"],
                                tf.constant(RECS[0])):
        assert out.to_list() == ONE and out.row_splits.dtype == splits_dtype
    for out in eager_and_traced(lambda s: tf.io.parse_example(s, spec)["x"],
                                tf.constant(RECS)):
        assert out.to_list() == BATCH and out.ragged_rank == 2
        assert out.row_splits.dtype == splits_dtype


def test_default_row_splits_dtype_is_int32():
    assert R(tf.int64).row_splits_dtype == tf.int32
    out = tf.io.parse_example(tf.constant(RECS), {"x": R(tf.int64, "v")})["x"]
    assert out.row_splits.dtype == tf.int32


def test_uniform_row_length():
    spec = {"x": R(tf.int64, "v", [R.UniformRowLength(1)])}
    one = tf.io.parse_single_example(RECS[0], spec)["x"]
    assert isinstance(one, tf.Tensor) and one.numpy().tolist() == [[1], [2], [3], [4], [5]]
    batch = tf.io.parse_example(tf.constant(RECS), spec)["x"]
    assert batch.to_list() == [[[1], [2], [3], [4], [5]], [[6], [7], [8], [9]]]
    assert batch.shape.as_list() == [2, None, 1]
    spec = {"x": R(tf.int64, "v", [R.RowLengths("lens"), R.UniformRowLength(1)])}
    for out in eager_and_traced(lambda s: tf.io.parse_example(s, spec)["x"],
                                tf.constant(RECS)):
        assert out.to_list() == [[[[1], [2]], [[3], [4], [5]]], [[[6]], [], [[7], [8], [9]]]]
    assert tf.io.parse_single_example(RECS[0], spec)["x"].to_list() == \
        [[[1], [2]], [[3], [4], [5]]]
    with pytest.raises(tf.errors.InvalidArgumentError, match="not a multiple of 2"):
        tf.io.parse_example(tf.constant(RECS), {"x": R(tf.int64, "v", [R.UniformRowLength(2)])})


def test_two_partitions_and_a_missing_key():
    lens2 = [example(v=[1, 2, 3, 4, 5], a=[2, 3], b=[1, 1]),
             example(v=[6, 7], a=[1, 1], b=[2])]
    spec = {"x": R(tf.int64, "v", [R.RowLengths("b"), R.RowLengths("a")])}
    assert tf.io.parse_single_example(lens2[0], spec)["x"].to_list() == [[[1, 2]], [[3, 4, 5]]]
    out = tf.io.parse_example(tf.constant(lens2), spec)["x"]
    assert out.to_list() == [[[[1, 2]], [[3, 4, 5]]], [[[6], [7]]]] and out.ragged_rank == 3
    spec = {"x": R(tf.int64, "v", [R.RowLengths("nope")])}
    assert tf.io.parse_single_example(RECS[0], spec)["x"].to_list() == []
    assert tf.io.parse_example(tf.constant(RECS), spec)["x"].to_list() == [[], []]


def test_validate():
    spec = {"x": R(tf.int64, "v", [R.RowLengths("lens")], validate=True)}
    assert tf.io.parse_example(tf.constant(RECS), spec)["x"].to_list() == BATCH
    bad = {"x": R(tf.int64, "v", [R.RowSplits("lens")], validate=True)}
    with pytest.raises(tf.errors.InvalidArgumentError, match="valid RaggedTensor"):
        tf.io.parse_single_example(RECS[0], bad)
    # validate=False: TensorFlow's result for these splits.
    loose = {"x": R(tf.int64, "v", [R.RowSplits("lens2")])}
    assert tf.io.parse_example(tf.constant(RECS), loose)["x"].to_list() == \
        [[[1], [2, 3]], [[4, 5], [6, 7]]]


def sparse(sp):
    return sp.indices.numpy().tolist(), sp.values.numpy().tolist(), \
        sp.dense_shape.numpy().tolist()


@pytest.mark.parametrize("already_sorted,one,batch", [
    (False, ([[0, 3], [1, 0], [2, 1]], [20.0, 30.0, 10.0], [3, 4]),
     ([[0, 0, 3], [0, 1, 0], [0, 2, 1], [1, 0, 0]], [20.0, 30.0, 10.0, 5.0], [2, 3, 4])),
    (True, ([[2, 1], [0, 3], [1, 0]], [10.0, 20.0, 30.0], [3, 4]),
     ([[0, 2, 1], [0, 0, 3], [0, 1, 0], [1, 0, 0]], [10.0, 20.0, 30.0, 5.0], [2, 3, 4])),
])
def test_sparse_feature_with_two_index_keys(already_sorted, one, batch):
    spec = {"x": S(["i0", "i1"], "val", tf.float32, [3, 4], already_sorted)}
    for out in eager_and_traced(lambda s: tf.io.parse_single_example(s, spec)["x"],
                                tf.constant(RECS[0])):
        assert sparse(out) == one
    for out in eager_and_traced(lambda s: tf.io.parse_example(s, spec)["x"],
                                tf.constant(RECS)):
        assert sparse(out) == batch
    assert tf.io.parse_single_example(RECS[0], spec)["x"].shape.as_list() == [3, 4]


def test_sparse_feature_one_key_in_a_list():
    spec = {"x": S(["i0"], "val", tf.float32, [3])}
    assert sparse(tf.io.parse_example(tf.constant(RECS), spec)["x"]) == \
        ([[0, 0], [0, 1], [0, 2], [1, 0]], [20.0, 30.0, 10.0, 5.0], [2, 3])
    with pytest.raises(ValueError, match="^Dimensions 3 and 5 are not compatible$"):
        tf.io.parse_single_example(RECS[0], {"x": S(["i0", "i1"], "v", tf.int64, [3, 4])})


def test_partitions_inside_dataset_map():
    spec = {"r": R(tf.int64, "v", [R.RowLengths("lens")]),
            "s": S(["i0", "i1"], "val", tf.float32, [3, 4])}
    ds = tf.data.Dataset.from_tensor_slices(RECS).map(
        lambda s: tf.io.parse_single_example(s, spec))
    assert repr(ds.element_spec) == (
        "{'r': RaggedTensorSpec(TensorShape([None, None]), tf.int64, 1, tf.int32), "
        "'s': SparseTensorSpec(TensorShape([3, 4]), tf.float32)}")
    got = list(ds)
    assert [g["r"].to_list() for g in got] == BATCH
    assert sparse(got[1]["s"]) == ([[0, 0]], [5.0], [3, 4])
    (b,) = list(ds.batch(2))
    assert b["r"].to_list() == BATCH
    assert sparse(b["s"]) == ([[0, 0, 3], [0, 1, 0], [0, 2, 1], [1, 0, 0]],
                              [20.0, 30.0, 10.0, 5.0], [2, 3, 4])
    assert np.array_equal(as_list(b["r"].flat_values), list(range(1, 10)))
