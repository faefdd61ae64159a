"""Model workloads (issue 41) written against kiln with `import kiln as tf`:
lstm2, gru2, transformer4, resnet50_224 and mobilenetv3_224, inference, modes
"function" (and "jit", added by bench/demo.py). Models, weights and inputs come
from bench/peers/model_common.py, which the peers use too.

    .venv/bin/python bench/demo.py --models        # time them
    .venv/bin/python bench/model_workloads.py      # smoke test: outputs vs NumPy
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "peers"))

import kiln as tf  # noqa: E402
import model_common as mc  # noqa: E402
from workloads import Workload  # noqa: E402


def _modes(model, x_host):
    x = tf.constant(x_host)
    return {"function": (tf.function(model), (x,))}


def lstm2():
    return _modes(mc.build_lstm2(tf.keras), mc.lstm_input())


def gru2():
    return _modes(mc.build_gru2(tf.keras), mc.lstm_input())


def transformer4():
    return _modes(mc.build_transformer4(tf.keras), mc.transformer_input())


def app(name):
    def build():
        return _modes(mc.build_app(tf.keras, name), mc.image_input(name))
    return build


MODELS = [Workload("lstm2", mc.TITLES["lstm2"], lstm2, min_runs=5),
          Workload("transformer4", mc.TITLES["transformer4"], transformer4, min_runs=5),
          Workload("gru2", mc.TITLES["gru2"], gru2, min_runs=5)]
MODELS += [Workload(n, mc.TITLES[n], app(n), min_runs=5) for n in mc.APPS]


def smoke(save=None):
    """Runs every model workload once per mode; checks lstm2 and transformer4
    against NumPy. save: an .npz path for the outputs (to compare with TF)."""
    outs = {}
    for w in MODELS:
        fn, args = w.build()["function"]
        for mode, f in (("function", fn), ("jit", tf.function(fn._python_function,
                                                              jit_compile=True))):
            out = np.asarray(f(*args))
            outs[f"{w.name}.{mode}"] = out
            err = mc.check(w.name, out) if w.name in mc.HAND_NAMES else None
            print(f"{w.name} [{mode}]: shape {out.shape}"
                  + ("" if err is None else f", relative error vs NumPy {err:.2g}"), flush=True)
    if save:
        np.savez(save, **outs)
    return 0


if __name__ == "__main__":
    sys.exit(smoke(sys.argv[1] if len(sys.argv) > 1 else None))
