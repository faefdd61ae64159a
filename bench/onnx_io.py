"""EfficientNetV2-S (seed 003's model) through ONNX: kiln exports it, then kiln
(kiln.onnx.load) and onnxruntime each load and run the same file, in one process:

    .venv/bin/python bench/onnx_io.py [--runs 7] [--size 224]

Times kiln's export, each runtime's load (file -> ready session/function) and first
call, and steady calls measured alternately (kiln, onnxruntime, kiln, ...) so both see
the same machine; both use the machine's cores (onnxruntime's intra-op threads = kiln's
budget). Prints medians with IQR as JSON, with the load average (other work skews these)
and the largest difference between the two runtimes' outputs.
"""
import argparse
import json
import os
import statistics
import tempfile
import time

import numpy as np
import onnxruntime as ort

import kiln as tf


def quartiles(xs):
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return {"median_s": statistics.median(xs), "iqr_s": q[2] - q[0], "runs": len(xs)}


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--size", type=int, default=224)
    args = p.parse_args()
    load_before = os.getloadavg()[0]
    threads = tf.config.threading.get_intra_op_parallelism_threads() or os.cpu_count()
    model = tf.keras.applications.EfficientNetV2S(weights=None,
                                                  input_shape=(args.size, args.size, 3))
    x = np.random.default_rng(0).random((1, args.size, args.size, 3), np.float32)
    path = os.path.join(tempfile.mkdtemp(prefix="kiln-onnx-bench-"), "effnet.onnx")
    export = [timed(lambda: tf.onnx.export(model, path))[0] for _ in range(3)]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    r = {"kiln_export": quartiles(export), "size_mb": os.path.getsize(path) / 1e6}
    loads = {"kiln": [], "onnxruntime": []}
    firsts = {"kiln": [], "onnxruntime": []}
    for _ in range(3):
        t, f = timed(lambda: tf.onnx.load(path))
        loads["kiln"].append(t)
        firsts["kiln"].append(timed(lambda: f(x)[0].numpy())[0])
        t, s = timed(lambda: ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"]))
        loads["onnxruntime"].append(t)
        firsts["onnxruntime"].append(timed(lambda: s.run(None, {s.get_inputs()[0].name: x}))[0])
    name = s.get_inputs()[0].name
    steady = {"kiln": [], "onnxruntime": []}
    for _ in range(args.runs):
        steady["kiln"].append(timed(lambda: f(x)[0].numpy())[0])
        steady["onnxruntime"].append(timed(lambda: s.run(None, {name: x}))[0])
    diff = float(np.max(np.abs(f(x)[0].numpy() - s.run(None, {name: x})[0])))
    for k in ("kiln", "onnxruntime"):
        r[k] = {"load": quartiles(loads[k]), "first_call": quartiles(firsts[k]),
                "steady_call": quartiles(steady[k])}
    r.update({"threads": threads, "max_abs_diff": diff, "size": args.size,
              "loadavg_before": load_before, "loadavg_after": os.getloadavg()[0],
              "onnxruntime_version": ort.__version__})
    print(json.dumps(r, indent=1))


if __name__ == "__main__":
    main()
