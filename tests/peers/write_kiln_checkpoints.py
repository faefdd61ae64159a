"""Writes checkpoints with kiln for tests/peers/check_checkpoints.py (run in .venv).

    .venv/bin/python tests/peers/write_kiln_checkpoints.py DIR

DIR/module/ckpt: a kiln.Module tree with a variable of each dtype TensorFlow
and kiln share (strings too), written with tf.train.Checkpoint.write;
DIR/manager/: two saves through CheckpointManager; DIR/values.npz: the values.
"""
import os
import sys

import numpy as np

import kiln as tf

VALUES = {
    "f32": np.arange(12, dtype=np.float32).reshape(3, 4) / 8,
    "f64": np.array([1.5, -2.25]), "f16": np.array([0.5, -3.0], np.float16),
    "i8": np.array([-128, 127], np.int8), "u8": np.array([0, 255], np.uint8),
    "i32": np.array([[1, -2]], np.int32), "i64": np.array(2 ** 40 + 1, np.int64),
    "b": np.array([True, False, True]), "c64": np.array([1 + 2j], np.complex64),
    "c128": np.array([3 - 1j]), "empty": np.zeros((0, 3), np.float32),
    "s": np.array([b"kiln", b"", "\u00e9t\u00e9".encode()], object),
}


def main(out):
    m = tf.Module()
    for k, v in VALUES.items():
        setattr(m, k, tf.Variable(v))
    m.nested = tf.Module()
    m.nested.w = tf.Variable(np.array([4.0, 5.0], np.float32))
    tf.train.Checkpoint(model=m).write(os.path.join(out, "module", "ckpt"))
    v = tf.Variable(1.0)
    mgr = tf.train.CheckpointManager(tf.train.Checkpoint(v=v), os.path.join(out, "manager"), 2)
    mgr.save()
    v.assign(2.0)
    mgr.save()
    np.savez(os.path.join(out, "values.npz"), **VALUES)
    print("wrote", out)


if __name__ == "__main__":
    main(sys.argv[1])
