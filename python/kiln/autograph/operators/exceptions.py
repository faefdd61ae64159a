"""`assert` statements: a kiln assertion op for tensor conditions."""
from kiln.autograph.operators import backend as be
from kiln.debugging import Assert


def assert_stmt(cond, message=None):
    """`assert cond, message()`; a tensor cond becomes a runtime check."""
    if be.is_tensor(cond):
        text = message() if message is not None else "Assertion failed"
        return Assert(cond, [text])
    if not cond:
        if message is None:
            raise AssertionError()
        raise AssertionError(message())
    return None
