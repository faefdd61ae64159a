import re
import numpy as np
import pytest

import kiln as tf


def test_check_numerics_names_the_op_eagerly_and_in_functions():
    x = tf.constant([1.0, 0.0])
    assert np.isinf((1.0 / x).numpy()).any()  # off by default
    tf.debugging.enable_check_numerics()
    try:
        with pytest.raises(tf.errors.InvalidArgumentError, match="RealDiv.*NaN or Inf"):
            1.0 / x

        @tf.function
        def f(v):
            return tf._kiln.raw.Log(v)

        with pytest.raises(tf.errors.InvalidArgumentError, match="node 'Log'"):
            f(tf.constant(-1.0))
        assert f(tf.constant(1.0)).numpy() == 0.0
    finally:
        tf.debugging.disable_check_numerics()
    assert np.isnan(tf._kiln.raw.Log(tf.constant(-1.0)).numpy())


def test_assert_eager_and_traced():
    with pytest.raises(tf.errors.InvalidArgumentError, match="assertion failed: x must be > 0"):
        tf.debugging.Assert(tf.constant(False), ["x must be > 0"])

    @tf.function
    def f(x):
        tf.debugging.Assert(x > 0, ["x must be positive, got", x])
        return x

    assert f(tf.constant(1)).numpy() == 1
    with pytest.raises(tf.errors.InvalidArgumentError, match="x must be positive, got -1"):
        f(tf.constant(-1))


def test_module_tracks_variables_and_submodules():
    class Dense(tf.Module):
        def __init__(self, n, name=None):
            super().__init__(name=name)
            self.w = tf.Variable(np.ones((n, n), np.float32), name="w")
            self.b = tf.Variable(np.zeros(n, np.float32), trainable=False, name="b")

    class Net(tf.Module):
        def __init__(self):
            super().__init__()
            self.layers = [Dense(2, name="d0"), Dense(2, name="d1")]

    net = Net()
    assert net.name == "net"
    assert len(net.variables) == 4
    assert len(net.trainable_variables) == 2
    assert [m.name for m in net.submodules] == ["d0", "d1"]
    # printed as tf.Module prints: the plain Python object repr
    assert re.fullmatch(r"<.*\.Net object at 0x[0-9a-f]+>", repr(net))
    with pytest.raises(ValueError, match="not a valid module name"):
        Dense(2, name="my dense")
    layer = tf.keras.layers.Dense(2, name="d")
    assert repr(layer) == "<Dense name=d, built=False>"


def test_layer_builds_on_first_call_eagerly_and_in_function():
    class Scale(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.k = self.add_weight("k", shape=[input_shape[-1]], initializer="ones")

        def call(self, x):
            return x * self.k

    layer = Scale()
    out = layer(tf.constant([[1.0, 2.0]]))
    assert layer.built and len(layer.weights) == 1
    np.testing.assert_array_equal(out.numpy(), [[1.0, 2.0]])

    layer2 = Scale()
    f = tf.function(lambda x: layer2(x))
    np.testing.assert_array_equal(f(tf.constant([[3.0, 4.0]])).numpy(), [[3.0, 4.0]])
    layer2.set_weights([np.array([2.0, 2.0], np.float32)])
    np.testing.assert_array_equal(f(tf.constant([[3.0, 4.0]])).numpy(), [[6.0, 8.0]])
    with pytest.raises(ValueError, match="expects 1 weights"):
        layer2.set_weights([])


def test_initializers_by_name_are_seeded_and_scaled():
    init = tf.keras.initializers.get("glorot_uniform")
    w = init((100, 50))
    lim = np.sqrt(6 / 150)
    assert w.shape == (100, 50) and np.abs(w).max() <= lim
    a = tf.keras.initializers.HeNormal(seed=1)((4, 4))
    b = tf.keras.initializers.HeNormal(seed=1)((4, 4))
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="Unknown initializer"):
        tf.keras.initializers.get("nope")


def test_py_function_runs_at_call_time():
    import numpy as np
    calls = []

    def double(x):
        calls.append(1)
        return x.numpy() * 2

    @tf.function
    def f(x):
        return tf._kiln._py_function(double, [x], [tf.int32], None)[0]

    assert f(tf.constant(3)).numpy() == 6
    assert f(tf.constant(4)).numpy() == 8
    assert len(calls) == 2

    @tf.function
    def bad(x):
        return tf._kiln._py_function(lambda v: np.float64(1.5), [x], [tf.int32], None)[0]

    with pytest.raises(tf.errors.InvalidArgumentError, match="EagerPyFunc"):
        bad(tf.constant(1))
