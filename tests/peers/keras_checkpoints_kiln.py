"""The kiln side of tests/peers/check_keras_checkpoints.py, and the cases and
steps both sides share (run with .venv/bin/python).

    .venv/bin/python tests/peers/keras_checkpoints_kiln.py write DIR
    .venv/bin/python tests/peers/keras_checkpoints_kiln.py read DIR

Each case is a model and an optimizer built from the same code in kiln.keras
and in TensorFlow's Keras 3. ``write``: compile, one train_on_batch, then
``tf.train.Checkpoint(model=model, optimizer=optimizer).write(DIR/<case>/ckpt)``
and DIR/<case>/values.npz (x, y, the output then, the optimizer's variables in
Keras' order, the output after one more step). ``read``: restores the other
side's checkpoints (built first, and delayed: restored before the model and
the slots exist), compares, and writes DIR/results.json ([ok, line] per check).
This module imports no framework: the caller passes its own.
"""
import json
import os
import sys

import numpy as np

# name -> (code setting `model` from `keras` and `layers`, optimizer code, inputs from `rng`)
CASES = {
    "seq_dense_adam": ("""
model = keras.Sequential([keras.Input((4,)), layers.Dense(5, activation="relu"),
                          layers.Dense(2)])
""", "keras.optimizers.Adam(0.01)", "rng.normal(size=(6, 4))"),
    "func_conv_bn_sgd": ("""
inp = keras.Input((6, 6, 2))
h = layers.BatchNormalization()(layers.Conv2D(3, 3, activation="relu")(inp))
model = keras.Model(inp, layers.Dense(2)(layers.Flatten()(h)))
""", "keras.optimizers.SGD(0.05, momentum=0.9, nesterov=True)", "rng.normal(size=(4, 6, 6, 2))"),
    "seq_lstm_rmsprop": ("""
model = keras.Sequential([keras.Input((5,), dtype="int32"), layers.Embedding(12, 4),
                          layers.LSTM(3), layers.Dense(2)])
""", "keras.optimizers.RMSprop(0.01, momentum=0.5, centered=True)",
        # one row of distinct tokens: TF's sparse Embedding gradient squares repeats apart
        "rng.permutation(12)[:5][None].astype('int32')"),
    "sub_adamw_amsgrad": ("""
class Net(keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = layers.Dense(4, activation="tanh")
        self.norm = layers.BatchNormalization()
        self.head = layers.Dense(2)

    def call(self, x, training=False):
        return self.head(self.norm(self.hidden(x), training=training))
model = Net()
""", "keras.optimizers.AdamW(0.01, weight_decay=0.05, amsgrad=True)", "rng.normal(size=(8, 3))"),
    "func_nested_adam_schedule": ("""
inp = keras.Input((6,))
inner = keras.Sequential([layers.Dense(4, activation="relu"), layers.Dense(3)])
h = layers.Add()([inner(inp), layers.Dense(3)(inp)])
model = keras.Model(inp, layers.Dense(2)(h))
""", "keras.optimizers.Adam(keras.optimizers.schedules.ExponentialDecay(0.05, 3, 0.5))",
        "rng.normal(size=(5, 6))"),
    "sub_list_sgd": ("""
class Stack(keras.Model):
    def __init__(self):
        super().__init__()
        self.blocks = [layers.Dense(4, activation="relu"), layers.Dense(3)]
        self.head = layers.Dense(2)

    def call(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)
model = Stack()
""", "keras.optimizers.SGD(0.1, momentum=0.5)", "rng.normal(size=(4, 5))"),
    "seq_bidir_gru_sepconv_adam": ("""
model = keras.Sequential([keras.Input((6, 4, 2)), layers.SeparableConv2D(3, 3, padding="same"),
                          layers.DepthwiseConv2D(3), layers.Reshape((4, 6)),
                          layers.Bidirectional(layers.GRU(2)),
                          layers.LayerNormalization(), layers.Dense(2)])
""", "keras.optimizers.Adam(0.02, beta_1=0.8)", "rng.normal(size=(3, 6, 4, 2))"),
}


# Delayed restores a reader cannot do (its own checkpoints included), with why:
# layers in a list are no part of Keras 3's object graph (only the optimizer's
# _trainable_variables reach them, once it is built); TF's Keras 3 does not
# restore a subclassed model's layers built after the restore.
NO_DELAYED = {"sub_list_sgd": {"kiln", "TF"}, "sub_adamw_amsgrad": {"TF"}}


