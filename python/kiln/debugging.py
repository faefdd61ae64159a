"""Debugging helpers (tf.debugging): numeric checks and assertions."""
from kiln import _kiln
from kiln.errors import InvalidArgumentError
from kiln.ops import math_ops


def enable_check_numerics(stack_height_limit=30, path_length_limit=50):
    """From now on, an op that produces NaN or Inf raises InvalidArgumentError
    naming the op (and the graph node inside functions)."""
    _kiln._set_check_numerics(True)


def disable_check_numerics():
    """Turns enable_check_numerics off."""
    _kiln._set_check_numerics(False)


def _message(data):
    parts = []
    for d in data or []:
        if isinstance(d, (_kiln.Tensor, _kiln.Variable)) and not getattr(d, "is_symbolic", False):
            parts.append(str(d.numpy()))
        else:
            parts.append(str(d))
    return " ".join(parts)


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 -- TensorFlow's name
    """Raises InvalidArgumentError when `condition` (a bool scalar) is false.
    Eagerly it checks now; inside a traced function it checks on every call."""
    if not isinstance(condition, (_kiln.Tensor, _kiln.Variable)):
        if not condition:
            raise InvalidArgumentError(f"assertion failed: {_message(data)}")
        return None
    if isinstance(condition, _kiln.Variable):
        condition = condition.read_value()
    if not condition.is_symbolic:
        if not bool(condition):
            raise InvalidArgumentError(f"assertion failed: {_message(data)}")
        return None
    texts = [d if isinstance(d, str) else None for d in (data or [])]
    tensors = [d for d in (data or []) if not isinstance(d, str)]

    def check(c, *values):
        if not bool(c):
            vals = iter(values)
            msg = " ".join(t if t is not None else str(next(vals).numpy()) for t in texts)
            raise InvalidArgumentError(f"assertion failed: {msg}")
        return _kiln.constant(True)

    _kiln._py_function(check, [condition] + tensors, [_kiln.as_dtype("bool")], [[]])
    return None


def assert_equal(x, y, data=None, summarize=None, message=None, name=None):
    cond = math_ops.reduce_all(math_ops.equal(x, y))
    return Assert(cond, data or [message or "Condition x == y did not hold."])


def assert_greater(x, y, data=None, summarize=None, message=None, name=None):
    cond = math_ops.reduce_all(math_ops.greater(x, y))
    return Assert(cond, data or [message or "Condition x > y did not hold."])


def assert_less(x, y, data=None, summarize=None, message=None, name=None):
    cond = math_ops.reduce_all(math_ops.less(x, y))
    return Assert(cond, data or [message or "Condition x < y did not hold."])


def check_numerics(tensor, message, name=None):
    """Raises InvalidArgumentError if tensor has NaN or Inf (tf.debugging.check_numerics)."""
    ok = math_ops.reduce_all(_kiln.raw.IsFinite(tensor))
    Assert(ok, [f"{message}: Tensor had NaN or Inf values"])
    return tensor


def set_log_device_placement(enabled):
    """Accepted for compatibility: kiln runs everything on the CPU."""
