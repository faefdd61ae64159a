"""RaggedTensors and SparseTensors as tf.data elements (kiln.data.composite,
kiln.data.composite_slices): element specs, values, batching and loops inside a
kiln.function, as TensorFlow 2.21 printed and computed them (.venv-peers)."""
import numpy as np
import pytest

import kiln as tf

D = tf.data.Dataset
RT = [[[1, 2], [3]], [[4]], [[5, 6, 7], [], [8]]]


def rt():
    return tf.ragged.constant(RT)


def sp():
    return tf.sparse.SparseTensor([[0, 0], [1, 2], [2, 1]], [1.0, 2.0, 3.0], [3, 4])


def parts(s):
    return (s.indices.numpy().tolist(), s.values.numpy().tolist(),
            s.dense_shape.numpy().tolist())


def test_slices_of_a_ragged_tensor():
    ds = D.from_tensor_slices(tf.ragged.constant([[1, 2], [3], [4, 5, 6]]))
    assert repr(ds.element_spec) == "RaggedTensorSpec(TensorShape([None]), tf.int32, 0, tf.int64)"
    got = list(ds)
    assert all(isinstance(x, tf.Tensor) for x in got)  # ragged_rank 0: plain tensors
    assert [x.numpy().tolist() for x in got] == [[1, 2], [3], [4, 5, 6]]
    assert [a.tolist() for a in ds.as_numpy_iterator()] == [[1, 2], [3], [4, 5, 6]]
    ds = D.from_tensor_slices(rt())
    assert repr(ds.element_spec) == \
        "RaggedTensorSpec(TensorShape([None, None]), tf.int32, 1, tf.int64)"
    assert [x.to_list() for x in ds] == RT


def test_from_tensors_and_numpy_values():
    ds = D.from_tensors(tf.ragged.constant([[1, 2], [3], [4, 5, 6]]))
    assert repr(ds.element_spec) == \
        "RaggedTensorSpec(TensorShape([3, None]), tf.int32, 1, tf.int64)"
    (a,) = list(ds.as_numpy_iterator())
    assert a.dtype == object and [r.tolist() for r in a] == [[1, 2], [3], [4, 5, 6]]
    assert repr(D.from_tensors(sp()).element_spec) == \
        "SparseTensorSpec(TensorShape([3, 4]), tf.float32)"
    # as_numpy_iterator gives sparse elements as dense arrays (TF 2.21).
    dense = list(D.from_tensor_slices(sp()).as_numpy_iterator())
    assert [d.tolist() for d in dense] == [[1, 0, 0, 0], [0, 0, 2, 0], [0, 3, 0, 0]]


def test_slices_of_a_sparse_tensor_and_nested_structures():
    ds = D.from_tensor_slices(sp())
    assert repr(ds.element_spec) == "SparseTensorSpec(TensorShape([4]), tf.float32)"
    assert [parts(x) for x in ds] == [([[0]], [1.0], [4]), ([[2]], [2.0], [4]),
                                      ([[1]], [3.0], [4])]
    ds = D.from_tensor_slices((tf.ragged.constant([[1, 2], [3], [4]]),
                               {"a": sp(), "b": [1, 2, 3]}))
    assert repr(ds.element_spec) == (
        "(RaggedTensorSpec(TensorShape([None]), tf.int32, 0, tf.int64), "
        "{'a': SparseTensorSpec(TensorShape([4]), tf.float32), "
        "'b': TensorSpec(shape=(), dtype=tf.int32, name=None)})")


