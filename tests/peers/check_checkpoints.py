"""TensorFlow reads the checkpoints kiln wrote (run in .venv-peers).

    .venv-peers/bin/python tests/peers/check_checkpoints.py DIR

DIR is what tests/peers/write_kiln_checkpoints.py wrote. Checks that
tf.train.load_checkpoint lists and reads every value, that tf.train.Checkpoint
restores a tf.Module of the same shape object by object (assert_consumed), and
that a CheckpointManager directory kiln wrote is TensorFlow's. Exit status 1 on
any difference.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

PROBLEMS = []


def expect(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        PROBLEMS.append(what)


def key(name):
    return f"model/{name}/.ATTRIBUTES/VARIABLE_VALUE"


def check_reader(prefix, values):
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    for name, want in values.items():
        got = reader.get_tensor(key(name))
        same = got.shape == want.shape and np.array_equal(got, want)
        expect(same and shapes[key(name)] == list(want.shape), f"load_checkpoint reads {name}")


def check_restore(prefix, values):
    m = tf.Module()
    for name, want in values.items():
        zero = np.full(want.shape, b"", object) if want.dtype == object else np.zeros_like(want)
        setattr(m, name, tf.Variable(zero))
    m.nested = tf.Module()
    m.nested.w = tf.Variable(np.zeros(2, np.float32))
    try:
        tf.train.Checkpoint(model=m).read(prefix).assert_consumed()
        expect(True, "tf.train.Checkpoint.read(...).assert_consumed()")
    except Exception as e:  # noqa: BLE001
        expect(False, f"tf.train.Checkpoint.read: {type(e).__name__}: {e}")
        return
    for name, want in values.items():
        expect(np.array_equal(getattr(m, name).numpy(), want), f"restored {name}")
    expect(np.array_equal(m.nested.w.numpy(), [4.0, 5.0]), "restored nested.w")


def check_manager(directory):
    latest = tf.train.latest_checkpoint(directory)
    expect(latest == os.path.join(directory, "ckpt-2"), f"latest_checkpoint is {latest}")
    v = tf.Variable(0.0)
    tf.train.Checkpoint(v=v).restore(latest).assert_consumed()
    expect(float(v.numpy()) == 2.0, "CheckpointManager's latest restores v = 2.0")


def main(out):
    values = dict(np.load(os.path.join(out, "values.npz"), allow_pickle=True))
    prefix = os.path.join(out, "module", "ckpt")
    check_reader(prefix, values)
    check_restore(prefix, values)
    check_manager(os.path.join(out, "manager"))
    print(f"{len(PROBLEMS)} problem(s)")
    return 1 if PROBLEMS else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
