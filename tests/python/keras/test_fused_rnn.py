"""fuse_rnn: a Keras LSTM, GRU or SimpleRNN layer's While loop runs as one
_FusedLSTM, _FusedGRU or _FusedSimpleRNN node in graph mode and under jit_compile,
with the loop's results (docs/OPS.md); loops it does not describe stay loops."""
import numpy as np
import pytest

import kiln as tf
from kiln import keras


LAYERS = ["LSTM", "GRU", "SimpleRNN"]


def _ops(f, *args):
    return [n.op for n in f.get_concrete_function(*args).optimized_graph.get_operations()]


def _data(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _model(units=6, layers=2, features=5, steps=7, layer="LSTM", **kw):
    inp = keras.Input((steps, features))
    x = inp
    sequences = kw.pop("return_sequences", True)
    for i in range(layers):
        last = i == layers - 1
        x = getattr(keras.layers, layer)(units, return_sequences=not last or sequences, **kw)(x)
    return keras.Model(inp, x)


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("kw", [{}, {"return_sequences": False}, {"go_backwards": True},
                                {"use_bias": False}])
def test_keras_layer_runs_fused(layer, jit, kw):
    model = _model(layer=layer, **kw)
    x = tf.constant(_data((4, 7, 5)))
    f = tf.function(model, jit_compile=jit)
    ops = _ops(f, x)
    assert ops.count(f"_Fused{layer}") == 2 and "While" not in ops, ops
    want = model(x).numpy()  # eager: the loop, op by op
    np.testing.assert_allclose(f(x).numpy(), want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("batch, units", [(20, 32), (33, 24), (40, 32), (1, 16), (6, 128)])
def test_fused_row_blocks_match_the_loop(layer, batch, units):
    # Enough rows and units for the kernel's blocks on the pool (20, 33, 40),
    # a single row, and few rows with wide products (each shared by the
    # pool); the second layer's step count is known only at run
    # time, so its zero states (40 x 32: large constants) are compared by value.
    model = _model(units=units, features=8, steps=9, layer=layer)
    x = tf.constant(_data((batch, 9, 8), seed=batch))
    f = tf.function(model)
    assert _ops(f, x).count(f"_Fused{layer}") == 2
    np.testing.assert_allclose(f(x).numpy(), model(x).numpy(), rtol=2e-5, atol=2e-6)


def test_fused_lstm_states_and_unknown_batch():
    inp = keras.Input((6, 4))
    seq, h, c = keras.layers.LSTM(5, return_sequences=True, return_state=True)(inp)
    model = keras.Model(inp, [seq, h, c])
    f = tf.function(model, input_signature=[tf.TensorSpec([None, 6, 4], tf.float32)])
    x3 = tf.constant(_data((3, 6, 4), seed=3))
    assert _ops(f, x3).count("_FusedLSTM") == 1
    for n in (3, 9):
        x = tf.constant(_data((n, 6, 4), seed=n))
        for got, want in zip(f(x), model(x)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=2e-6)


def test_loops_it_does_not_describe_stay_loops():
    x = tf.constant(_data((2, 5, 3)))
    for layer in (keras.layers.LSTM(4, activation="relu"),
                  keras.layers.LSTM(4, recurrent_activation="hard_sigmoid"),
                  keras.layers.GRU(4, reset_after=False), keras.layers.GRU(4, activation="relu"),
                  keras.layers.GRU(4, recurrent_activation="hard_sigmoid"),
                  keras.layers.SimpleRNN(4, activation="relu")):
        inp = keras.Input((5, 3))
        model = keras.Model(inp, layer(inp))
        f = tf.function(model)
        ops = _ops(f, x)
        assert not {"_FusedLSTM", "_FusedGRU", "_FusedSimpleRNN"} & set(ops) and "While" in ops, \
            (layer, ops)
        np.testing.assert_allclose(f(x).numpy(), model(x).numpy(), rtol=2e-5, atol=2e-6)
    # A mask adds selects to the step.
    for layer in (keras.layers.LSTM(4), keras.layers.GRU(4), keras.layers.SimpleRNN(4)):
        inp = keras.Input((5, 3))
        model = keras.Model(inp, layer(keras.layers.Masking(0.0)(inp)))
        ops = _ops(tf.function(model), x)
        assert not {"_FusedLSTM", "_FusedGRU", "_FusedSimpleRNN"} & set(ops) and "While" in ops, ops


def test_remapping_off_keeps_the_loop():
    model = _model()
    x = tf.constant(_data((4, 7, 5)))
    tf.config.optimizer.set_experimental_options({"remapping": False})
    try:
        ops = _ops(tf.function(model), x)
    finally:
        tf.config.optimizer.set_experimental_options({"remapping": True})
    assert "_FusedLSTM" not in ops and ops.count("While") == 2, ops


@pytest.mark.parametrize("layer", LAYERS)
def test_fused_loop_gradients_still_flow(layer):
    # Gradients differentiate the traced loop; the fused node only runs it.
    model = _model(layers=1, layer=layer)
    x = tf.constant(_data((4, 7, 5)))

    @tf.function
    def loss_and_grads(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x) ** 2)
        return loss, tape.gradient(loss, model.trainable_variables)

    loss, grads = loss_and_grads(x)
    with tf.GradientTape() as tape:
        want = tf.reduce_sum(model(x) ** 2)
    want_grads = tape.gradient(want, model.trainable_variables)
    np.testing.assert_allclose(loss.numpy(), want.numpy(), rtol=1e-5)
    for g, w in zip(grads, want_grads):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-6)


