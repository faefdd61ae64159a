"""StringLookup, IntegerLookup and TextVectorization: Keras 3's index layout, adapt order,
output modes, masks, OOV handling, inversion, config and errors (expected values written down
from TF 2.21's outputs and the formulas of Keras' IndexLookup)."""
import numpy as np
import pytest

import kiln as tf

layers = tf.keras.layers


def test_string_lookup_int_mode_with_mask_and_oov():
    layer = layers.StringLookup(vocabulary=["a", "b", "c"], mask_token="")
    x = np.array([["a", "z", ""], ["c", "c", "b"]])
    out = layer(tf.constant(x))
    assert out.dtype.name == "int64"
    np.testing.assert_array_equal(out.numpy(), [[2, 1, 0], [4, 4, 3]])
    assert layer.get_vocabulary() == ["", "[UNK]", "a", "b", "c"]
    assert layer.vocabulary_size() == 5
    fn = tf.function(lambda t: layer(t))
    np.testing.assert_array_equal(fn(tf.constant(x)).numpy(), out.numpy())


@pytest.mark.parametrize("mode,want", [
    ("multi_hot", [[1, 1, 0, 0], [0, 0, 1, 1]]),
    ("count", [[1, 1, 0, 0], [0, 0, 1, 2]]),
    ("tf_idf", [[2 * (0.5 + 1 + 2) / 3, 0.5, 0, 0], [0, 0, 1, 4]]),
])
def test_string_lookup_vector_modes(mode, want):
    kw = {"idf_weights": [0.5, 1.0, 2.0]} if mode == "tf_idf" else {"mask_token": ""}
    layer = layers.StringLookup(vocabulary=["a", "b", "c"], output_mode=mode, **kw)
    out = layer(tf.constant(np.array([["a", "z", ""], ["c", "c", "b"]])))
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    # Without a mask index in these modes the OOV index comes first.
    assert layer.get_vocabulary() == ["[UNK]", "a", "b", "c"]


def test_one_hot_and_pad_to_max_tokens():
    one = layers.StringLookup(vocabulary=["a", "b", "c"], output_mode="one_hot")
    np.testing.assert_array_equal(one(tf.constant(np.array(["a", "z", "c"]))).numpy(),
                                  [[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1]])
    pad = layers.StringLookup(vocabulary=["a"], output_mode="count", max_tokens=4,
                              pad_to_max_tokens=True)
    assert pad(tf.constant(np.array([["a", "a"]]))).shape == (1, 4)


def test_adapt_orders_by_count_then_reverse_term():
    layer = layers.StringLookup()
    layer.adapt(np.array([["b", "a", "b"], ["c", "a", "d"]]))
    assert layer.get_vocabulary() == ["[UNK]", "b", "a", "d", "c"]  # as TF 2.21
    small = layers.StringLookup(max_tokens=3)
    small.adapt(tf.data.Dataset.from_tensor_slices(np.array(["b", "a", "b", "c", "a"])).batch(2))
    assert small.get_vocabulary() == ["[UNK]", "b", "a"]
    idf = layers.StringLookup(output_mode="tf_idf")
    idf.adapt(np.array([["a", "b"], ["a", "a"]]))
    # idf = log(1 + documents / (1 + documents with the term)); OOV gets their mean.
    w = np.log(1 + 2 / (1 + np.array([2.0, 1.0])))
    np.testing.assert_allclose(idf(tf.constant(np.array([["a", "a", "b", "q"]]))).numpy(),
                               [[w.mean(), 2 * w[0], w[1]]], rtol=1e-6)
    with pytest.raises(ValueError, match="Cannot adapt layer"):
        layers.StringLookup(vocabulary=["a"]).adapt(np.array(["a"]))


