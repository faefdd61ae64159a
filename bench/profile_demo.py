"""A kiln.profiler trace of EfficientNetV2-S (seed 003's model), for `make demo`.

    .venv/bin/python bench/profile_demo.py [--logdir DIR] [--size 224] [--calls 3]

Builds the model (random weights), runs it once in a kiln.function (trace, optimize,
compile), then profiles `--calls` more calls and prints where the trace is (a Chrome
trace: open it in https://ui.perfetto.dev or chrome://tracing) and the top ops by time.
"""
import argparse
import os

import numpy as np

import kiln as tf


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--logdir", default=os.path.join("build", "profile"))
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--calls", type=int, default=3)
    args = p.parse_args()
    model = tf.keras.applications.EfficientNetV2S(weights=None,
                                                  input_shape=(args.size, args.size, 3))
    x = tf.constant(np.random.default_rng(0).random((1, args.size, args.size, 3), np.float32))
    infer = tf.function(lambda t: model(t, training=False))
    infer(x)  # trace, optimize, compile: not in the profile
    with tf.profiler.experimental.Profile(args.logdir):
        for i in range(args.calls):
            with tf.profiler.experimental.Trace("inference", step_num=i):
                infer(x).numpy()
    result = tf.profiler.experimental.last_profile()
    print(f"EfficientNetV2-S {args.size}x{args.size}, {args.calls} calls profiled; "
          f"{len(result.events())} events")
    print(f"trace: {result.trace_path}  (open it in https://ui.perfetto.dev)")
    print(tf.profiler.experimental.last_profile_table(row_limit=10))


if __name__ == "__main__":
    main()
