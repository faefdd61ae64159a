"""tf.io.serialize_tensor / parse_tensor: round trips, TensorFlow's bytes, hostile input."""
import numpy as np
import pytest

import kiln as tf

# tf.io.serialize_tensor(tf.constant([[1.5, -2.0]])) in TensorFlow 2.21 (dtype float,
# shape [1, 2], tensor_content the 8 bytes), and of tf.constant([b"a", b"bc"]).
TF_FLOAT = bytes.fromhex("08011208120208011202080222080000c03f000000c0")
TF_STRINGS = bytes.fromhex("0807120412020802420161420262 63".replace(" ", ""))


@pytest.mark.parametrize("value", [
    np.array([[1.5, -2.0]], np.float32), np.arange(6, dtype=np.int64).reshape(2, 3),
    np.array(3, np.int32), np.array([True, False]), np.zeros((0, 4), np.float64),
    np.array([b"a", b"", b"\xff\x00z"], object), np.array([1, 2], np.uint8),
])
def test_round_trip_eager_and_traced(value):
    t = tf.constant(value)
    data = tf.io.serialize_tensor(t)
    assert data.dtype == tf.string and data.shape == ()
    back = tf.io.parse_tensor(data, t.dtype)
    assert back.dtype == t.dtype and back.shape == t.shape
    np.testing.assert_array_equal(back.numpy(), t.numpy())
    fn = tf.function(lambda s: tf.io.parse_tensor(s, t.dtype))
    np.testing.assert_array_equal(fn(data).numpy(), t.numpy())


def test_reads_and_writes_tensorflows_bytes():
    np.testing.assert_array_equal(tf.io.parse_tensor(TF_FLOAT, tf.float32).numpy(),
                                  [[1.5, -2.0]])
    assert tf.io.parse_tensor(TF_STRINGS, tf.string).numpy().tolist() == [b"a", b"bc"]
    assert tf.io.serialize_tensor(tf.constant([[1.5, -2.0]])).numpy() == TF_FLOAT


def test_errors():
    data = tf.io.serialize_tensor(tf.constant([1.0]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Type mismatch"):
        tf.io.parse_tensor(data, tf.int32)
    for bad in (b"\xff\xff\xff", b"\x08\x01\x12\x04\x12\x02\x08\x05\x22\x01\x00"):
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.io.parse_tensor(bad, tf.float32)
