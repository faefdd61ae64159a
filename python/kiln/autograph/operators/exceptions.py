"""`assert` statements: a kiln assertion op for tensor conditions."""
from kiln.autograph.operators import backend as be


def assert_stmt(cond, message=None):
    """`assert cond, message()`; a tensor cond becomes a runtime check."""
    if be.is_tensor(cond):
        text = message() if message is not None else "Assertion failed"
        k = be.lib()
        debugging = getattr(k, "debugging", None)
        assert_true = getattr(debugging, "assert_true", None) if debugging else None
        if assert_true is not None:
            return assert_true(cond, message=text)
        assert_op = getattr(k, "Assert", None) or getattr(debugging, "Assert", None)
        if assert_op is None and not be.tracing():
            if not be.truth(cond):
                raise k.errors.InvalidArgumentError(f"assertion failed: {text}")
            return None
        if assert_op is None:
            raise NotImplementedError(
                "assert on a tensor needs kiln.debugging.assert_true or kiln.debugging.Assert, "
                "which this kiln build does not provide")
        return assert_op(cond, [text])
    if not cond:
        if message is None:
            raise AssertionError()
        raise AssertionError(message())
    return None
