"""BatchNormalization (renorm too), LayerNormalization and GroupNormalization: statistics,
weights, gradients, errors, jit."""
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


def _conv_bn_reference(x, w, layer):
    """A 'SAME' 3x3 convolution (NumPy) then the batch norm's inference formula."""
    n, h, wd, c = x.shape
    p = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    y = sum(np.einsum("nhwc,co->nhwo", p[:, i:i + h, j:j + wd], w[i, j])
            for i in range(3) for j in range(3))
    mean, var = layer.moving_mean.numpy(), layer.moving_variance.numpy()
    inv = layer.gamma.numpy() / np.sqrt(var + layer.epsilon)
    return (y - mean) * inv + layer.beta.numpy()


@pytest.mark.parametrize("jit", [False, True])
def test_conv_batchnorm_inference_follows_new_statistics(jit):
    # Inference folds the batch norm into the convolution's packed filter; a
    # training step (new moving statistics) or a new filter must show at once.
    conv = layers.Conv2D(8, 3, padding="same", use_bias=False)
    bn = layers.BatchNormalization(momentum=0.5)
    x = tf.constant(randn(2, 9, 7, 5))
    infer = tf.function(lambda t: bn(conv(t), training=False), jit_compile=jit)
    train = tf.function(lambda t: bn(conv(t), training=True))
    for step in range(3):
        got = infer(x).numpy()
        want = _conv_bn_reference(x.numpy(), conv.kernel.numpy(), bn)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        train(x + float(step + 1))  # moves the moving mean and variance
        if step == 1:
            conv.kernel.assign(conv.kernel * -0.5)


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


# ---- batch renormalization (Keras 3's renorm) ----

_RENORM_X = np.array([[0.5, -1.0, 2.0], [1.5, 0.0, -0.5], [-0.5, 2.5, 1.0], [2.0, 1.0, 0.0]],
                     np.float32)
# gamma, beta, moving_mean, moving_variance, moving_stddev, renorm_mean, renorm_stddev
_RENORM_W = [[1.0, 0.5, 2.0], [0.1, -0.2, 0.3], [0.2, 0.4, 0.1], [1.5, 0.8, 1.2],
             [1.2, 0.9, 1.1], [0.6, 0.7, 0.5], [1.1, 1.3, 0.8]]
_CLIP = {"rmax": 1.2, "rmin": 0.9, "dmax": 0.1}


def _renorm_layer(**kw):
    layer = layers.BatchNormalization(renorm=True, **kw)
    layer.build((None, 3))
    layer.set_weights([np.array(w, np.float32) for w in _RENORM_W])
    return layer


def _numpy_renorm_step(x, w, eps, momentum, renorm_momentum, clip):
    """(output, updated moving_mean, moving_variance, moving_stddev, renorm_mean,
    renorm_stddev) of one training call, as Keras 3 computes them."""
    gamma, beta, mm, _, ms, rm, rs = (np.asarray(v, np.float64) for v in w)
    mean, var = x.mean(0), x.var(0)
    std = np.sqrt(var + eps)
    r = std / np.maximum(rs, np.sqrt(eps))
    d = (mean - rm) / np.maximum(rs, np.sqrt(eps))
    r = np.clip(r, clip.get("rmin", -np.inf), clip.get("rmax", np.inf))
    d = np.clip(d, -clip.get("dmax", np.inf), clip.get("dmax", np.inf))
    y = (x - mean) / std * r * gamma + d * gamma + beta
    new_ms = ms * momentum + std * (1 - momentum)
    return (y, mm * momentum + mean * (1 - momentum), np.maximum(new_ms ** 2 - eps, 0),
            new_ms, rm * renorm_momentum + mean * (1 - renorm_momentum),
            rs * renorm_momentum + std * (1 - renorm_momentum))


def test_renorm_weights_order_and_initial_values():
    layer = layers.BatchNormalization(renorm=True, moving_variance_initializer="constant")
    layer.build((None, 2, 5))
    assert [w.name for w in layer.weights] == [
        "gamma", "beta", "moving_mean", "moving_variance", "moving_stddev", "renorm_mean",
        "renorm_stddev"]
    assert [w.trainable for w in layer.weights] == [True, True] + [False] * 5
    assert layer.count_params() == 35
    # stddevs start at sqrt(moving_variance_initializer): constant 0 -> 0, ones -> 1
    np.testing.assert_array_equal(layer.get_weights()[4], 0)
    np.testing.assert_array_equal(layer.get_weights()[6], 0)
    ones = layers.BatchNormalization(renorm=True, moving_mean_initializer="ones")
    ones.build((None, 2))
    for w in ones.get_weights()[2:]:
        np.testing.assert_array_equal(w, 1)


