"""Bidirectional and TimeDistributed, and masks flowing through models (Embedding(mask_zero),
Masking) into RNNs and pooling, as Keras propagates them."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import assert_layer, randn
from test_layers_rnn import np_rnn

layers = tf.keras.layers


@pytest.mark.parametrize("merge_mode", ["concat", "sum", "mul", "ave", None])
def test_bidirectional_matches_two_numpy_rnns(merge_mode):
    x = randn(2, 5, 3)
    layer = layers.Bidirectional(layers.LSTM(4, return_sequences=True,
                                             bias_initializer="random_normal"),
                                 merge_mode=merge_mode)
    out = layer(tf.constant(x))
    w = [v.astype(np.float64) for v in layer.get_weights()]
    fwd, _, _ = np_rnn("lstm", x.astype(np.float64), w[:3])
    bwd, _, _ = np_rnn("lstm", x.astype(np.float64), w[3:], backwards=True)
    bwd = bwd[:, ::-1]  # back in step order
    want = {"concat": np.concatenate([fwd, bwd], -1), "sum": fwd + bwd, "mul": fwd * bwd,
            "ave": (fwd + bwd) / 2, None: [fwd, bwd]}[merge_mode]
    if merge_mode is None:
        for o, ww in zip(out, want):
            np.testing.assert_allclose(o.numpy(), ww, rtol=1e-4, atol=1e-5)
    else:
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
        assert layer.compute_output_shape(x.shape) == want.shape
    assert [v.path for v in layer.weights][0] == \
        f"{layer.name}/forward_lstm/lstm_cell/kernel"
    assert [v.path for v in layer.weights][3] == \
        f"{layer.name}/backward_lstm/lstm_cell/kernel"
    assert layer.count_params() == 2 * (3 * 16 + 4 * 16 + 16)


def test_bidirectional_last_output_states_config_and_errors():
    x = randn(2, 6, 3)
    layer = layers.Bidirectional(layers.GRU(4, return_state=True))
    out, h_fwd, h_bwd = layer(tf.constant(x))
    w = [v.astype(np.float64) for v in layer.get_weights()]
    fwd, hf, _ = np_rnn("gru", x.astype(np.float64), w[:3])
    bwd, hb, _ = np_rnn("gru", x.astype(np.float64), w[3:], backwards=True)
    np.testing.assert_allclose(out.numpy(), np.concatenate([fwd[:, -1], bwd[:, -1]], -1),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h_fwd.numpy(), hf, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h_bwd.numpy(), hb, rtol=1e-4, atol=1e-5)
    cfg = layers.Bidirectional(layers.LSTM(3), merge_mode="sum").get_config()
    clone = layers.Bidirectional.from_config(cfg)
    assert clone.merge_mode == "sum" and clone.forward_layer.units == 3
    with pytest.raises(ValueError, match="Invalid merge mode"):
        layers.Bidirectional(layers.LSTM(3), merge_mode="max")
    with pytest.raises(ValueError, match="recurrent layer"):
        layers.Bidirectional(layers.Dense(3))


def test_time_distributed_applies_one_layer_to_every_step():
    x = randn(2, 4, 3)
    layer = layers.TimeDistributed(layers.Dense(5))
    out = layer(tf.constant(x))
    k, b = layer.get_weights()
    assert k.shape == (3, 5)
    np.testing.assert_allclose(out.numpy(), x @ k + b, rtol=1e-5, atol=1e-6)
    assert_layer(layer, x, x @ k + b)
    assert layer.compute_output_shape((None, 4, 3)) == (None, 4, 5)
    images = randn(2, 3, 6, 6, 1)
    conv = layers.TimeDistributed(layers.Conv2D(2, 3))
    assert conv(tf.constant(images)).shape == (2, 3, 4, 4, 2)
    fn = tf.function(lambda a: layer(a), input_signature=[tf.TensorSpec([None, None, 3],
                                                                        tf.float32)])
    np.testing.assert_allclose(fn(tf.constant(x)).numpy(), x @ k + b, rtol=1e-5, atol=1e-6)
    clone = layers.TimeDistributed.from_config(layer.get_config())
    assert type(clone.layer).__name__ == "Dense" and clone.layer.units == 5
    with pytest.raises(ValueError, match="at least 3 dimensions"):
        layers.TimeDistributed(layers.Dense(2))(tf.constant(randn(2, 3)))


def test_masking_layer():
    x = randn(2, 4, 3)
    x[0, 1] = 0
    x[1, 2:] = 0
    layer = layers.Masking()
    keep = (x != 0).any(axis=-1)
    np.testing.assert_array_equal(layer.compute_mask(tf.constant(x)).numpy(), keep)
    assert_layer(layer, x, x * keep[..., None])
    assert layers.Masking.from_config(layers.Masking(-1.0).get_config()).mask_value == -1.0


def test_masks_flow_from_embedding_through_models_into_rnns_and_pooling():
    ids = np.array([[3, 4, 0, 0, 0], [1, 2, 3, 4, 5], [7, 0, 0, 0, 0]])
    mask = ids != 0
    emb = layers.Embedding(10, 4, mask_zero=True)
    lstm = layers.LSTM(3, return_sequences=True)
    pool = layers.GlobalAveragePooling1D()
    inp = tf.keras.Input((5,), dtype="int32")
    out = pool(layers.Dropout(0.5)(lstm(emb(inp))))  # Dropout passes the mask on
    model = tf.keras.Model(inp, out)
    got = model.predict(ids, verbose=0)
    # The same computed by hand with the mask given explicitly.
    seq = lstm(emb(tf.constant(ids)), mask=tf.constant(mask))
    want = pool(seq, mask=tf.constant(mask)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    unmasked = pool(lstm(emb(tf.constant(ids)))).numpy()
    assert not np.allclose(got, unmasked)
    # Sequential models too, and inside fit.
    seqmodel = tf.keras.Sequential([layers.Embedding(10, 4, mask_zero=True, input_shape=(5,)),
                                    layers.GRU(3), layers.Dense(1)])
    emb2, gru, dense = seqmodel.layers
    by_hand = dense(gru(emb2(tf.constant(ids)), mask=tf.constant(mask))).numpy()
    np.testing.assert_allclose(seqmodel.predict(ids, verbose=0), by_hand, rtol=1e-5, atol=1e-6)
    # Padding beyond the real steps does not change a masked model's output.
    longer = np.pad(ids, [(0, 0), (0, 3)])
    model2 = tf.keras.Sequential([layers.Embedding(10, 4, mask_zero=True, input_shape=(8,)),
                                  layers.LSTM(3)])
    model1 = tf.keras.Sequential([layers.Embedding(10, 4, mask_zero=True, input_shape=(5,)),
                                  layers.LSTM(3)])
    model1.set_weights(model2.get_weights())
    np.testing.assert_allclose(model2.predict(longer, verbose=0), model1.predict(ids, verbose=0),
                               rtol=1e-5, atol=1e-6)


def test_bidirectional_masked_sequences_are_zero_and_config_matches_keras():
    """As Keras 3: with return_sequences both directions output zeros at masked steps
    (zero_output_for_mask forced on), and the config holds the forward layer (named
    forward_<name>) and the backward layer."""
    x = randn(2, 5, 3)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    layer = layers.Bidirectional(layers.LSTM(3, return_sequences=True))
    out = layer(tf.constant(x), mask=tf.constant(mask)).numpy()
    assert layer.forward_layer.zero_output_for_mask and layer.backward_layer.zero_output_for_mask
    np.testing.assert_array_equal(out[0, 3:], 0.0)
    fwd = layer.forward_layer(tf.constant(x), mask=tf.constant(mask)).numpy()
    bwd = layer.backward_layer(tf.constant(x), mask=tf.constant(mask)).numpy()[:, ::-1]
    np.testing.assert_allclose(out, np.concatenate([fwd, bwd], -1), rtol=1e-6)
    cfg = layer.get_config()
    assert cfg["layer"]["config"]["name"] == "forward_lstm"
    assert cfg["backward_layer"]["config"]["name"] == "backward_lstm"
    assert cfg["backward_layer"]["config"]["go_backwards"] is True
    clone = layers.Bidirectional.from_config(cfg)
    assert clone.forward_layer.name == "forward_lstm"
    assert clone.backward_layer.name == "backward_lstm"
    with pytest.raises(ValueError, match="different `go_backwards`"):
        layers.Bidirectional(layers.GRU(2), backward_layer=layers.GRU(2))


def test_time_distributed_weights_live_under_the_wrapper():
    """TF 2.21: time_distributed/dense/kernel."""
    layer = layers.TimeDistributed(layers.Dense(3))
    layer(tf.constant(randn(2, 4, 5)))
    assert [w.path for w in layer.weights] == ["time_distributed/dense/kernel",
                                               "time_distributed/dense/bias"]
