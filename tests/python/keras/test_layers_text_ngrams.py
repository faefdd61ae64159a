"""TextVectorization's ngrams (tf.strings.ngrams' order, " " between tokens, before the
lookup) and ragged outputs. Expected vocabularies and outputs were written down from TF 2.21
(Keras 3.15.1) on the same text."""
import numpy as np
import pytest

import kiln as tf
from kiln.keras.layers.text_vectorization import ngrams

layers = tf.keras.layers
TEXT = np.array(['The cat sat.', 'A dog, the dog!', '', 'cat  and DOG dog', 'zebra?'])
VOCAB_2 = ["", "[UNK]", "dog", "the", "cat", "zebra", "the dog", "the cat", "sat", "dog the",
           "dog dog", "cat sat", "cat and", "and dog", "and", "a dog", "a"]


def _strings(t):
    return [[v.decode() for v in row] for row in t.to_list()]


@pytest.mark.parametrize("widths,want", [
    ((1,), [["a", "b", "c"], [], ["d"]]),
    ((2,), [["a b", "b c"], [], []]),
    ((1, 3), [["a", "b", "c", "a b c"], [], ["d"]]),
    ((3, 1), [["a b c", "a", "b", "c"], [], ["d"]]),
    ((2, 2), [["a b", "b c", "a b", "b c"], [], []]),
])
def test_ngrams_of_ragged_rows(widths, want):
    rt = tf.ragged.constant([["a", "b", "c"], [], ["d"]])
    assert _strings(ngrams(rt, widths)) == want


def test_ngrams_of_dense_tokens():
    dense = ngrams(tf.constant([["a", "b", "c"], ["d", "e", "f"]]), (1, 2))
    np.testing.assert_array_equal(dense.numpy().astype(str), [["a", "b", "c", "a b", "b c"],
                                                              ["d", "e", "f", "d e", "e f"]])
    one = ngrams(tf.constant(["a", "b", "c"]), (2,))  # a 1-D tensor is one sequence
    assert one.numpy().tolist() == [b"a b", b"b c"]
    assert ngrams(tf.constant([["a"], ["b"]]), (2,)).shape == (2, 0)


def test_int_ngrams_adapt_matches_tf():
    layer = layers.TextVectorization(ngrams=2)  # 2 means (1, 2)
    layer.adapt(TEXT)
    assert layer.get_vocabulary() == VOCAB_2
    np.testing.assert_array_equal(layer(tf.constant(TEXT)).numpy(), [
        [3, 4, 8, 7, 11, 0, 0], [16, 2, 3, 2, 15, 9, 6], [0] * 7, [4, 14, 2, 2, 12, 13, 10],
        [5, 0, 0, 0, 0, 0, 0]])
    only = layers.TextVectorization(ngrams=(2,))
    only.adapt(TEXT)
    assert only.get_vocabulary() == ["", "[UNK]", "the dog", "the cat", "dog the", "dog dog",
                                     "cat sat", "cat and", "and dog", "a dog"]
    np.testing.assert_array_equal(only(tf.constant(TEXT)).numpy(), [
        [3, 6, 0], [9, 4, 2], [0, 0, 0], [7, 8, 5], [0, 0, 0]])


def test_ngram_order_follows_the_widths():
    fwd = layers.TextVectorization(ngrams=(1, 3))
    fwd.adapt(TEXT)
    np.testing.assert_array_equal(fwd(tf.constant(TEXT[:2])).numpy(), [
        [3, 4, 7, 6, 0, 0], [13, 2, 3, 2, 12, 8]])
    back = layers.TextVectorization(ngrams=(3, 1), vocabulary=fwd.get_vocabulary())
    np.testing.assert_array_equal(back(tf.constant(TEXT[:2])).numpy(), [
        [6, 3, 4, 7, 0, 0], [12, 8, 13, 2, 3, 2]])


