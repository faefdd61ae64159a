"""tf.io.parse_example / parse_single_example and tf.train.Example: TensorFlow
2.21's parsed values of the records it wrote (tests/fixtures/tf_written/tfrecord),
every feature spec eagerly, in a kiln.function and in Dataset.map, and the error
texts TensorFlow gives for missing, mistyped and malformed features."""
import os

import numpy as np
import pytest

import kiln as tf

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tf_written", "tfrecord")
EXPECTED = np.load(os.path.join(FIX, "expected.npz"))
RECORDS = [EXPECTED[f"record|{i}"].tobytes() for i in range(6)]
F, V = tf.io.FixedLenFeature, tf.io.VarLenFeature
SPEC = {
    "id": F([2], tf.int64),
    "score": F([2], tf.float32),
    "words": V(tf.string),
    "even": V(tf.int64),
    "label": F([], tf.string, default_value="none"),
    "pairs": tf.io.FixedLenSequenceFeature([2], tf.int64, allow_missing=True,
                                           default_value=-7),
}


def expected(key):
    a = EXPECTED[key]
    if key + "|strings" not in EXPECTED:
        return a
    blob, out, i = a.tobytes(), [], 0
    while i < len(blob):
        n = int.from_bytes(blob[i:i + 4], "little")
        out.append(blob[i + 4:i + 4 + n])
        i += 4 + n
    return np.asarray(out, dtype=object)


def check_parsed(parsed):
    for key, value in parsed.items():
        if isinstance(value, tf.SparseTensor):
            for part in ("indices", "values", "dense_shape"):
                np.testing.assert_array_equal(getattr(value, part).numpy(),
                                              expected(f"batch|{key}|{part}"))
        else:
            np.testing.assert_array_equal(value.numpy(), expected(f"batch|{key}"))


def test_matches_tensorflow_on_its_records():
    check_parsed(tf.io.parse_example(tf.constant(RECORDS), SPEC))


def test_in_a_function_and_a_dataset():
    f = tf.function(lambda s: tf.io.parse_example(s, SPEC))
    check_parsed(f(tf.constant(RECORDS)))
    check_parsed(f(tf.constant(RECORDS)))
    dense = {k: v for k, v in SPEC.items() if isinstance(v, F)}
    ds = tf.data.TFRecordDataset(os.path.join(FIX, "gzip.tfrecord"), "GZIP").map(
        lambda s: tf.io.parse_single_example(s, dense)).batch(6)
    (batch,) = list(ds)
    check_parsed(batch)
    ds = tf.data.TFRecordDataset(os.path.join(FIX, "plain.tfrecord")).batch(4).map(
        lambda s: tf.io.parse_example(s, dense))
    assert [b["id"].shape[0] for b in ds] == [4, 2]


def test_single_example_drops_the_batch_dimension():
    out = tf.io.parse_single_example(RECORDS[2], SPEC)
    np.testing.assert_array_equal(out["id"].numpy(), [2, -2000006])
    assert out["label"].numpy() == b"none"
    np.testing.assert_array_equal(out["words"].indices.numpy(), [[0], [1], [2]])
    np.testing.assert_array_equal(out["words"].dense_shape.numpy(), [3])
    assert out["pairs"].shape == [0, 2]
    np.testing.assert_array_equal(tf.io.parse_single_example(RECORDS[3], SPEC)["pairs"].numpy(),
                                  [[0, 1], [2, 3], [4, 5]])
    r = tf.io.parse_single_example(RECORDS[4], {"e": tf.io.RaggedFeature(tf.int64,
                                                                         value_key="even")})
    np.testing.assert_array_equal(r["e"].numpy(), [0, 1, 2, 3])


def example(**features):
    ex = tf.train.Example()
    for key, values in features.items():
        f = ex.features.feature[key]
        if values is None:
            f.SetInParent()  # a Feature with no list: absent for parsing
        elif isinstance(values[0], bytes):
            f.bytes_list.value.extend(values)
        elif isinstance(values[0], float):
            f.float_list.value.extend(values)
        else:
            f.int64_list.value.extend(values)
    return ex.SerializeToString()


A = example(x=[1.0, 2.0], i=[3], s=[b"a", b"b"])
B = example(x=[5.0, 6.0], i=[4, 5, 6])


