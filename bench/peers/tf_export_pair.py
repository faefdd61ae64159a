"""kiln running the SavedModel TensorFlow exported, beside TensorFlow running it,
alternated in one process: transformer4 or a convnet (bench/peers/model_common.py)
built in TensorFlow's Keras 3, `model.export`ed, and loaded by both.

TensorFlow's graph is not kiln's: Keras 3's MultiHeadAttention and Dense go
through TensorFlow's einsum and tensordot (Reshapes around rank-3 products,
their shapes computed from Shape ops). The kiln sides are the loaded `serve`
in a kiln.function (graph mode) and under jit_compile, and for transformer4 under
jit with the fuse_attention pass off (what the attention costs unfused). Per-round ratios to
TensorFlow's own call of the same export, median [min-max].

    .venv-peers/bin/python bench/peers/tf_export_pair.py [--policy mixed_bfloat16 float32]
        [--only transformer4 resnet50_224 ...] [--rounds 5] [--round-time 0.5]
"""
import argparse
import os
import shutil
import statistics as st
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import eager_pair  # noqa: E402
import model_common as mc  # noqa: E402
import model_pair as mp  # noqa: E402


def export(tf, name, policy, path):
    """Model `name` built under `policy` and exported to `path`."""
    tf.keras.mixed_precision.set_global_policy(policy)
    try:
        model = (mc.build_transformer4(tf.keras) if name == "transformer4" else
                 mc.build_app(tf.keras, name))
    finally:
        tf.keras.mixed_precision.set_global_policy("float32")
    model.export(path, verbose=False)


def sides(tf, kiln, path, x, attention):
    """[(label, build)] of TensorFlow's and kiln's calls of the export at `path`
    (`attention`: with the jit side without fuse_attention too)."""
    def tf_side():
        m = tf.saved_model.load(path)  # kept: `serve` holds its variables weakly
        return (lambda a: tf.cast(m.serve(a), tf.float32)), (tf.constant(x),)

    def kiln_side(jit, disabled=()):
        def build():
            m = kiln.saved_model.load(path)
            opt = kiln.config.optimizer
            before = opt._disabled_passes
            opt._disabled_passes = staticmethod(lambda: set(disabled))
            try:  # kiln.function reads the disabled passes when it is made
                f = kiln.function(lambda a: kiln.cast(m.serve(a), kiln.float32), jit_compile=jit)
            finally:
                opt._disabled_passes = before
            return f, (kiln.constant(x),)
        return build
    out = [("tf serve", tf_side), ("kiln function", kiln_side(False)),
           ("kiln jit", kiln_side(True))]
    if attention:
        out.append(("kiln jit, fuse_attention off", kiln_side(True, ("fuse_attention",))))
    return out


def run(tf, kiln, name, policy, rounds, round_time):
    root = tempfile.mkdtemp(prefix="tf-export-")
    try:
        path = os.path.join(root, name)
        export(tf, name, policy, path)
        x = mc.transformer_input() if name == "transformer4" else mc.image_input(name)
        ready = {}
        for label, build in sides(tf, kiln, path, x, name == "transformer4"):
            got = mp.prepare(label, build)
            if got is not None:
                ready[label] = got
        ref = ready["tf serve"][3]
        for label, (_, _, first, out) in ready.items():
            mp.log(f"  {label}: first call {first * 1e3:.0f} ms, max |diff| to tf "
                   f"{float(np.max(np.abs(np.asarray(out[0]) - np.asarray(ref[0])))):.3g}")
        times, _ = mp.measure(ready, rounds, round_time)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base = times["tf serve"]
    print(f"\n{name} exported by TensorFlow, {policy}: {mc.TITLES[name]}")
    for label, t in times.items():
        r = [a / b for a, b in zip(t, base)]
        print(f"  {label:30s} {st.median(t) * 1e3:7.2f} ms [{min(t) * 1e3:.2f}-{max(t) * 1e3:.2f}]"
              f"  / tf {st.median(r):.2f} [{min(r):.2f}-{max(r):.2f}]")
    on, off = times.get("kiln jit"), times.get("kiln jit, fuse_attention off")
    if on and off:
        r = [a / b for a, b in zip(on, off)]
        print(f"  kiln jit / fuse_attention off: {st.median(r):.3f} [{min(r):.3f}-{max(r):.3f}]")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", nargs="*", default=["mixed_bfloat16", "float32"])
    ap.add_argument("--only", nargs="*", default=["transformer4"],
                    choices=["transformer4"] + list(mc.APPS))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--round-time", type=float, default=0.5)
    ap.add_argument("--kiln-python", default=os.path.join(mp.cm.REPO, ".venv", "bin", "python"))
    args = ap.parse_args(argv)
    kiln = eager_pair.import_kiln(args.kiln_python)
    mp.configure(["tensorflow"], mp.cm.cores())
    import tensorflow as tf
    load = mp.cm.kb.machine_load()
    print(f"machine: {mp.cm.machine()}; load (1, 5, 15 min) at the start {load}")
    for name in args.only:
        for policy in args.policy:
            run(tf, kiln, name, policy, args.rounds, args.round_time)
    return 0


if __name__ == "__main__":
    sys.exit(main())
