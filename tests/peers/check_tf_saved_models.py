"""kiln loads SavedModels TensorFlow wrote (run in .venv-peers).

    .venv-peers/bin/python tests/peers/check_tf_saved_models.py [--out DIR] [NAME...]

TensorFlow exports each model (Keras `model.export`, or tf.saved_model.save)
into DIR, runs it, then kiln (a subprocess of /work/main/.venv/bin/python:
tests/peers/tf_saved_models_kiln.py) loads each export and runs the same input.
Prints one line per model: the largest difference, and load + first call time
of TensorFlow and kiln (each in a fresh process). Exit status 1 on a mismatch.
"""
import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
KILN_PY = os.path.join(HERE, "..", "..", ".venv", "bin", "python")
L = tf.keras.layers


def lstm_model():
    inp = tf.keras.Input((20, 8))
    h = L.LSTM(16, return_sequences=True)(inp)
    h = L.Bidirectional(L.GRU(8))(h)
    return tf.keras.Model(inp, L.Dense(4)(h)), (2, 20, 8)


def transformer_model():
    inp = tf.keras.Input((16, 32))
    a = L.MultiHeadAttention(4, 8)(inp, inp)
    h = L.LayerNormalization()(inp + a)
    f = L.Dense(32)(L.Dense(64, activation="gelu")(h))
    return tf.keras.Model(inp, L.LayerNormalization()(h + f)), (2, 16, 32)


def app(cls):
    model = cls(weights=None)
    return model, (1,) + tuple(d or 224 for d in model.input_shape[1:])  # None: any size


MODELS = {
    "MobileNetV3Small": lambda: app(tf.keras.applications.MobileNetV3Small),
    "EfficientNetV2S": lambda: app(tf.keras.applications.EfficientNetV2S),
    "ResNet50": lambda: app(tf.keras.applications.ResNet50),
    "LSTM": lstm_model,
    "Transformer": transformer_model,
}


def export(name, out):
    tf.keras.utils.set_random_seed(0)
    model, shape = MODELS[name]()
    path = os.path.join(out, name)
    model.export(path, verbose=False)
    x = np.random.RandomState(1).rand(*shape).astype(np.float32)
    np.save(path + ".x.npy", x)
    np.save(path + ".y.npy", model(x, training=False).numpy())
    return path


def tf_first_call(path):
    code = ("import os,time;os.environ['TF_CPP_MIN_LOG_LEVEL']='3';t=time.perf_counter();"
            "import tensorflow as tf,numpy as np;i=time.perf_counter();"
            f"m=tf.saved_model.load({path!r});x=np.load({path + '.x.npy'!r});"
            "m.serve(x);print(time.perf_counter()-i)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return float(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else float("nan")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="/tmp/kiln-tf-saved-models")
    p.add_argument("names", nargs="*")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    bad = 0
    for name in a.names or list(MODELS):
        path = export(name, a.out)
        r = subprocess.run([KILN_PY, os.path.join(HERE, "tf_saved_models_kiln.py"), path],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL {name}: kiln: {r.stderr.strip().splitlines()[-1] if r.stderr else ''}")
            print(r.stderr[-3000:])
            bad += 1
            continue
        got = json.loads(r.stdout.strip().splitlines()[-1])
        ok = got["max_diff"] <= 1e-4 * max(1.0, got["max_abs"])
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: max |kiln - TF| {got['max_diff']:.2e}; "
              f"load + first call: kiln {got['first_call_s']:.2f} s, "
              f"TensorFlow {tf_first_call(path):.2f} s")
    print(f"{bad} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
