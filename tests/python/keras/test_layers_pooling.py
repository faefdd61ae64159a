"""MaxPooling2D, AveragePooling2D and the global poolings against NumPy."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import assert_layer, np_pool, randn

layers = tf.keras.layers


@pytest.mark.parametrize("cls,kind", [(layers.MaxPooling2D, "max"),
                                      (layers.AveragePooling2D, "avg")])
@pytest.mark.parametrize("pool,strides,padding", [
    (2, None, "valid"), (3, 2, "same"), (3, 1, "same"), ((2, 3), (1, 2), "valid"),
])
def test_pooling_matches_numpy(cls, kind, pool, strides, padding):
    layer = cls(pool_size=pool, strides=strides, padding=padding)
    x = randn(2, 7, 6, 3)
    p = pool if isinstance(pool, tuple) else (pool, pool)
    s = p if strides is None else (strides if isinstance(strides, tuple) else (strides,) * 2)
    want = np_pool(x, p, s, padding, kind)
    out = assert_layer(layer, x, want)
    assert layer.compute_output_shape((None, 7, 6, 3)) == (None,) + out.shape[1:]
    assert layer.count_params() == 0


def test_pooling_errors():
    with pytest.raises(ValueError, match="pool_size"):
        layers.MaxPooling2D(0)
    with pytest.raises(ValueError, match="padding"):
        layers.AveragePooling2D(padding="causal")
    with pytest.raises(ValueError, match="expected ndim=4"):
        layers.MaxPooling2D()(tf.zeros([4, 4, 3]))
    with pytest.raises(ValueError, match="empty"):
        layers.MaxPooling2D(3)(tf.zeros([1, 2, 2, 1]))


def test_global_pooling_and_keepdims():
    x = randn(2, 4, 5, 3)
    assert_layer(layers.GlobalAveragePooling2D(), x, x.mean(axis=(1, 2)), rtol=1e-5)
    assert_layer(layers.GlobalAveragePooling2D(keepdims=True), x,
                 x.mean(axis=(1, 2), keepdims=True), rtol=1e-5)
    assert_layer(layers.GlobalMaxPooling2D(), x, x.max(axis=(1, 2)))
    assert layers.GlobalAveragePooling2D(keepdims=True).compute_output_shape(
        (None, 4, 5, 3)) == (None, 1, 1, 3)
    assert_layer(layers.GlobalAveragePooling2D(data_format="channels_first"), x,
                 x.mean(axis=(2, 3)), rtol=1e-5)


def _np_pool1d(x, k, s, padding, kind):
    return np_pool(x[:, None], (1, k), (1, s), padding, kind)[:, 0]


@pytest.mark.parametrize("k,s,padding", [(2, None, "valid"), (3, 1, "same"), (3, 2, "valid"),
                                         (2, 3, "same")])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling1d_matches_numpy(k, s, padding, kind):
    x = randn(2, 9, 3)
    cls = layers.MaxPooling1D if kind == "max" else layers.AveragePooling1D
    layer = cls(k, strides=s, padding=padding)
    want = _np_pool1d(x, k, s or k, padding, kind)
    assert_layer(layer, x, want)
    assert layer.compute_output_shape(x.shape) == want.shape
    first = cls(k, strides=s, padding=padding, data_format="channels_first")
    assert_layer(first, x.transpose(0, 2, 1), want.transpose(0, 2, 1))
    assert cls.from_config(layer.get_config()).get_config() == layer.get_config()


def test_global_pooling1d_with_and_without_a_mask():
    x = randn(2, 5, 3)
    assert_layer(layers.GlobalAveragePooling1D(), x, x.mean(axis=1))
    assert_layer(layers.GlobalMaxPooling1D(), x, x.max(axis=1))
    assert_layer(layers.GlobalAveragePooling1D(keepdims=True), x, x.mean(axis=1, keepdims=True))
    assert_layer(layers.GlobalMaxPooling1D(data_format="channels_first"), x, x.max(axis=2))
    mask = np.array([[1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], bool)
    got = layers.GlobalAveragePooling1D()(tf.constant(x), mask=tf.constant(mask)).numpy()
    want = (x * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert layers.GlobalAveragePooling1D().compute_output_shape((None, 5, 3)) == (None, 3)
    with pytest.raises(ValueError):
        layers.MaxPooling1D(4)(tf.constant(randn(1, 3, 2)))
