"""tf.io.read_file / write_file: bytes in and out, eagerly and in functions
(read at each call), and clear errors."""
import os

import pytest

import kiln as tf


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_write_then_read_every_byte(tmp_path, mode):
    path = str(tmp_path / "f.bin")
    data = bytes(range(256)) + b"\x00"

    def rw(p, d):
        tf.io.write_file(p, d)
        return tf.io.read_file(p)

    fn = tf.function(rw) if mode == "function" else rw
    got = fn(tf.constant(path), tf.constant(data))
    assert got.numpy() == data
    with open(path, "rb") as f:
        assert f.read() == data


def test_a_function_reads_the_file_at_each_call(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(b"one")
    read = tf.function(lambda: tf.strings.length(tf.io.read_file(str(path))))
    assert int(read()) == 3
    path.write_bytes(b"three")
    assert int(read()) == 5


def test_errors(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="missing"):
        tf.io.read_file(str(tmp_path / "missing"))
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.write_file(str(tmp_path / "no" / "dir" / "f"), "x")
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError), match="scalar"):
        tf.io.read_file(tf.constant(["a", "b"]))
    assert not os.path.exists(tmp_path / "no")
