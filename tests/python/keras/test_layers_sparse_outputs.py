"""sparse=True outputs (CategoryEncoding, StringLookup / IntegerLookup, TextVectorization):
kiln SparseTensors holding the dense output's non-zero entries in row-major order, the static
shape kept. Expected indices and values were written down from TF 2.21 (Keras 3.15.1); lookup
layers on ragged inputs too."""
import numpy as np
import pytest

import kiln as tf

layers = tf.keras.layers
STRS = np.array([["a", "z", "", "b"], ["c", "c", "b", "a"]])
VOCAB = ["a", "b", "c"]


def _check_sparse(sp, indices, values, shape, dense=None):
    assert isinstance(sp, tf.sparse.SparseTensor)
    assert sp.indices.numpy().tolist() == indices
    np.testing.assert_allclose(sp.values.numpy(), values, rtol=1e-6)
    assert sp.dense_shape.numpy().tolist() == shape and sp.shape.as_list() == shape
    if dense is not None:
        np.testing.assert_allclose(tf.sparse.to_dense(sp).numpy(), dense.numpy(), rtol=1e-6)


@pytest.mark.parametrize("mode,x,indices,values,shape", [
    ("one_hot", [1, 0, 3], [[0, 1], [1, 0], [2, 3]], [1, 1, 1], [3, 5]),
    ("one_hot", [[1], [0], [3]], [[0, 1], [1, 0], [2, 3]], [1, 1, 1], [3, 5]),
    ("multi_hot", [[1, 2, 2, 0], [3, 3, 3, 3]], [[0, 0], [0, 1], [0, 2], [1, 3]], [1] * 4,
     [2, 5]),
    ("count", [[1, 2, 2, 0], [3, 3, 3, 3]], [[0, 0], [0, 1], [0, 2], [1, 3]], [1, 1, 2, 4],
     [2, 5]),
    ("multi_hot", [1, 1, 3], [[1], [3]], [1, 1], [5]),
    ("count", [1, 1, 3], [[1], [3]], [2, 1], [5]),
])
def test_category_encoding_sparse(mode, x, indices, values, shape):
    sparse = layers.CategoryEncoding(5, output_mode=mode, sparse=True)
    dense = layers.CategoryEncoding(5, output_mode=mode)
    out = sparse(tf.constant(np.array(x)))
    assert out.dtype.name == "float32"
    _check_sparse(out, indices, values, shape, dense(tf.constant(np.array(x))))


def test_category_encoding_follows_keras_axes():
    """TF 2.21: a scalar is one example (one_hot [1, n]); a 1-D input is one example;
    multi_hot and count of rank-3 inputs reduce axis 1."""
    enc = layers.CategoryEncoding(5, output_mode="one_hot")
    np.testing.assert_array_equal(enc(tf.constant(2)).numpy(), [[0, 0, 1, 0, 0]])
    count = layers.CategoryEncoding(5, output_mode="count")
    np.testing.assert_array_equal(count(tf.constant([1, 1, 3])).numpy(), [0, 2, 0, 1, 0])
    np.testing.assert_array_equal(count(tf.constant(2)).numpy(), [0, 0, 1, 0, 0])
    np.testing.assert_array_equal(count(tf.constant([[[1, 2], [3, 3]]])).numpy(),
                                  [[[0, 1, 0, 1, 0], [0, 0, 1, 1, 0]]])
    multi = layers.CategoryEncoding(5)
    np.testing.assert_array_equal(multi(tf.constant([[[1, 2], [3, 3]]])).numpy(),
                                  [[[0, 1, 0, 1, 0], [0, 0, 1, 1, 0]]])


@pytest.mark.parametrize("mode,mask,values", [
    ("multi_hot", None, [1] * 6),
    ("multi_hot", "", [1] * 6),
    ("count", None, [2, 1, 1, 1, 1, 2]),  # "" is out of vocabulary without a mask
    ("count", "", [1, 1, 1, 1, 1, 2]),
])
def test_string_lookup_sparse(mode, mask, values):
    layer = layers.StringLookup(vocabulary=VOCAB, output_mode=mode, sparse=True,
                                mask_token=mask)
    out = layer(tf.constant(STRS))
    assert out.dtype.name == "int64"
    _check_sparse(out, [[0, 0], [0, 1], [0, 2], [1, 1], [1, 2], [1, 3]], values, [2, 4])
    assert layer.get_config()["sparse"] is True


