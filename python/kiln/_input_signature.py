"""kiln.function's input_signature checks: values converted to (possibly nested) specs,
and the seed release's errors for arguments that do not fit or cannot convert."""
from kiln import _kiln


def convert_to_spec(x, spec):
    """A *args value bound to an input_signature spec: converted to its dtype
    (as the C++ call converts named arguments)."""
    if isinstance(x, (_kiln.Tensor, _kiln.Variable, _kiln.TensorSpec)) or \
            not isinstance(spec, _kiln.TensorSpec):  # a composite spec: kept as given
        return x
    return _kiln.convert_to_tensor(x, dtype=spec.dtype)


class InputSignatureError(TypeError, ValueError):
    """Arguments that do not fit a function's input_signature: the seed guide's
    ValueError ("Python inputs incompatible with input_signature"), also a TypeError
    (what TensorFlow 2.21 raises), so code written for either release catches it."""


def conversion_error(inputs, input_signature, detail):
    """The seed release's error for call arguments an input_signature cannot convert."""
    inputs = ",\n    ".join(str(a) for a in inputs)
    specs = ",\n    ".join(repr(s) for s in input_signature)
    err = InputSignatureError("When input_signature is provided, all inputs to the Python "
                              "function must be convertible to tensors:\n"
                              f"  inputs: (\n    {inputs})\n"
                              f"  input_signature: (\n    {specs}).")
    err.add_note(detail)
    return err


def signature_leaves(spec):
    """The leaves of a (possibly nested: lists, tuples, dicts) input_signature entry."""
    if isinstance(spec, (list, tuple)):
        return [x for s in spec for x in signature_leaves(s)]
    if isinstance(spec, dict):
        return [x for k in sorted(spec) for x in signature_leaves(spec[k])]
    return [spec]


def fit_nested(value, spec, path):
    """value converted to a nested input_signature entry (TensorSpec leaves get tensors
    of their dtype); raises ValueError naming the path where it does not fit."""
    if isinstance(spec, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(spec):
            raise ValueError(f"{path}: expected a {type(spec).__name__} of {len(spec)} "
                             f"items, got {value!r}")
        return type(spec)(fit_nested(v, s, f"{path}[{i}]")
                          for i, (v, s) in enumerate(zip(value, spec)))
    if isinstance(spec, dict):
        if not isinstance(value, dict) or set(value) != set(spec):
            raise ValueError(f"{path}: expected a dict with keys {sorted(spec)}, got {value!r}")
        return {k: fit_nested(value[k], spec[k], f"{path}[{k!r}]") for k in spec}
    if not isinstance(spec, _kiln.TensorSpec):
        why = spec._kiln_mismatch(value) if hasattr(spec, "_kiln_mismatch") else None
        if why:
            raise ValueError(f"{path}: {why}")
        return value
    t = value if isinstance(value, (_kiln.Tensor, _kiln.Variable)) else \
        _kiln.convert_to_tensor(value, dtype=spec.dtype)
    if t.dtype != spec.dtype or not spec.shape.is_compatible_with(t.shape):
        raise ValueError(f"{path}: expected {spec!r}, got a {t.dtype.name} tensor of shape "
                         f"{t.shape}")
    return t


def signature_error(inputs, input_signature, detail):
    """The seed guide's error for a call that does not fit input_signature: the call's
    inputs and the signature, one per line; kiln's own line (which argument, expected
    vs actual) as a note."""
    inputs = ",\n    ".join(str(a) for a in inputs)
    specs = ",\n    ".join(repr(s) for s in input_signature)
    err = InputSignatureError(f"Python inputs incompatible with input_signature:\n"
                              f"  inputs: (\n    {inputs})\n"
                              f"  input_signature: (\n    {specs}).")
    err.add_note(detail)
    return err
