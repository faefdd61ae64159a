"""A data-parallel train step's time per example at 1 and 2 processes.

    .venv/bin/python bench/distributed_step.py [--steps 40] [--batch 512] [--width 512]

Launches itself under mpirun with 1 and then 2 processes (the same global batch, so
each of 2 workers computes half of it and the workers sum the gradients), then prints
one JSON line per run and the ratio. Each worker gets cores / workers threads (kiln's
one thread budget), so both runs use the machine's cores. The model: digits-sized
inputs (64) -> width -> width relu -> 10 logits, SGD, one kiln.function per step
under MultiWorkerMirroredStrategy.run (forward, backward, bucketed all-reduce, update).
Steps are a fixed count on every worker (an adaptive count would differ between
workers); medians with IQR over the steps after warm-up, with the load average.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np


def worker(args):
    import kiln as tf
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    size = strategy.num_replicas_in_sync
    rank = strategy.cluster_resolver.task_id
    tf.config.threading.set_intra_op_parallelism_threads(max(1, (os.cpu_count() or 1) // size))
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input(shape=(64,)),
                                     tf.keras.layers.Dense(args.width, activation="relu"),
                                     tf.keras.layers.Dense(args.width, activation="relu"),
                                     tf.keras.layers.Dense(10)])
        opt = tf.keras.optimizers.SGD(0.01)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="none")
    rng = np.random.default_rng(0)
    x_all = rng.random((args.batch, 64), np.float32)
    y_all = rng.integers(0, 10, args.batch).astype(np.int32)
    lo, hi = rank * args.batch // size, (rank + 1) * args.batch // size
    x, y = tf.constant(x_all[lo:hi]), tf.constant(y_all[lo:hi])

    @tf.function
    def step(x, y):
        def replica(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(loss_fn(y, model(x))) / args.batch
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        return strategy.run(replica, args=(x, y))

    times = []
    for i in range(args.warmup + args.steps):
        t = time.perf_counter()
        step(x, y).numpy()
        if i >= args.warmup:
            times.append(time.perf_counter() - t)
    if rank == 0:
        q = statistics.quantiles(times, n=4)
        med = statistics.median(times)
        weights = sum(int(np.prod(v.shape)) for v in model.trainable_variables)
        print(json.dumps({"workers": size, "global_batch": args.batch, "width": args.width,
                          "weights": weights, "step_median_ms": med * 1e3,
                          "step_iqr_ms": (q[2] - q[0]) * 1e3,
                          "us_per_example": med / args.batch * 1e6,
                          "load_avg": os.getloadavg()[0]}), flush=True)


def launch(args):
    mpirun = shutil.which("mpirun")
    if not mpirun:
        sys.exit("distributed_step.py: mpirun is not on PATH (scripts/setup.sh installs Open MPI)")
    results = []
    for n in (1, 2):
        cmd = [mpirun, "-np", str(n), "--oversubscribe", "--allow-run-as-root", "--bind-to", "none",
               sys.executable, os.path.abspath(__file__), "--worker", "--steps", str(args.steps),
               "--warmup", str(args.warmup), "--batch", str(args.batch), "--width", str(args.width)]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        line = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if out.returncode != 0 or not line:
            sys.exit(f"distributed_step.py: the {n}-process run failed:\n{out.stdout}\n{out.stderr}")
        results.append(json.loads(line[-1]))
        print(line[-1])
    print(json.dumps({"time_per_example_2_over_1": results[1]["us_per_example"] /
                      results[0]["us_per_example"]}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batch", type=int, default=512, help="the global batch")
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--worker", action="store_true", help="run as one worker (under mpirun)")
    args = p.parse_args()
    worker(args) if args.worker else launch(args)


if __name__ == "__main__":
    main()
