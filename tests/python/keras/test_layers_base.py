"""Layer machinery: names, build, weights tracking, training flag, input specs."""
import numpy as np
import pytest

import kiln as tf

keras = tf.keras
layers = keras.layers


def test_default_names_follow_keras():
    assert layers.Conv2D(1, 1).name == "conv2d"
    assert layers.Conv2D(1, 1).name == "conv2d_1"
    assert layers.DepthwiseConv2D(1).name == "depthwise_conv2d"
    assert layers.BatchNormalization().name == "batch_normalization"
    assert layers.GlobalAveragePooling2D().name == "global_average_pooling2d"
    assert layers.ZeroPadding2D().name == "zero_padding2d"
    assert keras.Input((2,)).name == "input_1"
    keras.backend.clear_session()
    assert layers.Conv2D(1, 1).name == "conv2d"
    with pytest.raises(ValueError, match="name"):
        layers.Dense(1, name="")


class Block(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.inner = layers.Dense(3)
        self.norm = layers.BatchNormalization()
        self.drop = layers.Dropout(0.5, seed=1)
        self.scale = tf.Variable(2.0, name="scale")

    def call(self, x, training=None):
        return self.drop(self.norm(self.inner(x)), training=training) * self.scale


class Outer(layers.Layer):
    def __init__(self):
        super().__init__()
        self.a = Block()
        self.pair = [self.a, layers.Dense(2)]  # the same sublayer reachable twice

    def call(self, x):
        return self.pair[1](self.a(x))


def test_nested_layers_track_each_weight_once_in_order():
    outer = Outer()
    outer(tf.ones([2, 4]))
    ids = {id(w) for w in outer.weights}
    assert len(outer.weights) == len(ids) == 9
    names = [w.name for w in outer.weights]
    # Keras 3 names: short names, the layer in `path`; a plain Variable keeps ":0"
    assert names[:3] == ["scale:0", "kernel", "bias"]
    # under the layers that built them, as Keras 3 (TF: outer/block/dense/kernel)
    assert [w.path for w in outer.weights[1:3]] == ["outer/block/dense/kernel",
                                                     "outer/block/dense/bias"]
    assert outer.weights[-1].path == "outer/dense_1/bias"
    assert repr(outer.weights[1]) == ("<KerasVariable shape=(4, 3), dtype=float32, "
                                      "path=outer/block/dense/kernel>")
    assert outer.count_params() == 1 + (4 * 3 + 3) + 4 * 3 + (3 * 2 + 2)
    assert len(outer.non_trainable_weights) == 2  # moving mean / variance
    outer.trainable = False
    assert outer.trainable_weights == [] and len(outer.non_trainable_weights) == 9


def test_training_flag_reaches_inner_layers():
    block = Block()
    x = tf.ones([64, 4])
    inference = block(x).numpy()
    np.testing.assert_allclose(block(x, training=False).numpy(), inference)
    dropped = block(x, training=True).numpy()
    assert (dropped == 0).mean() > 0.2

    class NoTraining(layers.Layer):
        def call(self, x):
            return x + 1.0
    # layers whose call has no `training` argument ignore it
    np.testing.assert_array_equal(NoTraining()(tf.zeros([2]), training=True).numpy(), [1, 1])


def test_layer_builds_once_inside_function_and_weights_live_outside():
    layer = layers.Dense(2)
    f = tf.function(lambda x: layer(x))
    out = f(tf.ones([1, 3]))
    assert layer.built and len(layer.weights) == 2
    np.testing.assert_allclose(out.numpy(), layer(tf.ones([1, 3])).numpy(), rtol=1e-6)
    layer.set_weights([np.ones((3, 2), np.float32), np.zeros(2, np.float32)])
    np.testing.assert_array_equal(f(tf.ones([1, 3])).numpy(), [[3, 3]])


def test_set_weights_and_count_params_errors():
    layer = layers.Dense(2)
    with pytest.raises(ValueError, match="isn't built"):
        layer.count_params()
    layer.build((None, 3))
    with pytest.raises(ValueError, match="expects 2 weights"):
        layer.set_weights([np.ones((3, 2))])
    with pytest.raises(ValueError, match="shape"):
        layer.set_weights([np.ones((2, 2)), np.ones(2)])


def test_input_spec_checks():
    class Rank3(layers.Layer):
        def __init__(self):
            super().__init__()
            self.input_spec = layers.InputSpec(ndim=3, axes={-1: 2})

    with pytest.raises(ValueError, match="expected ndim=3"):
        Rank3()(tf.ones([2, 2]))
    with pytest.raises(ValueError, match="expected axis -1"):
        Rank3()(tf.ones([1, 2, 3]))
    assert Rank3()(tf.ones([1, 3, 2])).shape == (1, 3, 2)


def test_layer_input_and_output_attributes():
    inp = keras.Input((3,))
    d = layers.Dense(2)
    out = d(inp)
    assert d.input is inp and d.output is out
    assert d.input_shape == (None, 3) and d.output_shape == (None, 2)
    d(keras.Input((3,)))
    with pytest.raises(AttributeError, match="multiple inbound nodes"):
        d.output
    with pytest.raises(AttributeError, match="never been called"):
        layers.Dense(2).output


def test_get_config_round_trip():
    d = layers.Dense(4, activation="relu", name="d")
    cfg = d.get_config()
    assert cfg["units"] == 4 and cfg["activation"] == "relu" and cfg["name"] == "d"
    c = layers.Conv2D(8, 3, strides=2, padding="same")
    assert c.get_config()["kernel_size"] == (3, 3) and c.get_config()["padding"] == "same"
    assert layers.BatchNormalization.from_config(
        layers.BatchNormalization(momentum=0.9).get_config()).momentum == 0.9
