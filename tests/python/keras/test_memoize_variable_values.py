"""Values computed from variables alone (an inference batch norm's scale and
shift) are kept between calls of a function and recomputed after any write
(kiln.config.experimental.set_memoize_variable_values): Keras's own ways of
changing weights (set_weights, assign, fit's updates of the moving statistics)
show on the next call, in graph mode and under jit_compile."""
import numpy as np
import pytest

import kiln as tf
from kiln import keras


def _model():
    keras.utils.set_random_seed(3)
    inp = keras.Input((6, 6, 3))
    y = keras.layers.Conv2D(8, 3, padding="same", use_bias=False)(inp)
    y = keras.layers.BatchNormalization()(y)
    y = keras.layers.Activation("swish")(y)
    y = keras.layers.GlobalAveragePooling2D()(y)
    y = keras.layers.Dense(4)(y)
    return keras.Model(inp, y)


@pytest.mark.parametrize("jit", [False, True])
def test_batch_norm_statistics_written_every_way_show_on_the_next_call(jit):
    model = _model()
    x = np.random.default_rng(0).normal(size=(2, 6, 6, 3)).astype(np.float32)
    f = tf.function(lambda x: model(x, training=False), jit_compile=jit)

    def check():
        want = model(x, training=False).numpy()
        for _ in range(2):  # the second call reuses what the first computed
            np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-5, atol=1e-5)

    check()
    bn = model.layers[2]
    bn.moving_mean.assign(np.linspace(-1, 1, 8).astype(np.float32))
    check()
    weights = model.get_weights()
    weights[3] = np.linspace(0.5, 2, 8).astype(np.float32)  # moving_variance
    model.set_weights(weights)
    check()
    bn.gamma.assign_add(np.full(8, 0.25, np.float32))
    check()
    # fit updates the moving statistics (and every weight) in its own function
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, np.zeros((2, 4), np.float32), epochs=1, verbose=0)
    check()


def test_the_switch_gives_the_same_values():
    model = _model()
    x = np.random.default_rng(1).normal(size=(1, 6, 6, 3)).astype(np.float32)
    f = tf.function(lambda x: model(x, training=False))
    kept = [f(x).numpy() for _ in range(3)]
    old = tf.config.experimental.set_memoize_variable_values(False)
    try:
        assert old is True
        assert tf.config.experimental.get_memoize_variable_values() is False
        fresh = [f(x).numpy() for _ in range(2)]
    finally:
        tf.config.experimental.set_memoize_variable_values(True)
    for a in kept + fresh:
        np.testing.assert_array_equal(a, kept[0])


def test_a_loaded_saved_model_keeps_values_and_sees_writes(tmp_path):
    # A SavedModel's variables are read from the mapped file (fixed memory with
    # one version); assigning one of them gives it new memory, seen on the next call.
    model = _model()
    x = np.random.default_rng(2).normal(size=(2, 6, 6, 3)).astype(np.float32)

    class Serve(tf.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        @tf.function(input_signature=[tf.TensorSpec([2, 6, 6, 3], tf.float32)])
        def serve(self, x):
            return self.model(x, training=False)

    tf.saved_model.save(Serve(), str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    want = model(x, training=False).numpy()
    for _ in range(3):
        np.testing.assert_allclose(loaded.serve(x).numpy(), want, rtol=1e-5, atol=1e-5)
    means = [v for v in loaded.variables if "moving_mean" in v.name]
    assert len(means) == 1
    means[0].assign(np.full(8, 0.75, np.float32))
    model.layers[2].moving_mean.assign(np.full(8, 0.75, np.float32))
    want = model(x, training=False).numpy()
    for _ in range(2):
        np.testing.assert_allclose(loaded.serve(x).numpy(), want, rtol=1e-5, atol=1e-5)
