"""Python helpers around kiln-serve, shared by the demo (examples/serve_demo.py), the load
benchmark (bench/serve_load.py) and the tests: start the binary and learn both its ports, and
a small client of TensorFlow Serving's gRPC API (grpcio, with message classes that protoc
generates from tools/serve/proto at first use). TensorFlow users call kiln-serve with
tensorflow-serving-api unchanged (tests/peers/check_serving.py); this client needs neither
TensorFlow nor that package.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading

import grpc
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "proto")


class Started:
    """A running kiln-serve: proc, the REST port, the gRPC port and its stderr lines."""

    def __init__(self, proc, port, grpc_port, lines):
        self.proc, self.port, self.grpc_port, self.lines = proc, port, grpc_port, lines


def start(binary, args, timeout=60, on_line=None):
    """Starts `binary` with `args` on free loopback ports (unless args name them) and waits
    for its "listening" log line. RuntimeError with the log when it does not come up."""
    names = {a.split("=")[0] for a in args}
    ports = [f for f, n in (("--rest_api_port=0", "--rest_api_port"), ("--port=0", "--port"),
                            ("--rest_api_host=127.0.0.1", "--rest_api_host")) if n not in names]
    proc = subprocess.Popen([binary, *args, *ports], stderr=subprocess.PIPE, text=True)
    found, lines = {}, []
    ready = threading.Event()

    def read():
        for line in proc.stderr:
            lines.append(line)
            if on_line:
                on_line(line)
            if '"event":"grpc_listening"' in line:
                found["grpc"] = json.loads(line)["port"]
            if '"event":"listening"' in line:
                found["rest"] = json.loads(line)["port"]
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(timeout) or "rest" not in found:
        proc.kill()
        raise RuntimeError("kiln-serve did not start:\n" + "".join(lines))
    return Started(proc, found["rest"], found.get("grpc"), lines)


_MESSAGES = {}


def messages():
    """The generated modules (tf_types_pb2, serving_pb2), made once per process."""
    if not _MESSAGES:
        out = tempfile.mkdtemp(prefix="kiln-serve-proto-")
        subprocess.run(["protoc", f"-I{PROTO_DIR}", f"--python_out={out}",
                        os.path.join(PROTO_DIR, "tf_types.proto"),
                        os.path.join(PROTO_DIR, "serving.proto")], check=True)
        sys.path.insert(0, out)
        try:
            import serving_pb2  # noqa: E402 (generated just above)
            import tf_types_pb2  # noqa: E402
        finally:
            sys.path.remove(out)
        _MESSAGES.update(tf=tf_types_pb2, serving=serving_pb2)
    return _MESSAGES["tf"], _MESSAGES["serving"]


# NumPy dtype <-> TensorFlow's DataType enum name.
_DTYPES = {"float32": "DT_FLOAT", "float64": "DT_DOUBLE", "int32": "DT_INT32",
           "uint8": "DT_UINT8", "int8": "DT_INT8", "int64": "DT_INT64", "bool": "DT_BOOL",
           "float16": "DT_HALF", "complex64": "DT_COMPLEX64", "complex128": "DT_COMPLEX128"}


def tensor_proto(value):
    """A TensorProto of an array (strings and bytes as DT_STRING), as tf.make_tensor_proto
    would send it."""
    tf_types, _ = messages()
    a = np.asarray(value)
    p = tf_types.TensorProto()
    p.tensor_shape.dim.extend(tf_types.TensorShapeProto.Dim(size=d) for d in a.shape)
    if a.dtype.kind in "USO":
        p.dtype = tf_types.DT_STRING
        p.string_val.extend(v.encode() if isinstance(v, str) else bytes(v) for v in a.ravel())
        return p
    p.dtype = tf_types.DataType.Value(_DTYPES[a.dtype.name])
    p.tensor_content = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()
    return p


def to_numpy(p):
    """The array a TensorProto holds (tensor_content or the typed value lists)."""
    tf_types, _ = messages()
    shape = [d.size for d in p.tensor_shape.dim]
    name = tf_types.DataType.Name(p.dtype)
    if name == "DT_STRING":
        return np.array(list(p.string_val), dtype=object).reshape(shape)
    dtype = np.dtype({v: k for k, v in _DTYPES.items()}[name])
    if p.tensor_content:
        return np.frombuffer(p.tensor_content, dtype.newbyteorder("<")).astype(dtype).reshape(shape)
    field = {"DT_FLOAT": "float_val", "DT_DOUBLE": "double_val", "DT_INT64": "int64_val",
             "DT_BOOL": "bool_val", "DT_HALF": "half_val"}.get(name, "int_val")
    vals = list(getattr(p, field))
    n = int(np.prod(shape))
    vals = (vals + vals[-1:] * n)[:n] if vals else [0] * n
    if name == "DT_HALF":
        return np.array(vals, np.uint16).view(np.float16).reshape(shape)
    return np.array(vals, dtype).reshape(shape)


class GrpcClient:
    """TensorFlow Serving's PredictionService and ModelService on 127.0.0.1:port. Failures
    raise grpc.RpcError (its code() and details() are TensorFlow Serving's)."""

    def __init__(self, port, host="127.0.0.1"):
        self.channel = grpc.insecure_channel(f"{host}:{port}")
        _, s = messages()
        self.serving = s

        def method(service, name, req, resp):
            return self.channel.unary_unary(f"/tensorflow.serving.{service}/{name}",
                                            request_serializer=req.SerializeToString,
                                            response_deserializer=resp.FromString)

        self._predict = method("PredictionService", "Predict", s.PredictRequest, s.PredictResponse)
        self._metadata = method("PredictionService", "GetModelMetadata",
                                s.GetModelMetadataRequest, s.GetModelMetadataResponse)
        self._status = method("ModelService", "GetModelStatus", s.GetModelStatusRequest,
                              s.GetModelStatusResponse)

    def spec(self, model, version=None, label="", signature=""):
        m = self.serving.ModelSpec(name=model, signature_name=signature)
        if version is not None:
            m.version.value = version
        if label:
            m.version_label = label
        return m

    def predict(self, model, inputs, signature="", version=None, label="", output_filter=(),
                timeout=30, full=False):
        """{output name: array}; with full=True the PredictResponse itself."""
        req = self.serving.PredictRequest(model_spec=self.spec(model, version, label, signature),
                                          output_filter=list(output_filter))
        for k, v in inputs.items():
            req.inputs[k].CopyFrom(v if hasattr(v, "tensor_content") else tensor_proto(v))
        resp = self._predict(req, timeout=timeout)
        return resp if full else {k: to_numpy(v) for k, v in resp.outputs.items()}

    def metadata(self, model, version=None, fields=("signature_def",), timeout=30):
        """(version, SignatureDefMap) of the model."""
        resp = self._metadata(self.serving.GetModelMetadataRequest(
            model_spec=self.spec(model, version), metadata_field=list(fields)), timeout=timeout)
        any_ = resp.metadata["signature_def"]
        assert any_.type_url == "type.googleapis.com/tensorflow.serving.SignatureDefMap"
        return resp.model_spec.version.value, self.serving.SignatureDefMap.FromString(any_.value)

    def status(self, model, version=None, timeout=30):
        """[(version, state name, error code, error message)] of the model's versions."""
        resp = self._status(self.serving.GetModelStatusRequest(
            model_spec=self.spec(model, version)), timeout=timeout)
        state = self.serving.ModelVersionStatus.State.Name
        return [(s.version, state(s.state), s.status.error_code, s.status.error_message)
                for s in resp.model_version_status]

    def close(self):
        self.channel.close()
