"""SimpleRNN, LSTM, GRU and their cells against NumPy references of Keras' formulas (weights in
Keras' shapes and gate orders), with sequences, states, masks, initial states, going backwards,
unrolling, gradients, jit and fit."""
import numpy as np
import onnxruntime as ort
import pytest

import kiln as tf
from keras_helpers import randn

keras = tf.keras
layers = keras.layers


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_rnn(kind, x, weights, h0=None, c0=None, mask=None, backwards=False, reset_after=True):
    """Every step's output and the final states, as Keras computes them."""
    k, r, b = weights
    n, steps, _ = x.shape
    u = r.shape[0]
    hs = np.zeros((n, u)) if h0 is None else h0
    cs = np.zeros((n, u)) if c0 is None else c0
    order = range(steps - 1, -1, -1) if backwards else range(steps)
    outs, last = [], np.zeros((n, u))
    for t in order:
        xt = x[:, t]
        if kind == "simple":
            hn, cn = np.tanh(xt @ k + hs @ r + b), cs
        elif kind == "lstm":
            z = xt @ k + hs @ r + b
            i, f, cc, o = np.split(z, 4, axis=1)
            cn = _sigmoid(f) * cs + _sigmoid(i) * np.tanh(cc)
            hn = _sigmoid(o) * np.tanh(cn)
        else:
            bx, bh = (b[0], b[1]) if reset_after else (b, np.zeros_like(b))
            xz, xr, xh = np.split(xt @ k + bx, 3, axis=1)
            if reset_after:
                rz, rr, rh = np.split(hs @ r + bh, 3, axis=1)
            else:
                rz, rr = np.split(hs @ r[:, :2 * u], 2, axis=1)
            z, rg = _sigmoid(xz + rz), _sigmoid(xr + rr)
            rh = rg * rh if reset_after else (rg * hs) @ r[:, 2 * u:]
            hn, cn = z * hs + (1 - z) * np.tanh(xh + rh), cs
        if mask is not None:
            keep = mask[:, t:t + 1]
            hn, cn, out = np.where(keep, hn, hs), np.where(keep, cn, cs), np.where(keep, hn, last)
        else:
            out = hn
        hs, cs, last = hn, cn, out
        outs.append(out)
    return np.stack(outs, 1), hs, cs


KINDS = {"simple": (layers.SimpleRNN, 1), "lstm": (layers.LSTM, 4), "gru": (layers.GRU, 3)}


@pytest.mark.parametrize("kind", list(KINDS))
def test_weights_shapes_names_and_params(kind):
    cls, gates = KINDS[kind]
    layer = cls(5)
    layer(tf.constant(randn(2, 4, 3)))
    shapes = [tuple(w.shape) for w in layer.weights]
    bias = (2, 3 * 5) if kind == "gru" else (gates * 5,)
    assert shapes == [(3, gates * 5), (5, gates * 5), bias]
    assert [w.name for w in layer.weights] == ["kernel", "recurrent_kernel", "bias"]
    cell = {"simple": "simple_rnn_cell", "lstm": "lstm_cell", "gru": "gru_cell"}[kind]
    assert layer.weights[0].path == f"{layer.name}/{cell}/kernel"
    assert layer.count_params() == sum(int(np.prod(s)) for s in shapes)
    if kind == "lstm":  # unit_forget_bias: the forget gate's quarter starts at 1
        np.testing.assert_array_equal(layer.get_weights()[2], np.repeat([0, 1, 0, 0], 5))


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("backwards", [False, True])
def test_outputs_and_states_match_numpy(kind, backwards):
    cls, _ = KINDS[kind]
    x = randn(3, 6, 4)
    layer = cls(5, return_sequences=True, return_state=True, go_backwards=backwards,
                bias_initializer="random_normal")
    got = layer(tf.constant(x))
    w = [v.astype(np.float64) for v in layer.get_weights()]
    seq, hs, cs = np_rnn(kind, x.astype(np.float64), w, backwards=backwards)
    np.testing.assert_allclose(got[0].numpy(), seq, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[1].numpy(), hs, rtol=1e-4, atol=1e-5)
    if kind == "lstm":
        np.testing.assert_allclose(got[2].numpy(), cs, rtol=1e-4, atol=1e-5)
    assert len(got) == (3 if kind == "lstm" else 2)
    # The same in a function (one While node), unknown steps, and under jit.
    fn = tf.function(lambda a: layer(a), input_signature=[tf.TensorSpec([None, None, 4],
                                                                        tf.float32)])
    np.testing.assert_allclose(fn(tf.constant(x))[0].numpy(), seq, rtol=1e-4, atol=1e-5)
    jit = tf.function(lambda a: layer(a), jit_compile=True)(tf.constant(x))
    np.testing.assert_allclose(jit[0].numpy(), seq, rtol=1e-4, atol=1e-5)
    # The last output only, and unrolled.
    last = cls(5, go_backwards=backwards)
    last(tf.constant(x))
    last.set_weights(layer.get_weights())
    np.testing.assert_allclose(last(tf.constant(x)).numpy(), seq[:, -1], rtol=1e-4, atol=1e-5)
    unrolled = cls(5, unroll=True, go_backwards=backwards)
    unrolled(tf.constant(x))
    unrolled.set_weights(layer.get_weights())
    np.testing.assert_allclose(unrolled(tf.constant(x)).numpy(), seq[:, -1], rtol=1e-4,
                               atol=1e-5)


