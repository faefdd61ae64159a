"""The first ops: enough for functions and control flow (expanded per family)."""

from kiln import _kiln

_raw = _kiln.raw
Tensor = _kiln.Tensor
Variable = _kiln.Variable


def is_tensor(x):
    """True for kiln Tensors and Variables (tf.is_tensor)."""
    return isinstance(x, (Tensor, Variable))


def _dtype_or_none(dtype):
    return None if dtype is None else _kiln.as_dtype(dtype)


_INT32_SCALARS = {}


def _int32_scalar(v):
    """An int32 scalar tensor of a Python int, cached for small values (loop
    bounds repeat; a conversion costs ~0.4 us, a dict lookup ~30 ns)."""
    t = _INT32_SCALARS.get(v)
    if t is None:
        t = _kiln.convert_to_tensor(v, dtype=_kiln.as_dtype("int32"))
        if -1024 <= v <= 65536:
            _INT32_SCALARS[v] = t
    return t


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    """A 1-D tensor [start, start + delta, ...) up to limit (tf.range)."""
    if limit is None:
        start, limit = 0, start
    if dtype is None and type(start) is int and type(limit) is int and type(delta) is int:
        # Plain ints: int32, as below, without the scan; scalars cached (immutable).
        return _raw.Range(_int32_scalar(start), _int32_scalar(limit), _int32_scalar(delta))
    dtype = _dtype_or_none(dtype)
    vals = [start, limit, delta]
    if dtype is None:
        floats = any(isinstance(v, float) or (isinstance(v, (Tensor, Variable)) and
                                              v.dtype.is_floating) for v in vals)
        tdt = next((v.dtype for v in vals if isinstance(v, (Tensor, Variable))), None)
        dtype = tdt if tdt is not None else (_kiln.as_dtype("float32") if floats else
                                            _kiln.as_dtype("int32"))
    vals = [_kiln.convert_to_tensor(v, dtype=dtype) if not isinstance(v, (Tensor, Variable))
            else (v if v.dtype == dtype else _raw.Cast(v, DstT=dtype)) for v in vals]
    return _raw.Range(*vals)


def print(*inputs, output_stream=None, sep=" ", end="\n", summarize=3, name=None):  # noqa: A001
    """Prints tensors and strings when it runs: eagerly now, and on every call of a
    traced function (tf.print). Writes to sys.stderr unless output_stream says."""
    args = []
    for x in inputs:
        if isinstance(x, (str, Tensor, Variable)):
            args.append(x)
        elif isinstance(x, (list, tuple, dict)):
            args.append(_struct_text(x))
        else:
            args.append(_kiln.convert_to_tensor(x))
    _kiln._print(args, output_stream, sep, end, -1 if summarize is None else int(summarize))


def _struct_text(x):
    # Nested Python structures print with tensors formatted inline.
    if isinstance(x, (Tensor, Variable)):
        return x
    return str(x)
