"""kiln.nn against NumPy references, eagerly and traced."""
import numpy as np
import pytest

import kiln as tf
from ops_harness import FLOATS, check, run_both, sample


def _pads(n, k, s, d, padding):
    keff = (k - 1) * d + 1
    if padding == "VALID":
        return (n - keff) // s + 1, 0, 0
    out = -(-n // s)
    total = max((out - 1) * s + keff - n, 0)
    return out, total // 2, total - total // 2


def _windows(x, kh, kw, strides, dilations, padding, fill=0.0):
    """[N, OH, OW, kh, kw, C] windows of an NHWC array (padded with fill)."""
    sh, sw = strides
    dh, dw = dilations
    oh, pt, pb = _pads(x.shape[1], kh, sh, dh, padding)
    ow, pl, pr = _pads(x.shape[2], kw, sw, dw, padding)
    xp = np.pad(x, [(0, 0), (pt, pb), (pl, pr), (0, 0)], constant_values=fill)
    out = np.empty((x.shape[0], oh, ow, kh, kw, x.shape[3]), x.dtype)
    for i in range(oh):
        for j in range(ow):
            out[:, i, j] = xp[:, i * sh:i * sh + (kh - 1) * dh + 1:dh,
                              j * sw:j * sw + (kw - 1) * dw + 1:dw, :]
    return out


def conv2d_ref(x, f, strides, padding, dilations=(1, 1)):
    w = _windows(x.astype(np.float64), f.shape[0], f.shape[1], strides, dilations, padding)
    return np.einsum("nijhwc,hwco->nijo", w, f.astype(np.float64)).astype(x.dtype)


def depthwise_ref(x, f, strides, padding, dilations=(1, 1)):
    w = _windows(x.astype(np.float64), f.shape[0], f.shape[1], strides, dilations, padding)
    out = np.einsum("nijhwc,hwcm->nijcm", w, f.astype(np.float64))
    return out.reshape(out.shape[:3] + (-1,)).astype(x.dtype)


CONV_CASES = [
    ((1, 5, 5, 2), (3, 3, 2, 4), 1, "SAME", None),
    ((2, 6, 7, 3), (3, 2, 3, 2), [2, 1], "VALID", None),
    ((1, 7, 7, 1), (3, 3, 1, 2), [1, 2, 2, 1], "SAME", None),
    ((1, 8, 8, 2), (3, 3, 2, 1), 1, "SAME", 2),
    ((1, 4, 4, 2), (1, 1, 2, 3), 1, "VALID", [1, 1]),
    ((0, 4, 4, 2), (2, 2, 2, 3), 1, "SAME", None),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("xs,fs,strides,padding,dil", CONV_CASES)
def test_conv2d(dtype, xs, fs, strides, padding, dil):
    x = sample(dtype, xs, seed=1)
    f = sample(dtype, fs, seed=2)
    s = [strides] * 2 if isinstance(strides, int) else strides[-3:-1] if len(strides) == 4 \
        else strides
    d = (1, 1) if dil is None else ([dil] * 2 if isinstance(dil, int) else dil)
    check(lambda a, b: tf.nn.conv2d(a, b, strides, padding, dilations=dil),
          lambda a, b: conv2d_ref(a, b, s, padding, d), x, f)


@pytest.mark.parametrize("dtype", FLOATS)
def test_depthwise_conv2d(dtype):
    x = sample(dtype, (2, 5, 6, 3), seed=3)
    f = sample(dtype, (3, 3, 3, 2), seed=4)
    check(lambda a, b: tf.nn.depthwise_conv2d(a, b, [1, 1, 1, 1], "SAME"),
          lambda a, b: depthwise_ref(a, b, (1, 1), "SAME"), x, f)
    check(lambda a, b: tf.nn.depthwise_conv2d(a, b, [1, 2, 2, 1], "VALID"),
          lambda a, b: depthwise_ref(a, b, (2, 2), "VALID"), x, f)


def test_summed_one_pixel_convolutions_in_a_function():
    # Squeeze-and-excitation-sized convolutions ([1, 1, 1, C] outputs) added
    # together: each one's output looked like a per-channel operand of the others'
    # fused epilogues, and the function failed to compile (unordered_map::at).
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 1, 1, 8)).astype(np.float32)
    ws = [rng.standard_normal((1, 1, 8, 5)).astype(np.float32) for _ in range(4)]
    want = sum(x.reshape(1, 8) @ w.reshape(8, 5) for w in ws).reshape(1, 1, 1, 5)
    f = tf.function(lambda x: tf.add_n([tf.nn.conv2d(x, w, 1, "VALID") for w in ws]))
    g = tf.function(lambda x: tf.nn.relu(tf.nn.conv2d(x, ws[0], 1, "VALID") + (
        tf.nn.conv2d(x, ws[1], 1, "VALID") + tf.nn.conv2d(x, ws[2], 1, "VALID"))))
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-5, atol=1e-5)
    want3 = np.maximum(sum(x.reshape(1, 8) @ w.reshape(8, 5) for w in ws[:3]), 0)
    np.testing.assert_allclose(g(x).numpy().reshape(1, 5), want3, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("jit", [False, True])
def test_residual_add_joins_the_convolution_in_a_function(jit):
    # ResNet's block ending, conv -> batch norm -> + shortcut -> relu: the residual
    # add is one of the fused convolution's steps (no Add or Relu left to run), in
    # graph mode and under jit_compile alike.
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 9, 9, 8)).astype(np.float32)
    w = rng.standard_normal((3, 3, 8, 8)).astype(np.float32) * 0.3
    scale = rng.uniform(0.5, 1.5, 8).astype(np.float32)
    shift = rng.standard_normal(8).astype(np.float32)
    f = tf.function(lambda x: tf.nn.relu(x + (tf.nn.conv2d(x, w, 1, "SAME") * scale + shift)),
                    jit_compile=jit)
    want = np.maximum(x + conv2d_ref(x, w, (1, 1), "SAME") * scale + shift, 0)
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-4, atol=1e-4)  # the filter settled
    ops = [n.op for n in f.get_concrete_function(x).optimized_graph.get_operations()]
    assert ops.count("_FusedConv2D") == 1 and "AddV2" not in ops and "Relu" not in ops, ops