# The loop written by hand with tf.while_loop and a TensorArray, as a user
# (or another library) would: fused when it is the LSTM step, else a loop.
def _hand_loop(variant=""):
    rng = np.random.default_rng(5)
    T, B, F, U = 6, 3, 4, 5
    x = tf.constant(rng.standard_normal((T, B, F)).astype(np.float32))
    w = tf.constant((rng.standard_normal((F, 4 * U)) * 0.5).astype(np.float32))
    u_value = (rng.standard_normal((U, 4 * U)) * 0.4).astype(np.float32)
    u = tf.Variable(u_value) if variant != "captured" else tf.constant(u_value)

    def run(x):
        xp = tf.reshape(tf.matmul(tf.reshape(x, [-1, F]), w), [T, B, 4 * U])
        ta = tf.TensorArray(tf.float32, size=T)

        def body(t, ta, h, c):
            z = tf.gather(xp, t) + tf.matmul(h, u)
            i, f, g, o = tf.split(z, 4, axis=1)
            c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
            h = tf.sigmoid(o) * tf.tanh(c)
            if variant == "extra":
                h = h * 2.0
            return t + 1, ta.write(t, h), h, c

        kw = {"maximum_iterations": T} if variant == "max_iter" else {}
        zeros = tf.zeros([B, U])
        t, ta, h, c = tf.while_loop(lambda t, *_: t < T, body, (0, ta, zeros, zeros), **kw)
        out = [ta.stack(), h, c]
        if variant == "counter":
            out.append(t)
        if variant == "read":
            out.append(ta.read(0))
        return out

    return run, x


@pytest.mark.parametrize("layer", LAYERS)
def test_stateful_layer_carries_its_states_across_calls(layer):
    # The states are variables read before the loop and assigned after it.
    def build():
        inp = keras.Input((5, 3), batch_size=2)
        model = keras.Model(inp, getattr(keras.layers, layer)(4, stateful=True)(inp))
        model.set_weights([w * 0 + np.float32(0.1) * (i + 1) for i, w in enumerate(
            model.get_weights())])
        return model
    fused, eager = build(), build()
    f = tf.function(fused)
    xs = [tf.constant(_data((2, 5, 3), seed=s)) for s in (1, 2, 3)]
    assert _ops(f, xs[0]).count(f"_Fused{layer}") == 1
    for x in xs:
        np.testing.assert_allclose(f(x).numpy(), eager(x).numpy(), rtol=2e-5, atol=2e-6)


# ---- GRU (Keras' reset_after form, the default) ----