def test_gru_reset_before():
    x = randn(2, 5, 3)
    layer = layers.GRU(4, reset_after=False, return_sequences=True,
                       bias_initializer="random_normal")
    got = layer(tf.constant(x)).numpy()
    assert layer.weights[2].shape == (12,)
    w = [v.astype(np.float64) for v in layer.get_weights()]
    seq, _, _ = np_rnn("gru", x.astype(np.float64), w, reset_after=False)
    np.testing.assert_allclose(got, seq, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", list(KINDS))
def test_masks_and_initial_states(kind):
    cls, _ = KINDS[kind]
    x = randn(3, 5, 2)
    mask = np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 0], [1, 1, 1, 1, 1]], bool)
    n_states = 2 if kind == "lstm" else 1
    init = [randn(3, 4, seed=7 + i) for i in range(n_states)]
    layer = cls(4, return_sequences=True, return_state=True)
    got = layer(tf.constant(x), mask=tf.constant(mask),
                initial_state=[tf.constant(s) for s in init])
    w = [v.astype(np.float64) for v in layer.get_weights()]
    seq, hs, cs = np_rnn(kind, x.astype(np.float64), w, h0=init[0].astype(np.float64),
                         c0=init[1].astype(np.float64) if kind == "lstm" else None, mask=mask)
    np.testing.assert_allclose(got[0].numpy(), seq, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[1].numpy(), hs, rtol=1e-4, atol=1e-5)
    zero = cls(4, return_sequences=True, zero_output_for_mask=True)
    zero(tf.constant(x))
    zero.set_weights(layer.get_weights())
    out = zero(tf.constant(x), mask=tf.constant(mask)).numpy()
    np.testing.assert_array_equal(out[~mask], 0)
    with pytest.raises(ValueError, match="initial states"):
        layer(tf.constant(x), initial_state=[tf.constant(init[0])] * (n_states + 1))


def test_lstm_gradients_match_finite_differences():
    x = randn(2, 4, 3).astype(np.float64)
    layer = layers.LSTM(3, dtype="float64", bias_initializer="random_normal")
    layer(tf.constant(x))
    w = layer.get_weights()
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(tf.constant(x)) ** 2)
    grads = [tf.convert_to_tensor(g).numpy() for g in tape.gradient(loss, layer.weights)]

    def f(ws):
        seq, _, _ = np_rnn("lstm", x, ws)
        return (seq[:, -1] ** 2).sum()
    eps = 1e-6
    for i, g in enumerate(grads):
        num = np.zeros_like(w[i])
        for idx in np.ndindex(w[i].shape):
            plus = [v.copy() for v in w]
            minus = [v.copy() for v in w]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            num[idx] = (f(plus) - f(minus)) / (2 * eps)
        np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-7)


