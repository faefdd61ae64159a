"""kiln-serve under load (issue 46): `wrk` (Debian's) against build/kiln-serve on loopback,
serving a digits-sized MLP and EfficientNetV2-S (random weights) exported by kiln.

    .venv/bin/python bench/serve_load.py [--seconds 20] [--json OUT]

For each (model, connections): wrk's requests/s, latency p50/p90/p99 and the count of
failed requests (socket errors and non-2xx answers, which must be 0), beside the same
signature called in-process through kiln (p50 of sequential calls), so the difference at
one connection is the server's overhead (HTTP, JSON both ways, queueing); then 8 connections
again with --enable_batching (max_batch_size 8, batch_timeout_micros 50000); and rows
"grpc": one gRPC channel from Python, sequential Predicts (TensorProto both ways). wrk and
the Python client run on the same 2 cores as the server: the numbers include their cost.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

import kiln as tf

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.join(HERE, "..", "build", "kiln-serve")
sys.path.insert(0, os.path.join(HERE, "..", "tools", "serve"))
import serve_client  # noqa: E402 (tools/serve/serve_client.py)


def signature(model, shape):
    @tf.function(input_signature=[tf.TensorSpec([None, *shape], tf.float32, name="x")])
    def serve(x):
        return {"y": model(x, training=False)}
    return serve


def export(tmp):
    """{model: (base path, one request body, in-process callable, its input)}."""
    rng = np.random.default_rng(0)
    mlp = tf.keras.Sequential([tf.keras.Input((64,)), tf.keras.layers.Dense(64, "relu"),
                               tf.keras.layers.Dense(10)])
    eff = tf.keras.applications.EfficientNetV2S(weights=None, input_shape=(224, 224, 3))
    out = {}
    for name, model, shape in (("mlp", mlp, [64]), ("effnet", eff, [224, 224, 3])):
        serve = signature(model, shape)
        base = os.path.join(tmp, name)
        tf.saved_model.save(model, os.path.join(base, "1"), signatures={"serving_default": serve})
        x = rng.random([1, *shape], np.float32)
        body = json.dumps({"instances": x.tolist()})
        out[name] = (base, body, serve, tf.constant(x))
    return out


def in_process_p50(fn, x, n=200):
    fn(x)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn(x)["y"].numpy()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


BATCHING = """max_batch_size { value: 8 }
batch_timeout_micros { value: 50000 }
num_batch_threads { value: 1 }
"""


def start(binary, models, tmp, batching=False):
    cfg = os.path.join(tmp, "models.config")
    with open(cfg, "w") as f:
        f.write("model_config_list {\n" + "".join(
            f'  config {{ name: "{n}" base_path: "{b}" }}\n' for n, (b, *_) in models.items())
            + "}\n")
    flags = []
    if batching:
        params = os.path.join(tmp, "batching.config")
        with open(params, "w") as f:
            f.write(BATCHING)
        flags = ["--enable_batching=true", f"--batching_parameters_file={params}"]
    try:
        return serve_client.start(binary, [f"--model_config_file={cfg}", *flags], timeout=120)
    except RuntimeError as e:
        sys.exit(str(e))


def grpc_loop(port, model, x, seconds):
    """One gRPC channel, sequential Predicts for `seconds` (a Python client: its own cost is
    in the numbers): requests/s, p50/p90/p99 and failures, as wrk() reports them."""
    c = serve_client.GrpcClient(port)
    inputs = {"x": serve_client.tensor_proto(np.asarray(x))}
    times, failed, end = [], 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        try:
            c.predict(model, inputs, full=True)
        except serve_client.grpc.RpcError:
            failed += 1
        times.append(time.perf_counter() - t)
    c.close()
    times.sort()
    q = lambda f: times[min(len(times) - 1, int(len(times) * f))]  # noqa: E731
    return {"requests": len(times), "rps": len(times) / seconds, "p50_s": q(0.5),
            "p90_s": q(0.9), "p99_s": q(0.99), "failed": failed}


def wrk(port, model, body, connections, seconds, tmp):
    script = os.path.join(tmp, f"{model}.lua")
    with open(script, "w") as f:
        f.write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
                f"wrk.body = {json.dumps(body)}\n")
    r = subprocess.run(["wrk", f"-t{min(2, connections)}", f"-c{connections}", f"-d{seconds}s",
                        "--latency", "-s", script, f"http://127.0.0.1:{port}/v1/models/{model}:predict"],
                       capture_output=True, text=True, timeout=seconds + 60)
    text = r.stdout

    def lat(q):
        m = re.search(rf"^\s+{q}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
        return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)] if m else None

    done = re.search(r"(\d+) requests in", text)
    errors = sum(int(x) for x in re.findall(r"(?:connect|read|write|timeout) (\d+)", text))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    return {"requests": int(done.group(1)) if done else 0,
            "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)),
            "p50_s": lat(50), "p90_s": lat(90), "p99_s": lat(99),
            "failed": errors + (int(non2xx.group(1)) if non2xx else 0)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--json")
    ap.add_argument("--bin", default=BIN, help="the kiln-serve binary (default build/kiln-serve)")
    a = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed: apt-get install wrk")
    tmp = tempfile.mkdtemp(prefix="kiln-serve-load-")
    try:
        models = export(tmp)
        local = {n: in_process_p50(m[2], m[3], 200 if n == "mlp" else 20)
                 for n, m in models.items()}
        rows = []
        plan = ((False, (("mlp", 1), ("mlp", 8), ("effnet", 1), ("effnet", 8))),
                (True, (("mlp", 8), ("effnet", 8))))
        for batching, cases in plan:
            server = start(a.bin, models, tmp, batching)
            if not batching:  # gRPC first: one channel, sequential
                cases = (("mlp", "grpc"), ("effnet", "grpc")) + cases
            for name, conns in cases:
                if conns == "grpc":
                    r = grpc_loop(server.grpc_port, name, models[name][3], a.seconds // 2)
                else:
                    r = wrk(server.port, name, models[name][1], conns, a.seconds, tmp)
                r.update(model=name, connections=conns, batching=batching,
                         in_process_p50_s=local[name], load=os.getloadavg()[0])
                rows.append(r)
                print(f"{name:6s} {conns} conn{' batching' if batching else '         '}: "
                      f"{r['rps']:8.1f} req/s  p50 {r['p50_s'] * 1e3:7.3f} ms  "
                      f"p90 {r['p90_s'] * 1e3:7.3f} ms  p99 {r['p99_s'] * 1e3:7.3f} ms  "
                      f"failed {r['failed']}/{r['requests']}  (in-process p50 "
                      f"{local[name] * 1e3:.3f} ms)", flush=True)
            server.proc.terminate()
            server.proc.wait(30)
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"date": time.strftime("%Y-%m-%d %H:%M"), "rows": rows}, f, indent=1)
        return 1 if any(r["failed"] for r in rows) else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