def test_hard_swish_joins_the_convolution_in_a_function():
    # MobileNetV3's activation, Keras's x * relu6(x + 3) / 6, as oneDNN's hardswish.
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 10, 10, 6)).astype(np.float32) * 2
    w = rng.standard_normal((3, 3, 6, 16)).astype(np.float32)
    f = tf.function(lambda x: tf.keras.activations.hard_swish(tf.nn.conv2d(x, w, 1, "SAME")))
    y = conv2d_ref(x, w, (1, 1), "SAME")
    want = y * np.clip(y + 3, 0, 6) / 6
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-4, atol=1e-4)
    ops = [n.op for n in f.get_concrete_function(x).optimized_graph.get_operations()]
    assert ops.count("_FusedConv2D") == 1 and "FusedElementwise" not in ops, ops


def test_conv2d_explicit_padding_nchw_and_conv1d():
    x = sample("float32", (1, 5, 5, 2), seed=5)
    f = sample("float32", (3, 3, 2, 3), seed=6)
    pads = [[0, 0], [1, 2], [0, 1], [0, 0]]
    check(lambda a, b: tf.nn.conv2d(a, b, 1, pads),
          lambda a, b: conv2d_ref(np.pad(a, pads), b, (1, 1), "VALID"), x, f)
    xc = np.transpose(x, (0, 3, 1, 2)).copy()
    check(lambda a, b: tf.nn.conv2d(a, b, [1, 1, 2, 2], "SAME", data_format="NCHW"),
          lambda a, b: np.transpose(conv2d_ref(x, b, (2, 2), "SAME"), (0, 3, 1, 2)), xc, f)
    x1 = sample("float64", (2, 9, 3), seed=7)
    f1 = sample("float64", (3, 3, 4), seed=8)
    check(lambda a, b: tf.nn.conv1d(a, b, 2, "SAME"),
          lambda a, b: conv2d_ref(a[:, None], b[None], (1, 2), "SAME")[:, 0], x1, f1)


def _pool_ref(x, k, s, padding, avg):
    w = _windows(x.astype(np.float64), k[0], k[1], s, (1, 1), padding,
                 fill=np.nan if avg else -np.inf)
    out = np.nanmean(w, axis=(3, 4)) if avg else np.max(w, axis=(3, 4))
    return out.astype(x.dtype)


