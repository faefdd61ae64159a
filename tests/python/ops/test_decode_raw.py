"""tf.io.decode_raw (DecodeRaw / DecodePaddedRaw): eagerly and in a function, values and
error texts as TensorFlow 2.21 gives them for the same inputs."""
import numpy as np
import pytest

import kiln as tf
from ops_harness import eager_and_traced

CASES = [  # (input, out_type, little_endian, fixed_length, TF 2.21's result, its shape)
    ([b"\x01\x02\x03\x04", b"\x05\x06\x07\x08"], "int32", True, None,
     [[67305985], [134678021]], (2, 1)),
    ([b"\x01\x02\x03\x04", b"\x05\x06\x07\x08"], "int32", False, None,
     [[16909060], [84281096]], (2, 1)),
    ([b"\x01\x02\x03\x04"], "uint8", True, None, [[1, 2, 3, 4]], (1, 4)),
    ([[b"\x00\x00\x80\x3f"], [b"\x00\x00\x00\x40"]], "float32", True, None,
     [[[1.0]], [[2.0]]], (2, 1, 1)),
    (b"\x3f\x80\x00\x00", "float32", False, None, [1.0], (1,)),
    ([b"\x01\x02\x03\x04\x05", b"\x01"], "int8", True, 3, [[1, 2, 3], [1, 0, 0]], (2, 3)),
    ([b"\x00\x01\x02\x00"], "bool", True, None, [[False, True, True, False]], (1, 4)),
    ([b"\x01\0\0\0\0\0\0\0\x02\0\0\0\0\0\0\0"], "int64", True, None, [[1, 2]], (1, 2)),
    ([b"\x00\x00\x80\x3f\x00\x00\x00\x40"], "complex64", True, None, [[1 + 2j]], (1, 1)),
    ([b"\x3f\x80\x00\x00\x40\x00\x00\x00"], "complex64", False, None, [[1 + 2j]], (1, 1)),
    ([b"\x00\x01\x00\x02"], "int32", False, 8, [[65538, 0]], (1, 2)),
    ([b"\x00\x3c\x00\x40"], "float16", True, None, [[1.0, 2.0]], (1, 2)),
]


@pytest.mark.parametrize("data, out_type, little, fixed, want, shape", CASES)
def test_values_equal_tensorflows(data, out_type, little, fixed, want, shape):
    def decode(x):
        return tf.io.decode_raw(x, out_type, little_endian=little, fixed_length=fixed)

    for got in eager_and_traced(decode, tf.constant(data, tf.string)):
        assert got.dtype == tf.as_dtype(out_type)
        assert got.shape == shape
        np.testing.assert_array_equal(got.numpy(), np.array(want))


def test_empty_input_and_unknown_lengths():
    assert tf.io.decode_raw(tf.constant([], tf.string), tf.int32).shape == (0, 0)

    @tf.function
    def f(x):
        return tf.io.decode_raw(x, tf.int32)
    out = f.get_concrete_function(tf.TensorSpec([None], tf.string)).structured_outputs
    assert out.shape.as_list() == [None, None] and out.dtype == tf.int32


@pytest.mark.parametrize("data, out_type, fixed, text", [
    ([b"\x01\x02\x03", b"\x01\x02\x03\x04"], "int32", None,
     "DecodeRaw requires input strings to all be the same size, but element 1 has size 3 != 4"),
    ([b"\x01\x02\x03"], "int32", None,
     "Input to DecodeRaw has length 3 that is not a multiple of 4, the size of int32"),
    ([b"abcd", b"ab"], "uint8", None,
     "DecodeRaw requires input strings to all be the same size, but element 1 has size 4 != 2"),
    ([b"ab"], "int32", 3, "fixed_length (3) must be a multiple of the size of out_type (4)"),
    ([b"ab"], "string", None, "out_type must be a numeric or bool type"),
])
def test_errors_are_tensorflows(data, out_type, fixed, text):
    for mode in ("eager", "function"):
        def decode(x):
            return tf.io.decode_raw(x, out_type, fixed_length=fixed)
        fn = tf.function(decode) if mode == "function" else decode
        with pytest.raises(tf.errors.InvalidArgumentError, match=text.replace("(", r"\(")
                           .replace(")", r"\)")):
            fn(tf.constant(data, tf.string))
