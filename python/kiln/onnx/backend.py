"""An ONNX backend (``onnx.backend.base.Backend``) running models through kiln, for
ONNX's own backend test suite and for code written against that interface.

Imports ``onnx``, which kiln itself does not need: import this module explicitly.
"""
import numpy as np
from onnx.backend.base import Backend, BackendRep

from kiln.onnx._load import load


class KilnRep(BackendRep):
    """A prepared model: ``run(inputs)`` returns the outputs as NumPy arrays."""

    def __init__(self, function):
        self.function = function

    def run(self, inputs, **kwargs):
        if isinstance(inputs, dict):
            outs = self.function(**inputs)
        else:
            if not isinstance(inputs, (list, tuple)):
                inputs = [inputs]
            outs = self.function(*inputs)
        return [np.asarray(o.numpy()) for o in outs]


class KilnBackend(Backend):
    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        super().prepare(model, device, **kwargs)
        return KilnRep(load(model.SerializeToString(),
                            jit_compile=kwargs.get("jit_compile", False)))

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device):
        return device == "CPU"


prepare = KilnBackend.prepare
run_model = KilnBackend.run_model
supports_device = KilnBackend.supports_device
