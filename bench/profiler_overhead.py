"""The disabled profiler's cost on EfficientNetV2-S (issue 45): one timing per process.

    .venv/bin/python bench/profiler_overhead.py [--size 224] [--min-time 8]

Prints one JSON line: kiln.benchmark's result for a kiln.function of the model (random
weights, batch 1) with no profile running. Run it alternately against libkiln as built
and against a build whose kernel hooks are compiled out (LD_PRELOAD of that library, see
docs/BENCHMARKS.md) and compare the medians round by round.
"""
import argparse
import json
import os

import numpy as np

import kiln as tf


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--min-time", type=float, default=8.0)
    args = p.parse_args()
    model = tf.keras.applications.EfficientNetV2S(weights=None,
                                                  input_shape=(args.size, args.size, 3))
    x = tf.constant(np.random.default_rng(0).random((1, args.size, args.size, 3), np.float32))
    infer = tf.function(lambda t: model(t, training=False))
    r = tf.benchmark.benchmark(infer, x, name="efficientnetv2s", min_time=args.min_time,
                               check_inputs=False)
    d = r.to_dict()
    d["preload"] = os.environ.get("LD_PRELOAD", "")
    d["load"] = os.getloadavg()[0]
    print(json.dumps(d))


if __name__ == "__main__":
    main()
