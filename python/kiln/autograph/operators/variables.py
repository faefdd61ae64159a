"""Placeholders for variables that are not defined on every path."""
from kiln.autograph.errors import UndefinedVariableError


class Undefined:
    """The value of a local that some path through an if/loop never assigned.

    Reading it for anything (arithmetic, attributes, truth, calls) raises an
    UndefinedVariableError naming the variable, as Python would."""

    __slots__ = ("symbol_name",)

    def __init__(self, symbol_name):
        object.__setattr__(self, "symbol_name", symbol_name)

    def __repr__(self):
        return f"Undefined({self.symbol_name!r})"

    def _fail(self, *args, **kwargs):
        raise UndefinedVariableError(
            f"local variable '{self.symbol_name}' is used but is not defined on every "
            "path that reaches this point (it is assigned only in some branches of an "
            "if, or only inside a loop that may run zero times)")

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        self._fail()

    __bool__ = __len__ = __iter__ = __call__ = __getitem__ = __setitem__ = _fail
    __index__ = __int__ = __float__ = __neg__ = __pos__ = __abs__ = __invert__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __contains__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _fail
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _fail
    __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _fail
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _fail
    __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = _fail
    # __eq__/__hash__ stay identity-based so containers of state can hold it.


class UndefinedReturnValue:
    """The return value before any `return` ran; the function returns None."""

    __slots__ = ()

    def __repr__(self):
        return "UndefinedReturnValue()"


def ldu(load, name):
    """Loads a variable that may be unbound: its value, or Undefined(name)."""
    try:
        return load()
    except NameError:  # UnboundLocalError and unbound free variables
        return Undefined(name)


def retval(value):
    """The function's return value: None when no `return` ran; reading an
    undefined variable raises as Python would."""
    if isinstance(value, UndefinedReturnValue):
        return None
    if isinstance(value, Undefined):
        value._fail()
    return value


def is_undefined(value):
    """True for Undefined and UndefinedReturnValue placeholders."""
    return isinstance(value, (Undefined, UndefinedReturnValue))
