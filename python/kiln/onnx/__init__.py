"""ONNX export and import (docs/ONNX.md).

``kiln.onnx.export(fn, path, input_signature=None, opset=None)`` writes a kiln.function, a
ConcreteFunction or a Keras model as an ONNX model; ``kiln.onnx.load(path)`` reads one
into a callable that runs through kiln's optimizer and executor.
"""
from kiln.onnx._export import export
from kiln.onnx._load import OnnxFunction, load, supported_ops

__all__ = ["OnnxFunction", "export", "load", "supported_ops"]