def test_ngrams_in_vector_modes_and_characters():
    count = layers.TextVectorization(ngrams=(1, 2), output_mode="count", max_tokens=8)
    count.adapt(TEXT)
    assert count.get_vocabulary() == ["[UNK]", "dog", "the", "cat", "zebra", "the dog",
                                      "the cat", "sat"]
    np.testing.assert_array_equal(count(tf.constant(TEXT)).numpy(), [
        [1, 0, 1, 1, 0, 0, 1, 1], [3, 2, 1, 0, 0, 1, 0, 0], [0] * 8, [4, 2, 0, 1, 0, 0, 0, 0],
        [0, 0, 0, 0, 1, 0, 0, 0]])
    tfidf = layers.TextVectorization(ngrams=(1, 2), output_mode="tf_idf", max_tokens=8)
    tfidf.adapt(TEXT)
    np.testing.assert_allclose(tfidf(tf.constant(TEXT[:2])).numpy(), [
        [1.1362, 0, 0.9808, 0.9808, 0, 0, 1.2528, 1.2528],
        [3.4087, 1.9617, 0.9808, 0, 0, 1.2528, 0, 0]], atol=1e-4)
    chars = layers.TextVectorization(ngrams=2, split="character", output_sequence_length=4)
    chars.adapt(TEXT)
    assert chars.get_vocabulary()[:8] == ["", "[UNK]", " ", "a", "t", "d", "o g", "o"]
    np.testing.assert_array_equal(chars(tf.constant(TEXT)).numpy(), [
        [4, 16, 11, 2], [3, 2, 5, 7], [0, 0, 0, 0], [20, 3, 4, 2], [22, 11, 32, 26]])


def test_ngrams_without_split_and_with_a_custom_split():
    flat = layers.TextVectorization(ngrams=2, split=None, vocabulary=["a b"])
    np.testing.assert_array_equal(flat(tf.constant(["a", "b"])).numpy(), [1, 1, 2])
    spaces = layers.TextVectorization(ngrams=2, split=lambda x: tf.strings.split(x, " "),
                                      vocabulary=["a b", "b "])
    np.testing.assert_array_equal(spaces(tf.constant(["a b  c", "b"])).numpy(), [
        [1, 1, 0, 1, 2, 3, 1], [1, 0, 0, 0, 0, 0, 0]])


def test_ragged_int_outputs():
    layer = layers.TextVectorization(ngrams=2, ragged=True)
    layer.adapt(TEXT)
    out = layer(tf.constant(TEXT))
    assert isinstance(out, tf.RaggedTensor) and out.dtype.name == "int64"
    assert out.shape.as_list() == [5, None]
    assert out.to_list() == [[3, 4, 8, 7, 11], [16, 2, 3, 2, 15, 9, 6], [],
                             [4, 14, 2, 2, 12, 13, 10], [5]]
    short = layers.TextVectorization(ngrams=2, ragged=True, output_sequence_length=2,
                                     vocabulary=VOCAB_2[2:])
    assert short(tf.constant(TEXT)).to_list() == [[3, 4], [16, 2], [], [4, 14], [5]]
    dense = layers.TextVectorization(ragged=True, output_sequence_length=2, split=None,
                                     vocabulary=["a"])  # no split: the dense lookup
    np.testing.assert_array_equal(dense(tf.constant(["a", "b"])).numpy(), [2, 1])
    assert layer.compute_output_shape((None,)).as_list() == [None, None]


def test_one_hot_of_split_text_is_ragged():
    layer = layers.TextVectorization(output_mode="one_hot", vocabulary=["the", "dog", "cat"])
    out = layer(tf.constant(["the cat", "", "dog x"]))
    assert isinstance(out, tf.RaggedTensor)
    assert out.to_list() == [[[0, 1, 0, 0], [0, 0, 0, 1]], [], [[0, 0, 1, 0], [1, 0, 0, 0]]]


def test_ngrams_in_a_dataset_pipeline():
    layer = layers.TextVectorization(ngrams=2, output_sequence_length=6)
    layer.adapt(tf.data.Dataset.from_tensor_slices(TEXT).batch(2))
    assert layer.get_vocabulary() == VOCAB_2
    batches = [b.numpy().tolist() for b in
               tf.data.Dataset.from_tensor_slices(TEXT).batch(2).map(layer)]
    assert batches == [[[3, 4, 8, 7, 11, 0], [16, 2, 3, 2, 15, 9]],
                       [[0] * 6, [4, 14, 2, 2, 12, 13]], [[5, 0, 0, 0, 0, 0]]]


def test_config_round_trip():
    layer = layers.TextVectorization(ngrams=(1, 3), ragged=True)
    cfg = layer.get_config()
    assert (cfg["ngrams"], cfg["ragged"], cfg["sparse"]) == ((1, 3), True, False)
    cfg["ngrams"] = [1, 3]  # as JSON gives it back
    again = layers.TextVectorization.from_config(cfg)
    assert again.get_config()["ngrams"] == (1, 3) and again._ngrams == (1, 3)
    assert layers.TextVectorization(ngrams=3)._ngrams == (1, 2, 3)
    with pytest.raises(ValueError, match="ngrams"):
        layers.TextVectorization(ngrams=[1, 2])
    with pytest.raises(ValueError, match="ragged"):
        layers.TextVectorization(ragged=True, output_mode="count")
