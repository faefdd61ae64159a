"""Activity regularizers and layer losses (Keras 3's rules): activity_regularizer(output)
divided by the batch size (not for scalars) is added to layer.losses on each call; the
outermost call starts the losses afresh; model.losses gathers the sublayers' and the weights'
penalties; fit adds them to the compiled loss. Expected training values were written down from
TF 2.21 (Keras 3.15.1)."""
import numpy as np
import pytest

import kiln as tf
from keras_helpers import randn

keras = tf.keras
layers = keras.layers
regularizers = keras.regularizers


def _values(losses):
    return [float(v.numpy()) for v in losses]


@pytest.mark.parametrize("reg,fn", [
    ("l2", lambda y: 0.01 * np.sum(y ** 2)),
    ("l1", lambda y: 0.01 * np.sum(np.abs(y))),
    (regularizers.L1L2(l1=0.2, l2=0.3), lambda y: 0.2 * np.sum(np.abs(y)) +
     0.3 * np.sum(y ** 2)),
    (lambda y: tf.reduce_max(y), np.max),
])
def test_activity_loss_is_divided_by_the_batch_size(reg, fn):
    layer = layers.Dense(3, activity_regularizer=reg)
    x = randn(5, 4)
    y = layer(tf.constant(x)).numpy()
    np.testing.assert_allclose(_values(layer.losses), [fn(y) / 5], rtol=1e-5)


def test_scalar_outputs_are_not_divided_and_every_output_counts():
    act = layers.Activation("tanh", activity_regularizer=regularizers.L1(0.3))
    act(tf.constant(np.float32(0.7)))
    np.testing.assert_allclose(_values(act.losses), [0.3 * np.tanh(0.7)], rtol=1e-6)
    lstm = layers.LSTM(2, return_state=True, activity_regularizer="l2")
    outs = lstm(tf.constant(randn(3, 4, 2)))
    want = [0.01 * np.sum(o.numpy() ** 2) / 3 for o in outs]
    np.testing.assert_allclose(_values(lstm.losses), want, rtol=1e-5)


def test_each_outer_call_starts_afresh_and_weight_penalties_follow():
    dense = layers.Dense(2, activity_regularizer="l1", kernel_regularizer=regularizers.L2(0.5))
    model = keras.Sequential([dense, layers.Dense(1)])
    for batch in (2, 4):
        y = dense(tf.constant(randn(batch, 3)))
        model(tf.constant(randn(batch, 3)))
        h = dense(tf.constant(randn(batch, 3)))
        assert len(dense.losses) == 2  # one activity loss, then the kernel's penalty
    kernel = dense.kernel.numpy()
    np.testing.assert_allclose(_values(dense.losses),
                               [0.01 * np.abs(h.numpy()).sum() / 4, 0.5 * (kernel ** 2).sum()],
                               rtol=1e-5)
    assert len(model.losses) == 2 and y is not None
    dense.trainable = False  # frozen weights add no penalty
    assert len(dense.losses) == 1


def test_nested_models_and_keras_tensors():
    inner = keras.Sequential([layers.Dense(2, kernel_initializer="ones",
                                           activity_regularizer="l2")])
    outer = keras.Sequential([inner, layers.Dense(1, kernel_initializer="ones",
                                                  activity_regularizer="l1")])
    outer(tf.constant(np.ones((3, 2), np.float32)))
    np.testing.assert_allclose(_values(outer.losses), [0.08, 0.04], rtol=1e-6)
    np.testing.assert_allclose(_values(inner.losses), [0.08], rtol=1e-6)
    inp = keras.Input((4,))  # calls on Keras tensors add no losses
    out = layers.Dense(3, activity_regularizer="l2")(inp)
    model = keras.Model(inp, out)
    assert model.losses == []
    model(tf.constant(randn(2, 4)))
    assert len(model.losses) == 1


def test_add_loss_in_a_custom_layer_and_in_a_function():
    class Penalized(layers.Layer):
        def call(self, x):
            self.add_loss(tf.reduce_sum(x) * 0.5)
            return x * 2.0

    layer = Penalized()
    layer(tf.constant([1.0, 2.0]))
    np.testing.assert_allclose(_values(layer.losses), [1.5])
    fn = tf.function(lambda x: (layer(x), tf.add_n(layer.losses)))
    np.testing.assert_allclose(fn(tf.constant([4.0, 2.0]))[1].numpy(), 3.0)
    with pytest.raises(ValueError, match="add_loss"):
        layer.add_loss(1.0)


def test_config_round_trip():
    dense = layers.Dense(3, activity_regularizer=regularizers.L1L2(l1=0.1, l2=0.2))
    cfg = dense.get_config()
    assert cfg["activity_regularizer"] == {
        "module": "keras.regularizers", "class_name": "L1L2",
        "config": {"l1": 0.1, "l2": 0.2}, "registered_name": None}
    again = layers.Dense.from_config(cfg)
    assert isinstance(again.activity_regularizer, regularizers.L1L2)
    assert again.get_config() == cfg
    assert "activity_regularizer" not in layers.Dense(3).get_config()  # as Keras 3
    act = layers.Activation("relu", activity_regularizer="l2")
    assert act.get_config()["activity_regularizer"]["config"] == {"l2": 0.01}
    conv = layers.Conv1D(2, 3, activity_regularizer="l1")  # Keras lists it, None or not
    conv(tf.constant(randn(2, 5, 3)))
    assert len(conv.losses) == 1
    assert layers.Conv1D(2, 3).get_config()["activity_regularizer"] is None


def test_fit_adds_activity_and_weight_penalties_as_tf():
    """Values from TF 2.21 (Keras 3.15.1): the same model, weights and SGD(0.1) steps."""
    x = (np.arange(12, dtype=np.float32).reshape(4, 3) - 5) / 4
    y = np.array([[1.0], [0.0], [2.0], [1.0]], np.float32)
    inp = keras.Input((3,))
    h = layers.Dense(2, activity_regularizer=regularizers.L1L2(l1=0.05, l2=0.1),
                     kernel_regularizer=regularizers.L2(0.02))(inp)
    model = keras.Model(inp, layers.Dense(1, activity_regularizer="l2")(h))
    model.set_weights([np.array(w, np.float32) for w in (
        [[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6]], [0.1, -0.1], [[0.7], [-0.3]], [0.05])])
    model(tf.constant(x))
    np.testing.assert_allclose(_values(model.losses), [0.084469, 0.000705, 0.0182], atol=1e-6)
    model.compile(keras.optimizers.SGD(0.1), "mse")
    hist = model.fit(x, y, batch_size=2, epochs=3, shuffle=False, verbose=0).history
    np.testing.assert_allclose(hist["loss"], [1.937183, 0.66097, 0.589919], atol=2e-5)
    np.testing.assert_allclose(model.evaluate(x, y, batch_size=4, verbose=0), 0.545714,
                               atol=2e-5)
    np.testing.assert_allclose(model.get_weights()[2].ravel(), [0.708916, -0.05885],
                               atol=2e-5)


def test_a_model_with_only_added_losses_trains():
    layer = layers.Dense(1, activity_regularizer="l2", kernel_initializer="ones")
    model = keras.Sequential([keras.Input((2,)), layer])
    model.compile(keras.optimizers.SGD(0.5), loss=None)
    x = np.ones((4, 2), np.float32)
    before = model(tf.constant(x)).numpy()
    model.fit(x, np.zeros((4, 1), np.float32), epochs=2, verbose=0)
    assert np.abs(model(tf.constant(x)).numpy()).max() < np.abs(before).max()
