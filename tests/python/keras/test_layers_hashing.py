"""Hashing and HashedCrossing: bins, masks, salts, output modes, dtypes, ragged and sparse
inputs, configs, tf.function / dataset.map and errors. Every expected value below is a
literal printed by TensorFlow 2.21 + Keras 3.15 for the same call."""
import numpy as np
import pytest

import kiln as tf
from kiln.keras.layers.hashing import fingerprint64

layers = tf.keras.layers

LETTERS = np.array([["A"], ["B"], ["C"], ["D"], ["E"]])
INTS = np.array([[7, 0, 5, 9, -3], [3, 11, 1, -8, 100]])


@pytest.mark.parametrize("kwargs,inputs,want", [
    ({}, LETTERS, [[1], [0], [1], [1], [2]]),
    ({"salt": [133, 137]}, LETTERS, [[1], [2], [1], [0], [2]]),
    ({"salt": 133}, LETTERS, [[0], [0], [2], [1], [0]]),
    ({"mask_value": ""}, np.array([["A"], ["B"], [""], ["C"], ["D"]]),
     [[1], [1], [0], [2], [2]]),
])
def test_hashing_strings_keras_examples(kwargs, inputs, want):
    out = layers.Hashing(num_bins=3, **kwargs)(inputs)
    assert out.dtype.name == "int64"
    np.testing.assert_array_equal(out.numpy(), want)


@pytest.mark.parametrize("kwargs,inputs,want", [
    ({"num_bins": 5}, INTS, [[3, 0, 1, 0, 4], [1, 4, 4, 1, 0]]),
    ({"num_bins": 5, "mask_value": 0}, INTS, [[1, 0, 4, 2, 4], [2, 4, 2, 4, 4]]),
    # floats are cast to int64 (1.7 -> 1) before hashing; the mask compares the floats
    ({"num_bins": 5}, np.array([1.7, -2.5, 0.0, 3.0], "float32"), [4, 0, 0, 1]),
    ({"num_bins": 5, "mask_value": 1.7}, np.array([1.7, -2.5, 0.0, 1.0], "float32"),
     [0, 2, 4, 2]),
    ({"num_bins": 7}, np.array([1e12, -7.9]), [5, 2]),
    ({"num_bins": 7}, np.array([1, -1, 127], "int8"), [5, 4, 4]),
    ({"num_bins": 5}, np.array([True, False]), [0, 2]),
    ({"num_bins": 1, "mask_value": "a"}, np.array(["a", "b"]), [0, 0]),  # no mask bin
    ({"num_bins": 1000003}, np.array(["hello", "world", "x"]), [497363, 364925, 598337]),
    ({"num_bins": 5}, np.array(3), 1),
    ({"num_bins": 5}, "abc", 0),
])
def test_hashing_int_mode(kwargs, inputs, want):
    np.testing.assert_array_equal(layers.Hashing(**kwargs)(inputs).numpy(), want)


def test_hashing_int32_dtype():
    out = layers.Hashing(5, dtype="int32")(INTS.astype("int32"))
    assert out.dtype.name == "int32"
    np.testing.assert_array_equal(out.numpy(), [[3, 0, 1, 0, 4], [1, 4, 4, 1, 0]])


