"""Writes SavedModels with kiln for tests/peers/check_kiln_saved_models.py (run in .venv).

    .venv/bin/python tests/peers/write_kiln_saved_models.py DIR

Each export DIR/<name> comes with <name>_input.npy and <name>_expected.npy
(kiln's output of its serving_default signature).
"""
import os
import sys

import numpy as np

import kiln as tf


class Flow(tf.Module):
    """Variables, a Python if and while on tensors, reductions, a variable update."""

    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
        self.calls = tf.Variable(0, dtype=tf.int64)

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
    def serve(self, x):
        y = tf.matmul(x, self.w)
        if tf.reduce_sum(y) > 0:
            y = tf.nn.relu(y)
        else:
            y = tf.abs(y)
        i = tf.constant(0)
        while i < 3:
            y = y * 0.5 + tf.reduce_mean(y, axis=1, keepdims=True)
            i += 1
        self.calls.assign_add(1)
        return tf.concat([y, tf.expand_dims(tf.reduce_max(y, axis=1), 1)], axis=1)


def keras_cnn():
    L = tf.keras.layers
    model = tf.keras.Sequential([
        tf.keras.Input((10, 10, 3)), L.Conv2D(6, 3, padding="same", activation="relu"),
        L.BatchNormalization(), L.MaxPooling2D(), L.DepthwiseConv2D(3, padding="same"),
        L.GlobalAveragePooling2D(), L.Dense(4), L.Softmax()])
    return model


def keras_rnn():
    """Embedding, LSTM and a bidirectional GRU: while loops over TensorLists."""
    L = tf.keras.layers
    return tf.keras.Sequential([
        tf.keras.Input((7, 3)), L.LSTM(6, return_sequences=True),
        L.Bidirectional(L.GRU(4)), L.Dense(2)])


class Scan(tf.Module):
    """A TensorArray written in a while loop, stacked, then read back."""

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
    def serve(self, x):
        ta = tf.TensorArray(tf.float32, size=tf.shape(x)[0])
        acc = tf.zeros([3])
        for i in tf.range(tf.shape(x)[0]):
            acc = acc * 0.5 + x[i]
            ta = ta.write(i, acc)
        stacked = ta.stack()
        return stacked + ta.read(0)


def save_application(name, ctor, size, out):
    """A Keras application built in kiln (logits: no softmax to hide differences)."""
    tf.keras.utils.set_random_seed(0)
    model = ctor(weights=None, input_shape=(size, size, 3), classifier_activation=None)
    serve = tf.function(lambda images: model(images, training=False),
                        input_signature=[tf.TensorSpec([None, size, size, 3], tf.float32,
                                                       name="images")])
    x = np.random.RandomState(1).rand(1, size, size, 3).astype(np.float32) * 255
    save(name, model, serve, x, out)


def save(name, obj, fn, x, out):
    path = os.path.join(out, name)
    tf.saved_model.save(obj, path, signatures={"serving_default": fn})
    np.save(path + "_input.npy", x)
    np.save(path + "_expected.npy", np.asarray(fn(tf.constant(x))))


def main(out):
    os.makedirs(out, exist_ok=True)
    m = Flow()
    x = np.random.RandomState(0).randn(3, 4).astype(np.float32)
    save("flow", m, m.serve, x, out)
    model = keras_cnn()
    xi = np.random.RandomState(1).rand(2, 10, 10, 3).astype(np.float32)
    serve = tf.function(lambda images: model(images, training=False),
                        input_signature=[tf.TensorSpec([None, 10, 10, 3], tf.float32,
                                                       name="images")])
    save("keras_cnn", model, serve, xi, out)
    jm = tf.Module()
    jm.scale = tf.Variable(1.5)
    jm.serve = tf.function(lambda v: tf.tanh(v) * jm.scale + tf.reduce_sum(v, axis=0),
                           input_signature=[tf.TensorSpec([None, 5], tf.float32, name="v")],
                           jit_compile=True)
    save("jit", jm, jm.serve, np.linspace(-1, 1, 10, dtype=np.float32).reshape(2, 5), out)
    rnn = keras_rnn()
    serve = tf.function(lambda seq: rnn(seq, training=False),
                        input_signature=[tf.TensorSpec([None, 7, 3], tf.float32, name="seq")])
    save("keras_rnn", rnn, serve, np.random.RandomState(2).randn(2, 7, 3).astype(np.float32),
         out)
    for name, ctor, size in (("mobilenetv3", tf.keras.applications.MobileNetV3Small, 96),
                             ("efficientnetb0", tf.keras.applications.EfficientNetB0, 64),
                             ("resnet50", tf.keras.applications.ResNet50, 64)):
        save_application(name, ctor, size, out)
    exp = keras_rnn()  # Keras 3's model.export, the way TensorFlow users write it
    path = os.path.join(out, "keras_export")
    exp.export(path, verbose=False)
    xe = np.random.RandomState(4).randn(3, 7, 3).astype(np.float32)
    np.save(path + "_input.npy", xe)
    np.save(path + "_expected.npy", exp(xe).numpy())
    sc = Scan()
    save("scan", sc, sc.serve, np.random.RandomState(3).randn(5, 3).astype(np.float32), out)
    print("wrote", out)


if __name__ == "__main__":
    main(sys.argv[1])
