"""One worker of the multi-worker tests (test_multiworker.py launches it):

    mpirun -np 2 python mpi_worker.py SCENARIO

Scenarios:
  main    every check of the API on 2 workers; each check prints "rank R: ok NAME"
          and the run ends with "rank R: all ok" (a failed check raises).
  raise   worker 1 raises ValueError; worker 0, waiting in a collective, must
          raise UnavailableError naming worker 1 (it prints it and exits 7).
  die     worker 1 dies with os._exit(3) while worker 0 waits in a collective.
"""
import gzip
import json
import os
import sys
import tempfile

import numpy as np

import kiln as tf

SUM, MEAN = tf.distribute.ReduceOp.SUM, tf.distribute.ReduceOp.MEAN
CHECKS = []


def check(fn):
    """Registers a check of the main scenario (run in definition order)."""
    CHECKS.append(fn)
    return fn


def close(a, b, tol=1e-6, what=""):
    a = np.asarray(a.numpy() if hasattr(a, "numpy") else a)
    b = np.asarray(b.numpy() if hasattr(b, "numpy") else b)
    if a.shape != b.shape or not np.allclose(a, b, rtol=tol, atol=tol):
        raise AssertionError(f"{what}: {a} != {b} (max diff "
                             f"{np.max(np.abs(a - b)) if a.shape == b.shape else 'shape'})")


# ---- the checks of the main scenario ----

@check
def contexts(s, rank, size):
    assert s.num_replicas_in_sync == size == 2, s.num_replicas_in_sync
    assert s.cluster_resolver.task_type == "worker" and s.cluster_resolver.task_id == rank
    assert s.extended.should_checkpoint == (rank == 0)
    with s.scope():
        assert tf.distribute.in_cross_replica_context()
        assert tf.distribute.get_replica_context() is None
    ctx = s.run(tf.distribute.get_replica_context)
    assert ctx.replica_id_in_sync_group == rank and ctx.num_replicas_in_sync == 2


@check
def reduce(s, rank, size):
    # Worker r has r + 1 rows: [[r, 10 r], ...], so axis 0 differs between the workers.
    x = tf.constant(np.array([[rank, 10.0 * rank]] * (rank + 1), np.float32))
    close(s.reduce(SUM, tf.constant([1.0, rank]), axis=None), [2.0, 1.0], what="SUM")
    close(s.reduce(MEAN, tf.constant([1.0, rank]), axis=None), [1.0, 0.5], what="MEAN")
    close(s.reduce(SUM, x, axis=0), [2.0, 20.0], what="SUM axis 0")
    close(s.reduce(MEAN, x, axis=0), [2.0 / 3, 20.0 / 3], what="MEAN axis 0")
    nested = s.reduce("sum", {"a": tf.constant(1.0), "b": [tf.constant(rank, tf.int64)]})
    close(nested["a"], 2.0, what="nested a")
    assert int(nested["b"][0].numpy()) == 1 and nested["b"][0].dtype == tf.int64


@check
def all_reduce_in_function(s, rank, size):
    @tf.function
    def step(x):
        ctx = tf.distribute.get_replica_context()
        return ctx.all_reduce(SUM, x), ctx.all_reduce(MEAN, x)

    total, mean = s.run(step, args=(tf.constant([1.0, 2.0]) * (rank + 1),))
    close(total, [3.0, 6.0], what="all_reduce SUM")
    close(mean, [1.5, 3.0], what="all_reduce MEAN")
    ops = [n.op for n in step.get_concrete_function(tf.constant([1.0, 2.0])).graph
           .get_operations()]
    assert "CollectiveAllReduce" in ops, ops