@pytest.mark.parametrize("mode,inputs,want", [
    ("multi_hot", INTS, [[1, 1, 0, 1, 1], [1, 1, 0, 0, 1]]),
    ("count", INTS, [[2, 1, 0, 1, 1], [1, 2, 0, 0, 2]]),
    ("count", np.array([1, 2, 3, 3]), [0, 2, 0, 0, 2]),
    ("count", np.array(3), [0, 1, 0, 0, 0]),
    ("one_hot", np.array([[1], [2], [3]]), [[0, 0, 0, 0, 1], [0, 0, 0, 0, 1], [0, 1, 0, 0, 0]]),
    ("one_hot", np.array([1, 2, 3]), [[0, 0, 0, 0, 1], [0, 0, 0, 0, 1], [0, 1, 0, 0, 0]]),
    ("one_hot", np.array([[1, 2], [3, 4]]),
     [[[0, 0, 0, 0, 1], [0, 0, 0, 0, 1]], [[0, 1, 0, 0, 0], [0, 0, 0, 1, 0]]]),
    ("count", np.arange(12).reshape(2, 3, 2),  # rank 3: axis 1 counted
     [[[1, 0, 0, 1, 1], [0, 2, 0, 0, 1]], [[0, 0, 3, 0, 0], [1, 0, 0, 1, 1]]]),
    ("multi_hot", np.arange(12).reshape(2, 3, 2),
     [[[1, 0, 0, 1, 1], [0, 1, 0, 0, 1]], [[0, 0, 1, 0, 0], [1, 0, 0, 1, 1]]]),
])
def test_hashing_vector_modes(mode, inputs, want):
    out = layers.Hashing(5, output_mode=mode)(inputs)
    assert out.dtype.name == "float32"
    np.testing.assert_array_equal(out.numpy(), want)
    assert tuple(out.shape) == np.asarray(want).shape


def test_hashing_sparse_outputs_and_dtype():
    out = layers.Hashing(5, output_mode="count", sparse=True)(INTS)
    assert isinstance(out, tf.sparse.SparseTensor)
    assert out.indices.numpy().tolist() == [[0, 0], [0, 1], [0, 3], [0, 4], [1, 0], [1, 1],
                                            [1, 4]]
    assert out.values.numpy().tolist() == [2.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0]
    assert out.dense_shape.numpy().tolist() == [2, 5]
    one = layers.Hashing(5, output_mode="one_hot", sparse=True)(np.array([1, 2, 3]))
    assert one.indices.numpy().tolist() == [[0, 4], [1, 4], [2, 1]]
    multi = layers.Hashing(5, output_mode="multi_hot", dtype="int32")(INTS)
    assert multi.dtype.name == "int32"
    np.testing.assert_array_equal(multi.numpy(), [[1, 1, 0, 1, 1], [1, 1, 0, 0, 1]])


def test_hashing_ragged_and_sparse_inputs():
    rag = layers.Hashing(5)(tf.ragged.constant([["a", "b"], ["c"]]))
    assert isinstance(rag, tf.RaggedTensor) and rag.to_list() == [[4, 2], [2]]
    counts = layers.Hashing(5, output_mode="count")(tf.ragged.constant([["a", "b", "a"], ["c"]]))
    np.testing.assert_array_equal(counts.numpy(), [[0, 0, 1, 0, 2], [0, 0, 1, 0, 0]])
    multi = layers.Hashing(5, output_mode="multi_hot", sparse=True)(
        tf.ragged.constant([["a", "b", "a"], ["c"]]))
    assert multi.indices.numpy().tolist() == [[0, 2], [0, 4], [1, 2]]
    sp = tf.sparse.SparseTensor([[0, 0], [1, 2], [1, 1]], ["a", "b", "b"], [2, 3])
    hashed = layers.Hashing(5)(sp)
    assert hashed.values.numpy().tolist() == [4, 2, 2]
    assert hashed.indices.numpy().tolist() == [[0, 0], [1, 2], [1, 1]]
    np.testing.assert_array_equal(layers.Hashing(5, output_mode="count")(sp).numpy(),
                                  [[0, 0, 0, 0, 1], [0, 0, 2, 0, 0]])


