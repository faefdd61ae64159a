"""`and`, `or` and `not`: lazy like Python; on traced tensors the right side
is evaluated inside a kiln.cond, so it only runs when it decides the result."""
from kiln import _kiln
from kiln.autograph.operators import backend as be
from kiln.control_flow import cond
from kiln.ops.math_ops import logical_not, logical_or


def _as_bool_tensor(x):
    return x if be.is_tensor(x) else _kiln.constant(bool(x))


def and_(first, *rest):
    """`first and rest[0]() and ...` (rest are thunks)."""
    value = first
    for fn in rest:
        if be.is_graph_tensor(value):
            value = _lazy(value, fn, is_and=True)
        elif not be.truth(value):
            return value
        else:
            value = fn()
    return value


def or_(first, *rest):
    """`first or rest[0]() or ...` (rest are thunks)."""
    value = first
    for fn in rest:
        if be.is_graph_tensor(value):
            value = _lazy(value, fn, is_and=False)
        elif be.truth(value):
            return value
        else:
            value = fn()
    return value


def _lazy(value, fn, is_and):
    def rhs():
        return _as_bool_tensor(fn())

    def keep():
        return value

    return cond(value, rhs, keep) if is_and else cond(value, keep, rhs)


def not_(x):
    """`not x`: kiln.logical_not for tensors."""
    if be.is_tensor(x):
        return logical_not(x)
    return not x


def not_any(*flags):
    """True when no flag is set (the exit test of loops with break/return)."""
    tensors = [f for f in flags if be.is_tensor(f)]
    if any(be.truth(f) for f in flags if not be.is_tensor(f)):
        return False
    if not tensors:
        return True
    result = tensors[0]
    for t in tensors[1:]:
        result = logical_or(result, t)
    return logical_not(result)
