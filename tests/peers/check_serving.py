"""kiln-serve against TensorFlow Serving's own Python client (tensorflow-serving-api, in
.venv-peers): (1) kiln-serve's copies of the messages and services (tools/serve/proto) have
the published field numbers, names, types and method names, checked against the package's
descriptors; (2) the real client, unchanged, gets kiln's answers: Predict with
tf.make_tensor_proto inputs and tf.make_ndarray outputs (tensor_content and typed value
lists, strings), GetModelMetadata unpacked as SignatureDefMap, GetModelStatus, and
TensorFlow Serving's status codes for a missing model, version, input and signature.

    .venv-peers/bin/python tests/peers/check_serving.py EXPORT_DIR [--bin build/kiln-serve]

EXPORT_DIR as examples/export_model.py writes it (digits/, digits_input.npy,
digits_expected.npy). Prints each problem; exit status 1 when there is one.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import grpc
import numpy as np
import tensorflow as tf
from google.protobuf import descriptor_pb2, descriptor_pool
from tensorflow_serving.apis import (get_model_metadata_pb2, get_model_status_pb2,
                                     model_service_pb2, model_service_pb2_grpc, predict_pb2,
                                     prediction_service_pb2, prediction_service_pb2_grpc)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROTO_DIR = os.path.join(ROOT, "tools", "serve", "proto")
sys.path.insert(0, os.path.join(ROOT, "tools", "serve"))
import serve_client  # noqa: E402 (start(): kiln-serve's ports from its log)

PROBLEMS = []

# kiln-serve's message names -> the published ones (our copies of the well-known wrappers
# live in tensorflow.serving: kiln links protobuf's lite runtime, which lacks them).
RENAMED = {"tensorflow.serving.Int64Value": "google.protobuf.Int64Value",
           "tensorflow.serving.Any": "google.protobuf.Any"}
# Fields whose type differs on purpose but not on the wire (an enum read as int32).
WIRE_SAME = {("tensorflow.serving.StatusProto", "error_code")}


def problem(msg):
    PROBLEMS.append(msg)
    print("PROBLEM:", msg)


def our_descriptors():
    """{full name: DescriptorProto} and {service: ServiceDescriptorProto} of our protos."""
    out = os.path.join(tempfile.mkdtemp(), "serve.pb")
    subprocess.run(["protoc", f"-I{PROTO_DIR}", f"--descriptor_set_out={out}",
                    "--include_imports", os.path.join(PROTO_DIR, "serving.proto")], check=True)
    fds = descriptor_pb2.FileDescriptorSet.FromString(open(out, "rb").read())
    messages, services = {}, {}

    def walk(prefix, msgs):
        for m in msgs:
            messages[f"{prefix}.{m.name}"] = m
            walk(f"{prefix}.{m.name}", m.nested_type)

    for f in fds.file:
        walk(f.package, f.message_type)
        for s in f.service:
            services[f"{f.package}.{s.name}"] = s
    return messages, services


# The services' descriptors (the _grpc modules do not import them).
SERVICE_MODULES = (prediction_service_pb2, model_service_pb2)


def published(full_name):
    """The published message, from the descriptors tensorflow-serving-api registered."""
    return descriptor_pool.Default().FindMessageTypeByName(full_name)


def check_fields():
    """Every field of ours exists in the published message with the same number, name,
    type and cardinality."""
    messages, services = our_descriptors()
    checked = 0
    for name, ours in messages.items():
        if ours.options.map_entry:
            continue
        theirs = published(RENAMED.get(name, name))
        by_number = {f.number: f for f in theirs.fields}
        for f in ours.field:
            t = by_number.get(f.number)
            where = f"{name}.{f.name} = {f.number}"
            if t is None:
                problem(f"{where}: no such field number in {theirs.full_name}")
                continue
            if t.name != f.name:
                problem(f"{where}: published as {t.name}")
            repeated = f.label == descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
            their_repeated = (t.is_repeated if hasattr(t, "is_repeated")
                              else t.label == t.LABEL_REPEATED)
            if repeated != their_repeated:
                problem(f"{where}: repeated differs")
            if (name, f.name) in WIRE_SAME:
                ok = t.type == t.TYPE_ENUM and f.type == f.TYPE_INT32
            elif f.type == f.TYPE_MESSAGE:
                ours_type = f.type_name.lstrip(".")
                if ours_type.endswith("Entry"):  # a map: compare key and value types
                    entry = messages[ours_type]
                    ok = t.message_type.GetOptions().map_entry and all(
                        ef.type == t.message_type.fields_by_name[ef.name].type
                        for ef in entry.field)
                else:
                    ok = t.message_type is not None and t.message_type.full_name == RENAMED.get(
                        ours_type, ours_type)
            elif f.type == f.TYPE_ENUM:
                ok = t.enum_type is not None and t.enum_type.full_name == f.type_name.lstrip(".")
            else:
                ok = t.type == f.type
            if not ok:
                problem(f"{where}: type differs from {theirs.full_name}.{t.name}")
            checked += 1
    for name, ours in services.items():
        theirs = descriptor_pool.Default().FindServiceByName(name)
        for m in ours.method:
            t = theirs.methods_by_name.get(m.name)
            if t is None:
                problem(f"{name}/{m.name}: not a published method")
            elif (t.input_type.full_name, t.output_type.full_name) != (
                    m.input_type.lstrip("."), m.output_type.lstrip(".")):
                problem(f"{name}/{m.name}: request or response type differs")
    print(f"fields: {checked} fields of {len(messages)} messages, {len(services)} services "
          "checked against tensorflow-serving-api's descriptors")


def check_client(port, x, expected):
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    req = predict_pb2.PredictRequest()
    req.model_spec.name = "digits"
    req.model_spec.signature_name = "serving_default"
    req.inputs["features"].CopyFrom(tf.make_tensor_proto(x))
    resp = stub.Predict(req, 30.0)
    got = tf.make_ndarray(resp.outputs["logits"])
    if got.shape != expected.shape or np.abs(got - expected).max() > 1e-5:
        problem(f"Predict: logits differ from the export's (max |diff| "
                f"{np.abs(got - expected).max()})")
    if (resp.model_spec.name, resp.model_spec.version.value) != ("digits", 1):
        problem(f"Predict: model_spec {resp.model_spec}")
    # Typed values (float_val) with one value repeated, as TensorFlow's C++ reads them.
    req.inputs["features"].CopyFrom(tf.make_tensor_proto(0.5, shape=[2, x.shape[1]]))
    got = tf.make_ndarray(stub.Predict(req, 30.0).outputs["logits"])
    if got.shape != (2, expected.shape[1]) or not np.allclose(got[0], got[1]):
        problem(f"Predict with float_val: {got.shape}")
    meta_req = get_model_metadata_pb2.GetModelMetadataRequest()
    meta_req.model_spec.name = "digits"
    meta_req.metadata_field.append("signature_def")
    meta = stub.GetModelMetadata(meta_req, 30.0)
    sigs = get_model_metadata_pb2.SignatureDefMap()
    if not meta.metadata["signature_def"].Unpack(sigs):
        problem("GetModelMetadata: signature_def does not unpack as SignatureDefMap")
    sig = sigs.signature_def["serving_default"]
    if (sig.method_name != "tensorflow/serving/predict" or
            sig.inputs["features"].dtype != tf.float32.as_datatype_enum or
            [d.size for d in sig.inputs["features"].tensor_shape.dim] != [-1, x.shape[1]]):
        problem(f"GetModelMetadata: serving_default is {sig}")
    status_stub = model_service_pb2_grpc.ModelServiceStub(channel)
    sreq = get_model_status_pb2.GetModelStatusRequest()
    sreq.model_spec.name = "digits"
    st = status_stub.GetModelStatus(sreq, 30.0).model_version_status
    if [(s.version, get_model_status_pb2.ModelVersionStatus.State.Name(s.state),
         s.status.error_code) for s in st] != [(1, "AVAILABLE", 0)]:
        problem(f"GetModelStatus: {st}")
    for change, code in ((lambda r: setattr(r.model_spec, "name", "nope"), "NOT_FOUND"),
                         (lambda r: r.model_spec.version.__setattr__("value", 5), "NOT_FOUND"),
                         (lambda r: setattr(r.model_spec, "signature_name", "x"),
                          "INVALID_ARGUMENT"),
                         (lambda r: r.inputs["features"].CopyFrom(
                             tf.make_tensor_proto(np.ones([2, 3], np.int64))),
                          "INVALID_ARGUMENT")):
        bad = predict_pb2.PredictRequest()
        bad.CopyFrom(req)
        change(bad)
        try:
            stub.Predict(bad, 30.0)
            problem(f"Predict {bad.model_spec}: no error, {code} expected")
        except grpc.RpcError as e:
            if e.code().name != code:
                problem(f"Predict: {e.code().name} ({e.details()}), {code} expected")
    channel.close()
    print("client: Predict, GetModelMetadata, GetModelStatus and 4 error cases through "
          "tensorflow-serving-api")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("export_dir")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "kiln-serve"))
    a = ap.parse_args()
    check_fields()
    x = np.load(os.path.join(a.export_dir, "digits_input.npy"))
    expected = np.load(os.path.join(a.export_dir, "digits_expected.npy"))
    base = tempfile.mkdtemp(prefix="kiln-serve-peers-")
    shutil.copytree(os.path.join(a.export_dir, "digits"), os.path.join(base, "1"))
    server = serve_client.start(a.bin, ["--model_name=digits", f"--model_base_path={base}"])
    try:
        check_client(server.grpc_port, x, expected)
    finally:
        server.proc.send_signal(signal.SIGTERM)
        if server.proc.wait(30) != 0:
            problem(f"kiln-serve exited with {server.proc.returncode}")
        shutil.rmtree(base, ignore_errors=True)
    print(f"check_serving: {len(PROBLEMS)} problems")
    return 1 if PROBLEMS else 0


if __name__ == "__main__":
    sys.exit(main())
