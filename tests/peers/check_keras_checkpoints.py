"""tf.train.Checkpoint of Keras models and optimizers, both ways between
kiln and TensorFlow's Keras 3 (run in .venv-peers).

    .venv-peers/bin/python tests/peers/check_keras_checkpoints.py [--keep DIR]

For each case of tests/peers/keras_checkpoints_kiln.py (a model and an
optimizer, from the same code on both sides), after one train_on_batch:
kiln (.venv/bin/python, in a subprocess) writes
``tf.train.Checkpoint(model=model, optimizer=optimizer)``, which TensorFlow
restores into its model (assert_existing_objects_matched, assert_consumed)
with equal outputs, equal optimizer variables and an equal next training
step, restoring into built models and delayed (before the model and the
slots exist; but NO_DELAYED there); TensorFlow writes the same, which kiln
restores likewise. One line per case, direction and mode; exit status 1 on any
mismatch.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
KILN_PYTHON = os.path.join(REPO, ".venv", "bin", "python")
sys.path.insert(0, HERE)

import keras_checkpoints_kiln as shared  # noqa: E402


def kiln_side(command, directory):
    subprocess.run([KILN_PYTHON, os.path.join(HERE, "keras_checkpoints_kiln.py"), command,
                    directory], check=True)


def tf_framework():
    import keras
    return shared.Framework("TF", keras, tf.train.Checkpoint, lambda opt: list(opt.variables))


def run(directory):
    fw = tf_framework()
    kiln_dir, tf_dir = os.path.join(directory, "kiln"), os.path.join(directory, "tf")
    kiln_side("write", kiln_dir)
    for name in shared.CASES:
        fw.keras.backend.clear_session()
        shared.write(fw, name, tf_dir)
    results = shared.read_all(fw, kiln_dir, "kiln")
    kiln_side("read", tf_dir)
    with open(os.path.join(tf_dir, "results.json")) as f:
        results += [tuple(r) for r in json.load(f)]
    for ok, line in results:
        print(f"{'ok  ' if ok else 'FAIL'} {line}")
    return all(ok for ok, _ in results)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", help="write the checkpoints here (kept) instead of a temp dir")
    args = parser.parse_args()
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        ok = run(args.keep)
    else:
        with tempfile.TemporaryDirectory() as directory:
            ok = run(directory)
    print("check_keras_checkpoints:", "all match" if ok else "MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