def test_batch_and_unbatch_ragged():
    ds = D.from_tensor_slices(tf.ragged.constant([[1, 2], [3], [4, 5, 6]]))
    b = ds.batch(2)
    assert repr(b.element_spec) == \
        "RaggedTensorSpec(TensorShape([None, None]), tf.int32, 1, tf.int64)"
    assert [x.to_list() for x in b] == [[[1, 2], [3]], [[4, 5, 6]]]
    u = b.unbatch()
    assert repr(u.element_spec) == "RaggedTensorSpec(TensorShape([None]), tf.int32, 0, tf.int64)"
    assert [x.numpy().tolist() for x in u] == [[1, 2], [3], [4, 5, 6]]
    b2 = D.from_tensor_slices(rt()).batch(2, drop_remainder=True)
    assert repr(b2.element_spec) == \
        "RaggedTensorSpec(TensorShape([2, None, None]), tf.int32, 2, tf.int64)"
    assert [x.to_list() for x in b2] == [RT[:2]]
    (first, second) = list(D.from_tensor_slices(rt()).batch(2).as_numpy_iterator())
    assert second.shape == (1, 3) and second.dtype == object  # TF's RaggedTensor.numpy()


def test_batch_and_unbatch_sparse():
    b = D.from_tensor_slices(sp()).batch(2)
    assert repr(b.element_spec) == "SparseTensorSpec(TensorShape([None, 4]), tf.float32)"
    assert [parts(x) for x in b] == [([[0, 0], [1, 2]], [1.0, 2.0], [2, 4]),
                                     ([[0, 1]], [3.0], [1, 4])]
    u = b.unbatch()
    assert repr(u.element_spec) == "SparseTensorSpec(TensorShape([4]), tf.float32)"
    assert [parts(x) for x in u] == [([[0]], [1.0], [4]), ([[2]], [2.0], [4]),
                                     ([[1]], [3.0], [4])]
    m = D.range(3).map(lambda x: tf.sparse.SparseTensor([[x]], [x], [x + 1]))
    assert repr(m.element_spec) == "SparseTensorSpec(TensorShape([None]), tf.int64)"
    (x,) = list(m.batch(3))
    assert parts(x) == ([[0, 0], [1, 1], [2, 2]], [0, 1, 2], [3, 3])  # the largest dims


@pytest.mark.parametrize("make", [lambda: D.from_tensor_slices(tf.ragged.constant([[1], [2]])),
                                  lambda: D.from_tensor_slices(sp())])
def test_padded_batch_refuses_composites(make):
    with pytest.raises(TypeError, match=r"^`padded_batch` is only supported for datasets that "
                                        r"produce tensor elements but type spec of elements"):
        make().padded_batch(2)


def test_map_returning_and_receiving_composites():
    m = D.range(4).map(lambda x: tf.RaggedTensor.from_row_lengths(tf.range(x),
                                                                 tf.reshape(x, [1])))
    assert repr(m.element_spec) == \
        "RaggedTensorSpec(TensorShape([1, None]), tf.int64, 1, tf.int64)"
    assert [x.to_list() for x in m] == [[[]], [[0]], [[0, 1]], [[0, 1, 2]]]
    s = D.range(4).map(lambda x: tf.sparse.from_dense(tf.range(x)))
    assert repr(s.element_spec) == "SparseTensorSpec(TensorShape([None]), tf.int64)"
    assert parts(list(s)[3]) == ([[1], [2]], [1, 2], [3])
    ds = D.from_tensor_slices(rt())
    doubled = ds.map(lambda x: x * 2)
    assert repr(doubled.element_spec) == \
        "RaggedTensorSpec(TensorShape([None, None]), tf.int32, 1, tf.int64)"
    assert [x.to_list() for x in doubled] == [[[2, 4], [6]], [[8]], [[10, 12, 14], [], [16]]]
    lens = ds.map(lambda x: x.row_lengths())
    assert repr(lens.element_spec) == "TensorSpec(shape=(None,), dtype=tf.int64, name=None)"
    assert [x.numpy().tolist() for x in lens] == [[2, 1], [1], [3, 0, 1]]
    d = D.range(3).map(lambda x: {"r": tf.ragged.range(x), "d": x})
    assert repr(d.element_spec) == (
        "{'r': RaggedTensorSpec(TensorShape([1, None]), tf.int64, 1, tf.int64), "
        "'d': TensorSpec(shape=(), dtype=tf.int64, name=None)}")


