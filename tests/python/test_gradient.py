"""kiln.GradientTape / stop_gradient (python/kiln/gradient.py) against hand
derivatives: eagerly, inside functions, through functions, nested tapes."""
import numpy as np
import pytest

import kiln as tf


def test_guide_gradient_through_a_function():
    @tf.function
    def add(a, b):
        return a + b

    v = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        result = add(v, 1.0)
    g = tape.gradient(result, v)
    assert repr(g) == "<kiln.Tensor: shape=(), dtype=float32, numpy=1.0>"


def test_function_called_eagerly_under_a_tape_differentiates_its_graph():
    @tf.function
    def f(x, w):
        return tf.reduce_sum(tf.tanh(tf.matmul(x, w)))

    x = tf.constant([[1.0, 2.0]])
    w = tf.Variable([[0.5], [-0.25]])
    with tf.GradientTape() as tape:
        y = f(x, w)
    g = tape.gradient(y, w).numpy()
    z = np.array([[1.0, 2.0]]) @ np.array([[0.5], [-0.25]])
    np.testing.assert_allclose(g, np.array([[1.0], [2.0]]) * (1 - np.tanh(z) ** 2), rtol=1e-6)
    assert f.experimental_get_tracing_count() == 1


def test_watch_tensor_and_nested_sources():
    x = tf.constant(3.0)
    y0 = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch([x, y0])
        z = x * x + tf.reduce_sum(y0 * y0) * x
    g = tape.gradient(z, {"x": x, "y": y0})
    assert set(g) == {"x", "y"}
    assert g["x"].numpy() == pytest.approx(2 * 3.0 + 5.0)
    np.testing.assert_allclose(g["y"].numpy(), [6.0, 12.0])


def test_variables_watched_automatically_unless_disabled():
    v = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = v * v * v
    assert tape.gradient(y, v).numpy() == pytest.approx(12.0)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        y = v * v
    assert tape.gradient(y, v) is None
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(v)
        y = v * v
    assert tape.gradient(y, v).numpy() == pytest.approx(4.0)


