"""Train a small MLP on scikit-learn's digits with kiln.keras, then time the
train step eagerly and as one kiln.function.

    .venv/bin/python examples/train_digits.py [--epochs N] [--no-bench] [--min-time S]

The digits (1797 8x8 images, ten classes) ship inside scikit-learn, so nothing
is downloaded. The model is 64 -> 64 relu -> 10 logits, trained with Adam on
sparse categorical crossentropy; fit() runs each batch through the compiled
train step (forward, loss, gradients and the Adam update in one graph).
"""
import argparse
import time

import numpy as np

import kiln as tf
from kiln import benchmark as kb


def load(seed=0, val_fraction=0.2):
    """(x_train, y_train, x_val, y_val): pixels scaled to [0, 1], a stratified split."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    x_train, x_val, y_train, y_val = train_test_split(
        x, y, test_size=val_fraction, random_state=seed, stratify=y)
    return x_train, y_train, x_val, y_val


def build_model(learning_rate=1e-2):
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(64,)),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def time_steps(model, x, y, batch_size, min_time):
    """kiln.benchmark of one train step on one batch: eager vs kiln.function."""
    batch = (tf.constant(x[:batch_size]), tf.constant(y[:batch_size]))
    compiled = model.make_train_function()
    eager = model.train_step
    r_eager = kb.benchmark(eager, batch, name="train step", mode="eager", min_time=min_time)
    r_fn = kb.benchmark(compiled, batch, name="train step", mode="function",
                        min_time=min_time)
    return r_eager, r_fn


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-bench", action="store_true", help="skip the step timing")
    p.add_argument("--min-time", type=float, default=1.0,
                   help="seconds of samples per benchmark mode")
    p.add_argument("--verbose", type=int, default=2)
    p.add_argument("--export", metavar="DIR",
                   help="also export the trained model for C++ serving (examples/serve.cpp)")
    args = p.parse_args(argv)

    tf.keras.utils.set_random_seed(args.seed)
    x_train, y_train, x_val, y_val = load(args.seed)
    print(f"digits: {len(x_train)} training and {len(x_val)} validation samples, "
          f"{x_train.shape[1]} features, 10 classes")
    model = build_model()
    start = time.perf_counter()
    history = model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs,
                        validation_data=(x_val, y_val), verbose=args.verbose)
    fit_s = time.perf_counter() - start
    val_loss, val_acc = model.evaluate(x_val, y_val, verbose=0)
    traces = model.train_function.experimental_get_tracing_count()
    print(f"fit: {args.epochs} epochs in {fit_s:.2f} s ({traces} traces of the train step); "
          f"validation accuracy {val_acc:.4f}, loss {val_loss:.4f}")
    result = {"val_accuracy": val_acc, "val_loss": val_loss, "fit_s": fit_s,
              "traces": traces, "history": history.history}
    if not args.no_bench:
        r_eager, r_fn = time_steps(model, x_train, y_train, args.batch_size, args.min_time)
        print(r_eager)
        print(r_fn)
        ratio = r_eager.median / r_fn.median
        print(f"train step (batch {args.batch_size}): eager "
              f"{kb.format_seconds(r_eager.median)} vs kiln.function "
              f"{kb.format_seconds(r_fn.median)}: {ratio:.1f}x faster compiled")
        result.update(eager=r_eager, function=r_fn, speedup=ratio)
    print(f"final validation accuracy: {val_acc:.4f}")
    if args.export:
        from export_model import export_all  # beside this script; only when exporting
        export_all(model, x_val[:32], args.export)
    return result


if __name__ == "__main__":
    main()
