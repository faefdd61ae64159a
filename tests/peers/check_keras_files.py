"""TensorFlow's Keras 3 reads the .keras and .weights.h5 files kiln writes (run in .venv-peers).

    .venv-peers/bin/python tests/peers/check_keras_files.py [--keep DIR]

For each model of MODELS (built from the same code in both: kiln.keras mirrors Keras' API),
kiln (.venv/bin/python, in a subprocess) gives it random weights, saves it as .keras and
.weights.h5 and writes its inputs and outputs; the fitted model (Adam, one step) is saved with
its optimizer state, and its outputs after one more train_on_batch are written too. This side
loads the .keras with keras.models.load_model, builds the model from the code and loads the
.weights.h5 with load_weights, and compares the outputs (and, for the fitted model, those after
one more train_on_batch: the Adam moments were read). One line per check; exit status 1 on any
mismatch.
"""
import argparse
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
KILN_PYTHON = os.path.join(REPO, ".venv", "bin", "python")

# name -> (code setting `model` from `keras` and `layers`, input code from `rng`)
MODELS = {
    "seq_conv": ("""
model = keras.Sequential([
    keras.Input((8, 8, 3)), layers.Conv2D(4, 3, activation="relu"),
    layers.DepthwiseConv2D(3, padding="same"), layers.SeparableConv2D(5, 3),
    layers.MaxPooling2D(), layers.Flatten(), layers.Dense(3, activation="softmax")])
""", "rng.normal(size=(2, 8, 8, 3)).astype('float32')"),
    "rnn": ("""
tokens = keras.Input((7,), dtype="int32")
x = layers.Embedding(20, 6)(tokens)
x = layers.LSTM(5, return_sequences=True)(x)
x = layers.Bidirectional(layers.GRU(3, return_sequences=True))(x)
x = layers.SimpleRNN(4)(x)
model = keras.Model(tokens, layers.Dense(2)(x))
""", "rng.integers(0, 20, size=(3, 7)).astype('int32')"),
    "attention": ("""
inp = keras.Input((5, 6))
att = layers.MultiHeadAttention(2, 3)(inp, inp)
x = layers.LayerNormalization()(layers.Add()([inp, att]))
x = layers.Conv1D(4, 2, activation="tanh")(x)
model = keras.Model(inp, layers.Dense(3)(layers.GlobalAveragePooling1D()(x)))
""", "rng.normal(size=(2, 5, 6)).astype('float32')"),
    "nested": ("""
inner = keras.Sequential([layers.Dense(6, activation="relu"), layers.Dense(3)])
inp = keras.Input((4,))
model = keras.Model(inp, layers.Dense(2)(inner(inp)))
""", "rng.normal(size=(3, 4)).astype('float32')"),
    "bn_fitted": ("""
model = keras.Sequential([keras.Input((4,)), layers.Dense(8, activation="relu"),
                          layers.BatchNormalization(), layers.Dense(2)])
model.compile(keras.optimizers.Adam(0.01), "mse")
""", "rng.normal(size=(8, 4)).astype('float32')"),
}

KILN_SIDE = r'''
import sys
import numpy as np
import kiln as tf
keras, layers = tf.keras, tf.keras.layers
models, out_dir = eval(sys.argv[1]), sys.argv[2]
out = {}
for name, (code, inputs) in models.items():
    rng = np.random.default_rng(5)
    scope = {"keras": keras, "layers": layers}
    exec(code, scope)
    model = scope["model"]
    for w in model.weights:
        value = rng.normal(0, 0.5, tuple(w.shape)).astype(w.dtype.name)
        w.assign(np.abs(value) + 0.5 if "variance" in w.name else value)
    x = eval(inputs, {"rng": rng})
    out[name + "_x"] = x
    if model.compiled:
        target = rng.normal(size=(x.shape[0], 2)).astype("float32")
        model.fit(x, target, batch_size=len(x), epochs=1, shuffle=False, verbose=0)
        out[name + "_t"] = target
    out[name + "_y"] = model.predict(x, verbose=0)
    model.save(f"{out_dir}/{name}.keras")
    model.save_weights(f"{out_dir}/{name}.weights.h5")
    if model.compiled:
        model.train_on_batch(x, target)
        out[name + "_y_after_step"] = model.predict(x, verbose=0)
np.savez(f"{out_dir}/expected.npz", **out)
'''


def write_kiln_files(directory):
    subprocess.run([KILN_PYTHON, "-c", KILN_SIDE, repr(MODELS), directory], check=True)


def compare(label, got, want, atol=1e-5):
    err = float(np.max(np.abs(np.asarray(got) - np.asarray(want))))
    ok = np.shape(got) == np.shape(want) and err <= atol
    print(f"{'ok  ' if ok else 'FAIL'} {label}: max abs error {err:.2e}")
    return ok


def check(directory):
    import keras
    from keras import layers
    expected = np.load(os.path.join(directory, "expected.npz"))
    ok = True
    for name, (code, _) in MODELS.items():
        x = expected[name + "_x"]
        loaded = keras.models.load_model(os.path.join(directory, name + ".keras"))
        ok &= compare(f"{name}.keras load_model", loaded.predict(x, verbose=0),
                      expected[name + "_y"])
        scope = {"keras": keras, "layers": layers}
        exec(code, scope)
        fresh = scope["model"]
        fresh.load_weights(os.path.join(directory, name + ".weights.h5"))
        ok &= compare(f"{name}.weights.h5 load_weights", fresh.predict(x, verbose=0),
                      expected[name + "_y"])
        if name + "_y_after_step" in expected:
            loaded.train_on_batch(x, expected[name + "_t"])
            ok &= compare(f"{name}.keras one more Adam step (optimizer state)",
                          loaded.predict(x, verbose=0), expected[name + "_y_after_step"],
                          atol=1e-4)
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", help="write kiln's files here (kept) instead of a temp dir")
    args = parser.parse_args()
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        write_kiln_files(args.keep)
        ok = check(args.keep)
    else:
        with tempfile.TemporaryDirectory() as directory:
            write_kiln_files(directory)
            ok = check(directory)
    print("check_keras_files:", "all match" if ok else "MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
