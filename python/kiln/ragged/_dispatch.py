"""RaggedTensor operators (rt + 1, rt < x, -rt) and the handler through which
kiln's math ops (tf.math.*, tf.reduce_*, tf.concat, tf.cast) accept RaggedTensors."""
from kiln import bitwise
from kiln.ops import _helpers as h
from kiln.ops import math_ops as m
from kiln.ragged import ragged_ops
from kiln.ragged.ragged_tensor import RaggedTensor


def _handler(fn, args):
    kind = getattr(fn, "_kiln_kind", None)
    if kind == "unary" and isinstance(args[0], RaggedTensor):
        return ragged_ops.map_flat_values(fn, args[0])
    if kind == "binary" and any(isinstance(a, RaggedTensor) for a in args[:2]):
        return ragged_ops.binary(fn, args[0], args[1])
    if kind == "reduce" and isinstance(args[1], RaggedTensor):
        op_name, rt, axis, keepdims = args
        return ragged_ops.reduce(op_name, rt, axis, keepdims)
    if kind == "concat" and isinstance(args[0], (list, tuple)) and any(
            isinstance(v, RaggedTensor) for v in args[0]):
        return ragged_ops.concat(list(args[0]), args[1])
    return NotImplemented


def _binary(fn):
    def op(self, other):
        return ragged_ops.binary(fn, self, other)
    return op


def _reflected(fn):
    def op(self, other):
        return ragged_ops.binary(fn, other, self)
    return op


def _equality(fn, if_none):
    def op(self, other):
        if other is None:  # rt == None is False, as for tensors
            return if_none
        return ragged_ops.binary(fn, self, other)
    return op


def _logical(logical, bitwise_name):
    def op(self, other):
        if self.dtype.is_bool:
            return ragged_ops.binary(logical, self, other)
        return ragged_ops.binary(getattr(bitwise, bitwise_name), self, other)
    return op


def _install():
    ops = {"add": m.add, "sub": m.subtract, "mul": m.multiply, "truediv": m.truediv,
           "floordiv": m.floordiv, "mod": m.floormod, "pow": m.pow}
    for name, fn in ops.items():
        setattr(RaggedTensor, f"__{name}__", _binary(fn))
        setattr(RaggedTensor, f"__r{name}__", _reflected(fn))
    for name, fn in {"lt": m.less, "le": m.less_equal, "gt": m.greater,
                     "ge": m.greater_equal}.items():
        setattr(RaggedTensor, f"__{name}__", _binary(fn))
    RaggedTensor.__eq__ = _equality(m.equal, False)
    RaggedTensor.__ne__ = _equality(m.not_equal, True)
    RaggedTensor.__and__ = RaggedTensor.__rand__ = _logical(m.logical_and, "bitwise_and")
    RaggedTensor.__or__ = RaggedTensor.__ror__ = _logical(m.logical_or, "bitwise_or")
    RaggedTensor.__xor__ = RaggedTensor.__rxor__ = _logical(m.logical_xor, "bitwise_xor")
    RaggedTensor.__neg__ = lambda self: ragged_ops.map_flat_values(m.negative, self)
    RaggedTensor.__abs__ = lambda self: ragged_ops.map_flat_values(m.abs, self)
    RaggedTensor.__invert__ = lambda self: ragged_ops.map_flat_values(m.logical_not, self)
    RaggedTensor.__hash__ = object.__hash__  # __eq__ is elementwise; identity hash as TF
    h.DISPATCHERS.append(_handler)


_install()
