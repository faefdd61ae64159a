"""kiln.onnx.load: an ONNX model as a kiln concrete function."""
import os

import numpy as np

from kiln import _kiln
from kiln.function import ConcreteFunction


class OnnxFunction(ConcreteFunction):
    """A loaded ONNX model: a ConcreteFunction over the graph's inputs (initializers
    excluded), returning a list with one tensor per graph output.

    Call it with tensors or NumPy arrays, positionally or by the model's input names
    (``f(x)``, ``f(**{"input.1": x})``); ``graph`` and ``optimized_graph`` list what runs.
    A model that feeds a graph input into a shape, axes, pads or sizes input
    (``value_inputs``) is traced at its first call and again for each new value of
    those inputs, as a kiln.function retraces for new Python values.
    """

    def __init__(self, model):
        self._model = model
        super().__init__(model.function, None)
        self.input_names = list(model.input_names)
        self.output_names = list(model.output_names)
        self.value_inputs = list(model.value_inputs)
        self.ir_version = model.ir_version
        self.opset = model.opset
        self.producer_name = model.producer_name

    def __call__(self, *args, **kwargs):
        values = self._bind_inputs(args, kwargs)
        if self.value_inputs:  # graph and optimized_graph show the latest trace
            self._cf = self._model.concrete_function(values)
        return self._model(values)

    def _bind_inputs(self, args, kwargs):
        names = self.input_names
        if len(args) > len(names):
            raise TypeError(f"{self.name}() takes {len(names)} inputs, got {len(args)}")
        values = list(args) + [None] * (len(names) - len(args))
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError(f"{self.name}() got an unexpected input '{k}' "
                                f"(inputs: {', '.join(names)})")
            i = names.index(k)
            if values[i] is not None:
                raise TypeError(f"{self.name}() got multiple values for input '{k}'")
            values[i] = v
        for name, v in zip(names, values):
            if v is None:
                raise TypeError(f"{self.name}() missing input '{name}'")
        return [v if isinstance(v, _kiln.Tensor) else _kiln.convert_to_tensor(np.asarray(v))
                for v in values]

    @property
    def name(self):
        return self._cf.name if self._cf is not None else "onnx_model"

    def run(self, feeds):
        """onnxruntime's InferenceSession.run(None, feeds): a dict by input name in,
        a list of NumPy arrays out."""
        return [t.numpy() for t in self(**feeds)]


def load(path_or_bytes, jit_compile=False):
    """Loads an ONNX model (a path or the model's bytes). Unsupported ops are one
    InvalidArgumentError listing them all; malformed files are InvalidArgumentError."""
    if isinstance(path_or_bytes, (bytes, bytearray)):
        return OnnxFunction(_kiln._onnx_load_bytes(bytes(path_or_bytes), bool(jit_compile)))
    return OnnxFunction(_kiln._onnx_load(os.fspath(path_or_bytes), bool(jit_compile)))


def supported_ops():
    """The ONNX op types (default domain) kiln can import, sorted."""
    return list(_kiln._onnx_supported_ops())
