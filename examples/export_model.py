"""Export models for serving from C++ with no Python (examples/serve.cpp, kiln-run).

    .venv/bin/python examples/export_model.py OUT_DIR

Writes OUT_DIR/digits (the digits classifier of examples/train_digits.py; trained
here for a few epochs when run alone, the demo passes its own trained model) and
OUT_DIR/charunpack (seed 000's CharUnpack layer), each a kiln.saved_model export
with a serving_default signature, plus <name>_input.npy and <name>_expected.npy:
inputs and the outputs Python computed, which serve.cpp compares against.
"""
import os
import sys

import numpy as np

import kiln as tf


class CharUnpack(tf.keras.layers.Layer):
    """Seed 000's layer: each uint8 becomes its 8 bits as float32."""

    def __init__(self, name="CharUnpack", **kwargs):
        super().__init__(trainable=False, name=name, **kwargs)
        self._shifting_range = tf.reshape(tf.cast(tf.range(7, -1, -1), tf.uint8), (1, 1, 8))
        self._selection_bit = tf.constant(0x01, dtype=tf.uint8)

    def call(self, inputs):
        bits = tf.bitwise.bitwise_and(
            tf.bitwise.right_shift(tf.expand_dims(inputs, 2), self._shifting_range),
            self._selection_bit)
        return tf.cast(tf.reshape(bits, [-1, inputs.shape[-1] * 8]), tf.float32)


def export_digits(model, x, out):
    """The trained classifier: features [None, 64] -> logits [None, 10]."""
    @tf.function(input_signature=[tf.TensorSpec([None, 64], tf.float32, name="features")])
    def serve(features):
        return {"logits": model(features, training=False)}

    path = os.path.join(out, "digits")
    tf.saved_model.save(model, path, signatures={"serving_default": serve})
    np.save(os.path.join(out, "digits_input.npy"), x)
    np.save(os.path.join(out, "digits_expected.npy"), serve(x)["logits"].numpy())
    return path


def export_charunpack(out, rows=64, width=400, seed=0):
    layer = CharUnpack()
    root = tf.Module()
    root.unpack = tf.function(layer.call, input_signature=[
        tf.TensorSpec([None, width], tf.uint8, name="packed")])
    x = np.random.default_rng(seed).integers(0, 256, size=(rows, width), dtype=np.uint8)
    path = os.path.join(out, "charunpack")
    tf.saved_model.save(root, path)
    np.save(os.path.join(out, "charunpack_input.npy"), x)
    np.save(os.path.join(out, "charunpack_expected.npy"), root.unpack(x).numpy())
    return path


def export_all(model, x, out):
    os.makedirs(out, exist_ok=True)
    for p in (export_digits(model, x, out), export_charunpack(out)):
        print(f"exported {p}")


def main(argv):
    if len(argv) != 1:
        sys.exit(__doc__)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import train_digits
    tf.keras.utils.set_random_seed(0)
    x_train, y_train, x_val, _ = train_digits.load()
    model = train_digits.build_model()
    model.fit(x_train, y_train, epochs=5, batch_size=32, verbose=0)
    export_all(model, x_val[:32], argv[0])


if __name__ == "__main__":
    main(sys.argv[1:])
