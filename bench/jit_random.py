"""Random programs, graph mode vs jit_compile, timed alternately in one process.

Issue 40's check that jit_compile is never slower than graph mode on programs
nobody tuned it for: chains of common activations, each step
``f(v * 0.75 + y * 0.25) - 0.1`` with a broadcast ``y``, of depths 1 to 40, over
shapes from [10, 10] to [256, 1024], half of them with row reductions (softmax,
a layer norm, a log-softmax, a row-sum scale) at random steps. Each program is
traced once per mode and compiled (or found in the disk cache); then the two
modes are timed in alternating rounds of about 10 ms each and the median of the
rounds' ratios jit / graph is printed, with the worst and the median ratio.

    .venv/bin/python bench/jit_random.py [--programs N] [--seed S] [--rounds R]
                                         [--json FILE] [--quiet]

Goal (issue 40): worst ratio <= 1.0, median ratio <= 1/1.5.
"""
import argparse
import json
import os
import statistics
import sys
import time
import warnings

import numpy as np

import kiln as tf
from kiln import benchmark as kb

SHAPES = [(10, 10), (2000, 4), (64, 64), (1000, 10), (100, 100), (1000, 100), (128, 512),
          (256, 1024)]

# Each activation keeps values in a modest range when chained (an unbounded one
# is wrapped so that 40 steps never overflow).
ACTIVATIONS = {
    "tanh": tf.tanh,
    "sigmoid": tf.sigmoid,
    "exp": lambda u: tf.exp(-tf.square(u)),
    "erf": tf.math.erf,
    "softplus": tf.nn.softplus,
    "gelu": tf.nn.gelu,
    "gelu_tanh": lambda u: tf.nn.gelu(u, approximate=True),
    "sin": tf.sin,
    "cos": tf.cos,
    "sqrt": lambda u: tf.sqrt(tf.abs(u) + 0.5),
    "rsqrt": lambda u: tf.math.rsqrt(tf.square(u) + 1.0),
    "log1p": lambda u: tf.math.log1p(tf.abs(u)),
    "square": lambda u: tf.minimum(tf.square(u), 4.0),
    "relu": tf.nn.relu,
    "swish": lambda u: u * tf.sigmoid(u),
    "expm1": lambda u: tf.math.expm1(tf.minimum(u, 2.0)),
}


def _layer_norm(v):
    m = tf.reduce_mean(v, axis=-1, keepdims=True)
    d = v - m
    return d * tf.math.rsqrt(tf.reduce_mean(tf.square(d), axis=-1, keepdims=True) + 1e-5)


REDUCTIONS = {
    "softmax": tf.nn.softmax,
    "layer_norm": _layer_norm,
    "log_softmax": lambda v: tf.nn.log_softmax(v) * 0.1,
    "row_scale": lambda v: v * tf.sigmoid(tf.reduce_sum(v, axis=-1, keepdims=True)),
}


def make_program(rng, index):
    """One random program: (name, python function, inputs, description)."""
    depth = int(rng.integers(1, 41))
    shape = SHAPES[int(rng.integers(len(SHAPES)))]
    names = sorted(ACTIVATIONS)
    steps = [names[int(rng.integers(len(names)))] for _ in range(depth)]
    reductions = {}
    if rng.random() < 0.5:
        for _ in range(int(rng.integers(1, 3))):
            at = int(rng.integers(depth))
            reductions[at] = sorted(REDUCTIONS)[int(rng.integers(len(REDUCTIONS)))]
    y_shape = (shape[1],) if rng.random() < 0.5 else (shape[0], 1)

    def program(x, y):
        v = x
        for i, name in enumerate(steps):
            v = ACTIVATIONS[name](v * 0.75 + y * 0.25) - 0.1
            if i in reductions:
                v = REDUCTIONS[reductions[i]](v)
        return v

    program.__name__ = f"program_{index}"
    x = tf.constant(rng.standard_normal(shape, dtype=np.float32))
    y = tf.constant(rng.standard_normal(y_shape, dtype=np.float32))
    text = " ".join(steps[i] + (f"+{reductions[i]}" if i in reductions else "")
                    for i in range(depth))
    desc = {"depth": depth, "shape": list(shape), "y": list(y_shape),
            "reductions": len(reductions), "steps": text}
    return program, (x, y), desc