@pytest.mark.parametrize("kw", [{}, {"renorm_clipping": _CLIP, "renorm_momentum": 0.9,
                                      "momentum": 0.8}])
def test_renorm_training_step_matches_numpy(kw):
    layer = _renorm_layer(**kw)
    want = _numpy_renorm_step(_RENORM_X.astype(np.float64), _RENORM_W, 1e-3,
                              kw.get("momentum", 0.99), kw.get("renorm_momentum", 0.99),
                              kw.get("renorm_clipping", {}))
    y = layer(tf.constant(_RENORM_X), training=True)
    np.testing.assert_allclose(y.numpy(), want[0], rtol=1e-5, atol=1e-5)
    for got, exp in zip(layer.get_weights()[2:], want[1:]):
        np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-6)
    # inference: the moving statistics, as without renorm
    g, b, mm, mv = layer.get_weights()[:4]
    assert_layer(layer, _RENORM_X, g * (_RENORM_X - mm) / np.sqrt(mv + 1e-3) + b, rtol=1e-5)


def test_renorm_gradients_match_tf():
    """d sum(y * [0..11]) / d (x, gamma, beta), written down from TF 2.21 (Keras 3.15.1);
    r and d carry no gradient."""
    layer = _renorm_layer(renorm_clipping=_CLIP, renorm_momentum=0.9, momentum=0.8)
    x = tf.constant(_RENORM_X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, training=True)
        loss = tf.reduce_sum(y * tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3)))
    gx, gg, gb = tape.gradient(loss, [x, layer.gamma, layer.beta])
    np.testing.assert_allclose(y.numpy(), [[-0.1513196, -0.8538462, 3.9351246],
                                           [0.7855325, -0.4692308, -2.3105564],
                                           [-1.0881717, 0.4923078, 1.4368522],
                                           [1.2539587, -0.0846153, -1.0614202]], atol=1e-5)
    np.testing.assert_allclose(gx.numpy(), [[-3.8589478, -0.5398928, -4.961015],
                                            [-2.00009, -0.1188937, -8.886583],
                                            [2.7138638, -0.7971653, 5.4604654],
                                            [3.1451735, 1.4559517, 8.38713]], atol=2e-5)
    np.testing.assert_allclose(gg.numpy(), [5.3131957, 8.538462, -5.831669], atol=2e-5)
    np.testing.assert_allclose(gb.numpy(), [18.0, 22.0, 26.0], atol=1e-5)


def test_renorm_without_affine_and_channels_first_in_a_function():
    layer = layers.BatchNormalization(renorm=True, axis=1, center=False, scale=False,
                                      renorm_clipping={"dmax": 0.0})
    x = randn(2, 3, 4)
    layer(tf.constant(x))
    fn = tf.function(lambda t: layer(t, training=True))
    y = fn(tf.constant(x)).numpy()
    mean, var = x.mean((0, 2), keepdims=True), x.var((0, 2), keepdims=True)
    r = np.sqrt(var + 1e-3)  # renorm_stddev starts at 1: r = stddev, d clipped to 0
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3) * r, rtol=1e-4, atol=1e-5)


def test_renorm_config_round_trip_and_errors():
    layer = layers.BatchNormalization(renorm=True, renorm_clipping=_CLIP, renorm_momentum=0.9)
    cfg = layer.get_config()
    assert (cfg["renorm"], cfg["renorm_clipping"], cfg["renorm_momentum"]) == (True, _CLIP, 0.9)
    again = layers.BatchNormalization.from_config(cfg)
    assert again.get_config() == cfg
    assert layers.BatchNormalization(renorm=True).get_config()["renorm_clipping"] == {}
    assert layers.BatchNormalization().get_config()["renorm_clipping"] is None
    with pytest.raises(ValueError, match="invalid keys"):
        layers.BatchNormalization(renorm=True, renorm_clipping={"rmaxx": 1})
    with pytest.raises(ValueError, match="rmax should be greater than rmin"):
        layers.BatchNormalization(renorm=True, renorm_clipping={"rmax": 1, "rmin": 2})
    with pytest.raises(ValueError, match="dmax should be non-negative"):
        layers.BatchNormalization(renorm=True, renorm_clipping={"dmax": -1})
