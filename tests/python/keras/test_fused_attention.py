"""fuse_attention in functions: Keras' MultiHeadAttention (with and without masks) and the
transformer tutorial's scaled_dot_product_attention run as one _FusedAttention node in graph
mode and under jit_compile, with eager's values; the forms it must leave alone (scores
returned, gradients) stay unfused and correct."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import randn

layers = tf.keras.layers


def _ops(f, *args):
    return [n.op for n in f.get_concrete_function(*args).optimized_graph.get_operations()]


def _np_attention(q, k, v):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("jit", [False, True])
def test_mha_runs_fused_with_eager_values(jit):
    x, mem = randn(3, 20, 32), randn(3, 13, 32, seed=1)
    layer = layers.MultiHeadAttention(num_heads=4, key_dim=8, value_dim=6)
    want = layer(tf.constant(x), tf.constant(mem)).numpy()
    f = tf.function(lambda a, b: layer(a, b), jit_compile=jit)
    np.testing.assert_allclose(f(x, mem).numpy(), want, rtol=1e-5, atol=1e-5)
    ops = _ops(f, x, mem)
    assert ops.count("_FusedAttention") == 1, ops
    assert "Softmax" not in ops and "Transpose" not in ops, ops


@pytest.mark.parametrize("jit", [False, True])
def test_tutorial_attention_runs_fused(jit):
    # The TensorFlow transformer tutorial's split_heads / scaled_dot_product_attention.
    def split(x, heads):
        b, t, d = x.shape
        return tf.transpose(tf.reshape(x, (b, t, heads, d // heads)), perm=[0, 2, 1, 3])

    def attend(q, k, v):
        logits = tf.matmul(split(q, 4), split(k, 4), transpose_b=True)
        logits = logits / tf.math.sqrt(tf.cast(8, tf.float32))
        out = tf.matmul(tf.nn.softmax(logits, axis=-1), split(v, 4))
        return tf.reshape(tf.transpose(out, perm=[0, 2, 1, 3]), (2, 17, 32))

    q, k, v = randn(2, 17, 32), randn(2, 17, 32, seed=1), randn(2, 17, 32, seed=2)
    f = tf.function(attend, jit_compile=jit)
    split_np = lambda x: x.reshape(2, 17, 4, 8).transpose(0, 2, 1, 3)
    want = _np_attention(*(split_np(a).astype(np.float64) for a in (q, k, v)))
    want = want.transpose(0, 2, 1, 3).reshape(2, 17, 32)
    np.testing.assert_allclose(f(q, k, v).numpy(), want, rtol=1e-5, atol=1e-5)
    ops = _ops(f, q, k, v)
    assert ops.count("_FusedAttention") == 1 and "Softmax" not in ops, ops


def test_scores_and_gradients_stay_unfused_and_correct():
    x = randn(2, 9, 16)
    layer = layers.MultiHeadAttention(2, 8)
    layer(tf.constant(x), tf.constant(x))
    # Scores returned: the probabilities are an output, so they are computed.
    f = tf.function(lambda a: layer(a, a, return_attention_scores=True))
    out, scores = f(x)
    want_out, want_scores = layer(tf.constant(x), tf.constant(x), return_attention_scores=True)
    np.testing.assert_allclose(out.numpy(), want_out.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(scores.numpy(), want_scores.numpy(), rtol=1e-5, atol=1e-6)
    assert "_FusedAttention" not in _ops(f, x)

    # Gradients: the backward pass reads the probabilities, so they stay computed.
    @tf.function
    def grads(a):
        with tf.GradientTape() as tape:
            tape.watch(a)
            y = tf.reduce_sum(layer(a, a) ** 2)
        return tape.gradient(y, a)

    a = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(a)
        y = tf.reduce_sum(layer(a, a) ** 2)
    np.testing.assert_allclose(grads(x).numpy(), tape.gradient(y, a).numpy(), rtol=1e-4,
                               atol=1e-5)


@pytest.mark.parametrize("jit", [False, True])
def test_masked_attention_runs_fused(jit):
    # Keras' masks (causal, attention_mask with a query row masked whole: its weights are 0)
    # and the tutorial's `logits += mask * -1e9` padding mask.
    rng = np.random.default_rng(3)
    x = randn(2, 9, 16)
    layer = layers.MultiHeadAttention(2, 8)
    want = layer(tf.constant(x), tf.constant(x), use_causal_mask=True).numpy()
    g = tf.function(lambda a: layer(a, a, use_causal_mask=True), jit_compile=jit)
    np.testing.assert_allclose(g(x).numpy(), want, rtol=1e-5, atol=1e-5)
    ops = _ops(g, x)
    assert ops.count("_FusedAttention") == 1 and "Softmax" not in ops, ops
    m = rng.random((2, 9, 9)) > 0.3
    m[0, 2] = False
    want = layer(tf.constant(x), tf.constant(x), attention_mask=tf.constant(m)).numpy()
    g = tf.function(lambda a, mm: layer(a, a, attention_mask=mm), jit_compile=jit)
    np.testing.assert_allclose(g(x, m).numpy(), want, rtol=1e-5, atol=1e-5)
    assert _ops(g, x, m).count("_FusedAttention") == 1

    def attend(q, k, v, pad):
        logits = tf.matmul(q, k, transpose_b=True) / tf.math.sqrt(8.0)
        logits += pad[:, None, None, :] * -1e9
        return tf.matmul(tf.nn.softmax(logits, axis=-1), v)

    q, k, v = randn(2, 3, 7, 8), randn(2, 3, 7, 8, seed=1), randn(2, 3, 7, 8, seed=2)
    pad = (rng.random((2, 7)) > 0.7).astype(np.float32)
    pad[:, 0] = 0  # every row sees one key
    f = tf.function(attend, jit_compile=jit)
    s = q.astype(np.float64) @ np.swapaxes(k, -1, -2) / np.sqrt(8) + pad[:, None, None] * -1e9
    e = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(f(q, k, v, pad).numpy(), e / e.sum(-1, keepdims=True) @ v,
                               rtol=1e-5, atol=1e-5)
    assert _ops(f, q, k, v, pad).count("_FusedAttention") == 1


@pytest.mark.parametrize("jit", [False, True])
def test_keras_attention_layer_runs_fused(jit):
    # Keras' Attention layer (one head, rank 3): plain, with a value mask, causal; with
    # use_scale its learned scale is a variable, so that form stays unfused.
    rng = np.random.default_rng(5)
    q, v = randn(3, 11, 16), randn(3, 14, 16, seed=1)
    vmask = rng.random((3, 14)) > 0.3
    vmask[:, 0] = True
    layer = layers.Attention()
    cases = [
        (lambda a, b: layer([a, b]), (q, v)),
        (lambda a, b, m: layer([a, b], mask=[None, m]), (q, v, vmask)),
        (lambda a: layer([a, a], use_causal_mask=True), (q,)),
    ]
    for fn, args in cases:
        want = fn(*(tf.constant(a) for a in args)).numpy()
        f = tf.function(fn, jit_compile=jit)
        np.testing.assert_allclose(f(*args).numpy(), want, rtol=1e-5, atol=1e-5)
        ops = _ops(f, *args)
        assert ops.count("_FusedAttention") == 1 and "Softmax" not in ops, ops
    s = q.astype(np.float64) @ np.swapaxes(v, -1, -2)
    s = np.where(vmask[:, None, :], s, -1e9)
    e = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(cases[1][0](*cases[1][1]).numpy(),
                               e / e.sum(-1, keepdims=True) @ v, rtol=1e-5, atol=1e-5)
    scaled = layers.Attention(use_scale=True)
    f = tf.function(lambda a, b: scaled([a, b]), jit_compile=jit)
    np.testing.assert_allclose(f(q, v).numpy(), scaled([tf.constant(q), tf.constant(v)]).numpy(),
                               rtol=1e-5, atol=1e-5)
    assert "_FusedAttention" not in _ops(f, q, v)


def test_transformer_encoder_block_matches_unfused():
    # A transformer encoder block (attention, residual, layer norm, feed-forward) with the
    # pass on and off: the same values.
    inp = tf.keras.Input((24, 32))
    att = layers.MultiHeadAttention(4, 8)(inp, inp)
    h = layers.LayerNormalization()(inp + att)
    out = layers.LayerNormalization()(h + layers.Dense(32)(layers.Dense(64, "relu")(h)))
    model = tf.keras.Model(inp, out)
    x = randn(4, 24, 32)
    f = tf.function(lambda a: model(a, training=False))
    want = model(tf.constant(x), training=False).numpy()
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-5, atol=1e-5)
    assert _ops(f, x).count("_FusedAttention") == 1


@pytest.fixture
def mixed_bfloat16():
    tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")
    yield
    tf.keras.mixed_precision.set_global_policy("float32")


@pytest.mark.parametrize("jit", [False, True])
def test_mha_under_mixed_bfloat16_runs_fused(mixed_bfloat16, jit):
    # bf16 q, k, v with the softmax in float32 between casts: one bf16 node, its products
    # on oneDNN's bf16 kernels. Against a float64 reference of the same bf16 weights and
    # input: the fused node keeps its scores in float32, so it is at least as close as the
    # unfused ops (which round the scores to bf16) and within bf16's precision.
    x = randn(2, 40, 32)
    layer = layers.MultiHeadAttention(num_heads=4, key_dim=8)
    layer(tf.constant(x), tf.constant(x))
    f = tf.function(lambda a: layer(a, a), jit_compile=jit)
    got = f(x)
    assert got.dtype == tf.bfloat16
    ops = _ops(f, x)
    assert ops.count("_FusedAttention") == 1 and "Softmax" not in ops, ops
    assert "BatchMatMulV2" not in ops and "Transpose" not in ops, ops

    def rounded(a):
        return tf.cast(tf.cast(a, tf.bfloat16), tf.float32).numpy().astype(np.float64)

    xb = rounded(x)
    wq, bq, wk, bk, wv, bv, wo, bo = (rounded(w) for w in layer.get_weights())
    proj = lambda w, b: rounded(np.einsum("btd,dhk->bhtk", xb, w) + b[None, :, None])
    q, k, v = proj(wq, bq), proj(wk, bk), proj(wv, bv)
    o = rounded(_np_attention(rounded(q / np.sqrt(8)) * np.sqrt(8), k, v))
    want = np.einsum("bhtk,hkd->btd", o, wo) + bo
    err = np.abs(got.numpy().astype(np.float64) - want).max()
    assert err < 0.015 * np.abs(want).max(), err
    eager = layer(tf.constant(x), tf.constant(x)).numpy().astype(np.float64)
    assert err <= np.abs(eager - want).max() + 0.01 * np.abs(want).max()


@pytest.mark.parametrize("jit", [False, True])
def test_masked_mha_under_mixed_bfloat16_runs_fused(mixed_bfloat16, jit):
    # Keras' masked softmax in bf16 (select, softmax and zeroing in float32 between casts):
    # causal, and an attention mask with a query row masked whole (its outputs are the
    # output projection's bias alone). Against the float32 layer on the same weights.
    rng = np.random.default_rng(5)
    x = randn(2, 12, 16)
    m = rng.random((2, 12, 12)) > 0.3
    m[1, 4] = False
    layer = layers.MultiHeadAttention(2, 8)
    layer(tf.constant(x), tf.constant(x))
    tf.keras.mixed_precision.set_global_policy("float32")
    ref = layers.MultiHeadAttention(2, 8)
    ref(tf.constant(x), tf.constant(x))
    ref.set_weights(layer.get_weights())
    for kwargs, args in (({"use_causal_mask": True}, (x,)), ({}, (x, m))):
        def call(a, mm=None, lay=layer):
            return lay(a, a, attention_mask=mm, **kwargs)
        f = tf.function(call, jit_compile=jit)
        got = f(*args)
        assert got.dtype == tf.bfloat16
        ops = _ops(f, *args)
        assert ops.count("_FusedAttention") == 1 and "Softmax" not in ops, ops
        want = call(*(tf.constant(a) for a in args), lay=ref).numpy()
        np.testing.assert_allclose(np.asarray(got.numpy(), np.float32), want, atol=0.03)
        if args[1:]:
            bias = layer.get_weights()[-1]
            np.testing.assert_allclose(np.asarray(got.numpy()[1, 4], np.float32), bias,
                                       atol=0.01)
