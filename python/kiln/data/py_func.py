"""py_function / numpy_function: run Python code when an op executes.

Eagerly the function is called at once. While a function is traced, one
PyFunction op is recorded (kiln._kiln._py_function) and the Python function
runs every time the graph runs, on eager tensors.
"""
from kiln import _kiln
from kiln.data import structure

Tensor = _kiln.Tensor


def _dtype_list(Tout, who):
    """(list of dtypes, single?) from Tout: a dtype, a list/tuple of them or None."""
    if Tout is None:
        return [], None
    if isinstance(Tout, (list, tuple)):
        try:
            return [_kiln.as_dtype(t) for t in Tout], False
        except (TypeError, ValueError) as e:
            raise TypeError(f"{who}: Tout must be a dtype or a list of dtypes, got {Tout!r}: "
                            f"{e}") from None
    try:
        return [_kiln.as_dtype(Tout)], True
    except (TypeError, ValueError) as e:
        raise TypeError(f"{who}: Tout must be a dtype or a list of dtypes, got {Tout!r}: "
                        f"{e}") from None


def _input_list(inp, who):
    if inp is None:
        return []
    items = list(inp) if isinstance(inp, (list, tuple)) else [inp]
    out = []
    for i, x in enumerate(items):
        try:
            out.append(structure.to_tensor(x))
        except (TypeError, ValueError) as e:
            raise TypeError(f"{who}: input {i} could not be converted to a tensor: {e}") from None
    return out


def convert_outputs(value, touts, who):
    """The function's result as a list of tensors of the dtypes `touts`."""
    if not touts:
        return []
    if len(touts) == 1 and not isinstance(value, (list, tuple)):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{who}: the function returned {type(value).__name__}, expected a "
                        f"list of {len(touts)} values (Tout has {len(touts)} dtypes)")
    if len(value) != len(touts):
        raise ValueError(f"{who}: the function returned {len(value)} values, expected "
                         f"{len(touts)} (one per Tout dtype)")
    out = []
    for i, (v, dt) in enumerate(zip(value, touts)):
        if isinstance(v, _kiln.Variable):
            v = v.read_value()
        if isinstance(v, Tensor):
            if v.dtype != dt:
                raise TypeError(f"{who}: output {i} has dtype {v.dtype.name}, but Tout says "
                                f"{dt.name}")
            out.append(v)
            continue
        arr = structure.check_dtype_conversion(v, dt)
        if arr is None:
            raise TypeError(f"{who}: output {i} ({_short(v)}) cannot be converted to "
                            f"{dt.name} (the dtype Tout gives)")
        out.append(structure.to_tensor(arr, dt))
    return out


def _short(v):
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _has_op():
    return hasattr(_kiln, "_py_function")


def call_op(run, inputs, touts, shapes=None, stateful=True, who="py_function"):
    """Records one PyFunction op: run(*eager_inputs) -> list of tensors of touts.
    shapes: one static shape per output (None entries / None: unknown)."""
    if not _has_op():
        raise NotImplementedError(
            f"{who} inside a traced kiln.function needs the PyFunction op "
            "(kiln._kiln._py_function), which this build of kiln does not have")

    def adapter(*args):
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        return list(run(*args))

    adapter.__name__ = who if isinstance(who, str) else "py_function"
    if shapes is not None:
        shapes = [None if s is None or s.rank is None else list(s.dims) for s in shapes]
    out = _kiln._py_function(adapter, list(inputs), list(touts), shapes, bool(stateful))
    return list(out)


def _finish(outs, single):
    if single is None:
        return None
    return outs[0] if single else outs


def py_function(func, inp=None, Tout=None, name=None):
    """Wraps a Python function into an op that runs it on eager tensors
    (tf.py_function).

    func gets the tensors of `inp` (a list) and returns values convertible to
    the dtypes of `Tout`: a dtype (one tensor returned), a list of dtypes (a
    list returned) or None (nothing returned). Eagerly func runs now; in a
    traced function it runs each time the graph runs (a stateful op)."""
    who = f"py_function({getattr(func, '__name__', 'func')})"
    if not callable(func):
        raise TypeError(f"py_function: func must be callable, got {func!r}")
    touts, single = _dtype_list(Tout, who)
    inputs = _input_list(inp, who)

    def run(*args):
        return convert_outputs(func(*args), touts, who)

    if _kiln.executing_eagerly():
        return _finish(run(*inputs), single)
    return _finish(call_op(run, inputs, touts, None, True, who), single)


eager_py_func = py_function


def numpy_function(func, inp, Tout, stateful=True, name=None):
    """Like py_function, but func gets NumPy arrays and returns NumPy values
    (tf.numpy_function). stateful=False lets identical calls be merged."""
    who = f"numpy_function({getattr(func, '__name__', 'func')})"
    if not callable(func):
        raise TypeError(f"numpy_function: func must be callable, got {func!r}")
    touts, single = _dtype_list(Tout, who)
    inputs = _input_list(inp, who)

    def run(*args):
        return convert_outputs(func(*[a.numpy() for a in args]), touts, who)

    if _kiln.executing_eagerly():
        return _finish(run(*inputs), single)
    return _finish(call_op(run, inputs, touts, None, stateful, who), single)


__all__ = ["py_function", "numpy_function", "eager_py_func"]
