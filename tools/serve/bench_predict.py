"""Request overhead of kiln-serve: many sequential small predicts over one keep-alive
connection (Python's http.client, stdlib only), p50/p99 of the round trip.

    python tools/serve/bench_predict.py --port 8501 --model digits --rows 1 --width 64 -n 2000
    (--export DIR also times the same signature called in-process through kiln's Python API)
"""
import argparse
import http.client
import json
import os
import random
import statistics
import time


def percentiles(times_us):
    s = sorted(times_us)
    return {"p50": s[len(s) // 2], "p99": s[min(len(s) - 1, int(len(s) * 0.99))],
            "mean": statistics.fmean(s)}


def bench_http(args, body):
    c = http.client.HTTPConnection("127.0.0.1", args.port)
    path = f"/v1/models/{args.model}:predict"
    times = []
    for i in range(args.warmup + args.n):
        t0 = time.perf_counter()
        c.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        dt = (time.perf_counter() - t0) * 1e6
        assert r.status == 200, data[:200]
        if i >= args.warmup:
            times.append(dt)
    return percentiles(times)


def bench_in_process(args, rows):
    import numpy as np
    import kiln as tf
    sig = tf.saved_model.load(args.export).signatures["serving_default"]
    x = tf.constant(np.array(rows, np.float32))
    key = args.input
    times = []
    for i in range(args.warmup + args.n):
        t0 = time.perf_counter()
        sig(**{key: x})
        if i >= args.warmup:
            times.append((time.perf_counter() - t0) * 1e6)
    return percentiles(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--model", default="digits")
    p.add_argument("--rows", type=int, default=1)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("-n", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--export", help="the same SavedModel, timed in-process too")
    p.add_argument("--input", default="features")
    args = p.parse_args()
    rnd = random.Random(0)
    rows = [[round(rnd.uniform(0, 16), 3) for _ in range(args.width)] for _ in range(args.rows)]
    body = json.dumps({"instances": rows})
    out = {"http_us": bench_http(args, body), "body_bytes": len(body),
           "loadavg": os.getloadavg(), "cpus": os.cpu_count()}
    if args.export:
        out["in_process_us"] = bench_in_process(args, rows)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
