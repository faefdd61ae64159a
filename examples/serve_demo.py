"""kiln-serve on the exported digits classifier, for `make demo`: starts the server
(build/kiln-serve, no Python inside), asks for the model's status and signature, sends
predict requests in TensorFlow Serving's row and column formats, compares the answers
with what Python computed at export, times small requests, then stops it with SIGTERM.

    .venv/bin/python examples/serve_demo.py EXPORT_DIR [--bin build/kiln-serve]

EXPORT_DIR as examples/export_model.py writes it (digits/, digits_input.npy,
digits_expected.npy). Only the standard library and NumPy on the client side.
"""
import argparse
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BIN = os.path.join(HERE, "..", "build", "kiln-serve")


def start(binary, base):
    """(process, port) of kiln-serve serving `base` as model "digits" on loopback."""
    proc = subprocess.Popen([binary, "--model_name=digits", f"--model_base_path={base}",
                             "--rest_api_port=0", "--rest_api_host=127.0.0.1"],
                            stderr=subprocess.PIPE, text=True)
    found, lines = {}, []
    ready = threading.Event()

    def read():
        for line in proc.stderr:
            lines.append(line)
            if '"event":"listening"' in line:
                found["port"] = json.loads(line)["port"]
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(60) or "port" not in found:
        proc.kill()
        raise RuntimeError("kiln-serve did not start:\n" + "".join(lines))
    return proc, found["port"]


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
        proc, port = start(args.bin, base)
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
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(30)
        print("SIGTERM: kiln-serve exited with", code)
        return 0 if code == 0 else 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
