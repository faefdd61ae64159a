"""tf.bitwise: bit operations on integer tensors."""
from kiln.ops.bitwise_ops import (bitwise_and, bitwise_or, bitwise_xor, invert,  # noqa: F401
                                  left_shift, right_shift)

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"]
