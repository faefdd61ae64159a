"""kiln's ONNX export of a model workload, shared by the ONNX engines' sides
(onnxruntime, OpenVINO) of bench/peers/model_pair.py, and its FLOP count.

The model is built with kiln.keras from model_common (the same weights every side
uses), exported once per process with kiln.onnx.export, and the file is what each
engine loads: the engines run exactly kiln's graph, as a user who exports for them would.
"""
import functools
import os
import sys
import tempfile

import numpy as np

import model_common as mc

_DIR = tempfile.mkdtemp(prefix="kiln-onnx-peers-")


def kiln():
    """kiln as model_pair.py imported it (eager_pair.import_kiln)."""
    if "kiln" not in sys.modules:
        raise RuntimeError("kiln is not imported (run through bench/peers/model_pair.py)")
    return sys.modules["kiln"]


def model_input(name):
    if name in ("lstm2", "gru2"):
        return mc.lstm_input()
    if name == "transformer4":
        return mc.transformer_input()
    return mc.image_input(name)


@functools.lru_cache(maxsize=None)
def export(name):
    """The path of kiln's ONNX export of workload `name`."""
    tf = kiln()
    if name == "lstm2":
        model = mc.build_lstm2(tf.keras)
    elif name == "gru2":
        model = mc.build_gru2(tf.keras)
    elif name == "transformer4":
        model = mc.build_transformer4(tf.keras)
    else:
        model = mc.build_app(tf.keras, name)
    path = os.path.join(_DIR, f"{name}.onnx")
    tf.onnx.export(model, path)
    return path


def _dims(value_info):
    return [d.dim_value if d.HasField("dim_value") else 0
            for d in value_info.type.tensor_type.shape.dim]


def _conv_flops(out, w):
    # out [N, Cout, spatial...]; w [Cout, Cin/group, k...]: one multiply-add per tap.
    return 2 * int(np.prod(out)) * int(np.prod(w[1:]))


def _matmul_flops(a, b):
    batch = int(np.prod(np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2]))))
    return 2 * batch * (a[-2] if len(a) > 1 else 1) * b[-1] * a[-1]


@functools.lru_cache(maxsize=None)
def flops(name):
    """count_flops of kiln's export of `name` at its input's shape; None when the
    `onnx` package is missing."""
    try:
        import onnx  # noqa: F401
    except ImportError:
        return None
    return count_flops(export(name), model_input(name).shape)


def count_flops(path, shape):
    """2 x the multiply-adds of the Conv, ConvTranspose, MatMul, Gemm and LSTM nodes of
    the ONNX model at `path` with its first input of `shape` (elementwise work and
    subgraphs such as Loop bodies are not counted); None when it counts nothing."""
    import onnx
    from onnx import shape_inference
    model = onnx.load(path)
    for d, n in zip(model.graph.input[0].type.tensor_type.shape.dim, shape):
        d.Clear()
        d.dim_value = n
    model = shape_inference.infer_shapes(model)
    shapes = {v.name: _dims(v) for v in list(model.graph.value_info) + list(model.graph.input)
              + list(model.graph.output)}
    shapes.update({t.name: list(t.dims) for t in model.graph.initializer})
    total = 0
    for node in model.graph.node:
        ins = [shapes.get(i) for i in node.input]
        outs = [shapes.get(o) for o in node.output]
        if node.op_type in ("Conv", "ConvTranspose") and outs[0] and ins[1]:
            total += _conv_flops(outs[0], ins[1])
        elif node.op_type == "MatMul" and ins[0] and ins[1]:
            total += _matmul_flops(ins[0], ins[1])
        elif node.op_type == "Gemm" and ins[0] and ins[1]:
            t = {a.name: a.i for a in node.attribute if a.name in ("transA", "transB")}
            a = ins[0][::-1] if t.get("transA") else ins[0]
            b = ins[1][::-1] if t.get("transB") else ins[1]
            total += _matmul_flops(a, b)
        elif node.op_type == "LSTM" and ins[0] and ins[1]:
            t, b, i = ins[0]
            h = ins[1][1] // 4
            total += 2 * t * b * 4 * h * (i + h)
    return total or None
