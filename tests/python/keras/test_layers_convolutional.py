"""Conv2D, DepthwiseConv2D and ZeroPadding2D against NumPy references."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import assert_layer, np_conv2d, np_depthwise, randn, same_pads

layers = tf.keras.layers


@pytest.mark.parametrize("kernel,strides,padding,dilation", [
    (3, 1, "valid", 1), (3, 1, "same", 1), (3, 2, "same", 1), ((1, 3), (2, 1), "valid", 1),
    (3, 1, "same", 2), (2, 2, "same", 1), (1, 1, "valid", 1),
])
def test_conv2d_matches_numpy(kernel, strides, padding, dilation):
    layer = layers.Conv2D(5, kernel, strides=strides, padding=padding, dilation_rate=dilation,
                          bias_initializer="random_normal")
    x = randn(2, 9, 8, 3)
    layer(tf.constant(x))
    k, b = layer.get_weights()
    kt = kernel if isinstance(kernel, tuple) else (kernel, kernel)
    st = strides if isinstance(strides, tuple) else (strides, strides)
    assert k.shape == kt + (3, 5) and b.shape == (5,)
    want = np_conv2d(x, k, st, padding, (dilation, dilation)) + b
    out = assert_layer(layer, x, want, rtol=1e-4, atol=1e-5)
    assert layer.compute_output_shape((None, 9, 8, 3)) == (None,) + out.shape[1:]


def test_conv2d_activation_no_bias_and_params():
    layer = layers.Conv2D(4, 3, padding="same", use_bias=False, activation="swish")
    x = randn(1, 6, 6, 2)
    layer(tf.constant(x))
    (k,) = layer.get_weights()
    z = np_conv2d(x, k, (1, 1), "same")
    assert_layer(layer, x, z / (1 + np.exp(-z)), rtol=1e-4, atol=1e-5)
    assert layer.count_params() == 3 * 3 * 2 * 4
    assert layers.Conv2D(100, 3)(tf.zeros([1, 20, 20, 10])).shape == (1, 18, 18, 100)


def test_conv2d_groups():
    layer = layers.Conv2D(6, 3, groups=2, padding="same")
    x = randn(1, 5, 5, 4)
    layer(tf.constant(x))
    k, b = layer.get_weights()
    assert k.shape == (3, 3, 2, 6)
    assert_layer(layer, x, np_conv2d(x, k, (1, 1), "same", groups=2) + b, rtol=1e-4, atol=1e-5)


def test_conv2d_argument_errors():
    with pytest.raises(ValueError, match="filters"):
        layers.Conv2D(0, 3)
    with pytest.raises(ValueError, match="kernel_size"):
        layers.Conv2D(2, (3, 3, 3))
    with pytest.raises(ValueError, match="kernel_size"):
        layers.Conv2D(2, 0)
    with pytest.raises(ValueError, match="padding"):
        layers.Conv2D(2, 3, padding="full")
    with pytest.raises(ValueError, match="data_format"):
        layers.Conv2D(2, 3, data_format="NHWC")
    with pytest.raises(ValueError, match="dilation_rate > 1"):
        layers.Conv2D(2, 3, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match="divisible by the number of groups"):
        layers.Conv2D(5, 3, groups=2)
    with pytest.raises(ValueError, match="input channels must be evenly divisible"):
        layers.Conv2D(4, 3, groups=2)(tf.zeros([1, 5, 5, 3]))
    with pytest.raises(ValueError, match="expected ndim=4"):
        layers.Conv2D(2, 3)(tf.zeros([5, 5, 3]))
    with pytest.raises(ValueError, match="<= 0"):
        layers.Conv2D(2, 5)(tf.zeros([1, 3, 3, 1]))
    layer = layers.Conv2D(2, 1)
    layer(tf.zeros([1, 4, 4, 3]))
    with pytest.raises(ValueError, match="expected axis -1 of input shape to have value 3"):
        layer(tf.zeros([1, 4, 4, 2]))


def test_conv2d_channels_first():
    layer = layers.Conv2D(3, 3, data_format="channels_first", padding="same")
    x = randn(1, 2, 6, 5)
    out = layer(tf.constant(x))
    k, b = layer.get_weights()
    want = np_conv2d(x.transpose(0, 2, 3, 1), k, (1, 1), "same") + b
    np.testing.assert_allclose(out.numpy(), want.transpose(0, 3, 1, 2), rtol=1e-4, atol=1e-5)
    assert layer.compute_output_shape((None, 2, 6, 5)) == (None, 3, 6, 5)


@pytest.mark.parametrize("strides,padding,mult,dilation", [
    (1, "same", 1, 1), (2, "same", 2, 1), (1, "valid", 3, 1), (1, "same", 1, 2),
])
def test_depthwise_conv2d_matches_numpy(strides, padding, mult, dilation):
    layer = layers.DepthwiseConv2D(3, strides=strides, padding=padding, depth_multiplier=mult,
                                   dilation_rate=dilation, bias_initializer="random_normal")
    x = randn(2, 7, 7, 4)
    layer(tf.constant(x))
    k, b = layer.get_weights()
    assert k.shape == (3, 3, 4, mult) and b.shape == (4 * mult,)
    # Keras 3 names the depthwise kernel "kernel" (TF 2.21: depthwise_conv2d/kernel).
    assert [w.path for w in layer.weights] == ["depthwise_conv2d/kernel", "depthwise_conv2d/bias"]
    assert layer.depthwise_kernel is layer.kernel
    want = np_depthwise(x, k, (strides, strides), padding, (dilation, dilation)) + b
    assert_layer(layer, x, want, rtol=1e-4, atol=1e-5)
    assert layer.count_params() == 9 * 4 * mult + 4 * mult


def test_depthwise_errors():
    with pytest.raises(ValueError, match="depth_multiplier"):
        layers.DepthwiseConv2D(3, depth_multiplier=0)
    with pytest.raises(ValueError, match="channel dimension"):
        layers.DepthwiseConv2D(3).build((None, 5, 5, None))


def test_zero_padding2d():
    x = randn(1, 2, 3, 2)
    assert_layer(layers.ZeroPadding2D(1), x, np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)]))
    assert_layer(layers.ZeroPadding2D((1, 2)), x, np.pad(x, [(0, 0), (1, 1), (2, 2), (0, 0)]))
    layer = layers.ZeroPadding2D(((0, 1), (2, 0)))
    assert_layer(layer, x, np.pad(x, [(0, 0), (0, 1), (2, 0), (0, 0)]))
    assert layer.compute_output_shape((None, 2, 3, 2)) == (None, 3, 5, 2)
    with pytest.raises(ValueError, match="padding"):
        layers.ZeroPadding2D((1, 2, 3))
    with pytest.raises(ValueError, match="non-negative"):
        layers.ZeroPadding2D(((1, -1), (0, 0)))


@pytest.mark.parametrize("strides,padding,mult,dilation", [
    ((1, 1), "valid", 1, (1, 1)), ((2, 2), "same", 2, (1, 1)), ((1, 1), "same", 1, (2, 2))])
def test_separable_conv2d_matches_numpy(strides, padding, mult, dilation):
    x = randn(2, 7, 6, 3)
    layer = layers.SeparableConv2D(4, (3, 2), strides=strides, padding=padding,
                                   depth_multiplier=mult, dilation_rate=dilation,
                                   bias_initializer="ones")
    layer(tf.constant(x))
    assert [w.name for w in layer.weights] == ["depthwise_kernel", "pointwise_kernel", "bias"]
    dw, pw, b = layer.get_weights()
    assert dw.shape == (3, 2, 3, mult) and pw.shape == (1, 1, 3 * mult, 4) and b.shape == (4,)
    assert layer.count_params() == dw.size + pw.size + 4
    want = np_conv2d(np_depthwise(x, dw, strides, padding, dilation), pw) + b
    assert_layer(layer, x, want, rtol=1e-4, atol=1e-4)
    assert layer.compute_output_shape(x.shape) == want.shape
    clone = layers.SeparableConv2D.from_config(layer.get_config())
    clone(tf.constant(x))
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(clone(tf.constant(x)).numpy(), want, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="filters"):
        layers.SeparableConv2D(0, 3)


def _np_conv1d(x, w, stride=1, padding="valid", dilation=1, groups=1):
    """[b, steps, c] x [k, c / groups, f] through the 2-D reference."""
    if padding == "causal":
        x = np.pad(x, [(0, 0), (dilation * (w.shape[0] - 1), 0), (0, 0)])
        padding = "valid"
    return np_conv2d(x[:, None], w[None], (1, stride), padding, (1, dilation), groups)[:, 0]


@pytest.mark.parametrize("kernel,stride,padding,dilation,groups", [
    (3, 1, "valid", 1, 1), (3, 2, "same", 1, 1), (2, 1, "causal", 2, 1), (3, 1, "causal", 1, 2),
    (1, 1, "valid", 1, 1)])
def test_conv1d_matches_numpy(kernel, stride, padding, dilation, groups):
    x = randn(3, 9, 4)
    layer = layers.Conv1D(6, kernel, strides=stride, padding=padding, dilation_rate=dilation,
                          groups=groups, activation="relu")
    out = layer(tf.constant(x))
    k, b = layer.get_weights()
    assert k.shape == (kernel, 4 // groups, 6) and b.shape == (6,)
    want = np.maximum(_np_conv1d(x, k, stride, padding, dilation, groups) + b, 0)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
    assert_layer(layer, x, want, rtol=1e-4, atol=1e-5)
    assert layer.compute_output_shape(x.shape) == want.shape
    jit = tf.function(lambda t: layer(t), jit_compile=True)(tf.constant(x))
    np.testing.assert_allclose(jit.numpy(), want, rtol=1e-4, atol=1e-5)
    assert layers.Conv1D.from_config(layer.get_config()).get_config() == layer.get_config()


def test_conv1d_causal_never_sees_later_steps_and_channels_first():
    layer = layers.Conv1D(2, 3, padding="causal")
    x = randn(1, 8, 3)
    base = layer(tf.constant(x)).numpy()
    later = x.copy()
    later[:, 5:] += 10.0
    np.testing.assert_allclose(layer(tf.constant(later)).numpy()[:, :5], base[:, :5], rtol=1e-6)
    first = layers.Conv1D(2, 3, data_format="channels_first")
    xc = randn(2, 3, 8)
    out = first(tf.constant(xc))
    k, b = first.get_weights()
    want = (_np_conv1d(xc.transpose(0, 2, 1), k) + b).transpose(0, 2, 1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)


def test_conv1d_errors_and_a_text_convnet_trains():
    with pytest.raises(ValueError, match="'valid', 'same', 'causal'"):
        layers.Conv1D(2, 3, padding="full")
    with pytest.raises(ValueError, match="evenly divisible"):
        layers.Conv1D(5, 3, groups=2)
    with pytest.raises(ValueError, match="<= 0"):
        layers.Conv1D(2, 5)(tf.constant(randn(1, 3, 2)))
    model = tf.keras.Sequential([layers.Conv1D(8, 3, activation="relu", input_shape=(16, 2)),
                                 layers.Conv1D(4, 3, padding="causal", dilation_rate=2),
                                 layers.Flatten(), layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    x = randn(32, 16, 2)
    y = x[:, :, 0].mean(axis=1, keepdims=True)
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=15, verbose=0)
    assert model.evaluate(x, y, verbose=0) < before


def _np_conv2d_transpose_valid(x, k, stride, dilation=1):
    """Scatter reference: each input value adds k[a, b, :, c] * x at row i * s + a * d."""
    n, hh, ww, c = x.shape
    kh, kw, f, _ = k.shape
    eh, ew = (kh - 1) * dilation + 1, (kw - 1) * dilation + 1
    out = np.zeros((n, hh * stride + max(eh - stride, 0), ww * stride + max(ew - stride, 0), f))
    for i in range(hh):
        for j in range(ww):
            for a in range(kh):
                for b in range(kw):
                    out[:, i * stride + a * dilation, j * stride + b * dilation] += \
                        x[:, i, j] @ k[a, b].T
    return out


@pytest.mark.parametrize("stride,dilation", [(1, 1), (2, 1), (3, 1), (1, 2)])
def test_conv2d_transpose_valid_matches_the_scatter_reference(stride, dilation):
    x = randn(2, 4, 3, 3)
    layer = layers.Conv2DTranspose(5, (3, 2), strides=stride, dilation_rate=dilation,
                                   bias_initializer="ones", activation="relu")
    layer(tf.constant(x))
    k, b = layer.get_weights()
    assert k.shape == (3, 2, 5, 3) and b.shape == (5,)
    assert layer.count_params() == k.size + 5
    kk = k if dilation == 1 else k  # dilation handled by the reference
    want = np.maximum(_np_conv2d_transpose_valid(x.astype(np.float64), kk.astype(np.float64),
                                                 stride, dilation) + b, 0)
    assert_layer(layer, x, want, rtol=1e-4, atol=1e-4)
    assert layer.compute_output_shape(x.shape) == want.shape
    clone = layers.Conv2DTranspose.from_config(layer.get_config())
    clone(tf.constant(x))
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(clone(tf.constant(x)).numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("stride,output_padding", [(1, None), (2, None), (2, 1), (3, 2)])
def test_conv2d_transpose_same_is_the_adjoint_of_conv2d(stride, output_padding):
    # <conv_transpose(x), y> == <x, conv2d(y)> with the same kernel, strides and padding.
    x = randn(2, 4, 5, 3)
    layer = layers.Conv2DTranspose(2, 3, strides=stride, padding="same",
                                   output_padding=output_padding, use_bias=False)
    out = layer(tf.constant(x)).numpy()
    (k,) = layer.get_weights()
    y = randn(*out.shape, seed=4)
    back = np_conv2d(y, k, (stride, stride), "same")
    assert back.shape == x.shape
    np.testing.assert_allclose((out * y).sum(), (x * back).sum(), rtol=1e-4)
    fn = tf.function(lambda a: layer(a), input_signature=[tf.TensorSpec([None] * 4, tf.float32)])
    np.testing.assert_allclose(fn(tf.constant(x)).numpy(), out, rtol=1e-5, atol=1e-5)


def test_conv2d_transpose_channels_first_errors_and_an_autoencoder_trains():
    x = randn(2, 3, 4, 4)
    first = layers.Conv2DTranspose(2, 2, strides=2, data_format="channels_first")
    out = first(tf.constant(x))
    (k, b) = first.get_weights()
    want = _np_conv2d_transpose_valid(x.transpose(0, 2, 3, 1), k, 2) + b
    np.testing.assert_allclose(out.numpy(), want.transpose(0, 3, 1, 2), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="Strides must be greater than output padding"):
        layers.Conv2DTranspose(2, 3, strides=2, output_padding=2)
    with pytest.raises(ValueError, match="filters"):
        layers.Conv2DTranspose(0, 3)
    inp = tf.keras.Input((8, 8, 1))
    z = layers.Conv2D(4, 3, strides=2, padding="same", activation="relu")(inp)
    rec = layers.Conv2DTranspose(1, 3, strides=2, padding="same")(z)
    model = tf.keras.Model(inp, rec)
    assert model.output_shape == (None, 8, 8, 1)
    model.compile(optimizer="adam", loss="mse")
    data = randn(16, 8, 8, 1)
    before = model.evaluate(data, data, verbose=0)
    model.fit(data, data, epochs=15, verbose=0)
    assert model.evaluate(data, data, verbose=0) < before


def test_nn_conv2d_transpose_matches_tensorflow_conventions():
    x = randn(1, 3, 3, 2)
    k = randn(3, 3, 4, 2, seed=2)
    out = tf.nn.conv2d_transpose(tf.constant(x), tf.constant(k), [1, 6, 6, 4], 2, "SAME")
    assert out.shape == (1, 6, 6, 4)
    y = randn(1, 6, 6, 4, seed=3)
    np.testing.assert_allclose((out.numpy() * y).sum(),
                               (x * np_conv2d(y, k, (2, 2), "same")).sum(), rtol=1e-4)
    nchw = tf.nn.conv2d_transpose(tf.constant(x.transpose(0, 3, 1, 2)), tf.constant(k),
                                  [1, 4, 6, 6], [1, 1, 2, 2], "SAME", data_format="NCHW")
    np.testing.assert_allclose(nchw.numpy(), out.numpy().transpose(0, 3, 1, 2), rtol=1e-5,
                               atol=1e-5)


def np_conv3d(x, k, strides, padding, dilation):
    """Direct 3-D convolution, channels_last, TensorFlow's SAME/VALID padding."""
    pads = [(0, 0)]
    for n, kk, s, d in zip(x.shape[1:4], k.shape[:3], strides, dilation):
        pads.append(same_pads(n, kk, s, d) if padding == "same" else (0, 0))
    xp = np.pad(x.astype(np.float64), pads + [(0, 0)])
    eff = [(kk - 1) * d + 1 for kk, d in zip(k.shape[:3], dilation)]
    out = [(xp.shape[i + 1] - eff[i]) // strides[i] + 1 for i in range(3)]
    y = np.zeros((x.shape[0], *out, k.shape[-1]))
    for a in range(k.shape[0]):
        for b in range(k.shape[1]):
            for c in range(k.shape[2]):
                o = [t * d for t, d in zip((a, b, c), dilation)]
                win = xp[:, o[0]:o[0] + (out[0] - 1) * strides[0] + 1:strides[0],
                         o[1]:o[1] + (out[1] - 1) * strides[1] + 1:strides[1],
                         o[2]:o[2] + (out[2] - 1) * strides[2] + 1:strides[2]]
                y += win @ k[a, b, c]
    return y


@pytest.mark.parametrize("kernel,strides,padding,dilation", [
    (2, 1, "valid", 1), ((3, 2, 3), (2, 1, 2), "same", 1), (2, 1, "same", (2, 1, 2)),
])
def test_conv3d_matches_numpy(kernel, strides, padding, dilation):
    layer = layers.Conv3D(4, kernel, strides=strides, padding=padding, dilation_rate=dilation,
                          bias_initializer="random_normal")
    x = randn(2, 5, 6, 7, 3)
    layer(tf.constant(x))
    k, b = layer.get_weights()
    ks = layer.kernel_size
    assert k.shape == ks + (3, 4) and [w.path for w in layer.weights] == ["conv3d/kernel",
                                                                          "conv3d/bias"]
    s3 = (strides,) * 3 if isinstance(strides, int) else strides
    d3 = (dilation,) * 3 if isinstance(dilation, int) else dilation
    want = np_conv3d(x, k, s3, padding, d3) + b
    out = assert_layer(layer, x, want, rtol=1e-4, atol=1e-4)
    assert layer.compute_output_shape((None, 5, 6, 7, 3)) == (None,) + out.shape[1:]
    assert layer.count_params() == int(np.prod(k.shape)) + 4


def test_conv3d_groups_channels_first_and_errors():
    x = randn(2, 4, 5, 6, 4)
    layer = layers.Conv3D(2, 2, groups=2, use_bias=False)
    out = layer(tf.constant(x)).numpy()
    k = layer.get_weights()[0]  # [2, 2, 2, 2, 2]: each group sees 2 channels
    want = np.concatenate([np_conv3d(x[..., :2], k[..., :1], (1,) * 3, "valid", (1,) * 3),
                           np_conv3d(x[..., 2:], k[..., 1:], (1,) * 3, "valid", (1,) * 3)], -1)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    cf = layers.Conv3D(3, 2, data_format="channels_first")
    y = cf(tf.constant(x.transpose(0, 4, 1, 2, 3))).numpy()
    kc, bc = cf.get_weights()
    want = np_conv3d(x, kc, (1,) * 3, "valid", (1,) * 3) + bc
    np.testing.assert_allclose(y, want.transpose(0, 4, 1, 2, 3), rtol=1e-4, atol=1e-4)
    cfg = cf.get_config()
    assert cfg["kernel_size"] == (2, 2, 2) and cfg["data_format"] == "channels_first"
    assert layers.Convolution3D is layers.Conv3D
    with pytest.raises(ValueError, match="evenly divisible"):
        layers.Conv3D(3, 2, groups=2)
    with pytest.raises(ValueError, match="dilation_rate > 1"):
        layers.Conv3D(3, 2, strides=2, dilation_rate=2)