@pytest.mark.parametrize("spec,want", [
    ({"x": F([2], tf.float32)}, [[1, 2], [5, 6]]),
    ({"x": F([1, 2], tf.float32)}, [[[1, 2]], [[5, 6]]]),
    ({"y": F([2], tf.float32, default_value=[7.0, 8.0])}, [[7, 8], [7, 8]]),
    ({"i": tf.io.FixedLenSequenceFeature([], tf.int64, allow_missing=True,
                                         default_value=-1)}, [[3, -1, -1], [4, 5, 6]]),
    ({"x": tf.io.FixedLenSequenceFeature([2], tf.float32, allow_missing=True)},
     [[[1, 2]], [[5, 6]]]),
    ({"y": tf.io.FixedLenSequenceFeature([3], tf.float32, allow_missing=True)},
     np.zeros((2, 0, 3))),
])
def test_dense_features(spec, want):
    (out,) = tf.io.parse_example([A, B], spec).values()
    np.testing.assert_array_equal(out.numpy(), want)


def test_sparse_and_ragged_features():
    sp = tf.io.parse_example([A, B], {"s": V(tf.string)})["s"]
    np.testing.assert_array_equal(sp.indices.numpy(), [[0, 0], [0, 1]])
    np.testing.assert_array_equal(sp.dense_shape.numpy(), [2, 2])
    rt = tf.io.parse_example([A, B], {"i": tf.io.RaggedFeature(tf.int64,
                                                              row_splits_dtype=tf.int32)})["i"]
    assert rt.to_list() == [[3], [4, 5, 6]] and rt.row_splits.dtype == tf.int32
    sf = tf.io.parse_example([example(ix=[3, 0], v=[1.0, 2.0]), example(ix=[1], v=[9.0])],
                             {"sp": tf.io.SparseFeature("ix", "v", tf.float32, 5)})["sp"]
    np.testing.assert_array_equal(sf.indices.numpy(), [[0, 0], [0, 3], [1, 1]])
    np.testing.assert_array_equal(sf.values.numpy(), [2, 1, 9])
    np.testing.assert_array_equal(sf.dense_shape.numpy(), [2, 5])
    bad = {"sp": tf.io.SparseFeature("ix", "v", tf.float32, 5)}
    with pytest.raises(ValueError, match="^Dimensions 2 and 1 are not compatible$"):
        tf.io.parse_single_example(example(ix=[3, 0], v=[1.0]), bad)
    with pytest.raises(tf.errors.InvalidArgumentError, match="indices"):  # TF: also in a function
        tf.function(lambda s: tf.io.parse_single_example(s, bad))(example(ix=[3, 0], v=[1.0]))


def test_protobuf_merge_rules():
    # A key written twice: the last entry wins; a Feature's last list kind wins.
    twice = example(x=[1.0]) + example(x=[2.0, 3.0])
    np.testing.assert_array_equal(
        tf.io.parse_single_example(twice, {"x": F([2], tf.float32)})["x"].numpy(), [2, 3])
    f = tf.train.Feature(float_list=tf.train.FloatList(value=[1.0]))
    g = tf.train.Feature(int64_list=tf.train.Int64List(value=[7]))
    both = tf.train.Example(features=tf.train.Features(feature={"k": f})).SerializeToString()
    # Appending a second Features with the same key as an int64 list switches its kind.
    both += tf.train.Example(features=tf.train.Features(feature={"k": g})).SerializeToString()
    assert tf.io.parse_single_example(both, {"k": F([], tf.int64)})["k"].numpy() == 7
    # Unpacked repeated values (older writers) read as packed ones.
    unpacked = bytes([0x0a, 0x0e, 0x0a, 0x0c, 0x0a, 0x01]) + b"k" + bytes(
        [0x12, 0x07, 0x1a, 0x05, 0x08, 0x01, 0x08, 0x96, 0x01])
    np.testing.assert_array_equal(
        tf.io.parse_single_example(unpacked, {"k": V(tf.int64)})["k"].values.numpy(), [1, 150])
    # A Feature with no list is absent: the default, or no values.
    empty = example(x=None)
    assert tf.io.parse_single_example(empty, {"x": F([], tf.float32, default_value=1.0)})[
        "x"].numpy() == 1.0
    assert tf.io.parse_single_example(b"", {"x": V(tf.float32)})["x"].values.shape == [0]


