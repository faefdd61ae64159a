"""Bitwise ops on integer tensors (tf.bitwise.*)."""
from kiln import errors
from kiln.ops import _helpers as h

raw = h.raw


def _int_binary(op_name, doc):
    op = getattr(raw, op_name)

    def fn(x, y, name=None):
        a, b = h.pair(x, y, op_name)
        _require_int(a, op_name)
        return op(a, b)

    fn.__doc__ = doc
    return fn


def _require_int(x, op):
    if not x.dtype.is_integer:
        raise errors.InvalidArgumentError(
            f"{op}: expected an integer tensor, got {x.dtype.name}")


bitwise_and = _int_binary("BitwiseAnd", "x & y bit by bit (tf.bitwise.bitwise_and).")
bitwise_or = _int_binary("BitwiseOr", "x | y bit by bit (tf.bitwise.bitwise_or).")
bitwise_xor = _int_binary("BitwiseXor", "x ^ y bit by bit (tf.bitwise.bitwise_xor).")
left_shift = _int_binary("LeftShift", "x << y; counts are clamped to [0, bits - 1] "
                                      "(tf.bitwise.left_shift).")
right_shift = _int_binary("RightShift", "x >> y; signed values fill with the sign bit "
                                        "(tf.bitwise.right_shift).")


def invert(x, name=None):
    """~x bit by bit (tf.bitwise.invert)."""
    x = h.tensor(x)
    _require_int(x, "Invert")
    return raw.Invert(x)


BITWISE = ["bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"]
__all__ = []
