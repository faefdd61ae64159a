"""kiln-serve on the exported digits classifier, for `make demo`: starts the server
(build/kiln-serve, no Python inside), asks for the model's status and signature, sends
predict requests in TensorFlow Serving's REST row and column formats and over its gRPC
API, compares the answers with what Python computed at export, times small requests on
both, then stops it with SIGTERM.

    .venv/bin/python examples/serve_demo.py EXPORT_DIR [--bin build/kiln-serve]

EXPORT_DIR as examples/export_model.py writes it (digits/, digits_input.npy,
digits_expected.npy). The client side: the standard library and NumPy for REST, grpcio
for gRPC (tools/serve/serve_client.py; TensorFlow users would use tensorflow-serving-api).
"""
import argparse
import http.client
import json
import os
import shutil
import signal
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BIN = os.path.join(HERE, "..", "build", "kiln-serve")
sys.path.insert(0, os.path.join(HERE, "..", "tools", "serve"))
import serve_client  # noqa: E402 (tools/serve/serve_client.py: start, the gRPC client)


def call(conn, method, path, body=None):
    conn.request(method, path, body=None if body is None else json.dumps(body),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    return r.status, json.loads(r.read())


def latency(conn, row, n=300):
    """p50 and p99 in microseconds of n sequential 1-row predicts on one connection."""
    body = {"instances": [row]}
    times = []
    for _ in range(n + 20):
        t = time.perf_counter()
        status, _ = call(conn, "POST", "/v1/models/digits:predict", body)
        times.append((time.perf_counter() - t) * 1e6)
        assert status == 200
    times = sorted(times[20:])
    return times[len(times) // 2], times[int(len(times) * 0.99)]


def grpc_demo(port, x, expected):
    """The same model over TensorFlow Serving's gRPC API."""
    c = serve_client.GrpcClient(port)
    print(f"gRPC on 127.0.0.1:{port}: status {c.status('digits')[0][1]}, signatures "
          f"{sorted(c.metadata('digits')[1].signature_def)}")
    got = c.predict("digits", {"features": x})["logits"]
    print(f"gRPC Predict, {len(x)} digits: classes {got.argmax(1)[:4].tolist()}..., max |diff| "
          f"{np.abs(got - expected).max():.2g}")
    one = {"features": serve_client.tensor_proto(x[:1])}
    times = []
    for _ in range(320):
        t = time.perf_counter()
        c.predict("digits", one)
        times.append((time.perf_counter() - t) * 1e6)
    times = sorted(times[20:])
    print(f"1-row predict round trip (gRPC, one channel): p50 {times[len(times) // 2]:.0f} us, "
          f"p99 {times[int(len(times) * 0.99)]:.0f} us")
    c.close()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("export_dir")
    p.add_argument("--bin", default=DEFAULT_BIN)
    args = p.parse_args(argv)
    x = np.load(os.path.join(args.export_dir, "digits_input.npy"))
    expected = np.load(os.path.join(args.export_dir, "digits_expected.npy"))
    base = tempfile.mkdtemp(prefix="kiln-serve-demo-")
    try:
        shutil.copytree(os.path.join(args.export_dir, "digits"), os.path.join(base, "1"))
        server = serve_client.start(args.bin, ["--model_name=digits",
                                               f"--model_base_path={base}"])
        proc, port = server.proc, server.port
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            print(f"kiln-serve on 127.0.0.1:{port}, model digits version 1 ({args.bin})")
            _, status = call(conn, "GET", "/v1/models/digits")
            print("status:", json.dumps(status["model_version_status"][0]["state"]))
            _, meta = call(conn, "GET", "/v1/models/digits/metadata")
            sig = meta["metadata"]["signature_def"]["signature_def"]["serving_default"]
            print("serving_default:", {k: v["dtype"] for k, v in sig["inputs"].items()}, "->",
                  {k: v["dtype"] for k, v in sig["outputs"].items()})
            _, rows = call(conn, "POST", "/v1/models/digits:predict",
                           {"instances": x[:4].tolist()})
            got = np.array(rows["predictions"], np.float32)
            print(f"row format, 4 digits: classes {got.argmax(1).tolist()} (expected "
                  f"{expected[:4].argmax(1).tolist()}), max |diff| "
                  f"{np.abs(got - expected[:4]).max():.2g}")
            _, cols = call(conn, "POST", "/v1/models/digits:predict",
                           {"inputs": {"features": x.tolist()}})
            got = np.array(cols["outputs"], np.float32)
            print(f"column format, {len(x)} digits: max |diff| {np.abs(got - expected).max():.2g}")
            p50, p99 = latency(conn, x[0].tolist())
            print(f"1-row predict round trip (REST + JSON, one keep-alive connection): "
                  f"p50 {p50:.0f} us, p99 {p99:.0f} us")
            conn.close()
            grpc_demo(server.grpc_port, x, expected)
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(30)
        print("SIGTERM: kiln-serve exited with", code)
        return 0 if code == 0 else 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
