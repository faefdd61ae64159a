"""Saving and loading EfficientNetV2-S (seed 003's model) with kiln.saved_model or
tf.saved_model, the same code for both (``import kiln as tf``):

    .venv/bin/python bench/saved_model_io.py [--runs 5] [--size 224]
    .venv-peers/bin/python bench/saved_model_io.py --framework tensorflow

Times save (model -> directory), load (directory -> object with signatures) and the
first and a steady serving_default call after load; prints medians with IQR and the
export's size as JSON, with the machine's load average (other work skews these).
"""
import argparse
import importlib
import json
import os
import shutil
import statistics
import tempfile
import time

import numpy as np


def quartiles(xs):
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return {"median_s": statistics.median(xs), "iqr_s": q[2] - q[0], "runs": len(xs)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--framework", default="kiln", choices=["kiln", "tensorflow"])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--size", type=int, default=224)
    args = p.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tf = importlib.import_module(args.framework)
    load_before = os.getloadavg()[0]
    model = tf.keras.applications.EfficientNetV2S(weights=None,
                                                  input_shape=(args.size, args.size, 3))
    x = np.random.default_rng(0).random((1, args.size, args.size, 3), np.float32)
    root = tempfile.mkdtemp(prefix="kiln-sm-bench-")
    save, load, first, steady = [], [], [], []
    try:
        for i in range(args.runs):
            d = os.path.join(root, str(i))
            t = time.perf_counter()
            tf.saved_model.save(model, d)
            save.append(time.perf_counter() - t)
            t = time.perf_counter()
            sig = tf.saved_model.load(d).signatures["serving_default"]
            load.append(time.perf_counter() - t)
            (key,) = sig.structured_input_signature[1]
            t = time.perf_counter()
            np.asarray(list(sig(**{key: tf.constant(x)}).values())[0])
            first.append(time.perf_counter() - t)
            t = time.perf_counter()
            for _ in range(3):
                np.asarray(list(sig(**{key: tf.constant(x)}).values())[0])
            steady.append((time.perf_counter() - t) / 3)
        size = sum(os.path.getsize(os.path.join(dp, f))
                   for dp, _, fs in os.walk(os.path.join(root, "0")) for f in fs)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps({"framework": args.framework, "model": f"EfficientNetV2-S {args.size}x{args.size}",
                      "save": quartiles(save[1:] or save), "first_save_s": save[0],
                      "load": quartiles(load), "first_call_after_load": quartiles(first),
                      "call": quartiles(steady), "export_bytes": size,
                      "loadavg_before": load_before, "loadavg_after": os.getloadavg()[0]},
                     indent=1))


if __name__ == "__main__":
    main()
