"""Gradients through AutoGraph loops and TensorArrays inside tf.function
(the While gradient, src/autodiff/while_grad.cpp, and the list-valued
gradients of the TensorArray ops), checked against NumPy."""
import numpy as np
import pytest

import kiln as tf


def test_for_range_loop_gradient():
    @tf.function
    def grad(x, n):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.ones_like(x)
            for i in tf.range(n):
                y = y * x + tf.cast(i, tf.float32)
            loss = tf.reduce_sum(y)
        return loss, tape.gradient(loss, x)

    x = np.array([0.5, -1.2, 2.0], dtype=np.float32)
    for n in (3, 5, 0):
        # y_k = y_{k-1} x + (k-1): dy_n/dx by forward-mode recurrence.
        y, dy = np.ones_like(x), np.zeros_like(x)
        for i in range(n):
            y, dy = y * x + i, dy * x + y
        loss, g = grad(tf.constant(x), tf.constant(n))
        assert loss.numpy() == pytest.approx(y.sum(), rel=1e-5)
        np.testing.assert_allclose(g.numpy(), dy, rtol=1e-5)
    assert grad.experimental_get_tracing_count() == 1


def test_variable_used_in_loop_body_gets_the_summed_gradient():
    w = tf.Variable(0.8)

    @tf.function
    def grad(x):
        with tf.GradientTape() as tape:
            y = x
            for _ in tf.range(4):
                y = tf.tanh(y * w)
            loss = tf.reduce_sum(y)
        return tape.gradient(loss, w)

    x = np.array([0.3, -0.7], dtype=np.float32)

    def loss(wv):
        y = x.astype(np.float64)
        for _ in range(4):
            y = np.tanh(y * wv)
        return y.sum()

    eps = 1e-6
    want = (loss(0.8 + eps) - loss(0.8 - eps)) / (2 * eps)
    assert grad(tf.constant(x)).numpy() == pytest.approx(want, rel=1e-4)


def _rnn_numpy(x, h0, w, u):
    """States of h_{t+1} = tanh(h_t w + x_t u), and d sum(states * m) by
    backpropagation through time."""
    hs, h = [], h0
    for t in range(x.shape[1]):
        h = np.tanh(h @ w + x[:, t] @ u)
        hs.append(h)
    return np.stack(hs, axis=1)


def _rnn_grads_numpy(x, h0, w, u, m):
    hs = _rnn_numpy(x, h0, w, u)
    dw, du, dx = np.zeros_like(w), np.zeros_like(u), np.zeros_like(x)
    dh = np.zeros_like(h0)
    for t in reversed(range(x.shape[1])):
        dh = dh + m[:, t]
        dz = dh * (1 - hs[:, t] ** 2)
        prev = hs[:, t - 1] if t > 0 else h0
        dw += prev.T @ dz
        du += x[:, t].T @ dz
        dx[:, t] = dz @ u.T
        dh = dz @ w.T
    return dx, dh, dw, du


