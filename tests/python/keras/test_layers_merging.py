"""Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import randn

layers = tf.keras.layers


@pytest.mark.parametrize("cls,ref", [
    (layers.Add, lambda a, b, c: a + b + c),
    (layers.Multiply, lambda a, b, c: a * b * c),
    (layers.Average, lambda a, b, c: (a + b + c) / 3),
    (layers.Maximum, lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    (layers.Minimum, lambda a, b, c: np.minimum(np.minimum(a, b), c)),
])
def test_merge_layers_match_numpy(cls, ref):
    a, b, c = randn(2, 3, seed=1), randn(2, 3, seed=2), randn(1, 3, seed=3)  # c broadcasts
    layer = cls()
    ins = [tf.constant(a), tf.constant(b), tf.constant(c)]
    want = ref(a, b, c)
    np.testing.assert_allclose(layer(ins).numpy(), want, rtol=1e-6)
    f = tf.function(lambda x, y, z: layer([x, y, z]))
    np.testing.assert_allclose(f(*ins).numpy(), want, rtol=1e-6)
    assert layer.compute_output_shape([(None, 3), (None, 3), (1, 3)]) == (None, 3)


def test_subtract_concatenate_and_functional_forms():
    a, b = randn(2, 3, seed=1), randn(2, 3, seed=2)
    ta, tb = tf.constant(a), tf.constant(b)
    np.testing.assert_allclose(layers.subtract([ta, tb]).numpy(), a - b)
    np.testing.assert_allclose(layers.add([ta, tb]).numpy(), a + b)
    np.testing.assert_allclose(layers.multiply([ta, tb]).numpy(), a * b)
    np.testing.assert_allclose(layers.concatenate([ta, tb]).numpy(), np.concatenate([a, b], -1))
    np.testing.assert_allclose(layers.Concatenate(axis=0)([ta, tb]).numpy(),
                               np.concatenate([a, b], 0))
    assert layers.Concatenate().compute_output_shape([(None, 3), (None, 4)]) == (None, 7)


def test_merge_errors():
    a = tf.ones([2, 3])
    with pytest.raises(ValueError, match="list of inputs"):
        layers.Add()(a)
    with pytest.raises(ValueError, match="at least 2 inputs"):
        layers.Add()([a])
    with pytest.raises(ValueError, match="exactly 2 inputs"):
        layers.Subtract()([a, a, a])
    with pytest.raises(ValueError, match="incompatible shapes"):
        layers.Add()([a, tf.ones([2, 4])])
    with pytest.raises(ValueError, match="matching shapes"):
        layers.Concatenate()([a, tf.ones([3, 3])])
