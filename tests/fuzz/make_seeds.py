"""Seeds for make fuzz: real exports and the fuzz inputs made from them.

    .venv/bin/python tests/fuzz/make_seeds.py BASE SEEDS

Exports the demo's digits classifier and CharUnpack layer (examples/export_model.py,
trained briefly) and a control-flow module into BASE; writes each export's files into
SEEDS as fuzz inputs (a first byte naming the file: 0 saved_model.pb, 1 the variables
index, 2 the variables data).
"""
import os
import sys

import numpy as np

import kiln as tf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
import export_model  # noqa: E402

FILES = ["saved_model.pb", "variables/kiln_variables.index", "variables/kiln_variables.data"]


class Loops(tf.Module):
    def __init__(self):
        super().__init__()
        self.scale = tf.Variable(1.5)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    def __call__(self, x):
        ta = tf.TensorArray(tf.float32, size=tf.shape(x)[0])
        total = tf.constant(0.0)
        for i in tf.range(tf.shape(x)[0]):
            if x[i] > 0:
                total += x[i] * self.scale
            else:
                total -= 1.0
            ta = ta.write(i, total)
        return {"sums": ta.stack(), "names": tf.strings.as_string(total)}


def main(base, seeds):
    os.makedirs(seeds, exist_ok=True)
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([tf.keras.Input(shape=(64,)), tf.keras.layers.Dense(16),
                                 tf.keras.layers.BatchNormalization(),
                                 tf.keras.layers.Dense(10)])
    x = np.random.default_rng(0).random((8, 64), np.float32)
    model(x)
    export_model.export_all(model, x, base)
    tf.saved_model.save(Loops(), os.path.join(base, "loops"))
    for name in ("digits", "charunpack", "loops"):
        for k, f in enumerate(FILES):
            with open(os.path.join(base, name, f), "rb") as src:
                data = src.read()
            with open(os.path.join(seeds, f"{name}-{k}"), "wb") as out:
                out.write(bytes([k]) + data)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