def test_pass_through_transformations():
    ds = D.from_tensor_slices(rt())
    kept = ds.filter(lambda x: x.nrows() > 1)
    assert [x.to_list() for x in kept] == [RT[0], RT[2]]
    assert [x.to_list() for x in ds.skip(1).take(1).repeat(2).prefetch(1)] == [RT[1], RT[1]]
    assert sorted(len(x.to_list()) for x in ds.shuffle(3, seed=1)) == [1, 2, 3]
    z = D.zip((ds, D.range(3)))
    assert repr(z.element_spec) == ("(RaggedTensorSpec(TensorShape([None, None]), tf.int32, 1, "
                                    "tf.int64), TensorSpec(shape=(), dtype=tf.int64, name=None))")
    c = ds.concatenate(ds.take(1))
    assert [x.to_list() for x in c] == RT + RT[:1]
    assert int(ds.reduce(tf.constant(0), lambda s, x: s + tf.reduce_sum(x))) == 36


def test_concatenate_mismatch_is_tensorflows_error():
    a = D.from_tensor_slices(tf.ragged.constant([[1, 2], [3]]))
    b = D.from_tensor_slices(tf.ragged.constant([[1, 2], [3]], row_splits_dtype=tf.int32))
    with pytest.raises(TypeError, match=r"^Incompatible dataset elements:\n  RaggedTensorSpec\("
                                        r"TensorShape\(\[None\]\), tf.int32, 0, tf.int64\) vs\.   "
                                        r"RaggedTensorSpec\(TensorShape\(\[None\]\), tf.int32, 0, "
                                        r"tf.int32\)$"):
        a.concatenate(b)
    with pytest.raises(TypeError, match="Incompatible dataset elements"):
        a.concatenate(D.from_tensor_slices([[1, 2]]))


OUTSIDE = D.range(4).map(lambda x: tf.ragged.range(tf.range(x)))
OUTSIDE_SP = D.range(4).map(lambda x: tf.sparse.from_dense(tf.reshape(tf.range(x), [1, -1])))


def loop_ragged_batches_built_outside():
    s = tf.constant(0, tf.int64)
    for x in OUTSIDE.batch(2):
        s += tf.reduce_sum(x.flat_values) * 10 + tf.cast(x.nrows(), tf.int64)
    return s


def loop_filtered_sparse():
    s = tf.constant(0, tf.float32)
    for x in D.from_tensor_slices(sp()).filter(lambda e: tf.size(e.values) > 0):
        s += tf.reduce_sum(tf.sparse.to_dense(x)) * 10 + 1
    return s


def loop_sparse_batches_built_outside():
    s = tf.constant(0, tf.int64)
    for x in OUTSIDE_SP.batch(3):
        s += tf.reduce_sum(x.values) + tf.reduce_sum(x.dense_shape)
    return s


def loop_batches_made_inside():
    s = tf.constant(0, tf.int32)
    ds = D.from_tensor_slices((rt(), sp())).map(lambda a, b: (a * 2, b)).batch(2)
    for x, y in ds:
        s += tf.reduce_sum(x.flat_values) + tf.cast(tf.reduce_sum(y.values), tf.int32)
    return s


def loop_map_made_inside():
    s = tf.constant(0, tf.int64)
    for x in D.range(4).map(lambda x: tf.ragged.range(tf.range(x))).batch(2):
        s += tf.reduce_sum(x.flat_values)
    return s


def reduce_made_inside():
    ds = D.range(5).map(lambda x: tf.sparse.from_dense(tf.reshape(tf.range(x), [1, -1])))
    return ds.reduce(tf.constant(0, tf.int64), lambda s, e: s + tf.reduce_sum(e.values))


@pytest.mark.parametrize("fn,want", [(loop_ragged_batches_built_outside, 14),
                                     (loop_filtered_sparse, 63), (loop_sparse_batches_built_outside, 15),
                                     (loop_batches_made_inside, 78), (loop_map_made_inside, 1),
                                     (reduce_made_inside, 10)])