def test_configs_round_trip_and_errors():
    layer = layers.LSTM(6, return_sequences=True, go_backwards=True, dropout=0.1,
                        recurrent_activation="hard_sigmoid", unit_forget_bias=False)
    cfg = layer.get_config()
    assert (cfg["units"], cfg["return_sequences"], cfg["go_backwards"], cfg["dropout"]) == \
        (6, True, True, 0.1)
    assert cfg["unit_forget_bias"] is False
    clone = layers.LSTM.from_config(cfg)
    assert clone.get_config() == cfg
    gru = layers.GRU(3, reset_after=False)
    assert layers.GRU.from_config(gru.get_config()).cell.reset_after is False
    rnn = layers.RNN(layers.SimpleRNNCell(2), return_state=True)
    assert type(layers.RNN.from_config(rnn.get_config()).cell).__name__ == "SimpleRNNCell"
    assert layers.LSTM(3).compute_output_shape((None, 7, 2)) == (None, 3)
    with pytest.raises(ValueError, match="units"):
        layers.LSTM(0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        layers.GRU(2, dropout=1.5)
    with pytest.raises(ValueError, match="ndim=3"):
        layers.SimpleRNN(2)(tf.constant(randn(2, 3)))
    with pytest.raises(ValueError, match="Cannot unroll"):
        fn = tf.function(lambda a: layers.LSTM(2, unroll=True)(a),
                         input_signature=[tf.TensorSpec([None, None, 3], tf.float32)])
        fn(tf.constant(randn(1, 2, 3)))
    assert layers.LSTM(2, stateful=True).get_config()["stateful"] is True


def test_dropout_only_when_training():
    x = randn(4, 5, 3)
    layer = layers.GRU(4, dropout=0.5, recurrent_dropout=0.3)
    a = layer(tf.constant(x)).numpy()
    np.testing.assert_array_equal(layer(tf.constant(x), training=False).numpy(), a)
    assert not np.allclose(layer(tf.constant(x), training=True).numpy(), a)


def test_text_classifier_trains():
    vocab, steps = 20, 8
    rng = np.random.default_rng(0)
    x = rng.integers(1, vocab, (96, steps))
    y = (x == 3).any(axis=1).astype(np.float32)[:, None]
    model = tf.keras.Sequential([layers.Embedding(vocab, 8, input_shape=(steps,)),
                                 layers.LSTM(8, return_sequences=True), layers.GRU(6),
                                 layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.02), loss="binary_crossentropy")
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=15, batch_size=32, verbose=0)
    assert model.evaluate(x, y, verbose=0) < before * 0.8
    assert model.count_params() == vocab * 8 + 4 * (8 * 8 + 8 * 8 + 8) + \
        3 * (8 * 6 + 6 * 6) + 6 * 6 + 6 + 1


def test_rnn_models_export_to_saved_model_and_onnx(tmp_path):
    model = tf.keras.Sequential([layers.Embedding(20, 8, mask_zero=True, input_shape=(6,)),
                                 layers.Bidirectional(layers.LSTM(4, return_sequences=True)),
                                 layers.GRU(3), layers.Dense(2)])
    ids = np.array([[1, 2, 3, 0, 0, 0], [4, 5, 6, 7, 8, 9]])
    want = model.predict(ids, verbose=0)
    tf.saved_model.save(model, str(tmp_path / "sm"))
    serve = tf.saved_model.load(str(tmp_path / "sm")).signatures["serving_default"]
    (got,) = serve(tf.constant(ids.astype(np.float32))).values()
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    # ONNX: the steps as a Loop; any sequence length runs in onnxruntime.
    seq = tf.keras.Sequential([layers.LSTM(4, input_shape=(None, 3), return_sequences=True),
                               layers.SimpleRNN(3), layers.Dense(2)])
    fn = tf.function(lambda a: seq(a), input_signature=[tf.TensorSpec([None, None, 3],
                                                                      tf.float32)])
    tf.onnx.export(fn, str(tmp_path / "rnn.onnx"))
    session = ort.InferenceSession(str(tmp_path / "rnn.onnx"))
    name = session.get_inputs()[0].name
    for steps in (2, 7):
        x = randn(3, steps, 3, seed=steps)
        np.testing.assert_allclose(session.run(None, {name: x})[0], seq.predict(x, verbose=0),
                                   rtol=1e-5, atol=1e-6)