def _batch(fn, args, number):
    start = time.perf_counter()
    for _ in range(number):
        out = fn(*args)
    kb.materialize(out)
    return (time.perf_counter() - start) / number


def compare(program, args, rounds, sample_time=1e-2):
    """Graph mode and jit alternately: (graph median s, jit median s, first jit call s, ratio).

    The ratio is the median of each round's jit / graph: a round's two samples
    are taken back to back, so a burst of other work on the machine skews a
    round's pair, not the whole comparison."""
    graph = tf.function(program, autograph=False)
    jit = tf.function(program, jit_compile=True, autograph=False)
    kb.materialize(graph(*args))
    start = time.perf_counter()
    kb.materialize(jit(*args))
    first = time.perf_counter() - start
    np.testing.assert_allclose(jit(*args).numpy(), graph(*args).numpy(), rtol=2e-3, atol=2e-4)
    per_call = max(_batch(graph, args, 3), 1e-7)
    number = max(1, int(sample_time / per_call))
    for _ in range(2):  # warm both
        _batch(graph, args, number)
        _batch(jit, args, number)
    g, j = [], []
    for r in range(rounds):
        # Alternate which goes first, so neither always follows the other.
        order = ((graph, g), (jit, j)) if r % 2 == 0 else ((jit, j), (graph, g))
        for fn, out in order:
            out.append(_batch(fn, args, number))
    ratio = statistics.median(b / a for a, b in zip(g, j))
    return statistics.median(g), statistics.median(j), first, ratio


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--programs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--json", default=None, help="write every result to this file")
    ap.add_argument("--quiet", action="store_true", help="print only the summary")
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    load_start = kb.machine_load()
    rows = []
    warnings.simplefilter("ignore")
    for i in range(a.programs):
        program, args, desc = make_program(rng, i)
        g, j, first, ratio = compare(program, args, a.rounds)
        desc.update({"graph_s": g, "jit_s": j, "ratio": ratio, "first_jit_call_s": first})
        rows.append(desc)
        if not a.quiet:
            print(f"{i:3d} depth {desc['depth']:2d} {str(tuple(desc['shape'])):12s} "
                  f"red {desc['reductions']}  graph {kb.format_seconds(g):>9s}  "
                  f"jit {kb.format_seconds(j):>9s}  jit/graph {ratio:5.2f}", flush=True)
    ratios = [r["ratio"] for r in rows]
    worst = max(range(len(rows)), key=lambda k: ratios[k])
    summary = {
        "programs": len(rows), "seed": a.seed, "rounds": a.rounds,
        "worst_ratio": ratios[worst], "worst_program": rows[worst],
        "median_ratio": statistics.median(ratios),
        "slower_than_graph": sum(r > 1.0 for r in ratios),
        "machine": kb.machine_info(), "load_start": load_start, "load_end": kb.machine_load(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }
    print(f"\n{len(rows)} random programs (seed {a.seed}): jit/graph worst {summary['worst_ratio']:.2f} "
          f"(program {worst}: depth {rows[worst]['depth']}, {tuple(rows[worst]['shape'])}), "
          f"median {summary['median_ratio']:.2f} ({1 / summary['median_ratio']:.2f}x faster), "
          f"{summary['slower_than_graph']} slower than graph mode; load {load_start} -> "
          f"{summary['load_end']}")
    note = kb.busy_note(load_start)
    if note:
        print("note:", note)
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump({"summary": summary, "programs": rows}, f, indent=1)
    return summary


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
