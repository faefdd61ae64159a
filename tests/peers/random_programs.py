"""Random programs written once against TensorFlow's API, run by kiln (`import kiln
as tf`) or by TensorFlow itself: the generated cases behind "TensorFlow's
SavedModels load in kiln and kiln's in TensorFlow" (tests/peers/check_random_programs.py).

    python tests/peers/random_programs.py {kiln|tensorflow} export DIR SEED...
    python tests/peers/random_programs.py {kiln|tensorflow} check DIR SEED...

`export` writes, per seed, DIR/p<SEED> (a SavedModel of a tf.Module whose
`serve` is the program, with variables), p<SEED>.x.npy and p<SEED>.y.npy (the
exporter's output); `check` loads each export with the other framework, runs
its `serve` and its serving signature on x and prints one JSON line per seed
(max difference, the output's scale, or the error).

A program is 3 to 9 steps on a [batch, 8] float32 value, drawn from: activations,
arithmetic with constants, reductions over either axis (keepdims or expanded
back), transpose/reshape, split/concat, gather, cumsum, argmax, softmax, matmul
with a variable, conv2d/avg_pool on a reshaped view, tf.cond and a while loop
on tensors, and a TensorArray scan over the batch.
"""
import importlib
import json
import os
import sys

import numpy as np

W = 8  # the value's width


def steps(tf):
    """The vocabulary: (name, make(rng, module) -> step(v))."""
    def act(rng, m):
        f = [tf.tanh, tf.sigmoid, tf.nn.relu, tf.abs, tf.sin, tf.nn.softplus,
             lambda u: tf.exp(-tf.square(u)), lambda u: tf.minimum(tf.square(u), 4.0)]
        return f[rng.randint(len(f))]

    def affine(rng, m):
        a, b = float(rng.uniform(0.5, 1.5)), float(rng.uniform(-1, 1))
        return lambda v: v * a + b

    def reduce_(rng, m):
        axis, kind = int(rng.randint(2)), int(rng.randint(3))
        if kind == 0:
            return lambda v: v - tf.reduce_mean(v, axis=axis, keepdims=True)
        if kind == 1:
            return lambda v: v / (1.0 + tf.reduce_max(tf.abs(v), axis=axis, keepdims=True))
        return lambda v: v + 0.1 * tf.expand_dims(tf.reduce_sum(v, axis=1), 1)

    def transpose(rng, m):
        return lambda v: tf.reshape(tf.transpose(tf.reshape(v, [-1, 2, 4]), [0, 2, 1]), [-1, W])

    def split_concat(rng, m):
        k = int(rng.randint(1, W))
        return lambda v: tf.concat(tf.split(v, [k, W - k], axis=1)[::-1], axis=1)

    def gather(rng, m):
        idx = [int(i) for i in rng.permutation(W)]
        return lambda v: tf.gather(v, idx, axis=1)

    def cumsum(rng, m):
        ex, rev = bool(rng.randint(2)), bool(rng.randint(2))
        return lambda v: 0.3 * tf.math.cumsum(v, axis=1, exclusive=ex, reverse=rev)

    def argmax(rng, m):
        return lambda v: v + 0.01 * tf.cast(tf.expand_dims(tf.argmax(v, axis=1), 1), tf.float32)

    def softmax(rng, m):
        return tf.nn.softmax if rng.randint(2) else tf.nn.log_softmax

    def matmul(rng, m):
        w = tf.Variable(rng.randn(W, W).astype(np.float32) * 0.4)
        m.vars.append(w)
        return lambda v: tf.matmul(v, w)

    def conv(rng, m):
        f = tf.Variable(rng.randn(2, 2, 1, 2).astype(np.float32) * 0.5)
        m.vars.append(f)
        pool = bool(rng.randint(2))

        def step(v):
            y = tf.nn.conv2d(tf.reshape(v, [-1, 2, 4, 1]), f, strides=1, padding="SAME")
            if pool:
                y = tf.nn.avg_pool2d(y, ksize=[1, 2], strides=[1, 2], padding="VALID")
                return tf.reshape(y, [-1, W])
            return tf.reduce_mean(tf.reshape(y, [-1, W, 2]), axis=2)
        return step

    def cond(rng, m):
        return lambda v: tf.cond(tf.reduce_sum(v) > 0, lambda: v * 0.5, lambda: v - 1.0)

    def loop(rng, m):
        n = int(rng.randint(1, 4))

        def step(v):
            i = tf.constant(0)
            while i < n:
                v = v * 0.9 + 0.1 * tf.tanh(v)
                i += 1
            return v
        return step

    def scan(rng, m):
        def step(v):
            n = tf.shape(v)[0]
            ta = tf.TensorArray(tf.float32, size=n)
            acc = tf.zeros([W])
            for i in tf.range(n):
                acc = acc * 0.5 + v[i]
                ta = ta.write(i, acc)
            return ta.stack()
        return step

    return [act, affine, reduce_, transpose, split_concat, gather, cumsum, argmax, softmax,
            matmul, conv, cond, loop, scan]


def program(tf, seed):
    """A tf.Module whose `serve` is random program `seed` (the same in both
    frameworks, variables included), and its input."""
    rng = np.random.RandomState(seed)
    m = tf.Module()
    m.vars = []
    vocab = steps(tf)
    chain = [vocab[rng.randint(len(vocab))](rng, m) for _ in range(rng.randint(3, 10))]

    @tf.function(input_signature=[tf.TensorSpec([None, W], tf.float32, name="x")])
    def serve(x):
        v = x
        for step in chain:
            v = step(v)
        return v

    m.serve = serve
    x = rng.randn(int(rng.randint(1, 5)), W).astype(np.float32)
    return m, x


def export(tf, out, seeds):
    for seed in seeds:
        m, x = program(tf, seed)
        path = os.path.join(out, f"p{seed}")
        tf.saved_model.save(m, path, signatures={"serving_default": m.serve})
        np.save(path + ".x.npy", x)
        np.save(path + ".y.npy", m.serve(tf.constant(x)).numpy())


def check(tf, out, seeds):
    for seed in seeds:
        path = os.path.join(out, f"p{seed}")
        try:
            m = tf.saved_model.load(path)
            x = tf.constant(np.load(path + ".x.npy"))
            want = np.load(path + ".y.npy")
            got = m.serve(x).numpy()
            sig = list(m.signatures["serving_default"](x=x).values())[0].numpy()
            diff = max(float(np.abs(got - want).max()), float(np.abs(sig - want).max()))
            print(json.dumps({"seed": seed, "max_diff": diff,
                              "scale": max(1.0, float(np.abs(want).max()))}))
        except Exception as e:  # noqa: BLE001 - reported, one line per program
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            print(json.dumps({"seed": seed, "error": f"{type(e).__name__}: {first[:300]}"}))


def main(argv):
    framework, what, out, *seeds = argv
    if framework == "tensorflow":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    tf = importlib.import_module(framework)
    os.makedirs(out, exist_ok=True)
    {"export": export, "check": check}[what](tf, out, [int(s) for s in seeds])


if __name__ == "__main__":
    main(sys.argv[1:])
