"""Accuracy of trained models under mixed_bfloat16 (bf16 convolutions and products,
float32 accumulation) against float32, on scikit-learn's digits (shipped inside the
package): a float32-trained convnet with attention evaluated in bf16, and the same
model trained in bf16 from the same initial weights."""
import numpy as np
import pytest

import kiln as tf

keras = tf.keras
L = keras.layers
mp = keras.mixed_precision


@pytest.fixture(autouse=True)
def _float32_after():
    yield
    mp.set_global_policy("float32")


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[..., None]  # [1797, 8, 8, 1]
    y = d.target.astype(np.int32)
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], y[order]
    return x[:1400], y[:1400], x[1400:], y[1400:]


def build():
    inp = keras.Input((8, 8, 1))
    h = L.Conv2D(16, 3, padding="same", activation="relu")(inp)
    h = L.Conv2D(32, 3, strides=2, padding="same", activation="swish")(h)
    seq = L.Reshape((16, 32))(h)
    seq = L.LayerNormalization()(L.Add()([seq, L.MultiHeadAttention(2, 16)(seq, seq)]))
    h = L.Dense(64, activation="relu")(L.Flatten()(seq))
    out = L.Dense(10)(h)
    if out.dtype != "float32":
        out = L.Activation("linear", dtype="float32")(out)
    return keras.Model(inp, out)


def train(model, x, y, epochs=8):
    keras.utils.set_random_seed(1)
    model.compile(optimizer=keras.optimizers.Adam(3e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=64, epochs=epochs, verbose=0, shuffle=True)


def predict(model, x):
    f = tf.function(lambda v: model(v, training=False), jit_compile=True)
    return np.argmax(np.asarray(f(x).numpy(), np.float32), axis=-1)


def test_float32_weights_evaluated_in_bfloat16(digits):
    x, y, xv, yv = digits
    keras.utils.set_random_seed(0)
    ref = build()
    train(ref, x, y)
    want = predict(ref, xv)
    acc32 = np.mean(want == yv)
    assert acc32 > 0.9
    mp.set_global_policy("mixed_bfloat16")
    mixed = build()
    mixed.set_weights(ref.get_weights())
    got = predict(mixed, xv)
    assert np.mean(got == want) >= 0.98  # the same class for nearly every image
    assert abs(np.mean(got == yv) - acc32) <= 0.01


def test_training_in_bfloat16_reaches_float32_accuracy(digits):
    x, y, xv, yv = digits
    keras.utils.set_random_seed(0)
    ref = build()
    init = ref.get_weights()
    train(ref, x, y)
    acc32 = np.mean(predict(ref, xv) == yv)
    mp.set_global_policy("mixed_bfloat16")
    mixed = build()
    mixed.set_weights(init)
    train(mixed, x, y)
    assert all(w.dtype == "float32" for w in mixed.get_weights())
    acc16 = np.mean(predict(mixed, xv) == yv)
    assert acc16 > 0.9 and acc16 >= acc32 - 0.03