POOL_CASES = [(2, 2, "VALID"), (3, 2, "SAME"), ([2, 3], [1, 2], "SAME"), ([1, 3, 3, 1], 1, "VALID")]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ksize,strides,padding", POOL_CASES)
def test_pooling(dtype, ksize, strides, padding):
    x = sample(dtype, (2, 6, 7, 3), seed=9)

    def hw(v):
        v = [v] * 2 if isinstance(v, int) else v
        return v[1:3] if len(v) == 4 else v

    k, s = hw(ksize), hw(strides)
    check(lambda t: tf.nn.max_pool2d(t, ksize, strides, padding),
          lambda v: _pool_ref(v, k, s, padding, False), x)
    check(lambda t: tf.nn.avg_pool2d(t, ksize, strides, padding),
          lambda v: _pool_ref(v, k, s, padding, True), x)
    check(lambda t: tf.nn.max_pool(t, ksize, strides, padding),
          lambda v: _pool_ref(v, k, s, padding, False), x)


def test_pooling_1d_and_integer_max_pool():
    x = sample("float32", (2, 7, 3), seed=10)
    check(lambda t: tf.nn.avg_pool(t, 3, 2, "SAME"),
          lambda v: _pool_ref(v[:, None], (1, 3), (1, 2), "SAME", True)[:, 0], x)
    xi = sample("int32", (1, 4, 4, 1), seed=11)
    check(lambda t: tf.nn.max_pool2d(t, 2, 2, "VALID"),
          lambda v: v.reshape(1, 2, 2, 2, 2, 1).max(axis=(2, 4)), xi)


def test_bias_add():
    x = sample("float32", (2, 3, 4), seed=12)
    b = sample("float32", (4,), seed=13)
    check(tf.nn.bias_add, lambda v, w: v + w, x, b)
    b3 = sample("float32", (3,), seed=14)
    check(lambda v, w: tf.nn.bias_add(v, w, data_format="NCHW"),
          lambda v, w: v + w[:, None], x, b3)