@check
def profile_names_the_rank(s, rank, size):
    # Each worker profiles its own process: the file and process name carry its rank,
    # and the collective is a kernel event with its op.
    @tf.function
    def step(x):
        return tf.distribute.get_replica_context().all_reduce(SUM, x)

    s.run(step, args=(tf.constant([1.0]),))  # traced and compiled before the profile
    with tf.profiler.experimental.Profile(tempfile.mkdtemp(prefix=f"kiln-prof-{rank}-")):
        s.run(step, args=(tf.constant([1.0]),))
    result = tf.profiler.experimental.last_profile()
    assert result.trace_path.endswith(f"_worker{rank}.trace.json.gz"), result.trace_path
    trace = json.loads(gzip.open(result.trace_path).read())
    names = [e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"]
    assert names == [f"kiln worker {rank}"], names
    assert any(e.get("args", {}).get("op") == "CollectiveAllReduce"
               for e in trace["traceEvents"]), "no CollectiveAllReduce kernel event"


@check
def gather_and_broadcast(s, rank, size):
    x = tf.constant(np.full((rank + 1, 2), rank, np.float32))  # 1 row, then 2 rows
    close(s.gather(x, axis=0), [[0, 0], [1, 1], [1, 1]], what="all_gather")
    close(s.run(lambda: tf.distribute.get_replica_context().all_gather(
        tf.constant([[rank]]), axis=1)), [[0, 1]], what="all_gather axis 1")
    close(s.extended.broadcast_to(tf.constant([rank + 5.0])), [5.0], what="broadcast")


@check
def dataset_sharding(s, rank, size):
    ds = tf.data.Dataset.from_tensor_slices(
        {"x": np.arange(10), "y": np.arange(10) * 10}).batch(5)  # batches of 5: 2 + 3 rows
    got = [b["x"].tolist() for b in s.experimental_distribute_dataset(ds).as_numpy_iterator()]
    want = [[0, 1], [5, 6]] if rank == 0 else [[2, 3, 4], [7, 8, 9]]
    assert got == want, got
    dist = s.experimental_distribute_dataset(ds)

    @tf.function
    def total(d):
        t = tf.constant(0, tf.int64)
        for b in d:
            t += tf.reduce_sum(b["y"])
        return t
    assert int(total(dist).numpy()) == 10 * sum(sum(w) for w in want)
    per = s.distribute_datasets_from_function(
        lambda ctx: tf.data.Dataset.range(ctx.input_pipeline_id, 6, ctx.num_input_pipelines))
    assert [int(v) for v in per.as_numpy_iterator()] == list(range(rank, 6, 2))


@check
def mirrored_variables(s, rank, size):
    tf.keras.utils.set_random_seed(100 + rank)  # every worker draws other values
    outside = tf.Variable(tf.random.normal([3]))
    with s.scope():
        inside = tf.Variable(tf.random.normal([3]))
        layer = tf.keras.layers.Dense(4)
        layer.build((None, 3))
    both = s.gather(tf.stack([outside, inside]), axis=0).numpy()
    assert not np.allclose(both[0], both[2]), "variables outside the scope differ"
    close(both[1], both[3], what="variable made in scope")
    kernels = s.gather(layer.kernel.read_value(), axis=0).numpy()
    close(kernels[:3], kernels[3:], what="Dense kernel made in scope")


def digits(n=1280):
    """n digits samples (64 features, 10 classes), or random ones without sklearn."""
    try:
        from sklearn.datasets import load_digits
        d = load_digits()
        x, y = (d.data / 16.0).astype(np.float32), d.target.astype(np.int32)
    except ImportError:
        rng = np.random.RandomState(0)
        x = rng.rand(n, 64).astype(np.float32)
        y = (x[:, :10].argmax(1)).astype(np.int32)
    return x[:n], y[:n]


def mlp(seed):
    tf.keras.utils.set_random_seed(seed)
    return tf.keras.Sequential([tf.keras.Input(shape=(64,)),
                                tf.keras.layers.Dense(64, activation="relu"),
                                tf.keras.layers.Dense(10)])


def weights_agree(s, model, reference, what):
    for w, r in zip(model.get_weights(), reference.get_weights()):
        close(w, r, what=f"{what} vs one process")
        gathered = s.gather(tf.constant(w[None]), axis=0).numpy()
        close(gathered[0], gathered[1], tol=0, what=f"{what}: the workers' weights")


@check
def custom_training_loop(s, rank, size):
    x, y = digits(512)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with s.scope():
        model = mlp(seed=rank)  # worker 1's initial values are replaced by worker 0's
        opt = tf.keras.optimizers.SGD(0.5, momentum=0.9)
    reference = mlp(seed=7)
    reference.set_weights(model.get_weights())
    ref_opt = tf.keras.optimizers.SGD(0.5, momentum=0.9)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(64)

    def step(model, opt):
        def fn(batch):
            with tf.GradientTape() as tape:
                loss = loss_fn(batch[1], model(batch[0], training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        return fn

    @tf.function
    def distributed_step(batch):
        loss = s.run(step(model, opt), args=(batch,))
        return s.reduce(SUM, loss, axis=None)

    reference_step = tf.function(step(reference, ref_opt))
    for epoch in range(2):
        for batch in s.experimental_distribute_dataset(ds):
            loss = distributed_step(batch)
        for batch in ds:
            ref_loss = reference_step(batch)
    close(loss, ref_loss, tol=1e-5, what="last loss")
    weights_agree(s, model, reference, "custom loop")
    assert_bucketed(distributed_step.get_concrete_function(batch))


def assert_bucketed(cf):
    """The gradients go through Start/Done pairs (one bucket: this model is small)."""
    ops = [n.op for n in cf.graph.get_operations()]
    assert ops.count("CollectiveAllReduceStart") == ops.count("CollectiveAllReduceDone") == 1, \
        sorted(set(ops))


@check
def keras_fit(s, rank, size):
    x, y = digits()
    with s.scope():
        model = mlp(seed=rank)
        model.compile(tf.keras.optimizers.SGD(0.3, momentum=0.9),
                      tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
    assert model.distribute_strategy is s
    reference = mlp(seed=7)
    reference.set_weights(model.get_weights())
    reference.compile(tf.keras.optimizers.SGD(0.3, momentum=0.9),
                      tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
    np.random.seed(3)  # fit's shuffle: worker 0's permutation, as the reference draws it
    hist = model.fit(x, y, batch_size=64, epochs=2, verbose=0)
    np.random.seed(3)
    ref = reference.fit(x, y, batch_size=64, epochs=2, verbose=0)
    weights_agree(s, model, reference, "fit")
    assert_bucketed(model.train_function.get_concrete_function(
        (tf.constant(x[:32]), tf.constant(y[:32]))))
    # The logs are the workers' mean: the same numbers on every worker.
    logs = np.array([hist.history["loss"][-1], hist.history["accuracy"][-1]], np.float32)
    gathered = s.gather(tf.constant(logs[None]), axis=0).numpy()
    close(gathered[0], gathered[1], tol=0, what="fit logs on the workers")
    close(logs[0], ref.history["loss"][-1], tol=1e-4, what="fit loss vs one process")
    close(logs[1], ref.history["accuracy"][-1], tol=1e-6, what="fit accuracy vs one process")
    loss, acc = model.evaluate(x, y, batch_size=128, verbose=0)
    ref_loss, ref_acc = reference.evaluate(x, y, batch_size=128, verbose=0)
    close(loss, ref_loss, tol=1e-5, what="evaluate loss")
    close(acc, ref_acc, tol=1e-6, what="evaluate accuracy")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(128)
    model.fit(ds, epochs=1, verbose=0)
    reference.fit(ds, epochs=1, verbose=0)
    weights_agree(s, model, reference, "fit on a dataset")


@check
def uneven_batches(s, rank, size):
    # Batches of 63, 63, 63, 62: worker 0 gets 31 rows each time, worker 1 gets 32 and
    # then 31, so only worker 1 traces the train step again (the shapes differ).
    x, y = digits(251)
    with s.scope():
        model = mlp(seed=rank)
        model.compile(tf.keras.optimizers.Adam(0.01),
                      tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=63, epochs=2, shuffle=False, verbose=0)
    traces = model.train_function.experimental_get_tracing_count()
    assert traces == (1 if rank == 0 else 2), traces
    for w in model.get_weights():
        gathered = s.gather(tf.constant(w[None]), axis=0).numpy()
        close(gathered[0], gathered[1], tol=0, what="uneven batches: the workers' weights")


@check
def mismatched_graphs(s, rank, size):  # last: the communicator refuses collectives after it
    @tf.function
    def step(x):
        y = tf.distribute.get_replica_context().all_reduce(SUM, x)
        return y * 2.0 if rank == 1 else y  # worker 1 traces one more op
    try:
        s.run(step, args=(tf.constant(1.0),))
    except tf.errors.FailedPreconditionError as e:
        assert "the graph of step" in str(e), str(e)
    else:
        raise AssertionError("different graphs were not detected")


def main_scenario(s, rank, size):
    for fn in CHECKS:
        fn(s, rank, size)
        print(f"rank {rank}: ok {fn.__name__}", flush=True)
    print(f"rank {rank}: all ok", flush=True)


# ---- failures ----

def raise_scenario(s, rank, size):
    s.reduce(SUM, tf.constant(1.0))
    if rank == 1:
        raise ValueError("worker 1 gives up")
    try:
        s.reduce(SUM, tf.constant(1.0))
    except tf.errors.UnavailableError as e:
        print(f"rank 0 got UnavailableError: {e}", flush=True)
        sys.exit(7)
    raise AssertionError("worker 0 did not hear that worker 1 failed")


def die_scenario(s, rank, size):
    s.reduce(SUM, tf.constant(1.0))
    if rank == 1:
        os._exit(3)
    s.reduce(SUM, tf.constant(1.0))  # never completes: worker 1 is gone
    raise AssertionError("a collective completed without worker 1")


def main():
    scenario = sys.argv[1]
    tf.config.threading.set_intra_op_parallelism_threads(1)
    s = tf.distribute.MultiWorkerMirroredStrategy()
    rank, size = s.cluster_resolver.task_id, s.num_replicas_in_sync
    {"main": main_scenario, "raise": raise_scenario, "die": die_scenario}[scenario](
        s, rank, size)


if __name__ == "__main__":
    main()
