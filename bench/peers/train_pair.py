"""A training step of EfficientNetV2-S (batch 8, 224x224, random weights) in kiln and in
TensorFlow, alternated in one process (issue 43's training direction).

Each side builds `keras.applications.EfficientNetV2S(weights=None)`, starts from the same
weights (TensorFlow's, copied into kiln's model) and runs the same step: forward in
training mode, sparse categorical cross-entropy, GradientTape, SGD with momentum. Sides:
kiln tf.function, kiln jit_compile=True, TF tf.function, TF XLA (--no-xla skips it: its
first compile takes minutes here). Before training, each model's inference-mode loss on the
batch is compared (same weights: they must agree; training-mode losses differ by design,
dropout and stochastic depth being random; both use the softmax's logits, as Keras 3
does). Then `--rounds` rounds time `--steps` steps of
every side in turn; ratios are per round. `--policy mixed_bfloat16` builds every model under
Keras' mixed_bfloat16 policy (bf16 convolutions and products, float32 variables).

    .venv-peers/bin/python bench/peers/train_pair.py [--rounds 5] [--steps 2] [--no-xla]
        [--policy mixed_bfloat16]
"""
import argparse
import datetime
import json
import os
import statistics as st
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common as cm  # noqa: E402
import eager_pair  # noqa: E402
import tf_workloads  # noqa: E402


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def make_step(lib, model, jit):
    """A compiled training step of `model` in `lib` (kiln or tensorflow)."""
    opt = lib.keras.optimizers.SGD(0.01, momentum=0.9)
    loss_fn = lib.keras.losses.SparseCategoricalCrossentropy()

    @lib.function(jit_compile=jit)
    def step(x, y):
        with lib.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return step


def sides(kiln, tf, batch, size, xla, policy="float32"):
    """{label: (step, (x, y))}, and the weights every model starts from."""
    rng = np.random.default_rng(0)
    x = rng.random((batch, size, size, 3), np.float32)
    y = rng.integers(0, 1000, batch).astype(np.int32)
    ref = tf.keras.applications.EfficientNetV2S(weights=None, input_shape=(size, size, 3))
    weights = ref.get_weights()
    out = {}
    for label, lib, jit in (("kiln function", kiln, False), ("kiln jit", kiln, True),
                            ("tf function", tf, False), ("tf xla", tf, True)):
        if label == "tf xla" and not xla:
            continue
        lib.keras.mixed_precision.set_global_policy(policy)
        try:
            model = lib.keras.applications.EfficientNetV2S(weights=None,
                                                           input_shape=(size, size, 3))
        finally:
            lib.keras.mixed_precision.set_global_policy("float32")
        model.set_weights(weights)
        loss = lib.keras.losses.SparseCategoricalCrossentropy()(y, model(x, training=False))
        out[label] = (make_step(lib, model, jit), (lib.constant(x), lib.constant(y)),
                      float(loss))
    return out


def step_time(step, args, steps):
    t = time.perf_counter()
    for _ in range(steps):
        float(step(*args))
    return (time.perf_counter() - t) / steps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=2, help="steps per side per round")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--no-xla", dest="xla", action="store_false")
    ap.add_argument("--policy", default="float32", choices=["float32", "mixed_bfloat16"])
    ap.add_argument("--kiln-python", default=os.path.join(cm.REPO, ".venv", "bin", "python"))
    ap.add_argument("--out", default=os.path.join(cm.REPO, "bench", "results", "train_pair.json"))
    a = ap.parse_args(argv)
    kiln = eager_pair.import_kiln(a.kiln_python)
    tf_version, _ = tf_workloads.configure(cm.cores())
    tf = tf_workloads._tf  # imported and given its threads by configure()
    doc = {"kiln": kiln.__version__, "tensorflow": tf_version,
           "date": datetime.datetime.now().isoformat(timespec="seconds"),
           "machine": cm.machine(), "load_start": cm.kb.machine_load(),
           "batch": a.batch, "size": a.size, "policy": a.policy}
    ready = sides(kiln, tf, a.batch, a.size, a.xla, a.policy)
    first = {}
    for label, (step, args, loss) in ready.items():
        t = time.perf_counter()
        step(*args)
        first[label] = {"inference_loss": loss, "seconds": time.perf_counter() - t}
        log(f"{label}: first step {first[label]['seconds']:.1f} s, inference loss {loss:.6f}")
    doc["first_step"] = first
    spread = max(abs(v["inference_loss"] / first["tf function"]["inference_loss"] - 1)
                 for v in first.values())
    doc["inference_loss_max_rel_diff"] = spread
    times = {label: [] for label in ready}
    for r in range(a.rounds):
        for label, (step, args, _) in ready.items():
            time.sleep(0.1)
            times[label].append(step_time(step, args, a.steps))
        log(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()))
    best_kiln = [min(v) for v in zip(*(times[k] for k in times if k.startswith("kiln")))]
    best_tf = [min(v) for v in zip(*(times[k] for k in times if k.startswith("tf")))]
    ratios = [k / t for k, t in zip(best_kiln, best_tf)]
    doc["seconds_per_step"] = {k: {"median": st.median(v), "min": min(v), "max": max(v)}
                               for k, v in times.items()}
    doc["kiln_best_over_tf_best"] = {"median": st.median(ratios), "min": min(ratios),
                                     "max": max(ratios)}
    doc["load_end"] = cm.kb.machine_load()
    print(f"EfficientNetV2-S training step, batch {a.batch}, {a.size}x{a.size}, {a.policy} "
          f"({a.rounds} rounds x {a.steps} steps)")
    for k, v in doc["seconds_per_step"].items():
        print(f"  {k:14s} {v['median']:.3f} s [{v['min']:.3f}-{v['max']:.3f}]  "
              f"first step {first[k]['seconds']:.1f} s")
    print(f"  same start: inference losses agree within {spread:.1e} (relative)")
    r = doc["kiln_best_over_tf_best"]
    print(f"  kiln best / TF best: {r['median']:.2f} [{r['min']:.2f}-{r['max']:.2f}]")
    print(f"  load (1, 5, 15 min): start {doc['load_start']}, end {doc['load_end']}")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump(doc, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
