"""Preprocessing layers inside tf.data pipelines (dataset.map(layer)), with the
values TensorFlow 2.21's Keras gives for the same program."""
import numpy as np

import kiln as tf

L = tf.keras.layers


def test_normalization_in_map():
    norm = L.Normalization()
    norm.adapt(np.array([[1.0], [3.0], [5.0]], np.float32))
    ds = tf.data.Dataset.from_tensor_slices(np.array([[1.0], [5.0]], np.float32)).map(norm)
    got = [x.numpy().ravel() for x in ds]
    np.testing.assert_allclose(np.concatenate(got), [-1.2247448, 1.2247448], rtol=1e-6)


def test_string_lookup_in_map():
    lookup = L.StringLookup(vocabulary=["a", "b", "c"])
    ds = tf.data.Dataset.from_tensor_slices(tf.constant(["b", "z", "a"])).map(lookup)
    assert [int(x.numpy()) for x in ds] == [2, 0, 1]


def test_text_vectorization_in_batched_map():
    tv = L.TextVectorization(output_sequence_length=4)
    tv.adapt(["the cat sat", "the dog"])
    ds = tf.data.Dataset.from_tensor_slices(tf.constant(["the cat", "dog sat"])).batch(2).map(tv)
    (got,) = [x.numpy() for x in ds]
    np.testing.assert_array_equal(got, [[2, 5, 0, 0], [4, 3, 0, 0]])


def test_resizing_in_batched_map():
    ds = tf.data.Dataset.from_tensor_slices(np.zeros((2, 8, 8, 3), np.float32)).batch(2)
    shapes = [tuple(x.shape.as_list()) for x in ds.map(L.Resizing(4, 4))]
    assert shapes == [(2, 4, 4, 3)]
