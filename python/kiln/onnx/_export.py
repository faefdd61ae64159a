"""kiln.onnx.export: a traced function (or a Keras model) as an ONNX model file."""
import os
import re

from kiln import _kiln
from kiln.errors import InvalidArgumentError
from kiln.function import ConcreteFunction, Function
from kiln.keras.engine.training import Model
from kiln.keras.layers.base import Layer
from kiln.saved_model import _keras_input_signature


def _keras_concrete(model, input_signature):
    """model(x, training=False) traced over its inputs' specs (batch free)."""
    sig = input_signature if input_signature is not None else _keras_input_signature(model)
    if sig is None:
        raise ValueError(
            f"cannot export {model.name} to ONNX: its input shape is unknown. Give it an "
            "Input (or input_shape), call it once first, or pass input_signature.")
    call = (lambda x: model(x, training=False)) if isinstance(model, Model) else model
    return Function(call, name=model.name, input_signature=sig).get_concrete_function()._cf


def _concrete(fn, input_signature):
    """The C++ concrete function to export for ``fn``."""
    if isinstance(fn, ConcreteFunction):
        return fn._cf
    if isinstance(fn, Layer):
        return _keras_concrete(fn, input_signature)
    if isinstance(fn, Function):
        if input_signature is not None:
            return fn.get_concrete_function(*input_signature)._cf
        if fn.input_signature is not None:
            return fn.get_concrete_function()._cf
        traced = fn._concrete_functions()
        if len(traced) == 1:
            return traced[0]
        raise ValueError(
            f"cannot export {fn._name}: it has {len(traced)} concrete functions; pass "
            "input_signature or one ConcreteFunction (f.get_concrete_function(...))")
    raise TypeError(f"kiln.onnx.export takes a kiln.function, a ConcreteFunction or a Keras "
                    f"model, got {type(fn).__name__}")


# The opset written when none is asked for, unless the graph needs a newer one.
DEFAULT_OPSET = 17
_MAX_OPSET = 28  # the newest kiln writes (kMaxOpset, include/kiln/onnx.h)
_NEEDS = re.compile(r"needs opset (\d+)")


def export(fn, path, input_signature=None, opset=None, output_names=None):
    """Writes ``fn`` (a kiln.function, a ConcreteFunction or a Keras model) as an
    ONNX model at ``path`` (atomically) and returns the path.

    Variables become initializers holding their current values, ``None``
    dimensions symbolic ones, ``kiln.cond``/``kiln.while_loop`` If/Loop nodes.
    Graph inputs are named after the function's arguments, outputs
    ``output_0``... unless ``output_names`` is given. ``opset=None`` writes the
    lowest opset from 17 up that has every op of the graph (BitwiseAnd needs 18,
    string concatenation 20); an explicit ``opset`` is written as asked. Raises
    InvalidArgumentError naming every op that has no ONNX mapping (at an explicit
    opset too low for an op, saying which opset it needs).
    """
    cf = _concrete(fn, input_signature)
    path = os.fspath(path)
    names = list(output_names or [])
    if opset is not None:
        try:
            _kiln._onnx_export(cf, path, int(opset), "", names)
        except InvalidArgumentError as e:
            needed = _needed_opset(e)
            if needed is None or needed <= int(opset):
                raise
            raise InvalidArgumentError(f"{e} (export with opset={needed} or more, or "
                                       "opset=None for the lowest opset that covers the graph)"
                                       ) from None
        return path
    opset = DEFAULT_OPSET
    while True:
        try:
            _kiln._onnx_export(cf, path, opset, "", names)
            return path
        except InvalidArgumentError as e:
            needed = _needed_opset(e)
            if needed is None or needed <= opset or needed > _MAX_OPSET:
                raise
            opset = needed


def _needed_opset(error):
    """The highest "needs opset N" of an export error (None when none says so)."""
    found = [int(n) for n in _NEEDS.findall(str(error))]
    return max(found) if found else None
