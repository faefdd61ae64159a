"""BatchNormalization, LayerNormalization and GroupNormalization: statistics, weights, errors, jit."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import assert_layer, randn

layers = tf.keras.layers


def _set_random_stats(layer, c, seed=1):
    r = np.random.default_rng(seed)
    gamma, beta = r.uniform(0.5, 2, c), r.normal(size=c)
    mean, var = r.normal(size=c), r.uniform(0.2, 3, c)
    layer.set_weights([a.astype(np.float32) for a in (gamma, beta, mean, var)])
    return gamma, beta, mean, var


def test_batchnorm_weights_defaults_and_counts():
    layer = layers.BatchNormalization()
    assert (layer.axis, layer.momentum, layer.epsilon) == (-1, 0.99, 1e-3)
    layer.build((None, 4, 4, 6))
    assert [w.name for w in layer.weights] == [
        "gamma", "beta", "moving_mean", "moving_variance"]
    assert layer.count_params() == 24
    assert sum(w.shape.num_elements() for w in layer.trainable_weights) == 12
    assert sum(w.shape.num_elements() for w in layer.non_trainable_weights) == 12
    g, b, m, v = layer.get_weights()
    np.testing.assert_array_equal(g, 1) and np.testing.assert_array_equal(v, 1)
    np.testing.assert_array_equal(b, 0) and np.testing.assert_array_equal(m, 0)


def test_batchnorm_inference_matches_numpy():
    layer = layers.BatchNormalization(epsilon=1e-3)
    x = randn(2, 3, 3, 5)
    layer(tf.constant(x))
    gamma, beta, mean, var = _set_random_stats(layer, 5)
    want = gamma * (x - mean) / np.sqrt(var + 1e-3) + beta
    assert_layer(layer, x, want, rtol=1e-5, atol=1e-5)
    assert_layer(layer, x, want, rtol=1e-5, atol=1e-5, training=False)


def test_batchnorm_center_scale_off_and_axis1():
    layer = layers.BatchNormalization(center=False, scale=False)
    layer.build((None, 4))
    assert len(layer.weights) == 2 and layer.trainable_weights == []
    x = randn(3, 4)
    layer.set_weights([np.full(4, 0.5, np.float32), np.full(4, 4.0, np.float32)])
    assert_layer(layer, x, (x - 0.5) / np.sqrt(4.0 + 1e-3))

    ch_first = layers.BatchNormalization(axis=1)
    x = randn(2, 3, 4, 4)
    ch_first(tf.constant(x))
    gamma, beta, mean, var = _set_random_stats(ch_first, 3)
    r = (1, 3, 1, 1)
    want = gamma.reshape(r) * (x - mean.reshape(r)) / np.sqrt(var.reshape(r) + 1e-3) + \
        beta.reshape(r)
    assert_layer(ch_first, x, want, rtol=1e-5, atol=1e-5)


def test_batchnorm_training_uses_batch_stats_and_updates_moving():
    layer = layers.BatchNormalization(momentum=0.9)
    x = randn(8, 2, 2, 3) * 2 + 1
    out = layer(tf.constant(x), training=True).numpy()
    mean, var = x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2))
    np.testing.assert_allclose(out, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-4)
    _, _, mm, mv = layer.get_weights()
    np.testing.assert_allclose(mm, 0.1 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mv, 0.9 + 0.1 * var, rtol=1e-5, atol=1e-6)
    layer.trainable = False  # frozen batch norm runs in inference mode
    frozen = layer(tf.constant(x), training=True).numpy()
    np.testing.assert_allclose(frozen, (x - mm) / np.sqrt(mv + 1e-3), rtol=1e-4, atol=1e-4)


def test_batchnorm_errors():
    with pytest.raises(ValueError, match="epsilon"):
        layers.BatchNormalization(epsilon=0)
    with pytest.raises(ValueError, match="momentum"):
        layers.BatchNormalization(momentum=2)
    with pytest.raises(TypeError, match="axis"):
        layers.BatchNormalization(axis="last")
    with pytest.raises(ValueError, match="invalid axis"):
        layers.BatchNormalization(axis=4).build((None, 3, 3, 2))
    with pytest.raises(ValueError, match="must be defined"):
        layers.BatchNormalization().build((None, 3, None))
    layer = layers.BatchNormalization()
    layer(tf.zeros([1, 3]))
    with pytest.raises(ValueError, match="expected axis 1 of input shape to have value 3"):
        layer(tf.zeros([1, 4]))


def test_batchnorm_training_inside_function_updates_moving_stats():
    layer = layers.BatchNormalization(momentum=0.5)
    x = randn(8, 3) + 3
    f = tf.function(lambda t: layer(t, training=True))
    f(tf.constant(x))
    f(tf.constant(x))
    np.testing.assert_allclose(layer.moving_mean.numpy(), 0.75 * x.mean(axis=0), rtol=1e-5)


def _layer_norm_reference(x, axes, gamma, beta, eps):
    mean = x.mean(axis=tuple(axes), keepdims=True)
    var = x.var(axis=tuple(axes), keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


def test_layer_norm_weights_and_last_axis_match_numpy():
    layer = layers.LayerNormalization()
    assert (layer.axis, layer.epsilon, layer.center, layer.scale) == (-1, 1e-3, True, True)
    x = randn(4, 3, 8) * 3
    layer(tf.constant(x))
    assert [w.name for w in layer.weights] == ["gamma", "beta"]
    assert layer.count_params() == 16
    r = np.random.default_rng(3)
    gamma, beta = r.uniform(0.5, 2, 8), r.normal(size=8)
    layer.set_weights([gamma.astype(np.float32), beta.astype(np.float32)])
    assert_layer(layer, x, _layer_norm_reference(x, [2], gamma, beta, 1e-3), rtol=1e-4, atol=1e-5)


def test_layer_norm_several_and_leading_axes():
    x = randn(2, 3, 4, 5)
    for axis in ([-2, -1], 1, [1, 3]):
        layer = layers.LayerNormalization(axis=axis, center=False, epsilon=1e-5)
        layer(tf.constant(x))
        axes = sorted(a % 4 for a in (axis if isinstance(axis, list) else [axis]))
        gamma = np.random.default_rng(4).uniform(0.5, 2, [x.shape[a] for a in axes])
        layer.set_weights([gamma.astype(np.float32)])
        bshape = [x.shape[a] if a in axes else 1 for a in range(4)]
        want = _layer_norm_reference(x, axes, gamma.reshape(bshape), 0.0, 1e-5)
        assert_layer(layer, x, want, rtol=1e-4, atol=1e-5)


def test_layer_norm_errors():
    with pytest.raises(ValueError, match="epsilon"):
        layers.LayerNormalization(epsilon=-1)
    with pytest.raises(TypeError, match="axis"):
        layers.LayerNormalization(axis=1.5)
    with pytest.raises(ValueError, match="invalid axis"):
        layers.LayerNormalization(axis=3).build((None, 4))
    with pytest.raises(ValueError, match="must be defined"):
        layers.LayerNormalization().build((None, None))


def test_layer_norm_in_a_jit_model_is_one_row_kernel():
    model = tf.keras.Sequential([tf.keras.Input((16,)), layers.Dense(32),
                                 layers.LayerNormalization()])
    x = tf.constant(randn(6, 16))
    want = model(x).numpy()
    fn = tf.function(model, jit_compile=True)
    np.testing.assert_allclose(fn(x).numpy(), want, rtol=1e-5, atol=1e-5)
    assert "reduce AddV2" in fn.experimental_get_compiler_ir(x)("hlo")


def _np_group_norm(x, groups, eps, gamma, beta):
    n, c = x.shape[0], x.shape[-1]
    g = x.reshape(n, -1, groups, c // groups)
    mean = g.mean(axis=(1, 3), keepdims=True)
    var = g.var(axis=(1, 3), keepdims=True)
    return ((g - mean) / np.sqrt(var + eps)).reshape(x.shape) * gamma + beta


@pytest.mark.parametrize("shape,groups", [((2, 5, 6), 3), ((2, 4, 4, 8), 2), ((3, 8), 4),
                                          ((2, 3, 4), 1), ((2, 3, 4), 4)])
def test_group_normalization_matches_numpy(shape, groups):
    x = randn(*shape)
    layer = layers.GroupNormalization(groups=groups, gamma_initializer="random_normal",
                                      beta_initializer="random_normal")
    layer(tf.constant(x))
    gamma, beta = layer.get_weights()
    assert gamma.shape == beta.shape == (shape[-1],)
    want = _np_group_norm(x.astype(np.float64), groups, 1e-3, gamma, beta)
    assert_layer(layer, x, want, rtol=1e-4, atol=1e-4)
    cfg = layer.get_config()
    assert (cfg["groups"], cfg["epsilon"]) == (groups, 1e-3)


def test_group_normalization_channels_first_and_errors():
    x = randn(2, 6, 4, 3)
    layer = layers.GroupNormalization(groups=3, axis=1)
    out = layer(tf.constant(x)).numpy()
    last = x.transpose(0, 2, 3, 1)
    want = _np_group_norm(last.astype(np.float64), 3, 1e-3, 1.0, 0.0).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="cannot be more than the number of channels"):
        layers.GroupNormalization(groups=8)(tf.constant(randn(2, 4)))
    with pytest.raises(ValueError, match="must be a multiple"):
        layers.GroupNormalization(groups=3)(tf.constant(randn(2, 4)))
    with pytest.raises(ValueError, match="groups"):
        layers.GroupNormalization(groups=0)


_AFFINE_KEYS = {"beta_initializer", "gamma_initializer", "beta_regularizer",
                "gamma_regularizer", "beta_constraint", "gamma_constraint"}


def test_configs_carry_keras_keys():
    """The keys TF 2.21's get_config has (initializers, regularizers, constraints, renorm)."""
    bn = layers.BatchNormalization().get_config()
    assert _AFFINE_KEYS | {"moving_mean_initializer", "moving_variance_initializer",
                           "synchronized", "renorm", "renorm_clipping",
                           "renorm_momentum"} <= set(bn)
    assert bn["renorm"] is False and bn["renorm_momentum"] == 0.99
    assert bn["moving_variance_initializer"]["class_name"] == "Ones"
    assert _AFFINE_KEYS | {"rms_scaling"} <= set(layers.LayerNormalization().get_config())
    assert _AFFINE_KEYS <= set(layers.GroupNormalization(2).get_config())
    with pytest.raises(NotImplementedError, match="renorm"):
        layers.BatchNormalization(renorm=True)


def test_layer_norm_axis_becomes_a_list_when_built_and_rms_scaling():
    """Keras 3 stores axis=-1 as [-1] once built; rms_scaling=True gives
    gamma * x / sqrt(var + eps) and creates no beta."""
    x = randn(2, 3, 6)
    layer = layers.LayerNormalization()
    assert layer.get_config()["axis"] == -1
    layer(tf.constant(x))
    assert layer.get_config()["axis"] == [-1]
    rms = layers.LayerNormalization(rms_scaling=True, gamma_initializer="random_normal")
    rms(tf.constant(x))
    assert [w.name for w in rms.weights] == ["gamma"]
    gamma = rms.get_weights()[0]
    assert_layer(rms, x, x / np.sqrt(x.var(-1, keepdims=True) + 1e-3) * gamma, rtol=1e-4,
                 atol=1e-5)