@pytest.mark.parametrize("serialized,spec,names,error,match", [
    ([A, B], {"y": F([2], tf.float32)}, None, tf.errors.InvalidArgumentError,
     r"^Name: <unknown>, Feature: y \(data type: float\) is required but could not be found\.$"),
    ([A, B], {"y": F([2], tf.float32)}, ["first", "second"], tf.errors.InvalidArgumentError,
     "^Name: first, Feature: y"),
    ([A, B], {"i": F([1], tf.int64)}, None, tf.errors.InvalidArgumentError,
     r"^Name: <unknown>, Key: i, Index: 1\.  Number of int64 values != expected\.  "
     r"Values size: 3 but output shape: \[1\]$"),
    ([A, B], {"x": F([2], tf.int64)}, None, tf.errors.InvalidArgumentError,
     r"Index: 0\.  Data types don't match\. Data type: float but expected type: int64$"),
    ([A, B], {"x": V(tf.int64)}, None, tf.errors.InvalidArgumentError,
     r"Data types don't match\. Expected type: int64, Actual type: float$"),
    ([A, B], {"i": tf.io.FixedLenSequenceFeature([2], tf.int64, allow_missing=True)}, None,
     tf.errors.InvalidArgumentError,
     r"is not a multiple of stride length\. Saw 1 values but output shape is: \[\?,2\]$"),
    ([A], {"i": tf.io.FixedLenSequenceFeature([], tf.int64)}, None, ValueError,
     "requires allow_missing to be True"),
    ([A], {"x": 3}, None, ValueError, "Unsupported int 3 for key 'x'"),
    ([A], {"i": F([1], tf.int32)}, None, tf.errors.InvalidArgumentError, "int32"),
    ([A], {"i": F([None], tf.int64)}, None, ValueError, "need to be known"),
    ([[A, B]], {"x": F([2], tf.float32)}, None, tf.errors.InvalidArgumentError,
     r"Expected serialized to be a scalar or vector, got shape: \[1,2\]"),
    ([b"\xff\xff"], {"i": V(tf.int64)}, None, tf.errors.InvalidArgumentError,
     r"Could not parse example input, value: '\\377\\377'"),
    ([A, B], {"i": V(tf.int64)}, ["one"], tf.errors.InvalidArgumentError, "len\\(names\\)"),
    ([A], {}, None, ValueError, "features"),
    ([A], {"s": tf.io.SparseFeature(["i", "j"], "x", tf.float32, [3])}, None, ValueError,
     r"^sp_ids and vocab_size have to have equal lengths\.$"),
    ([A], {"s": tf.io.SparseFeature(["i"], "x", tf.float32, 3)}, None, TypeError,
     r"^vocab_size has to be a list of Tensors or Python ints\. Found <class 'int'>$"),
    ([A], {"s": tf.io.SparseFeature("i", "x", tf.float32, [3])}, None, TypeError,
     r"^vocab_size has to be a Tensor or Python int\. Found <class 'list'>$"),
    ([A], {"s": tf.io.SparseFeature([], "x", tf.float32, [3])}, None, ValueError,
     r"^Missing index_key for SparseFeature SparseFeature\(index_key=\[\], value_key='x', "
     r"dtype=tf\.float32, size=\[3\], already_sorted=False\)\.$"),
])
def test_errors(serialized, spec, names, error, match):
    with pytest.raises(error, match=match):
        tf.io.parse_example(serialized, spec, example_names=names)


def test_errors_inside_a_function():
    f = tf.function(lambda s: tf.io.parse_example(s, {"y": F([2], tf.float32)}))
    with pytest.raises(tf.errors.InvalidArgumentError, match="is required"):
        f(tf.constant([A]))


def test_malformed_bytes_never_crash():
    rng = np.random.default_rng(1)
    spec = {"x": V(tf.float32), "i": V(tf.int64), "s": V(tf.string), "d": F([2], tf.float32,
                                                                        default_value=[0., 0.])}
    for _ in range(300):
        data = bytearray(RECORDS[rng.integers(6)] if rng.random() < 0.7 else B)
        for _ in range(rng.integers(1, 4)):
            data[rng.integers(len(data))] = rng.integers(256)
        data = bytes(data[:rng.integers(len(data) + 1)])
        try:
            tf.io.parse_single_example(data, spec)
        except tf.errors.InvalidArgumentError:
            pass


def test_example_messages():
    ex = tf.train.Example()
    ex.features.feature["a"].int64_list.value.append(3)
    assert 'key: "a"' in str(ex) and "int64_list" in str(ex)
    back = tf.train.Example.FromString(ex.SerializeToString())
    assert back == ex and back.features.feature["a"].WhichOneof("kind") == "int64_list"
    # The bytes TensorFlow wrote parse into kiln's classes unchanged.
    first = tf.train.Example.FromString(RECORDS[3])
    assert list(first.features.feature["id"].int64_list.value) == [3, -3000009]
    assert first.SerializeToString() == RECORDS[3] or tf.train.Example.FromString(
        first.SerializeToString()) == first
    seq = tf.train.SequenceExample()
    seq.context.feature["n"].float_list.value.append(0.5)
    seq.feature_lists.feature_list["w"].feature.add().bytes_list.value.append(b"x")
    assert tf.train.SequenceExample.FromString(seq.SerializeToString()) == seq
    for name in ("Features", "Feature", "FeatureList", "FeatureLists", "BytesList",
                 "FloatList", "Int64List"):
        assert getattr(tf.train, name).DESCRIPTOR.full_name == f"tensorflow.{name}"
    with pytest.raises(AttributeError):
        tf.train.NotAMessage  # noqa: B018