def _check_rnn(read_step):
    batch, steps, features, units = 2, 5, 3, 4
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (batch, steps, features)).astype(np.float32)
    h0 = rng.uniform(-1, 1, (batch, units)).astype(np.float32)
    wv = rng.uniform(-0.6, 0.6, (units, units)).astype(np.float32)
    uv = rng.uniform(-0.6, 0.6, (features, units)).astype(np.float32)
    m = rng.uniform(0.5, 1.5, (batch, steps, units)).astype(np.float32)
    w, u = tf.Variable(wv), tf.Variable(uv)

    @tf.function
    def step(input_data, initial_state, weights):
        with tf.GradientTape() as tape:
            tape.watch([input_data, initial_state])
            # The guide's dynamic_rnn, with a tanh cell.
            data = tf.transpose(input_data, [1, 0, 2])
            states = tf.TensorArray(tf.float32, size=data.shape[0],
                                    element_shape=initial_state.shape)
            state = initial_state
            for i in tf.range(data.shape[0]):
                state = tf.tanh(tf.matmul(state, w) + tf.matmul(read_step(data, i), u))
                states = states.write(i, state)
            out = tf.transpose(states.stack(), [1, 0, 2])
            loss = tf.reduce_sum(out * weights)
        return out, tape.gradient(loss, [input_data, initial_state, w, u])

    out, grads = step(tf.constant(x), tf.constant(h0), tf.constant(m))
    np.testing.assert_allclose(out.numpy(), _rnn_numpy(x, h0, wv, uv), rtol=1e-5, atol=1e-6)
    for got, want in zip(grads, _rnn_grads_numpy(x, h0, wv, uv, m)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
    step(tf.constant(x * 0.5), tf.constant(h0), tf.constant(m))
    assert step.experimental_get_tracing_count() == 1


def test_tensor_array_rnn_gradient():
    _check_rnn(lambda data, i: tf.gather(data, i))


def test_tensor_array_rnn_gradient_with_indexing():
    _check_rnn(lambda data, i: data[i])  # the guide's dynamic_rnn reads data[i]


def _guide_dynamic_rnn(rnn_step, input_data, initial_state):
    # The guide's dynamic_rnn as written there (seed 002, "accumulating values
    # in a loop"; decorated with @tf.function in the guide): reads
    # input_data[i] with the loop counter.
    # [batch, time, features] -> [time, batch, features]
    input_data = tf.transpose(input_data, [1, 0, 2])
    max_seq_len = input_data.shape[0]

    states = tf.TensorArray(tf.float32, size=max_seq_len)
    state = initial_state
    for i in tf.range(max_seq_len):
        state = rnn_step(input_data[i], state)
        states = states.write(i, state)
    return tf.transpose(states.stack(), [1, 0, 2])


def _check_guide_dynamic_rnn(dynamic_rnn, compiled=True):
    """Differentiates dynamic_rnn with a tanh cell inside a tf.function (or
    eagerly: compiled=False) with respect to the input, the initial state and
    the cell's weights, against backpropagation through time in NumPy (itself
    checked by central differences for one weight)."""
    batch, steps, features, units = 3, 4, 2, 5
    rng = np.random.default_rng(11)
    x = rng.uniform(-1, 1, (batch, steps, features)).astype(np.float32)
    h0 = rng.uniform(-1, 1, (batch, units)).astype(np.float32)
    wv = rng.uniform(-0.5, 0.5, (units, units)).astype(np.float32)
    uv = rng.uniform(-0.5, 0.5, (features, units)).astype(np.float32)
    m = rng.uniform(0.5, 1.5, (batch, steps, units)).astype(np.float32)
    w, u = tf.Variable(wv), tf.Variable(uv)

    def rnn_step(inp, state):
        return tf.tanh(tf.matmul(state, w) + tf.matmul(inp, u))

    def grads(input_data, initial_state, weights):
        with tf.GradientTape() as tape:
            tape.watch([input_data, initial_state])
            out = dynamic_rnn(rnn_step, input_data, initial_state)
            loss = tf.reduce_sum(out * weights)
        return out, tape.gradient(loss, [input_data, initial_state, w, u])
    if compiled:
        grads = tf.function(grads)

    for scale in (1.0, -0.7):
        xs = x * scale
        out, got = grads(tf.constant(xs), tf.constant(h0), tf.constant(m))
        np.testing.assert_allclose(out.numpy(), _rnn_numpy(xs, h0, wv, uv), rtol=1e-5,
                                   atol=1e-6)
        for g, want in zip(got, _rnn_grads_numpy(xs, h0, wv, uv, m)):
            np.testing.assert_allclose(g.numpy(), want, rtol=1e-4, atol=1e-5)
    if compiled:
        assert grads.experimental_get_tracing_count() == 1

    def loss64(wmat):
        return float((_rnn_numpy(x.astype(np.float64), h0.astype(np.float64), wmat,
                                 uv.astype(np.float64)) * m).sum())
    eps, w64 = 1e-6, wv.astype(np.float64)
    bump = np.zeros_like(w64)
    bump[1, 2] = eps
    numeric = (loss64(w64 + bump) - loss64(w64 - bump)) / (2 * eps)
    _, got = grads(tf.constant(x), tf.constant(h0), tf.constant(m))
    assert got[2].numpy()[1, 2] == pytest.approx(numeric, rel=1e-3, abs=1e-5)


def test_guide_dynamic_rnn_gradient():
    _check_guide_dynamic_rnn(_guide_dynamic_rnn)


def test_guide_dynamic_rnn_gradient_as_nested_function():
    # Decorated as in the guide: one call node whose backward differentiates
    # its While loop (the captured variables are handles inside the call).
    _check_guide_dynamic_rnn(tf.function(_guide_dynamic_rnn))


def test_guide_dynamic_rnn_gradient_eager_tape_over_the_function():
    # An eager tape around the decorated function: the call keeps what its
    # backward (a reverse While) reads.
    _check_guide_dynamic_rnn(tf.function(_guide_dynamic_rnn), compiled=False)


def test_nested_function_loop_gradient_reaches_captured_variable():
    v = tf.Variable(0.5)

    @tf.function
    def loop(x):
        y = x
        for _ in tf.range(3):
            y = tf.tanh(y * v)
        return y

    @tf.function
    def grads(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            total = tf.reduce_sum(loop(x))
        return tape.gradient(total, [x, v])

    def f(xv, vv):
        y = xv
        for _ in range(3):
            y = np.tanh(y * vv)
        return y.sum()

    xv = np.array([0.3, -1.2], np.float64)
    gx, gv = grads(tf.constant(xv.astype(np.float32)))
    eps = 1e-6
    want_x = [(f(xv + eps * np.eye(2)[k], 0.5) - f(xv - eps * np.eye(2)[k], 0.5)) / (2 * eps)
              for k in range(2)]
    want_v = (f(xv, 0.5 + eps) - f(xv, 0.5 - eps)) / (2 * eps)
    np.testing.assert_allclose(gx.numpy(), want_x, rtol=1e-4)
    assert gv.numpy() == pytest.approx(want_v, rel=1e-4)


def test_dynamic_slice_bounds_gradient():
    # x[i:i + 2, ::-1] and x[-1, j] with i, j function arguments: one trace,
    # StridedSliceGrad scatters into zeros at the right place.
    @tf.function
    def grad(x, i, j):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(x[i:i + 2, ::-1] * tf.constant([1.0, 2.0, 3.0]))
            y = y + 10.0 * x[-1, j]
        return tape.gradient(y, x)

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    for i, j in ((0, 1), (2, 0), (3, 2), (-2, -1)):
        want = np.zeros_like(x)
        want[i:i + 2, :] += np.array([3.0, 2.0, 1.0])  # empty for i = -2 (x[-2:0])
        want[-1, j] += 10.0
        np.testing.assert_allclose(grad(tf.constant(x), tf.constant(i), tf.constant(j)).numpy(),
                                   want)
    assert grad.experimental_get_tracing_count() == 1
    with pytest.raises(tf.errors.InvalidArgumentError, match="StridedSlice"):
        grad(tf.constant(x), tf.constant(0), tf.constant(3))


def test_tensor_array_read_in_loop_gradient():
    # Inputs unstacked into a TensorArray before the loop and read inside
    # (a captured list): the read gradients add up per item.
    @tf.function
    def grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            xs = tf.TensorArray(tf.float32, size=4).unstack(x)
            total = tf.constant(0.0)
            for i in tf.range(4):
                total = total + xs.read(i) * xs.read(3 - i) * tf.cast(i + 1, tf.float32)
        return tape.gradient(total, x)

    x = np.array([1.0, -2.0, 0.5, 3.0], dtype=np.float32)
    # total = sum_i (i+1) x_i x_{3-i}; d/dx_j = (j+1) x_{3-j} + (3-j+1) x_{3-j}
    want = np.array([(j + 1 + 4 - j) * x[3 - j] for j in range(4)])
    np.testing.assert_allclose(grad(tf.constant(x)).numpy(), want, rtol=1e-6)


def test_tensor_array_gradient_eagerly():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        ta = tf.TensorArray(tf.float32, size=3)
        for i in range(3):
            ta = ta.write(i, x[i] * x[i])
        y = tf.reduce_sum(ta.stack() * tf.constant([1.0, 10.0, 100.0]))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [2.0, 40.0, 600.0])