def test_hashing_config_function_and_dataset():
    layer = layers.Hashing(3, salt=4, mask_value="m", output_mode="count")
    cfg = layer.get_config()
    policy = {"module": "keras", "class_name": "DTypePolicy", "registered_name": None}
    assert cfg["salt"] == [4, 4] and cfg["mask_value"] == "m" and \
        cfg["dtype"] == {**policy, "config": {"name": "float32"}}  # TF 2.21's DTypePolicy
    assert cfg["num_bins"] == 3 and cfg["output_mode"] == "count" and cfg["sparse"] is False
    assert layers.Hashing(3).get_config()["dtype"] == {**policy, "config": {"name": "int64"}}
    clone = layers.Hashing.from_config(cfg)
    x = tf.constant([["a", "m", "b", "zz"]])
    np.testing.assert_array_equal(clone(x).numpy(), layer(x).numpy())
    fast = layers.Hashing(3)
    fn = tf.function(lambda t: fast(t))
    np.testing.assert_array_equal(fn(tf.constant(LETTERS)).numpy(), [[1], [0], [1], [1], [2]])
    ds = tf.data.Dataset.from_tensor_slices(LETTERS[:, 0]).map(fast).batch(5)
    assert [b.numpy().tolist() for b in ds] == [[1, 0, 1, 1, 2]]
    inp = tf.keras.Input((1,), dtype="string")
    out = layers.Hashing(4, output_mode="one_hot")(inp)
    assert tuple(out.shape) == (None, 4) and out.dtype.name == "float32"


@pytest.mark.parametrize("kwargs,err", [
    ({"num_bins": 0}, "cannot be `None` or non-positive values. Received: num_bins=0."),
    ({"num_bins": None}, "Received: num_bins=None"),
    ({"num_bins": 3, "dtype": "float32"}, "`dtype` should be an integer type"),
    ({"num_bins": 3, "output_mode": "tf_idf"},
     r"Expected one of \('int', 'one_hot', 'multi_hot', 'count'\)"),
    ({"num_bins": 3, "sparse": True}, "`sparse` may only be true if `output_mode` is"),
    ({"num_bins": 3, "salt": "x"},
     "The `salt` argument for `Hashing` can only be a tuple of size 2 integers"),
    ({"num_bins": 3, "salt": [1, 2, 3]}, r"Received: salt=\[1, 2, 3\]"),
])
def test_hashing_errors(kwargs, err):
    with pytest.raises(ValueError, match=err):
        layers.Hashing(**kwargs)


def test_fingerprint64_equals_tf_fingerprint():
    # tf.fingerprint's 8 bytes (little-endian) as int64, from TF 2.21
    got = fingerprint64(tf.constant(["a", "", "hello world"])).numpy().tolist()
    assert got == [-5528939962900187677, -7286425919675154353, 6381520714923946011]


CROSS_A = np.array(["A", "B", "A", "B", "A"])
CROSS_B = np.array([101, 101, 101, 102, 102])


@pytest.mark.parametrize("num_bins,inputs,want", [
    (5, (CROSS_A, CROSS_B), [1, 4, 1, 1, 3]),
    (5, (CROSS_A[:, None], CROSS_B[:, None]), [[1], [4], [1], [1], [3]]),
    (1000, (CROSS_A, CROSS_B, CROSS_B.astype("int32")), [326, 106, 326, 193, 907]),
    (97, (np.array([-1, -2**63, 2**63 - 1]), np.array(["", "x", "yy"])), [89, 55, 68]),
    (11, (np.array([1, 255], "uint8"), np.array([3, 4], "int8")), [1, 8]),
    (2**62 + 7, (CROSS_A, CROSS_B), [1126068114334019069, 3517223211217709843,
                                     1126068114334019069, 3262559069118245843,
                                     4231076453057403523]),
    (0, (CROSS_A, CROSS_B), [1126068114334019084, 8128909229645097754, 1126068114334019084,
                             7874245087545633769, 4231076453057403523]),
    (5, (tf.constant("A"), tf.constant(101)), 1),
])
def test_hashed_crossing_int(num_bins, inputs, want):
    out = layers.HashedCrossing(num_bins)(inputs)
    assert out.dtype.name == "int64"
    np.testing.assert_array_equal(out.numpy(), want)