def test_stacked_cells_match_two_rnns_and_keras_names():
    x = randn(2, 5, 3)
    stacked = layers.RNN([layers.LSTMCell(4), layers.GRUCell(3)], return_sequences=True,
                         return_state=True)
    seq, h1, c1, h2 = stacked(tf.constant(x))
    w = [v.astype(np.float64) for v in stacked.get_weights()]
    first, fh, fc = np_rnn("lstm", x.astype(np.float64), w[:3])
    second, sh, _ = np_rnn("gru", first, w[3:])
    np.testing.assert_allclose(seq.numpy(), second, rtol=1e-4, atol=1e-5)
    for got, want in ((h1, fh), (c1, fc), (h2, sh)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
    assert [v.path for v in stacked.weights][0] == \
        f"{stacked.name}/stacked_rnn_cells/lstm_cell/kernel"
    clone = layers.RNN.from_config(stacked.get_config())
    assert [type(c).__name__ for c in clone.cell.cells] == ["LSTMCell", "GRUCell"]
    fn = tf.function(lambda a: stacked(a)[0], input_signature=[tf.TensorSpec([None, None, 3],
                                                                             tf.float32)])
    np.testing.assert_allclose(fn(tf.constant(x)).numpy(), second, rtol=1e-4, atol=1e-5)
    with pytest.raises(NotImplementedError, match="dropout in stacked cells"):
        layers.RNN([layers.LSTMCell(2, dropout=0.5)])
    # Keras' default names (its snake case).
    assert layers.PReLU().name.startswith("p_re_lu")
    assert layers.LSTMCell(2).name.startswith("lstm_cell")
    assert layers.UpSampling2D().name.startswith("up_sampling2d")


def test_configs_carry_keras_keys():
    """TF 2.21: regularizers, constraints and activity_regularizer; SimpleRNN lists no seed
    (LSTM and GRU do)."""
    keys = {"kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
            "activity_regularizer", "kernel_constraint", "recurrent_constraint",
            "bias_constraint"}
    for cls in (layers.SimpleRNN, layers.LSTM, layers.GRU):
        assert keys <= set(cls(2).get_config())
    assert "seed" not in layers.SimpleRNN(2).get_config()
    assert "seed" in layers.LSTM(2).get_config() and "seed" in layers.GRU(2).get_config()
    assert "seed" in layers.SimpleRNNCell(2).get_config()


# ---- stateful=True (Keras 3: states in variables "<layer>/rnn_state") ----

@pytest.mark.parametrize("kind", ["SimpleRNN", "LSTM", "GRU"])
def test_stateful_continues_from_the_last_states(kind):
    x = randn(2, 4, 3).astype(np.float32)
    layer = getattr(layers, kind)(3, stateful=True, return_sequences=True)
    first, second = layer(x).numpy(), layer(x).numpy()
    whole = getattr(layers, kind)(3, return_sequences=True)
    whole.build((2, 8, 3))
    whole.set_weights(layer.get_weights())
    both = whole(np.concatenate([x, x], 1)).numpy()
    np.testing.assert_allclose(np.concatenate([first, second], 1), both, rtol=1e-5, atol=1e-6)
    assert [v.path for v in layer.states] == [f"{layer.name}/rnn_state"] * len(layer.states)
    assert len(layer.weights) == len(whole.weights)  # the states are not weights
    layer.reset_states()
    np.testing.assert_allclose(layer(x).numpy(), first, rtol=1e-6)
    traced = tf.function(lambda t: layer(t))
    layer.reset_state()
    np.testing.assert_allclose(traced(tf.constant(x)).numpy(), first, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(traced(tf.constant(x)).numpy(), second, rtol=1e-5, atol=1e-6)


def test_stateful_errors_as_keras():
    with pytest.raises(ValueError, match="the batch size must be static. Found dynamic batch "
                                         r"size: sequence.shape=\(None, 4, 3\)"):
        layers.LSTM(2, stateful=True)(keras.Input((4, 3)))
    layer = layers.GRU(2, stateful=True)
    layer(randn(2, 4, 3).astype(np.float32))
    with pytest.raises(ValueError, match="Expected batch size: 2\n- Received batch size: 1"):
        layer(randn(1, 4, 3).astype(np.float32))
    model = keras.Sequential([keras.Input((4, 3), batch_size=2),
                              layers.LSTM(2, stateful=True)])
    assert model.layers[0].states[0].shape.as_list() == [2, 2]


def test_unroll_matches_the_loop():
    x = randn(2, 5, 3).astype(np.float32)
    for kind in ("SimpleRNN", "LSTM", "GRU"):
        loop = getattr(layers, kind)(3, return_sequences=True, return_state=True)
        unrolled = getattr(layers, kind)(3, return_sequences=True, return_state=True,
                                         unroll=True)
        want = loop(x)
        unrolled.build((None, 5, 3))
        unrolled.set_weights(loop.get_weights())
        for a, b in zip(want, unrolled(x)):
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6)