def test_fused_gru_state_unknown_batch_and_initial_state():
    inp, h0 = keras.Input((6, 4)), keras.Input((5,))
    seq, h = keras.layers.GRU(5, return_sequences=True, return_state=True)(inp, initial_state=h0)
    model = keras.Model([inp, h0], [seq, h])
    f = tf.function(model, input_signature=[[tf.TensorSpec([None, 6, 4], tf.float32),
                                             tf.TensorSpec([None, 5], tf.float32)]])
    args = [[tf.constant(_data((n, 6, 4), seed=n)), tf.constant(_data((n, 5), seed=n + 1))]
            for n in (3, 9)]
    assert _ops(f, args[0]).count("_FusedGRU") == 1
    for a in args:
        for got, want in zip(f(a), model(a)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=2e-6)


# A GRU step written by hand: the recurrent bias a constant, a captured
# value or a variable's row; operands in the other order; extra work stays a loop.
def _hand_gru(variant=""):
    rng = np.random.default_rng(7)
    T, B, U = 6, 3, 5
    x = tf.constant(rng.standard_normal((T, B, 3 * U)).astype(np.float32))
    k_value = (rng.standard_normal((U, 3 * U)) * 0.4).astype(np.float32)
    b_value = (rng.standard_normal((2, 3 * U)) * 0.3).astype(np.float32)
    k = tf.Variable(k_value)
    b = tf.Variable(b_value) if variant == "variable" else tf.constant(b_value[1])

    def run(x):
        ta = tf.TensorArray(tf.float32, size=T)

        def body(t, ta, h):
            xz, xr, xh = tf.split(tf.gather(x, t), 3, axis=1)
            p = tf.matmul(h, k)
            if variant != "no_bias":
                p = (b[1] if variant == "variable" else b) + p
            pz, pr, ph = tf.split(p, 3, axis=1)
            z = tf.sigmoid(pz + xz)
            r = tf.sigmoid(xr + pr)
            g = tf.tanh(ph * r + xh)
            h = (1.0 - z) * g + h * z
            if variant == "extra":
                h = h + 1.0
            return t + 1, ta.write(t, h), h

        _, ta, h = tf.while_loop(lambda t, *_: t < T, body, (0, ta, tf.zeros([B, U])))
        return ta.stack(), h

    return run, x


# SimpleRNN's step by hand: tanh(x[t] + (h k + b)), b a constant or none.
def _hand_simple(variant=""):
    rng = np.random.default_rng(9)
    T, B, U = 5, 4, 6
    x = tf.constant(rng.standard_normal((T, B, U)).astype(np.float32))
    k = tf.Variable((rng.standard_normal((U, U)) * 0.4).astype(np.float32))
    b = tf.constant((rng.standard_normal(U) * 0.3).astype(np.float32))

    def run(x):
        ta = tf.TensorArray(tf.float32, size=T)

        def body(t, ta, h):
            p = tf.matmul(h, k)
            h = tf.tanh(tf.gather(x, t) + (p if variant == "no_bias" else p + b))
            if variant == "extra":
                h = h * 0.5
            return t + 1, ta.write(t, h), h

        _, ta, h = tf.while_loop(lambda t, *_: t < T, body, (0, ta, tf.zeros([B, U])))
        return ta.stack(), h

    return run, x


@pytest.mark.parametrize("layer, variant, fused", [
    ("LSTM", "", True), ("LSTM", "captured", True), ("LSTM", "extra", False),
    ("LSTM", "max_iter", False), ("LSTM", "counter", False), ("LSTM", "read", False),
    ("GRU", "", True), ("GRU", "variable", True), ("GRU", "no_bias", True),
    ("GRU", "extra", False), ("SimpleRNN", "", True), ("SimpleRNN", "no_bias", True),
    ("SimpleRNN", "extra", False)])
def test_hand_written_loops(layer, variant, fused):
    run, x = {"LSTM": _hand_loop, "GRU": _hand_gru, "SimpleRNN": _hand_simple}[layer](variant)
    f = tf.function(run)
    ops = _ops(f, x)
    assert (ops.count(f"_Fused{layer}") == 1 and "While" not in ops) == fused, ops
    for got, want in zip(f(x), run(x)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=2e-6)
