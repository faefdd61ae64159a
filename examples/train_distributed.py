"""Train the digits MLP data-parallel with Keras fit under MultiWorkerMirroredStrategy.

    .venv/bin/python examples/train_distributed.py                 # one worker
    mpirun -np 2 .venv/bin/python examples/train_distributed.py    # two workers

Each worker takes its half of every global batch; the optimizer sums the
gradients over the workers, so the weights stay the same everywhere and equal
those of one process training on the full batches. The model is made in the
strategy's scope, which gives every worker worker 0's initial weights. fit's
logs are averaged over the workers (the same on each); worker 0 prints them.
"""
import argparse

import numpy as np

import kiln as tf
from train_digits import build_model, load  # beside this script


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=64, help="the global batch size")
    p.add_argument("--verbose", type=int, default=2)
    args = p.parse_args(argv)

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    rank = strategy.cluster_resolver.task_id
    tf.keras.utils.set_random_seed(rank)  # differs per worker: the scope makes them agree
    x_train, y_train, x_val, y_val = load()
    with strategy.scope():
        model = build_model()
    np.random.seed(0)  # fit's shuffling follows worker 0's generator anyway
    history = model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs,
                        verbose=args.verbose if rank == 0 else 0)
    val_loss, val_acc = model.evaluate(x_val, y_val, batch_size=args.batch_size, verbose=0)
    if rank == 0:
        print(f"{strategy.num_replicas_in_sync} worker(s): validation accuracy "
              f"{val_acc:.4f}, loss {val_loss:.4f}")
    return {"val_accuracy": val_acc, "val_loss": val_loss, "history": history.history,
            "workers": strategy.num_replicas_in_sync}


if __name__ == "__main__":
    main()
