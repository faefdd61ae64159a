"""Weights' `path`: the layers being built when the weight was created (Keras
3's name scopes). Expected paths written down from TF 2.21's Keras 3.15."""
import kiln as tf

keras = tf.keras
L = keras.layers


def paths(model):
    return [w.path for w in model.weights]


def test_sequential_puts_its_layers_under_its_name():
    s = keras.Sequential([L.Dense(2)], name="seq")
    s.build((None, 3))
    assert paths(s) == ["seq/dense/kernel", "seq/dense/bias"]
    assert [w.name for w in s.weights] == ["kernel", "bias"]
    s2 = keras.Sequential([keras.Input((3,)), L.Dense(2, name="d")], name="seq2")
    assert paths(s2) == ["seq2/d/kernel", "seq2/d/bias"]
    s3 = keras.Sequential([L.Dense(2, name="d3")], name="seq3")
    s3(tf.ones((1, 3)))
    assert paths(s3) == ["seq3/d3/kernel", "seq3/d3/bias"]


def test_nested_sequential_and_functional():
    inner = keras.Sequential([L.Dense(2, name="d")], name="inner")
    outer = keras.Sequential([inner, L.Dense(1, name="d2")], name="outer")
    outer.build((None, 3))
    assert paths(outer) == ["outer/inner/d/kernel", "outer/inner/d/bias",
                            "outer/d2/kernel", "outer/d2/bias"]
    # a Sequential called in a functional model: under its own name only
    i = keras.Input((3,))
    s = keras.Sequential([L.Dense(2, name="dd")], name="inner2")
    assert paths(keras.Model(i, s(i), name="fm")) == ["inner2/dd/kernel", "inner2/dd/bias"]
    # functional models' layers are built before the model exists
    i = keras.Input((3,))
    f = keras.Model(i, L.Dense(2, name="fd")(i), name="finner")
    i2 = keras.Input((3,))
    m = keras.Model(i2, L.Dense(1, name="fd2")(f(i2)), name="fouter")
    assert paths(m) == ["fd/kernel", "fd/bias", "fd2/kernel", "fd2/bias"]
    s = keras.Sequential([f, L.Dense(1, name="fd3")], name="seqf")
    s.build((None, 3))
    assert paths(s) == ["fd/kernel", "fd/bias", "seqf/fd3/kernel", "seqf/fd3/bias"]


class Holder(L.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.d = L.Dense(2, name="sub")

    def call(self, x):
        return self.d(x)


class Sub(keras.Model):
    def __init__(self):
        super().__init__(name="mm")
        self.d = L.Dense(2, name="dd")

    def call(self, x):
        return self.d(x)


def test_sublayers_and_wrappers_nest():
    h = Holder(name="my")
    h(tf.ones((1, 3)))
    assert paths(h) == ["my/sub/kernel", "my/sub/bias"]
    s = keras.Sequential([Holder(name="my2")], name="seqmy")
    s.build((None, 3))
    assert paths(s) == ["seqmy/my2/sub/kernel", "seqmy/my2/sub/bias"]
    s = keras.Sequential([L.Bidirectional(L.LSTM(2, name="l"), name="bi")], name="seqbi")
    s.build((None, 4, 3))
    assert paths(s)[:2] == ["seqbi/bi/forward_l/lstm_cell/kernel",
                            "seqbi/bi/forward_l/lstm_cell/recurrent_kernel"]
    assert paths(s)[-1] == "seqbi/bi/backward_l/lstm_cell/bias"
    s = keras.Sequential([L.TimeDistributed(L.Dense(2, name="td_d"), name="td")], name="sqt")
    s.build((None, 4, 3))
    assert paths(s) == ["sqt/td/td_d/kernel", "sqt/td/td_d/bias"]
    r = L.RNN([L.LSTMCell(2, name="c1"), L.GRUCell(3, name="c2")], name="st")
    r(tf.ones((1, 4, 3)))
    assert paths(r)[0] == "st/stacked_rnn_cells/c1/kernel"
    assert paths(r)[-1] == "st/stacked_rnn_cells/c2/bias"


def test_subclassed_model_and_optimizer_slot_names():
    m = Sub()
    m.compile(optimizer=keras.optimizers.Adam(), loss="mse")
    m.fit(tf.ones((4, 3)), tf.ones((4, 2)), verbose=0)
    assert paths(m) == ["mm/dd/kernel", "mm/dd/bias"]
    names = {v.path for v in m.optimizer.variables}
    assert {"adam/mm_dd_kernel_momentum", "adam/mm_dd_bias_velocity"} <= names