def test_unconnected_none_or_zero():
    x, u = tf.constant(1.0), tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, u])
        y = x * 2.0
    assert tape.gradient(y, u) is None
    z = tape.gradient(y, u, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(z.numpy(), [0.0, 0.0])
    with pytest.raises(ValueError, match="NONE or ZERO"):
        tape.gradient(y, u, unconnected_gradients="sometimes")


def test_persistent_and_non_persistent():
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * x
    assert tape.gradient(y, x).numpy() == pytest.approx(4.0)
    assert tape.gradient(z, x).numpy() == pytest.approx(12.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(tf.errors.FailedPreconditionError):
        tape.gradient(y, x)


def test_output_gradients_weight_the_target():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * 3.0
    g = tape.gradient(y, x, output_gradients=tf.constant([1.0, 10.0]))
    np.testing.assert_allclose(g.numpy(), [3.0, 30.0])


def test_stop_recording_and_stop_gradient():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        with tape.stop_recording():
            c = x * 100.0  # not recorded: a constant for the tape
        z = y + c * x + tf.stop_gradient(x * x) * x
    # dz/dx = 2x + c + stop_gradient(x^2) = 4 + 200 + 4
    assert tape.gradient(z, x).numpy() == pytest.approx(208.0)


def test_second_order_with_nested_tapes():
    x = tf.constant(3.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = x * x * x
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x)
    assert dy.numpy() == pytest.approx(27.0) and d2y.numpy() == pytest.approx(18.0)


def test_tape_inside_a_function_adds_backward_ops_to_the_graph():
    w = tf.Variable([1.0, -2.0])

    @tf.function
    def grad_step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum((x * w) ** 2)
        return tape.gradient(loss, w)

    np.testing.assert_allclose(grad_step(tf.constant([1.0, 2.0])).numpy(), [2.0, -16.0])
    np.testing.assert_allclose(grad_step(tf.constant([2.0, 1.0])).numpy(), [8.0, -4.0])
    assert grad_step.experimental_get_tracing_count() == 1


def test_keras_dense_gradients():
    layer = tf.keras.layers.Dense(2, kernel_initializer="ones", bias_initializer="zeros")
    x = tf.constant([[1.0, 2.0, 3.0]])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(layer(x))
    gk, gb = tape.gradient(y, layer.trainable_weights)
    np.testing.assert_allclose(gk.numpy(), [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    np.testing.assert_allclose(gb.numpy(), [1.0, 1.0])


def test_errors():
    tape = tf.GradientTape()
    with pytest.raises(RuntimeError, match="with kiln.GradientTape"):
        tape.gradient(tf.constant(1.0), tf.constant(1.0))
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    with pytest.raises(TypeError, match="tensors or variables"):
        tape.gradient(y, "x")


def test_integer_targets_have_no_gradient_and_warn():
    # TensorFlow: a warning, and None (zeros with UnconnectedGradients.ZERO).
    x = tf.constant(1.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * 2.0
        i = tf.constant(1) + 1
    with pytest.warns(tf.KilnWarning, match="must be floating"):
        assert tape.gradient(i, x) is None
    with pytest.warns(tf.KilnWarning, match="must be floating"):
        assert tape.gradient(i, [x], unconnected_gradients="zero")[0].numpy() == 0.0
    with pytest.warns(tf.KilnWarning, match="must be floating"):
        assert tape.gradient([y, i], x).numpy() == 2.0  # the float target still counts


def test_jacobian_eager_traced_and_variables():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    np.testing.assert_allclose(tape.jacobian(y, x).numpy(), np.diag([2.0, 4.0, 6.0]))

    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    with tf.GradientTape() as tape:
        y = tf.matmul(v, v)
    j = tape.jacobian(y, {"v": v})["v"].numpy()
    a = v.numpy()
    want = np.zeros((2, 2, 2, 2))
    for i in range(2):
        for k in range(2):
            for p in range(2):
                for q in range(2):  # d(sum_m a[i,m] a[m,k]) / d a[p,q]
                    want[i, k, p, q] = (a[q, k] if i == p else 0) + (a[i, p] if q == k else 0)
    np.testing.assert_allclose(j, want)

    @tf.function(autograph=False)
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.sin(x) * x[0]
        return tape.jacobian(y, x)
    x0 = np.array([0.5, 1.0], np.float32)
    want = np.array([[np.cos(0.5) * 0.5 + np.sin(0.5), 0.0],
                     [np.sin(1.0), np.cos(1.0) * 0.5]])
    np.testing.assert_allclose(f(tf.constant(x0)).numpy(), want, rtol=1e-5)


def test_batch_jacobian():
    xb = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3) / 4)
    with tf.GradientTape() as tape:
        tape.watch(xb)
        yb = tf.tanh(xb) * 2.0
    bj = tape.batch_jacobian(yb, xb).numpy()
    assert bj.shape == (2, 3, 3)
    for b in range(2):
        np.testing.assert_allclose(bj[b], np.diag(2 * (1 - np.tanh(xb.numpy()[b]) ** 2)),
                                   rtol=1e-5)


def test_jacobian_unconnected_and_single_use():
    x, z = tf.constant([1.0, 2.0]), tf.constant([3.0])
    with tf.GradientTape() as tape:
        tape.watch([x, z])
        y = x * 2.0
    jx, jz = tape.jacobian(y, [x, z])
    np.testing.assert_allclose(jx.numpy(), 2 * np.eye(2))
    assert jz is None
    with pytest.raises(tf.errors.FailedPreconditionError, match="persistent"):
        tape.jacobian(y, x)  # a non-persistent tape: one jacobian, like one gradient
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, z])
        y = x * 2.0
    assert tape.jacobian(y, z, unconnected_gradients="zero").numpy().shape == (2, 1)
    assert tape.jacobian(y, z) is None


@tf.custom_gradient
def _log1pexp(x):
    e = tf.exp(x)

    def grad(upstream):
        return upstream * (1 - 1 / (1 + e))
    return tf.math.log(1 + e), grad


def test_custom_gradient_replaces_the_gradient_eagerly_and_traced():
    # TensorFlow's example: the plain gradient of log(1 + e^x) is NaN at x = 100.
    x = tf.constant(100.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = _log1pexp(x)
    assert tape.gradient(y, x).numpy() == 1.0

    @tf.function(autograph=False)
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = _log1pexp(x)
        return y, tape.gradient(y, x)
    y, g = f(tf.constant(0.0))
    np.testing.assert_allclose([y.numpy(), g.numpy()], [np.log(2.0), 0.5], rtol=1e-6)


def test_custom_gradient_several_args_and_outputs_none_and_second_order():
    @tf.custom_gradient
    def mul_and_sum(a, b):
        def grad(d_prod, d_sum):
            return d_prod * b * 10.0, None  # b's gradient: None -> zeros
        return (a * b, a + b), grad
    a, b = tf.constant(2.0), tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        p, s = mul_and_sum(a, b)
        y = p + s
    ga, gb = tape.gradient(y, [a, b])
    assert ga.numpy() == 30.0 and gb.numpy() == 0.0

    @tf.custom_gradient
    def square(x):
        return x * x, lambda dy: dy * 2.0 * x
    x = tf.constant(3.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = square(x)
        dx = inner.gradient(y, x)
    assert dx.numpy() == 6.0
    assert outer.gradient(dx, x).numpy() == 2.0  # grad_fn's own ops are differentiated


def test_custom_gradient_errors():
    @tf.custom_gradient
    def bad(x):
        return x * 2.0, lambda dy: (dy, dy)
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = bad(x)
    with pytest.raises(Exception, match="returned 2 gradients for 1 tensor arguments"):
        tape.gradient(y, x)


def test_custom_gradient_with_variables_eager_and_traced():
    v = tf.Variable(2.0)
    seen = []

    @tf.custom_gradient
    def scale(x):
        def grad(dy, variables):
            seen.append([w.name for w in variables])
            return dy * 100.0, [dy * 1000.0 for _ in variables]
        return x * v, grad

    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = scale(x)
    gx, gv = tape.gradient(y, [x, v])
    assert (gx.numpy(), gv.numpy()) == (100.0, 1000.0)
    assert seen == [[v.name]]

    @tf.function(autograph=False)
    def step(x):
        with tf.GradientTape() as tape:
            y = scale(x)
        return tape.gradient(y, v)
    assert step(tf.constant(1.0)).numpy() == 1000.0

    @tf.custom_gradient
    def no_kwarg(x):
        return x * v, lambda dy: dy
    with pytest.raises(TypeError, match="keyword argument 'variables'"):
        no_kwarg(x)


def test_watched_variables_in_order_and_identity():
    a, b = tf.Variable(1.0), tf.Variable(2.0)
    frozen = tf.Variable(3.0, trainable=False)
    with tf.GradientTape() as tape:
        y = b * a + frozen
    assert tape.watched_variables() == (b, a)  # the user's own objects, in read order
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(frozen)
        y = a * frozen
    assert tape.watched_variables() == (frozen,)
    layer = tf.keras.layers.Dense(2, name="d")
    layer.build((None, 3))
    with tf.GradientTape() as tape:
        layer(tf.ones([1, 3]))
    names = [v.path for v in tape.watched_variables()]
    assert sorted(names) == ["d/bias", "d/kernel"]
    assert all(isinstance(v, tf.keras.Variable) for v in tape.watched_variables())
    traced = []

    @tf.function
    def f(x):
        with tf.GradientTape() as tape:
            y = a * x
        traced.extend(tape.watched_variables())
        return y
    f(tf.constant(1.0))
    assert traced == [a]


def test_jacobian_of_an_empty_target_is_empty():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x[:0] * 2.0
    assert tape.jacobian(y, x).numpy().shape == (0, 2)


@pytest.mark.parametrize("jit", [False, True])
def test_gradients_through_a_function_traced_for_none_dims(jit):
    # The backward of a function whose input_signature has a None dim keeps
    # that dim in its specs; called eagerly under a tape, it runs on the
    # concrete shapes (this raised InternalError "partially unknown").
    w = tf.Variable(np.linspace(-1, 1, 48, dtype=np.float32).reshape(6, 8))

    @tf.function(jit_compile=jit, input_signature=[tf.TensorSpec([None, 6], tf.float32)])
    def f(x):
        return tf.nn.relu(tf.matmul(x, w) + 0.1)

    for rows in (4, 1, 9):
        x = tf.constant(np.linspace(-2, 2, rows * 6, dtype=np.float32).reshape(rows, 6))
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
            loss = y * y
        dx, dw = tape.gradient(loss, [x, w])
        z = np.maximum(x.numpy() @ w.numpy() + 0.1, 0)
        np.testing.assert_allclose(dw.numpy(), x.numpy().T @ (2 * z), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(dx.numpy(), (2 * z) @ w.numpy().T, rtol=1e-5, atol=1e-5)
    assert f.experimental_get_tracing_count() == 1