def test_integer_lookup_mask_oov_buckets_and_invert():
    layer = layers.IntegerLookup(vocabulary=[7, 3, 9], mask_token=0)
    np.testing.assert_array_equal(layer(tf.constant([[7, 0, 5, 9]])).numpy(), [[2, 0, 1, 4]])
    assert layer.get_vocabulary() == [0, -1, 7, 3, 9]
    two = layers.IntegerLookup(vocabulary=[7], num_oov_indices=2)
    np.testing.assert_array_equal(two(tf.constant([7, 4, 5, -3])).numpy(), [2, 0, 1, 1])
    inv = layers.IntegerLookup(vocabulary=[7, 3, 9], invert=True)
    np.testing.assert_array_equal(inv(tf.constant([[0, 1, 2, 3, 8]])).numpy(),
                                  [[-1, 7, 3, 9, -1]])
    sinv = layers.StringLookup(vocabulary=["a", "b"], invert=True)
    assert sinv(tf.constant([1, 0, 2])).numpy().tolist() == [b"a", b"[UNK]", b"b"]
    strict = layers.IntegerLookup(vocabulary=[1, 2], num_oov_indices=0)
    np.testing.assert_array_equal(strict(tf.constant([2, 1])).numpy(), [1, 0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_oov_indices=0"):
        strict(tf.constant([5]))


def test_lookup_config_and_errors(tmp_path):
    cfg = layers.IntegerLookup(vocabulary=[7, 3], mask_token=0).get_config()
    assert cfg["vocabulary"] == [7, 3] and cfg["vocabulary_size"] == 4
    assert cfg["vocabulary_dtype"] == "int64" and cfg["oov_method"] == "floormod"
    scfg = layers.StringLookup(vocabulary=["a"]).get_config()
    assert scfg["encoding"] == "utf-8" and "vocabulary_dtype" not in scfg
    clone = layers.StringLookup.from_config(scfg)
    assert clone.get_vocabulary() == ["[UNK]", "a"]
    path = tmp_path / "vocab.txt"
    path.write_text("x\ny\n")
    assert layers.StringLookup(vocabulary=str(path)).get_vocabulary() == ["[UNK]", "x", "y"]
    with pytest.raises(ValueError, match="repeated"):
        layers.StringLookup(vocabulary=["a", "a"])
    with pytest.raises(ValueError, match="`output_mode` must be `'int'`"):
        layers.StringLookup(invert=True, output_mode="count")
    with pytest.raises(ValueError, match="idf_weights"):
        layers.StringLookup(vocabulary=["a"], output_mode="tf_idf")
    with pytest.raises(ValueError, match="max_tokens"):
        layers.IntegerLookup(max_tokens=1)


TEXT = np.array(["The cat sat.", "A dog, the dog!", "", "cat  and DOG dog", "zebra?"])


def test_text_vectorization_int_adapt_and_sequence_length():
    layer = layers.TextVectorization(output_sequence_length=5)
    layer.adapt(TEXT)
    # dog 4, the 2, cat 2 (ties: reverse order), then the singletons.
    assert layer.get_vocabulary() == ["", "[UNK]", "dog", "the", "cat", "zebra", "sat", "and",
                                      "a"]
    out = layer(tf.constant(TEXT)).numpy()
    np.testing.assert_array_equal(out, [[3, 4, 6, 0, 0], [8, 2, 3, 2, 0], [0] * 5,
                                        [4, 7, 2, 2, 0], [5, 0, 0, 0, 0]])
    free = layers.TextVectorization(vocabulary=["the", "dog", "cat"])
    np.testing.assert_array_equal(free(tf.constant(TEXT[:2])).numpy(),
                                  [[2, 4, 1, 0], [1, 3, 2, 3]])


def test_text_vectorization_vector_modes_and_config():
    multi = layers.TextVectorization(max_tokens=5, output_mode="multi_hot")
    multi.adapt(TEXT)
    assert multi.get_vocabulary() == ["[UNK]", "dog", "the", "cat", "zebra"]
    np.testing.assert_array_equal(multi(tf.constant(TEXT[:2])).numpy(),
                                  [[1, 0, 1, 1, 0], [1, 1, 1, 0, 0]])
    chars = layers.TextVectorization(split="character", standardize=None, output_mode="count",
                                     vocabulary=["a", "b"])
    np.testing.assert_array_equal(chars(tf.constant(["abba!"])).numpy(), [[1, 2, 2]])
    cfg = multi.get_config()
    assert cfg["max_tokens"] == 5 and cfg["standardize"] == "lower_and_strip_punctuation"
    assert cfg["vocabulary_size"] == 5 and cfg["split"] == "whitespace"
    with pytest.raises(ValueError, match="output_sequence_length"):
        layers.TextVectorization(output_mode="count", output_sequence_length=3)
    with pytest.raises(ValueError, match="last shape dimension must be 1"):
        layers.TextVectorization(vocabulary=["a"])(tf.constant([["a", "b"]]))


# Several OOV indices. Every expected value below is a literal printed by TF 2.21 + Keras 3.15.
WORDS = np.array([["a", "z", "", "b"], ["c", "q", "x", "yy"]])
NUMBERS = np.array([[7, 0, 5, 9, -3], [3, 11, 1, -8, 100]])


@pytest.mark.parametrize("kwargs,want", [
    ({}, [[3, 1, 2, 4], [5, 2, 2, 1]]),  # FarmHash buckets
    ({"mask_token": ""}, [[4, 2, 0, 5], [6, 3, 3, 2]]),
    ({"salt": [7, 9]}, [[3, 0, 0, 4], [5, 2, 1, 0]]),  # SipHash buckets
    ({"salt": 5}, [[3, 2, 2, 4], [5, 1, 2, 1]]),
    ({"salt": 5, "oov_method": "farmhash"}, [[3, 2, 2, 4], [5, 1, 2, 1]]),
])
def test_string_lookup_several_oov_indices(kwargs, want):
    layer = layers.StringLookup(vocabulary=["a", "b", "c"], num_oov_indices=3, **kwargs)
    np.testing.assert_array_equal(layer(tf.constant(WORDS)).numpy(), want)
    fn = tf.function(lambda t: layer(t))
    np.testing.assert_array_equal(fn(tf.constant(WORDS)).numpy(), want)
    ds = tf.data.Dataset.from_tensor_slices(WORDS).map(layer)
    assert [b.numpy().tolist() for b in ds] == want


@pytest.mark.parametrize("kwargs,want", [
    ({}, [[3, 0, 2, 5, 0], [4, 2, 1, 1, 1]]),  # floormod
    ({"mask_token": 0}, [[4, 0, 3, 6, 1], [5, 3, 2, 2, 2]]),
    ({"oov_method": "farmhash"}, [[3, 1, 1, 5, 0], [4, 1, 0, 2, 0]]),
    ({"oov_method": "farmhash", "salt": [1, 2]}, [[3, 2, 0, 5, 2], [4, 1, 2, 0, 2]]),
    ({"oov_method": "farmhash", "salt": 42}, [[3, 2, 0, 5, 1], [4, 0, 0, 2, 0]]),
])
def test_integer_lookup_several_oov_indices(kwargs, want):
    layer = layers.IntegerLookup(vocabulary=[7, 3, 9], num_oov_indices=3, **kwargs)
    np.testing.assert_array_equal(layer(tf.constant(NUMBERS)).numpy(), want)
    np.testing.assert_array_equal(layer(tf.constant(NUMBERS, "int32")).numpy(), want)
    fn = tf.function(lambda t: layer(t))
    np.testing.assert_array_equal(fn(tf.constant(NUMBERS)).numpy(), want)
    clone = layers.IntegerLookup.from_config(layer.get_config())
    np.testing.assert_array_equal(clone(tf.constant(NUMBERS)).numpy(), want)


def test_several_oov_indices_output_modes_and_ragged():
    def lookup(n, **kw):
        return layers.StringLookup(vocabulary=["a", "b", "c"], num_oov_indices=n, **kw)
    np.testing.assert_array_equal(lookup(3, output_mode="count", mask_token="")(WORDS).numpy(),
                                  [[0, 1, 0, 1, 1, 0], [0, 1, 2, 0, 0, 1]])
    np.testing.assert_array_equal(
        lookup(2, output_mode="one_hot")(np.array(["a", "z", "q", "x"])).numpy(),
        [[0, 0, 1, 0, 0], [0, 1, 0, 0, 0], [0, 1, 0, 0, 0], [1, 0, 0, 0, 0]])
    tfidf = lookup(2, output_mode="tf_idf", idf_weights=[1.0, 2.0, 3.0])(WORDS)
    np.testing.assert_allclose(tfidf.numpy(), [[0, 4, 1, 2, 0], [2, 4, 0, 0, 3]])
    multi = layers.IntegerLookup(vocabulary=[7, 3, 9], num_oov_indices=2,
                                 output_mode="multi_hot", oov_method="farmhash")(NUMBERS)
    np.testing.assert_array_equal(multi.numpy(), [[0, 1, 1, 0, 1], [0, 1, 0, 1, 0]])
    rag = tf.ragged.constant([["a", "z"], ["q"]])
    assert lookup(3)(rag).to_list() == [[3, 1], [2]]
    np.testing.assert_array_equal(lookup(3, output_mode="count")(rag).numpy(),
                                  [[0, 1, 0, 1, 0, 0], [0, 0, 1, 0, 0, 0]])
    assert int(lookup(3)(tf.constant("zz")).numpy()) == 1
    # one OOV index: the salt is kept but unused
    np.testing.assert_array_equal(
        layers.StringLookup(vocabulary=["a"], salt=3)(WORDS).numpy(),
        [[1, 0, 0, 0], [0, 0, 0, 0]])


def test_several_oov_indices_vocabulary_invert_and_adapt():
    layer = layers.StringLookup(vocabulary=["a", "b", "c"], num_oov_indices=3, mask_token="")
    assert layer.get_vocabulary() == ["", "[UNK]", "[UNK]", "[UNK]", "a", "b", "c"]
    lead = layers.StringLookup(vocabulary=["", "[UNK]", "[UNK]", "a", "b"], num_oov_indices=2,
                               mask_token="")
    assert lead.get_vocabulary() == ["", "[UNK]", "[UNK]", "a", "b"]
    inv = layers.StringLookup(vocabulary=["a", "b", "c"], num_oov_indices=3, mask_token="",
                              invert=True)
    assert inv(tf.constant([[0, 1, 2, 3, 4, 5, 6, 7, -1]])).numpy().tolist() == [
        [b"", b"[UNK]", b"[UNK]", b"[UNK]", b"a", b"b", b"c", b"[UNK]", b"[UNK]"]]
    iinv = layers.IntegerLookup(vocabulary=[7, 3, 9], num_oov_indices=2, invert=True)
    assert iinv(tf.constant([0, 1, 2, 3, 4, 5])).numpy().tolist() == [-1, -1, 7, 3, 9, -1]
    adapted = layers.StringLookup(num_oov_indices=2, max_tokens=5)
    adapted.adapt(WORDS)
    assert adapted.get_vocabulary() == ["[UNK]", "[UNK]", "z", "yy", "x"]
    np.testing.assert_array_equal(adapted(WORDS).numpy(), [[1, 2, 1, 0], [0, 1, 4, 3]])


def test_oov_method_and_salt_config_and_errors():
    cfg = layers.IntegerLookup(vocabulary=[7, 3, 9], num_oov_indices=3, oov_method="farmhash",
                               salt=(1, 2)).get_config()
    assert cfg["oov_method"] == "farmhash" and cfg["salt"] == [1, 2]
    scfg = layers.StringLookup(vocabulary=["a"], num_oov_indices=3, salt=3).get_config()
    assert scfg["salt"] == [3, 3] and scfg["oov_method"] == "floormod"
    assert layers.StringLookup.from_config(scfg).salt == [3, 3]
    with pytest.raises(ValueError, match=r"`salt` can only be used when "
                                         r"`oov_method='farmhash'`. Received: "
                                         r"oov_method=floormod"):
        layers.IntegerLookup(vocabulary=[7], num_oov_indices=3, salt=42)
    for cls in (layers.IntegerLookup, layers.StringLookup):
        with pytest.raises(ValueError, match=rf"Unknown value for `oov_method` argument of "
                                             rf"{cls.__name__}. Allowed values are: "
                                             r"\('floormod', 'farmhash'\). Received: "
                                             r"oov_method=mod"):
            cls(num_oov_indices=3, oov_method="mod")
    with pytest.raises(ValueError, match=r"The `salt` argument for `IndexLookup` can only be "
                                         r"a tuple of 2 integers, or a single integer. "
                                         r"Received: salt=\[1, 2, 3\]."):
        layers.StringLookup(num_oov_indices=3, salt=[1, 2, 3])
    with pytest.raises(ValueError, match="Only `vocabulary_dtype='int64'` is supported"):
        layers.IntegerLookup(vocabulary_dtype="int32")
    with pytest.raises(ValueError, match=r"Unknown value for `output_mode` argument of "
                                         r"StringLookup. Allowed values are: \('int', "):
        layers.StringLookup(output_mode="foo")
