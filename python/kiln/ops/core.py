"""The first ops: enough for functions and control flow (expanded per family)."""
import collections
import pprint

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
    traced function (tf.print). Writes to sys.stderr unless output_stream says.
    Nested lists, tuples and dicts print as TensorFlow prints them (pprint's text
    with each tensor formatted in place, dict keys sorted)."""
    summarize = -1 if summarize is None else int(summarize)
    if len(inputs) == 1 and _string_scalar(inputs[0]):  # printed as it is
        x = inputs[0]
        _kiln._print([x if x.is_symbolic else x.numpy().decode("utf-8", "replace")],
                     output_stream, "", end, summarize)
        return
    template, placeholder, tensors = _print_template(inputs, sep)
    if any(t.dtype.name == "string" for t in tensors):
        # TensorFlow formats strings inside the text quoted ("a"): StringFormat's form.
        # Traced, the Print op writes the formatted string scalar as it is.
        text = _raw.StringFormat(tensors, template=template, placeholder=placeholder,
                                 summarize=summarize)
        pieces = [text if text.is_symbolic else text.numpy().decode("utf-8", "replace")]
    else:
        parts = template.split(placeholder)
        pieces = [parts[0]]
        for t, text in zip(tensors, parts[1:]):
            pieces += [t, text]
    _kiln._print(pieces, output_stream, "", end, summarize)


def _string_scalar(x):
    return isinstance(x, Tensor) and x.dtype.name == "string" and x.shape.rank == 0


def _print_template(inputs, sep):
    """TensorFlow's print template: each input's pprint text with "{}" (or a
    longer placeholder the text does not contain) for each tensor, in order."""
    free = " ".join(pprint.pformat(_print_structure(x, "", [])) for x in inputs)
    placeholder, digit = "{}", 0
    while placeholder in free:
        placeholder += str(digit % 10)
        digit += 1
    tensors, templates = [], []
    for x in inputs:
        templates.append(x if isinstance(x, str) else
                         pprint.pformat(_print_structure(x, placeholder, tensors)))
    template = sep.join(templates).replace(f"'{placeholder}'", placeholder)
    return template, placeholder, [t.read_value() if isinstance(t, Variable) else t
                                   for t in tensors]


def _same_mapping(x, items):
    # A mapping of x's type (pprint sorts a plain dict's keys, not an OrderedDict's).
    if type(x) is dict:
        return dict(items)
    if isinstance(x, collections.defaultdict):
        return type(x)(x.default_factory, items)
    try:
        return type(x)(items)
    except TypeError:
        return dict(items)


def _print_structure(x, placeholder, tensors):
    """x with each tensor replaced by the placeholder (and appended to tensors)
    in TensorFlow's flatten order (dict keys sorted)."""
    if isinstance(x, (Tensor, Variable)):
        tensors.append(x)
        return placeholder
    if isinstance(x, tuple) and type(x).__name__ == "SparseTensor" and hasattr(x, "_fields"):
        tensors.extend([x.indices, x.values, x.dense_shape])
        return f"SparseTensor(indices={placeholder}, values={placeholder}, shape={placeholder})"
    if isinstance(x, dict):
        done = {k: _print_structure(x[k], placeholder, tensors) for k in sorted(x)}
        return _same_mapping(x, [(k, done[k]) for k in x])
    if isinstance(x, tuple) and hasattr(type(x), "_fields") and \
            not hasattr(type(x), "_components"):
        return type(x)(*[_print_structure(v, placeholder, tensors) for v in x])
    if isinstance(x, (list, tuple)) and not hasattr(type(x), "_components"):
        return type(x)(_print_structure(v, placeholder, tensors) for v in x)
    return x
