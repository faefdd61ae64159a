"""Writes TensorBoard logs with kiln (run in .venv) for check_summaries.py (.venv-peers).

    .venv/bin/python tests/peers/write_kiln_summaries.py DIR

DIR/direct: scalars, histograms, images, text eagerly and inside a kiln.function;
DIR/fit: a Keras fit with the TensorBoard callback (train/ and validation/ runs);
DIR/profile: a kiln.profiler profile of a function (for check_xplane.py).
"""
import os
import shutil
import sys

import numpy as np

import kiln as tf


def write_direct(logdir):
    w = tf.summary.create_file_writer(logdir)
    step = tf.Variable(0, dtype=tf.int64)

    @tf.function
    def train(x):
        with w.as_default(step=step):
            tf.summary.scalar("fn/loss", tf.reduce_mean(x))
            tf.summary.histogram("fn/x", x, buckets=5)
        step.assign_add(1)

    for i in range(3):
        train(tf.constant(np.arange(10, dtype=np.float32) * (i + 1)))
    with w.as_default(step=7):
        tf.summary.scalar("eager/nan", float("nan"))
        tf.summary.image("eager/image", np.full([2, 3, 4, 3], 0.5, np.float32), max_outputs=2)
        tf.summary.text("eager/text", tf.constant(["a", "b"]))
        tf.summary.histogram("eager/h", [1.0, 2.0, 2.0, 5.0], buckets=3)
        tf.summary.graph(train.get_concrete_function(tf.TensorSpec([10], tf.float32)))
    w.close()


def write_fit(logdir):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = (x.sum(axis=1) > 0).astype(np.float32)
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8, activation="relu"),
                                 tf.keras.layers.Dense(1, activation="sigmoid")])
    model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
    cb = tf.keras.callbacks.TensorBoard(logdir, histogram_freq=1, write_images=True)
    model.fit(x, y, epochs=2, batch_size=16, validation_split=0.25, callbacks=[cb], verbose=0)


def write_profile(logdir, calls=5):
    @tf.function
    def step(images, w):
        y = tf.nn.relu(tf.nn.conv2d(images, tf.ones([3, 3, 3, 4]), 1, "SAME"))
        return tf.nn.relu(tf.matmul(tf.reshape(y, [2, -1]), w))

    images = tf.constant(np.ones((2, 8, 8, 3), np.float32))
    w = tf.constant(np.ones((8 * 8 * 4, 5), np.float32))
    step(images, w)  # traced before the profile
    with tf.profiler.experimental.Profile(logdir):
        for _ in range(calls):
            step(images, w)
        tf.nn.relu(w)  # one eager op


def main():
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    write_direct(os.path.join(out, "direct"))
    write_fit(os.path.join(out, "fit"))
    write_profile(os.path.join(out, "profile"))
    print("wrote", out)


if __name__ == "__main__":
    main()