class Framework:
    """What the steps need of a framework: its keras, Checkpoint class, and
    its optimizer's variables in Keras' order."""

    def __init__(self, name, keras, checkpoint, optimizer_variables):
        self.name, self.keras = name, keras
        self.checkpoint, self.optimizer_variables = checkpoint, optimizer_variables


def build(fw, name):
    code, opt_code, _ = CASES[name]
    scope = {"keras": fw.keras, "layers": fw.keras.layers}
    exec(code, scope)
    return scope["model"], eval(opt_code, scope)


def inputs(name):
    rng = np.random.default_rng(sorted(CASES).index(name))
    x = np.asarray(eval(CASES[name][2], {"rng": rng}))
    x = x if x.dtype.kind == "i" else x.astype(np.float32)
    return x, rng.normal(size=(len(x), 2)).astype(np.float32)


def write(fw, name, folder):
    model, opt = build(fw, name)
    x, y = inputs(name)
    model.compile(opt, "mse")
    model.train_on_batch(x, y)
    fw.checkpoint(model=model, optimizer=opt).write(os.path.join(folder, name, "ckpt"))
    values = {f"opt_{i}": v.numpy() for i, v in enumerate(fw.optimizer_variables(opt))}
    values["out"] = model(x).numpy()
    model.train_on_batch(x, y)
    np.savez(os.path.join(folder, name, "values.npz"), x=x, y=y, out2=model(x).numpy(),
             **values)


def _err(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return float("inf")
    return float(np.max(np.abs(got - want))) if got.size else 0.0


def read(fw, name, folder, delayed, consumed=True):
    """(ok, line) for restoring ``folder/<name>/ckpt`` into a fresh model."""
    v = np.load(os.path.join(folder, name, "values.npz"))
    model, opt = build(fw, name)
    if not delayed:
        model(v["x"])
        opt.build(model.trainable_variables)
    status = fw.checkpoint(model=model, optimizer=opt).read(os.path.join(folder, name, "ckpt"))
    status.assert_existing_objects_matched()
    errs = {}
    if not delayed:
        if consumed:
            status.assert_consumed()
        errs["output"] = _err(model(v["x"]).numpy(), v["out"])
        mine = [w.numpy() for w in fw.optimizer_variables(opt)]
        theirs = [v[k] for k in sorted((k for k in v.files if k.startswith("opt_")),
                                       key=lambda k: int(k[4:]))]
        errs["optimizer"] = max(map(_err, mine, theirs)) if len(mine) == len(theirs) \
            else float("inf")
    model.compile(opt, "mse")
    model.train_on_batch(v["x"], v["y"])
    if delayed and consumed:
        status.assert_consumed()
    errs["next step"] = _err(model(v["x"]).numpy(), v["out2"])
    ok = all(e <= (1e-4 if k == "next step" else 1e-5) for k, e in errs.items())
    return ok, ", ".join(f"{k} err {e:.1e}" for k, e in errs.items())


def read_all(fw, folder, source, modes=(False, True), consumed=True):
    """[(ok, line)] for every case and mode (but NO_DELAYED), an exception a failure."""
    out = []
    for name in CASES:
        for delayed in modes:
            if delayed and fw.name in NO_DELAYED.get(name, ()):
                continue
            label = f"{source}->{fw.name} {name}{' (delayed)' if delayed else ''}"
            try:
                ok, detail = read(fw, name, folder, delayed, consumed)
            except Exception as e:  # noqa: BLE001 (reported as a failed case)
                ok, detail = False, f"{type(e).__name__}: {str(e)[:300]}"
            out.append((ok, f"{label}: {detail}"))
    return out


def main(command, folder):
    import kiln
    from kiln.keras.saving import keras_paths
    fw = Framework("kiln", kiln.keras, kiln.train.Checkpoint, keras_paths.optimizer_variables)
    if command == "write":
        for name in CASES:
            kiln.keras.backend.clear_session()
            write(fw, name, folder)
        return 0
    results = read_all(fw, folder, "TF")
    with open(os.path.join(folder, "results.json"), "w") as f:
        json.dump(results, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
