"""Where lstm2's time goes (issue 41): one LSTM layer's pieces timed by hand in
kiln and TensorFlow graph mode, alternated in one process (kiln imported from
.venv as eager_pair.py does). The same code runs on both (`tf` is kiln or
TensorFlow): kiln's API mirrors TensorFlow's.

    .venv-peers/bin/python bench/peers/lstm_pieces.py [--rounds 5] [--jit] [--torch]

--jit: every piece as tf.function(jit_compile=True) on both sides (XLA for TF).
--torch: matmul, cell_step and layer (nn.LSTM) in PyTorch eager as well.

Pieces (batch 32, 64 units, 100 steps, float32; all as tf.function):
  call          f(x) = x + 1 on [32, 64]: a function call's own cost
  matmul        h @ recurrent [32, 64] x [64, 256]
  cell_step     one step: z = p + h @ R, split, 3 sigmoids, 2 tanh (the layer's body)
  loop_empty    while_loop of 100 iterations writing h to a TensorArray
  loop_cell     the same loop running cell_step: the layer without its input product
  layer         keras.layers.LSTM(64, return_sequences=True) on [32, 100, 64]
"""
import argparse
import os
import statistics as st
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common as cm  # noqa: E402
import eager_pair  # noqa: E402
import model_common as mc  # noqa: E402

B, U, T = mc.LSTM_SHAPE[0], mc.LSTM_UNITS, mc.LSTM_SHAPE[1]


def cell(tf, p, h, c, r):
    i, f, g, o = tf.split(p + tf.matmul(h, r), 4, axis=1)
    c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
    return tf.sigmoid(o) * tf.tanh(c), c


def loop(tf, proj, h, c, r, with_cell):
    ta = tf.TensorArray(tf.float32, size=T)

    def body(t, h, c, ta):
        if with_cell:
            h, c = cell(tf, tf.gather(proj, t), h, c, r)
        return t + 1, h, c, ta.write(t, h)
    _, h, c, ta = tf.while_loop(lambda t, *_: t < T, body, (tf.constant(0), h, c, ta))
    return ta.stack()


def pieces(tf, jit=False):
    """{piece: (fn, args)} in framework `tf`."""
    rng = np.random.default_rng(0)
    h, c = (tf.constant(rng.standard_normal((B, U), dtype=np.float32)) for _ in range(2))
    r = tf.constant(rng.standard_normal((U, 4 * U), dtype=np.float32) / 8)
    p = tf.constant(rng.standard_normal((B, 4 * U), dtype=np.float32))
    proj = tf.constant(rng.standard_normal((T, B, 4 * U), dtype=np.float32))
    layer = tf.keras.layers.LSTM(U, return_sequences=True)
    x = tf.constant(mc.lstm_input())
    def fn(f):
        return tf.function(f, jit_compile=jit)
    return {"call": (fn(lambda x: x + 1), (h,)),
            "matmul": (fn(lambda h, r: tf.matmul(h, r)), (h, r)),
            "cell_step": (fn(lambda p, h, c, r: cell(tf, p, h, c, r)[0]), (p, h, c, r)),
            "loop_empty": (fn(lambda q, h, c, r: loop(tf, q, h, c, r, False)), (proj, h, c, r)),
            "loop_cell": (fn(lambda q, h, c, r: loop(tf, q, h, c, r, True)), (proj, h, c, r)),
            "layer": (fn(layer), (x,))}


def torch_pieces():
    """matmul, cell_step and layer (nn.LSTM, one layer) in PyTorch eager."""
    import torch_workloads as tw
    tw.configure(cm.cores())
    torch = tw._torch
    rng = np.random.default_rng(0)
    h, c = (torch.from_numpy(rng.standard_normal((B, U), dtype=np.float32)) for _ in range(2))
    r = torch.from_numpy(rng.standard_normal((U, 4 * U), dtype=np.float32) / 8)
    p = torch.from_numpy(rng.standard_normal((B, 4 * U), dtype=np.float32))

    def cell_step(p, h, c, r):
        i, f, g, o = torch.split(p + h @ r, U, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c)
    lstm = torch.nn.LSTM(U, U, 1, batch_first=True).eval()
    return {"matmul": (torch.matmul, (h, r)), "cell_step": (cell_step, (p, h, c, r)),
            "layer": (lambda x: lstm(x)[0], (torch.from_numpy(mc.lstm_input()),))}


def per_call(fn, args, calls):
    t = time.perf_counter()
    for _ in range(calls):
        cm.kb.materialize(fn(*args))
    return (time.perf_counter() - t) / calls


def measure(sides, rounds, round_time=0.3):
    """{piece: {side: [per-call s per round]}}, sides alternating each round."""
    out = {}
    for piece in sides["kiln"]:
        have = {s: ps for s, ps in sides.items() if piece in ps}
        calls = {}
        for s, ps in have.items():
            per_call(*ps[piece], 3)
            calls[s] = max(1, round(round_time / per_call(*ps[piece], 3)))
        out[piece] = {s: [] for s in have}
        for _ in range(rounds):
            for s, ps in have.items():
                time.sleep(0.05)
                out[piece][s].append(per_call(*ps[piece], calls[s]))
    return out


def _cells(by, peer):
    if peer not in by:
        return ["-", "-"]
    r = st.median([a / b for a, b in zip(by["kiln"], by[peer])])
    return [cm.kb.format_seconds(st.median(by[peer])), f"{r:.2f}"]


def report(times):
    head = ["piece", "kiln", "tensorflow", "kiln/tf", "torch eager", "kiln/torch"]
    rows = [[piece, cm.kb.format_seconds(st.median(by["kiln"]))] + _cells(by, "tensorflow")
            + _cells(by, "torch") for piece, by in times.items()]
    for row in [head] + rows:
        print(f"{row[0]:12s}" + "".join(f"{x:>12s}" for x in row[1:]))
    per_iter = {s: (st.median(times["loop_cell"][s]) - st.median(times["loop_empty"][s])) / T
                for s in ("kiln", "tensorflow")}
    print("cell step inside the loop (loop_cell - loop_empty) / 100: "
          + ", ".join(f"{s} {cm.kb.format_seconds(v)}" for s, v in per_iter.items()))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--jit", action="store_true", help="jit_compile=True everywhere")
    ap.add_argument("--torch", action="store_true", help="also PyTorch eager (3 pieces)")
    ap.add_argument("--kiln-python", default=os.path.join(cm.REPO, ".venv", "bin", "python"))
    a = ap.parse_args(argv)
    kiln = eager_pair.import_kiln(a.kiln_python)
    import tf_workloads
    tf_workloads.configure(cm.cores())
    sides = {"kiln": pieces(kiln, a.jit), "tensorflow": pieces(tf_workloads._tf, a.jit)}
    if a.torch:
        sides["torch"] = torch_pieces()
    print(f"load before: {cm.kb.machine_load()}")
    report(measure(sides, a.rounds))
    print(f"load after: {cm.kb.machine_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
