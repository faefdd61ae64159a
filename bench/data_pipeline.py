"""tf.data overlap: a pipeline whose map does about MS ms of kiln compute per
element, consumed by a training-step-like kiln.function of about the same cost.

Configurations, timed in one process with kiln.benchmark in alternating
rounds (one sample = one epoch of --elements elements); medians and IQRs
pool the rounds' samples, ratios are the median of per-round ratios:
  producer only   the map alone (iterating the dataset)
  consumer only   the step alone (on a ready tensor)
  serial          ds.map(work), each element then stepped
  prefetch        ds.map(work).prefetch(2)
  parallel        ds.map(work, num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)

The kernel pool is 1 thread by default (--intra-op), so each op runs on one
core and any overlap comes from the pipeline's threads (traced kiln.functions
release the GIL while their plans run). On 2 cores the best case for a
balanced producer and consumer is about 2x over serial.

    .venv/bin/python bench/data_pipeline.py [--ms 5] [--step-ms MS] [--elements 24]
                                             [--intra-op 1]
                                             [--rounds 3] [--min-runs 5] [--min-time 0.5]
                                             [--json FILE]
"""
import argparse
import json
import os
import statistics
import time

import kiln as tf
from kiln import benchmark as kb

SIZE = 128


def chain(x, reps):
    """reps matmuls of SIZE x SIZE, scaled to stay bounded; depends on x."""
    m = tf.fill([SIZE, SIZE], 1.0 / SIZE) + tf.cast(x, tf.float32) * 1e-6
    for _ in range(reps):
        m = tf.tanh(tf.matmul(m, m))
    return m


def calibrate(target_ms):
    """Matmuls per element for about target_ms of compute (one thread)."""
    probe = tf.function(lambda x: tf.reduce_sum(chain(x, 16)))
    x = tf.constant(1, tf.int64)
    probe(x)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        probe(x).numpy()
        times.append(time.perf_counter() - t0)
    per = sorted(times)[2] / 16
    return max(1, round(target_ms / 1e3 / per))


def build(reps, step_reps, elements):
    def work(x):
        return chain(x, reps), x

    @tf.function
    def step(m, x):
        return tf.reduce_sum(chain(tf.reduce_sum(m) + tf.cast(x, tf.float32), step_reps))

    base = tf.data.Dataset.range(elements)
    pipelines = {
        "serial": base.map(work),
        "prefetch": base.map(work).prefetch(2),
        "parallel": base.map(work, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE),
    }

    def epoch(ds):
        def run():
            total = tf.constant(0.0)
            for m, x in ds:
                total += step(m, x)
            return total
        return run

    def producer_only():
        last = None
        for last in base.map(work):
            pass
        return last[0]

    ready = next(iter(base.map(work)))

    def consumer_only():
        total = tf.constant(0.0)
        for _ in range(elements):
            total += step(*ready)
        return total

    cases = {"producer only": producer_only, "consumer only": consumer_only}
    cases.update({name: epoch(ds) for name, ds in pipelines.items()})
    return cases


def _quartiles(samples):
    s = sorted(samples)
    return statistics.median(s), s[len(s) // 4], s[(3 * len(s)) // 4]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ms", type=float, default=5.0, help="target ms per map call and per step")
    ap.add_argument("--step-ms", type=float, help="target ms per step (default: --ms)")
    ap.add_argument("--elements", type=int, default=24)
    ap.add_argument("--intra-op", type=int, default=1, help="kernel pool threads (0: per core)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-runs", type=int, default=5, help="epochs per configuration per round")
    ap.add_argument("--min-time", type=float, default=0.5,
                    help="seconds per configuration per round")
    ap.add_argument("--json")
    args = ap.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(args.intra_op)
    reps = calibrate(args.ms)
    step_reps = max(1, round(reps * (args.step_ms or args.ms) / args.ms))
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {reps} matmuls "
          f"{SIZE}x{SIZE} per map call, {step_reps} per step; {args.elements} elements per "
          f"epoch; intra-op "
          f"{args.intra_op}; {args.rounds} rounds of {args.min_runs}+ epochs per configuration")
    cases = build(reps, step_reps, args.elements)
    samples = {name: [] for name in cases}
    ratios = {"prefetch": [], "parallel": []}
    for _ in range(args.rounds):  # configurations alternate, so load changes hit all
        medians = {}
        for name, fn in cases.items():
            r = kb.benchmark(fn, name=name, min_time=args.min_time, min_runs=args.min_runs,
                             check_inputs=False)
            samples[name] += r.samples
            medians[name] = r.median
        for name in ratios:
            ratios[name].append(medians["serial"] / medians[name])
    for name, s in samples.items():
        med, q1, q3 = _quartiles(s)
        print(f"{name:14s} median {med * 1e3:7.1f} ms  IQR {(q3 - q1) * 1e3:5.1f} ms  "
              f"min {min(s) * 1e3:7.1f}  max {max(s) * 1e3:7.1f}  ({len(s)} epochs)")
    for name, r in ratios.items():
        print(f"serial / {name}: {statistics.median(r):.2f}x (rounds: "
              f"{', '.join(f'{x:.2f}' for x in r)})")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"samples": samples, "ratios": ratios, "reps": [reps, step_reps]}, f,
                      indent=1)


if __name__ == "__main__":
    main()