def test_lookup_sparse_one_hot_tf_idf_padding_and_integers():
    one = layers.StringLookup(vocabulary=VOCAB, output_mode="one_hot", sparse=True)
    _check_sparse(one(tf.constant(["a", "z", "c"])), [[0, 1], [1, 0], [2, 3]], [1, 1, 1],
                  [3, 4])
    _check_sparse(one(tf.constant("c")), [[0, 3]], [1], [1, 4])
    tfidf = layers.StringLookup(vocabulary=VOCAB, output_mode="tf_idf", sparse=True,
                                idf_weights=[0.5, 1.0, 2.0])
    _check_sparse(tfidf(tf.constant(["a", "a", "c", "z"])), [[0], [1], [3]],
                  [2 * (0.5 + 1 + 2) / 3 / 2, 1.0, 2.0], [4])
    # TF's Keras fails on rank-2 sparse tf_idf (a GatherNd error); kiln gives the dense values
    dense = layers.StringLookup(vocabulary=VOCAB, output_mode="tf_idf",
                                idf_weights=[0.5, 1.0, 2.0])
    _check_sparse(tfidf(tf.constant(STRS)), [[0, 0], [0, 1], [0, 2], [1, 1], [1, 2], [1, 3]],
                  [7 / 3, 0.5, 1.0, 0.5, 1.0, 4.0], [2, 4], dense(tf.constant(STRS)))
    pad = layers.StringLookup(vocabulary=VOCAB, output_mode="count", sparse=True,
                              max_tokens=7, pad_to_max_tokens=True)
    _check_sparse(pad(tf.constant(STRS)), [[0, 0], [0, 1], [0, 2], [1, 1], [1, 2], [1, 3]],
                  [2, 1, 1, 1, 1, 2], [2, 7])
    ints = layers.IntegerLookup(vocabulary=[7, 3, 9], output_mode="count", sparse=True)
    _check_sparse(ints(tf.constant([[7, 0, 5, 9], [3, 3, 1, 0]])),
                  [[0, 0], [0, 1], [0, 3], [1, 0], [1, 2]], [2, 1, 1, 2, 2], [2, 4])


def test_text_vectorization_sparse():
    text = np.array(['The cat sat.', 'A dog, the dog!', '', 'cat  and DOG dog'])
    layer = layers.TextVectorization(output_mode="count", sparse=True)
    layer.adapt(text)
    _check_sparse(layer(tf.constant(text)),
                  [[0, 2], [0, 3], [0, 4], [1, 1], [1, 2], [1, 6], [3, 1], [3, 3], [3, 5]],
                  [1, 1, 1, 2, 1, 1, 2, 1, 1], [4, 7])
    assert layer.get_config()["sparse"] is True
    with pytest.raises(ValueError, match="sparse"):
        layers.TextVectorization(sparse=True)  # int mode, as Keras


def test_sparse_outputs_in_a_function():
    layer = layers.CategoryEncoding(4, output_mode="count", sparse=True)
    fn = tf.function(lambda x: tf.sparse.to_dense(layer(x)))
    np.testing.assert_array_equal(fn(tf.constant([[0, 3, 3], [1, 1, 2]])).numpy(),
                                  [[1, 0, 0, 2], [0, 2, 1, 0]])


def test_lookup_of_ragged_inputs():
    """TF 2.21: int outputs keep the rows; the vector modes count over each row."""
    rt = tf.ragged.constant([["a", "z"], [], ["c", "c", "b"]])
    assert layers.StringLookup(vocabulary=VOCAB)(rt).to_list() == [[1, 0], [], [3, 3, 2]]
    count = layers.StringLookup(vocabulary=VOCAB, output_mode="count")
    np.testing.assert_array_equal(count(rt).numpy(), [[1, 1, 0, 0], [0, 0, 0, 0],
                                                      [0, 0, 1, 2]])
    multi = layers.StringLookup(vocabulary=VOCAB, output_mode="multi_hot", sparse=True)
    _check_sparse(multi(rt), [[0, 0], [0, 1], [2, 2], [2, 3]], [1, 1, 1, 1], [3, 4])
    tfidf = layers.StringLookup(vocabulary=VOCAB, output_mode="tf_idf",
                                idf_weights=[0.5, 1.0, 2.0])
    np.testing.assert_allclose(tfidf(rt).numpy(), [[7 / 6, 0.5, 0, 0], [0, 0, 0, 0],
                                                   [0, 0, 1, 4]], rtol=1e-6)
    ints = layers.IntegerLookup(vocabulary=[7, 3], output_mode="count")
    np.testing.assert_array_equal(
        ints(tf.ragged.constant([[7, 1, 7], [3]], dtype="int64")).numpy(),
        [[1, 2, 0], [0, 0, 1]])
    inv = layers.StringLookup(vocabulary=VOCAB, invert=True)
    assert inv(tf.ragged.constant([[1, 0], [3]], dtype="int64")).to_list() == [
        [b"a", b"[UNK]"], [b"c"]]