def test_hashed_crossing_one_hot_sparse_and_dtype():
    want = [[0, 1, 0, 0, 0], [0, 0, 0, 0, 1], [0, 1, 0, 0, 0], [0, 1, 0, 0, 0],
            [0, 0, 0, 1, 0]]
    for a, b in [(CROSS_A, CROSS_B), (CROSS_A[:, None], CROSS_B[:, None])]:
        out = layers.HashedCrossing(5, output_mode="one_hot")((a, b))
        assert out.dtype.name == "float32"
        np.testing.assert_array_equal(out.numpy(), want)
    sp = layers.HashedCrossing(5, output_mode="one_hot", sparse=True)((CROSS_A, CROSS_B))
    assert sp.indices.numpy().tolist() == [[0, 1], [1, 4], [2, 1], [3, 1], [4, 3]]
    scalar = layers.HashedCrossing(5, output_mode="one_hot")((tf.constant("A"),
                                                              tf.constant(101)))
    np.testing.assert_array_equal(scalar.numpy(), [[0, 1, 0, 0, 0]])
    small = layers.HashedCrossing(5, output_mode="one_hot", dtype="int32")((CROSS_A, CROSS_B))
    assert small.dtype.name == "int32"
    np.testing.assert_array_equal(small.numpy(), want)
    ints = layers.HashedCrossing(5, dtype="int32")((CROSS_A, CROSS_B))
    assert ints.dtype.name == "int32" and ints.numpy().tolist() == [1, 4, 1, 1, 3]


def test_hashed_crossing_config_model_function_and_dataset():
    layer = layers.HashedCrossing(5)
    assert layer.get_config() == {"num_bins": 5, "output_mode": "int", "sparse": False,
                                  "name": layer.name, "dtype": "int64"}
    cfg = layers.HashedCrossing(5, output_mode="one_hot", sparse=True, name="x").get_config()
    assert cfg == {"num_bins": 5, "output_mode": "one_hot", "sparse": True, "name": "x",
                   "dtype": "float32"}
    clone = layers.HashedCrossing.from_config(layer.get_config())
    assert clone((CROSS_A, CROSS_B)).numpy().tolist() == [1, 4, 1, 1, 3]
    fn = tf.function(lambda a, b: layer((a, b)))
    assert fn(tf.constant(CROSS_A), tf.constant(CROSS_B)).numpy().tolist() == [1, 4, 1, 1, 3]
    ds = tf.data.Dataset.from_tensor_slices((CROSS_A, CROSS_B))
    ds = ds.map(lambda a, b: layer((a, b))).batch(5)
    assert [b.numpy().tolist() for b in ds] == [[1, 4, 1, 1, 3]]
    a, b = tf.keras.Input((1,), dtype="string"), tf.keras.Input((1,), dtype="int64")
    out = layers.HashedCrossing(7, output_mode="one_hot")([a, b])
    assert tuple(out.shape) == (None, 7)
    model = tf.keras.Model([a, b], out)
    np.testing.assert_array_equal(model([np.array([["A"], ["B"]]), np.array([[101], [102]])]),
                                  [[0, 0, 0, 0, 1, 0, 0], [1, 0, 0, 0, 0, 0, 0]])


@pytest.mark.parametrize("inputs,err", [
    (CROSS_A, "should be called on a list or tuple of inputs"),
    ((CROSS_A,), "should be called on at least two inputs"),
    ((np.array([["a", "b"]]), np.array([["a", "b"]])),
     r"should have shape `\(\)`, `\(batch_size\)` or `\(batch_size, 1\)`"),
    ((CROSS_A, CROSS_B[:3]), "should have equal shape"),
    ((CROSS_A, CROSS_B.astype("float32")), "should have an integer or string dtype"),
])
def test_hashed_crossing_errors(inputs, err):
    with pytest.raises(ValueError, match=err):
        layers.HashedCrossing(5)(inputs)


def test_hashed_crossing_bad_output_mode():
    with pytest.raises(ValueError, match="Unknown value for `output_mode` argument of "
                                         "HashedCrossing"):
        layers.HashedCrossing(5, output_mode="count")
