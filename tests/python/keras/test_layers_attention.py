"""MultiHeadAttention and Attention against NumPy references (Keras' EinsumDense kernel shapes,
masks, causal masks, scores), traced, under jit, and training a transformer block."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import randn

layers = tf.keras.layers


def _softmax(x, mask=None):
    if mask is not None:
        x = np.where(mask, x, -1e9)
    e = np.exp(x - x.max(-1, keepdims=True))
    p = e / e.sum(-1, keepdims=True)
    return p * mask if mask is not None else p


def np_mha(q, v, k, weights, heads, key_dim, mask=None):
    wq, bq, wk, bk, wv, bv, wo, bo = weights
    qp = np.einsum("btd,dhk->bhtk", q, wq) + bq[None, :, None, :]
    kp = np.einsum("bsd,dhk->bhsk", k, wk) + bk[None, :, None, :]
    vp = np.einsum("bsd,dhk->bhsk", v, wv) + bv[None, :, None, :]
    scores = np.einsum("bhtk,bhsk->bhts", qp / np.sqrt(key_dim), kp)
    probs = _softmax(scores, None if mask is None else mask[:, None])
    out = np.einsum("bhts,bhsk->bthk", probs, vp)
    return np.einsum("bthk,hko->bto", out, wo) + bo, probs


def test_mha_weights_match_keras_shapes_and_numpy():
    q, v = randn(2, 5, 8), randn(2, 7, 6, seed=1)
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=4,
                                      bias_initializer="random_normal")
    out, scores = layer(tf.constant(q), tf.constant(v), return_attention_scores=True)
    names = [w.path for w in layer.weights]
    assert names == [f"{layer.name}/{p}/{n}" for p in ("query", "key", "value",
                                                       "attention_output")
                     for n in ("kernel", "bias")]
    shapes = [tuple(w.shape) for w in layer.weights]
    assert shapes == [(8, 2, 3), (2, 3), (6, 2, 3), (2, 3), (6, 2, 4), (2, 4), (2, 4, 8), (8,)]
    assert layer.count_params() == sum(int(np.prod(s)) for s in shapes)
    w = [x.astype(np.float64) for x in layer.get_weights()]
    want, probs = np_mha(q.astype(np.float64), v.astype(np.float64), v.astype(np.float64), w,
                         2, 3)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(scores.numpy(), probs, rtol=1e-4, atol=1e-6)
    key = randn(2, 7, 5, seed=2)
    with_key = layers.MultiHeadAttention(2, 3)
    got = with_key(tf.constant(q), tf.constant(v), tf.constant(key))
    wk = [x.astype(np.float64) for x in with_key.get_weights()]
    np.testing.assert_allclose(got.numpy(), np_mha(q, v, key, wk, 2, 3)[0], rtol=1e-4,
                               atol=1e-5)


def test_mha_masks_causal_mask_traced_and_jit():
    x = randn(2, 6, 8)
    layer = layers.MultiHeadAttention(4, 2)
    layer(tf.constant(x), tf.constant(x))
    w = [v.astype(np.float64) for v in layer.get_weights()]
    causal = np.tril(np.ones((6, 6), bool))[None].repeat(2, 0)
    got = layer(tf.constant(x), tf.constant(x), use_causal_mask=True).numpy()
    np.testing.assert_allclose(got, np_mha(x, x, x, w, 4, 2, causal)[0], rtol=1e-4, atol=1e-5)
    # A step's output never depends on later steps.
    later = x.copy()
    later[:, 4:] += 5.0
    np.testing.assert_allclose(
        layer(tf.constant(later), tf.constant(later), use_causal_mask=True).numpy()[:, :4],
        got[:, :4], rtol=1e-5, atol=1e-5)
    pad = np.ones((2, 6), bool)
    pad[0, 4:] = False
    att = pad[:, None, :] & np.ones((2, 6, 1), bool)
    masked = layer(tf.constant(x), tf.constant(x), attention_mask=tf.constant(att)).numpy()
    np.testing.assert_allclose(masked, np_mha(x, x, x, w, 4, 2, att)[0], rtol=1e-4, atol=1e-5)
    vm = layer(tf.constant(x), tf.constant(x), value_mask=tf.constant(pad)).numpy()
    np.testing.assert_allclose(vm, masked, rtol=1e-5, atol=1e-6)
    fn = tf.function(lambda a: layer(a, a, use_causal_mask=True),
                     input_signature=[tf.TensorSpec([None, None, 8], tf.float32)])
    np.testing.assert_allclose(fn(tf.constant(x)).numpy(), got, rtol=1e-5, atol=1e-5)
    jit = tf.function(lambda a: layer(a, a, use_causal_mask=True), jit_compile=True)
    np.testing.assert_allclose(jit(tf.constant(x)).numpy(), got, rtol=1e-4, atol=1e-5)


def test_mha_config_and_errors():
    layer = layers.MultiHeadAttention(3, 4, value_dim=5, dropout=0.1, output_shape=7)
    cfg = layer.get_config()
    # Keras 3 keeps output_shape as a tuple and attention_axes None until built.
    assert (cfg["num_heads"], cfg["key_dim"], cfg["value_dim"], cfg["output_shape"]) == \
        (3, 4, 5, (7,))
    assert cfg["attention_axes"] is None and cfg["use_gate"] is False
    assert cfg["sliding_window"] is None and cfg["kernel_regularizer"] is None
    clone = layers.MultiHeadAttention.from_config(cfg)
    out = clone(tf.constant(randn(2, 3, 6)), tf.constant(randn(2, 4, 6)))
    assert out.shape == (2, 3, 7)
    with pytest.raises(ValueError, match="num_heads"):
        layers.MultiHeadAttention(0, 4)
    with pytest.raises(ValueError, match="key_dim"):
        layers.MultiHeadAttention(2, -1)
    with pytest.raises(ValueError, match="`query` and `value`"):
        layers.MultiHeadAttention(2, 4)(tf.constant(randn(1, 2, 3)))


@pytest.mark.parametrize("score_mode,use_scale", [("dot", False), ("dot", True),
                                                  ("concat", False), ("concat", True)])
def test_attention_layer(score_mode, use_scale):
    q, v = randn(2, 3, 4), randn(2, 5, 4, seed=1)
    layer = layers.Attention(use_scale=use_scale, score_mode=score_mode)
    vmask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    qmask = np.array([[1, 1, 0], [1, 1, 1]], bool)
    out, probs = layer([tf.constant(q), tf.constant(v)],
                       mask=[tf.constant(qmask), tf.constant(vmask)],
                       return_attention_scores=True)
    scale = 1.0
    if use_scale:
        layer.set_weights([np.float32(0.5)] + ([np.float32(1.0)] if score_mode == "concat"
                                                else []))
        scale = 0.5
        out, probs = layer([tf.constant(q), tf.constant(v)],
                           mask=[tf.constant(qmask), tf.constant(vmask)],
                           return_attention_scores=True)
    if score_mode == "dot":
        scores = q @ v.transpose(0, 2, 1) * scale
    else:
        scores = np.tanh(scale * (q[:, :, None] + v[:, None])).sum(-1)
    want_p = _softmax(scores, vmask[:, None, :])
    want = (want_p @ v) * qmask[..., None]
    np.testing.assert_allclose(probs.numpy(), want_p, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    assert layers.Attention.from_config(layer.get_config()).score_mode == score_mode


def test_transformer_block_trains():
    inp = tf.keras.Input((6, 8))
    att = layers.MultiHeadAttention(2, 4)(inp, inp)
    x = layers.LayerNormalization()(inp + att)
    ff = layers.Dense(8)(layers.Dense(16, activation="relu")(x))
    out = layers.Dense(1)(layers.GlobalAveragePooling1D()(layers.LayerNormalization()(x + ff)))
    model = tf.keras.Model(inp, out)
    assert model.output_shape == (None, 1)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
    data = randn(32, 6, 8)
    y = data[:, :, 0].max(axis=1, keepdims=True)
    before = model.evaluate(data, y, verbose=0)
    model.fit(data, y, epochs=20, verbose=0)
    assert model.evaluate(data, y, verbose=0) < before


def test_mha_gate_and_sliding_window_match_numpy():
    """Keras 3.15's use_gate (a "gate" EinsumDense, sigmoid, between key and value in the
    weights) and sliding_window (|i - j| < window), as TF 2.21 computes them."""
    q, v = randn(2, 5, 4), randn(2, 5, 6, seed=1)
    layer = layers.MultiHeadAttention(2, 3, use_gate=True, sliding_window=2,
                                      bias_initializer="random_normal")
    out = layer(tf.constant(q), tf.constant(v))
    assert [w.path.split("/")[1] for w in layer.weights[::2]] == [
        "query", "key", "gate", "value", "attention_output"]
    wq, bq, wk, bk, wg, bg, wv, bv, wo, bo = [w.astype(np.float64)
                                              for w in layer.get_weights()]
    band = np.abs(np.arange(5)[:, None] - np.arange(5)[None, :]) < 2
    qp = np.einsum("btd,dhk->bhtk", q, wq) + bq[None, :, None, :]
    kp = np.einsum("bsd,dhk->bhsk", v, wk) + bk[None, :, None, :]
    vp = np.einsum("bsd,dhk->bhsk", v, wv) + bv[None, :, None, :]
    probs = _softmax(np.einsum("bhtk,bhsk->bhts", qp / np.sqrt(3), kp), band[None, None])
    heads = np.einsum("bhts,bhsk->bthk", probs, vp)
    gate = 1 / (1 + np.exp(-(np.einsum("btd,dhk->bthk", q, wg) + bg)))
    want = np.einsum("bthk,hko->bto", heads * gate, wo) + bo
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
    cfg = layer.get_config()
    assert cfg["use_gate"] is True and cfg["sliding_window"] == 2
    assert cfg["attention_axes"] == (1,)  # set when built, as Keras
    with pytest.raises(ValueError, match="sliding_window"):
        layers.MultiHeadAttention(2, 3, sliding_window=0)