def _softmax(v, axis=-1):
    e = np.exp(v.astype(np.float64) - v.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(v.dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axis", [None, -1, 0, 1])
def test_softmax(dtype, axis):
    x = sample(dtype, (3, 4, 5), seed=15) * 10
    ax = -1 if axis is None else axis
    check(lambda t: tf.nn.softmax(t, axis=axis), lambda v: _softmax(v, ax), x,
          kind="transcendental")
    check(lambda t: tf.nn.log_softmax(t, axis=axis),
          lambda v: np.log(_softmax(v.astype(np.float64), ax)).astype(dtype), x,
          kind="transcendental")
    check(lambda t: tf.math.log_softmax(t, axis),
          lambda v: np.log(_softmax(v.astype(np.float64), ax)).astype(dtype), x,
          kind="transcendental")


def test_cross_entropies():
    logits = sample("float64", (4, 5), seed=16)
    labels = _softmax(sample("float64", (4, 5), seed=17))
    logsm = np.log(_softmax(logits))
    check(lambda y, x: tf.nn.softmax_cross_entropy_with_logits(y, x),
          lambda y, x: -(y * logsm).sum(-1), labels, logits)
    idx = np.array([0, 4, 2, 2], np.int32)
    check(lambda y, x: tf.nn.sparse_softmax_cross_entropy_with_logits(y, x),
          lambda y, x: -logsm[np.arange(4), y], idx, logits)
    z = (sample("float64", (4, 5), seed=18) > 0).astype(np.float64)
    check(lambda y, x: tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=x),
          lambda y, x: -(y * np.log(1 / (1 + np.exp(-x))) + (1 - y) * np.log(1 - 1 /
                                                                             (1 + np.exp(-x)))),
          z, logits)


def test_moments_batch_norm_l2_normalize():
    x = sample("float64", (4, 3, 2), seed=19)
    check(lambda t: tf.nn.moments(t, [0, 1]),
          lambda v: (v.mean(axis=(0, 1)), v.var(axis=(0, 1))), x)
    check(lambda t: tf.nn.moments(t, [0], keepdims=True),
          lambda v: (v.mean(axis=0, keepdims=True), v.var(axis=0, keepdims=True)), x)
    mean, var = x.mean(axis=0), x.var(axis=0)
    off, sc = sample("float64", (3, 2), seed=20), sample("float64", (3, 2), seed=21)
    check(lambda t, m, v, o, s: tf.nn.batch_normalization(t, m, v, o, s, 1e-3),
          lambda t, m, v, o, s: (t - m) / np.sqrt(v + 1e-3) * s + o, x, mean, var, off, sc)
    check(lambda t, m, v: tf.nn.batch_normalization(t, m, v, None, None, 1e-3),
          lambda t, m, v: (t - m) / np.sqrt(v + 1e-3), x, mean, var)
    check(lambda t: tf.nn.l2_normalize(t, axis=-1),
          lambda v: v / np.sqrt(np.maximum((v * v).sum(-1, keepdims=True), 1e-12)), x)
    check(tf.math.l2_normalize, lambda v: v / np.sqrt((v * v).sum()), x)


def test_dropout():
    x = np.ones((200, 50), np.float32)
    eager, traced = run_both(lambda t: tf.nn.dropout(t, 0.25, seed=3), x)
    for out in (eager, traced):
        v = out.numpy()
        kept = v != 0
        np.testing.assert_allclose(v[kept], 1 / 0.75, rtol=1e-6)
        assert abs(kept.mean() - 0.75) < 0.02
    same = tf.nn.dropout(tf.constant(x), 0.0)
    np.testing.assert_array_equal(same.numpy(), x)
    ns = tf.nn.dropout(tf.constant(x), 0.5, noise_shape=[200, 1], seed=1).numpy()
    assert all(len(set(row)) == 1 for row in ns)  # one mask value per row
    with pytest.raises(ValueError, match="rate"):
        tf.nn.dropout(tf.constant(x), 1.0)


def test_activation_aliases():
    assert tf.nn.swish is tf.nn.silu
    x = sample("float32", (5,), seed=22)
    check(lambda t: tf.nn.silu(t, beta=2.0),
          lambda v: (v / (1 + np.exp(-2.0 * v.astype(np.float64)))).astype(v.dtype), x,
          kind="transcendental")
    check(tf.nn.sigmoid, lambda v: (1 / (1 + np.exp(-v.astype(np.float64)))).astype(v.dtype), x,
          kind="transcendental")
    check(tf.nn.tanh, lambda v: np.tanh(v.astype(np.float64)).astype(v.dtype), x,
          kind="transcendental")


@pytest.mark.parametrize("xs,fs,padding", [
    ((1, 28, 28, 32), (3, 3, 32, 48), "SAME"),  # row blocks
    ((1, 14, 14, 64), (3, 3, 64, 64), "SAME"),  # channel blocks
    ((2, 20, 20, 16), (3, 3, 16, 32), "VALID"),  # a batch
])
@pytest.mark.parametrize("mode", ["eager", "function", "jit"])
def test_conv2d_3x3_under_tensor_float_32_is_winograd_within_float32_tolerance(
        xs, fs, padding, mode):
    """TensorFlow's switch (on by default) lets float32 3x3 stride-1 convolutions
    run as Winograd's algorithm once their filter is settled (from its second call
    with one version): errors ~1e-5 of the output's scale; off, every
    convolution is direct (~1e-6)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(xs).astype(np.float32)
    f = (rng.standard_normal(fs) / np.sqrt(9 * fs[2])).astype(np.float32)
    want = conv2d_ref(x.astype(np.float64), f.astype(np.float64), (1, 1), padding)
    conv = lambda a, b: tf.nn.conv2d(a, b, 1, padding)
    if mode != "eager":
        conv = tf.function(conv, jit_compile=mode == "jit")
    assert tf.config.experimental.tensor_float_32_execution_enabled()
    xt, ft = tf.constant(x), tf.constant(f)
    try:
        got = {}
        for on in (True, False):
            tf.config.experimental.enable_tensor_float_32_execution(on)
            assert tf.config.experimental.tensor_float_32_execution_enabled() is on
            first = conv(xt, ft).numpy()  # a filter's first call: direct
            assert np.abs(first - want).max() / np.abs(want).max() < 5e-6
            got[on] = conv(xt, ft).numpy()
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(True)
    scale = np.abs(want).max()
    err_on = np.abs(got[True] - want).max() / scale
    err_off = np.abs(got[False] - want).max() / scale
    assert err_on < 5e-5 and err_off < 5e-6, (err_on, err_off)
    # Another algorithm ran, where oneDNN has one (AVX-512); else both direct.
    winograd = tf._kiln._cpu_kernels()["winograd"]
    assert np.array_equal(got[True], got[False]) is not winograd
