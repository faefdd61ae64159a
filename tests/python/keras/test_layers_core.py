"""Dense, Activation, Dropout, Flatten, Reshape, Rescaling, Lambda against NumPy."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import assert_layer, randn

layers = tf.keras.layers


def test_dense_matches_numpy_and_counts_params():
    layer = layers.Dense(3, activation="relu", kernel_initializer="glorot_uniform",
                         bias_initializer="ones")
    x = randn(4, 5)
    out = layer(tf.constant(x))
    assert [w.name for w in layer.weights] == ["kernel", "bias"]
    assert [w.path for w in layer.weights] == ["dense/kernel", "dense/bias"]
    k, b = layer.get_weights()
    assert k.shape == (5, 3) and b.shape == (3,)
    np.testing.assert_array_equal(b, np.ones(3, np.float32))
    np.testing.assert_allclose(out.numpy(), np.maximum(x @ k + b, 0), rtol=1e-5, atol=1e-6)
    assert layer.count_params() == 18
    assert len(layer.trainable_weights) == 2 and layer.non_trainable_weights == []
    assert_layer(layer, x, np.maximum(x @ k + b, 0))


def test_dense_on_rank3_inputs_and_without_bias():
    layer = layers.Dense(2, use_bias=False)
    x = randn(2, 3, 4)
    layer(tf.constant(x))
    (k,) = layer.get_weights()
    assert_layer(layer, x, x @ k)
    assert layer.compute_output_shape((None, 3, 4)) == (None, 3, 2)


def test_dense_errors():
    with pytest.raises(ValueError, match="units"):
        layers.Dense(0)
    with pytest.raises(ValueError, match="units"):
        layers.Dense(-2)
    with pytest.raises(TypeError, match="Keyword argument not understood"):
        layers.Dense(2, kernel_size=3)
    with pytest.raises(ValueError, match="Unknown activation"):
        layers.Dense(2, activation="nope")
    layer = layers.Dense(2)
    layer(tf.ones([1, 3]))
    with pytest.raises(ValueError, match="expected axis -1 of input shape to have value 3"):
        layer(tf.ones([1, 4]))
    with pytest.raises(ValueError, match="min_ndim=2"):
        layers.Dense(2)(tf.ones([3]))


def test_activation_layer_by_name_and_callable():
    x = randn(3, 4)
    assert_layer(layers.Activation("relu"), x, np.maximum(x, 0))
    assert_layer(layers.Activation("swish"), x, x / (1 + np.exp(-x)), rtol=1e-5)
    assert_layer(layers.Activation(lambda t: t * 2.0), x, x * 2)
    with pytest.raises(ValueError, match="Unknown activation"):
        layers.Activation("relu7")


def test_dropout_is_identity_at_inference_and_drops_in_training():
    layer = layers.Dropout(0.5, seed=3)
    x = np.ones((64, 32), np.float32)
    assert_layer(layer, x, x)
    assert_layer(layer, x, x, training=False)
    out = layer(tf.constant(x), training=True).numpy()
    kept = out != 0
    assert 0.3 < kept.mean() < 0.7
    np.testing.assert_allclose(out[kept], 2.0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        layers.Dropout(1.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        layers.Dropout("a")


def test_dropout_noise_shape_drops_whole_channels():
    layer = layers.Dropout(0.5, noise_shape=(None, 1, 1, 4), seed=1)
    out = layer(tf.ones([3, 5, 5, 4]), training=True).numpy()
    for n in range(3):
        for c in range(4):
            vals = np.unique(out[n, :, :, c])
            assert len(vals) == 1 and vals[0] in (0.0, 2.0)


def test_flatten_and_reshape():
    x = randn(2, 3, 4, 5)
    assert_layer(layers.Flatten(), x, x.reshape(2, -1))
    assert_layer(layers.Reshape((12, 5)), x, x.reshape(2, 12, 5))
    assert_layer(layers.Reshape((-1, 10)), x, x.reshape(2, 6, 10))
    assert layers.Reshape((-1, 10)).compute_output_shape((None, 3, 4, 5)) == (None, 6, 10)
    assert layers.Flatten().compute_output_shape((None, 3, 4, 5)) == (None, 60)
    with pytest.raises(ValueError, match="total size"):
        layers.Reshape((7,))(tf.constant(x))
    with pytest.raises(ValueError, match="at most one -1"):
        layers.Reshape((-1, -1))


def test_flatten_and_reshape_with_unknown_batch_in_function():
    f = tf.function(lambda t: (layers.Flatten()(t), layers.Reshape((-1, 2))(t)))
    cf = f.get_concrete_function(tf.TensorSpec([None, 2, 3], tf.float32))
    x = randn(4, 2, 3)
    flat, resh = cf(tf.constant(x))
    np.testing.assert_array_equal(flat.numpy(), x.reshape(4, 6))
    np.testing.assert_array_equal(resh.numpy(), x.reshape(4, 3, 2))


def test_rescaling_casts_and_scales():
    x = np.arange(12, dtype=np.uint8).reshape(1, 2, 2, 3)
    layer = layers.Rescaling(1.0 / 128, offset=-1)
    out = assert_layer(layer, tf.constant(x), x.astype(np.float32) / 128 - 1)
    assert out.dtype == np.float32 and layer.count_params() == 0
    per_channel = layers.Rescaling([1.0, 2.0, 3.0], offset=[0.0, 1.0, 2.0])
    assert_layer(per_channel, x.astype(np.float32),
                 x * np.array([1, 2, 3], np.float32) + np.array([0, 1, 2], np.float32))
    with pytest.raises(ValueError, match="scale"):
        layers.Rescaling("big")


def test_lambda_layer():
    layer = layers.Lambda(lambda t, k: t * k, arguments={"k": 3.0})
    x = randn(2, 3)
    assert_layer(layer, x, x * 3)
    with pytest.raises(TypeError, match="callable"):
        layers.Lambda(3)


def test_float64_inputs_are_cast_to_the_layer_dtype():
    layer = layers.Dense(2)
    out = layer(np.ones((1, 3)))  # float64 NumPy, as in seed 003's model(np.random.random(...))
    assert out.dtype == tf.float32
    out64 = layers.Dense(2, dtype="float64")(np.ones((1, 3)))
    assert out64.dtype == tf.float64


def test_embedding_looks_up_rows_masks_zero_and_trains():
    layer = layers.Embedding(10, 4, mask_zero=True)
    ids = np.array([[1, 2, 0, 0], [3, 9, 9, 0]])
    out = layer(tf.constant(ids))
    (table,) = layer.get_weights()
    assert [w.name for w in layer.weights] == ["embeddings"] and table.shape == (10, 4)
    assert np.abs(table).max() <= 0.05  # "uniform": RandomUniform(-0.05, 0.05)
    np.testing.assert_array_equal(out.numpy(), table[ids])
    np.testing.assert_array_equal(layer.compute_mask(tf.constant(ids)).numpy(), ids != 0)
    assert layers.Embedding(10, 4).compute_mask(tf.constant(ids)) is None
    assert layer.compute_output_shape((None, 4)) == (None, 4, 4)
    for dtype in ("int64", "float32"):  # floats are cast to int32, as Keras does
        np.testing.assert_array_equal(layer(tf.constant(ids.astype(dtype))).numpy(), table[ids])
    traced = tf.function(lambda t: layer(t))(tf.constant(ids))
    np.testing.assert_array_equal(traced.numpy(), table[ids])
    cfg = layer.get_config()
    assert (cfg["input_dim"], cfg["output_dim"], cfg["mask_zero"]) == (10, 4, True)
    clone = layers.Embedding.from_config(cfg)
    assert clone.mask_zero and clone.embeddings_initializer.get_config()["maxval"] == 0.05
    # Gradients reach only the rows looked up.
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(tf.constant(ids)))
    (g,) = tape.gradient(loss, [layer.embeddings])
    counts = np.bincount(ids.ravel(), minlength=10)
    np.testing.assert_array_equal(tf.convert_to_tensor(g).numpy(),
                                  np.repeat(counts[:, None], 4, axis=1).astype(np.float32))
    model = tf.keras.Sequential([layers.Embedding(12, 8, input_shape=(6,)),
                                 layers.GlobalAveragePooling1D(), layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    x = np.random.default_rng(0).integers(0, 12, (64, 6))
    y = (x % 3 == 0).mean(axis=1, keepdims=True).astype(np.float32)
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=20, verbose=0)
    assert model.evaluate(x, y, verbose=0) < before
    assert model.count_params() == 12 * 8 + 8 + 1


def test_embedding_errors():
    for bad in [(0, 4), (10, -1), (10.5, 4)]:
        with pytest.raises(ValueError, match="should be positive"):
            layers.Embedding(*bad)


def test_configs_carry_keras_regularizer_and_constraint_keys():
    """TF 2.21's Dense / Embedding / convolution configs list their regularizers and
    constraints (None when unset)."""
    dense = layers.Dense(3).get_config()
    for k in ("kernel_regularizer", "bias_regularizer", "kernel_constraint", "bias_constraint"):
        assert k in dense and dense[k] is None
    emb = layers.Embedding(5, 2).get_config()
    assert {"embeddings_regularizer", "activity_regularizer", "embeddings_constraint"} <= \
        set(emb)
    conv_keys = {"kernel_regularizer", "bias_regularizer", "activity_regularizer",
                 "kernel_constraint", "bias_constraint"}
    for layer in (layers.Conv1D(2, 3), layers.Conv2D(2, 3), layers.Conv2DTranspose(2, 3)):
        assert conv_keys <= set(layer.get_config())
    dw = set(layers.DepthwiseConv2D(3).get_config())
    assert {"depthwise_regularizer", "depthwise_constraint", "activity_regularizer"} <= dw
    sep = set(layers.SeparableConv2D(2, 3).get_config())
    assert {"pointwise_regularizer", "pointwise_constraint"} <= sep