def test_loops_eagerly_and_in_a_function(fn, want):
    assert int(fn()) == want
    assert int(tf.function(fn)()) == want


def test_iterator_in_a_function():
    @tf.function
    def f():
        it = iter(OUTSIDE)
        next(it)
        next(it)
        c = next(it)
        return c.flat_values, c.row_splits
    values, splits = f()
    assert values.numpy().tolist() == [0] and splits.numpy().tolist() == [0, 0, 1]


def test_batching_a_filtered_dataset_made_inside_a_function_is_refused():
    @tf.function
    def f():
        ds = D.range(4).filter(lambda x: x > 0).map(lambda x: tf.ragged.range(tf.range(x)))
        s = tf.constant(0, tf.int64)
        for b in ds.batch(2):
            s += tf.reduce_sum(b.flat_values)
        return s
    with pytest.raises(NotImplementedError, match="batching ragged or sparse elements"):
        f()


def test_var_len_feature_in_dataset_map():
    # The TFRecord tutorial's pattern: raw_dataset.map(_parse_function) with a VarLenFeature.
    def example(words, n, k):
        ex = tf.train.Example()
        ex.features.feature["w"].bytes_list.value.extend(words)
        ex.features.feature["n"].int64_list.value.extend(n)
        ex.features.feature["k"].int64_list.value.extend(k)
        return ex.SerializeToString()
    raw = D.from_tensor_slices([example([b"a", b"b"], [1, 2, 3], [1, 2]),
                                example([b"c"], [4], [0, 1])])
    R = tf.io.RaggedFeature
    spec = {"w": tf.io.VarLenFeature(tf.string), "n": R(tf.int64, "n"),
            "p": R(tf.int64, "n", [R.RowLengths("k")])}
    parsed = raw.map(lambda s: tf.io.parse_single_example(s, spec))
    assert repr(parsed.element_spec) == (
        "{'w': SparseTensorSpec(TensorShape([None]), tf.string), "
        "'n': TensorSpec(shape=(None,), dtype=tf.int64, name=None), "
        "'p': RaggedTensorSpec(TensorShape([None, None]), tf.int64, 1, tf.int32)}")
    got = list(parsed)
    assert parts(got[0]["w"]) == ([[0], [1]], [b"a", b"b"], [2])
    assert got[1]["n"].numpy().tolist() == [4] and got[1]["p"].to_list() == [[], [4]]
    (w, p), = list(parsed.map(lambda d: (d["w"], d["p"])).batch(2))
    assert parts(w) == ([[0, 0], [0, 1], [1, 0]], [b"a", b"b", b"c"], [2, 2])
    assert p.to_list() == [[[1], [2, 3]], [[], [4]]]
    # TensorFlow 2.21 fails on a string SparseTensor here; kiln gives b"" for the zeros.
    assert list(parsed.as_numpy_iterator())[1]["w"].tolist() == [b"c"]


def test_spec_classes_are_exported_with_tensorflows_checks():
    assert repr(tf.RaggedTensorSpec([2, None], tf.int32)) == \
        "RaggedTensorSpec(TensorShape([2, None]), tf.int32, 1, tf.int64)"
    assert repr(tf.SparseTensorSpec()) == "SparseTensorSpec(TensorShape(None), tf.float32)"
    with pytest.raises(ValueError, match=r"^Must specify ragged_rank or a shape with a known "
                                         r"rank\.$"):
        tf.RaggedTensorSpec()
    with pytest.raises(ValueError, match=r"^Argument `ragged_rank` \(2\) must be less than "
                                         r"rank \(2\)\.$"):
        tf.RaggedTensorSpec([2, 3], ragged_rank=2)
    spec = D.from_tensor_slices(rt()).element_spec
    assert isinstance(spec, tf.RaggedTensorSpec) and spec.value_type is tf.RaggedTensor
