"""kiln.distribute in one process: contexts, the strategies' semantics with one
worker, the pieces the multi-worker runs rely on (packing, sharding, mirroring,
loss scaling, graph agreement) and Keras under a strategy.

With one worker MultiWorkerMirroredStrategy still issues its Collective* ops
(reduce, all_reduce, mirroring a new variable), which are the identity; only
the optimizer's gradient aggregation is skipped, as there is nothing to sum.
MirroredStrategy (one CPU replica) issues none. test_multiworker.py runs 2 workers.
"""
import importlib.util
import os
import sys

import numpy as np
import pytest

import kiln as tf
from kiln import _kiln
from kiln.distribute import collectives, distribute_lib, input_lib, strategies

SUM, MEAN = tf.distribute.ReduceOp.SUM, tf.distribute.ReduceOp.MEAN


def _ops(fn, *args):
    return [n.op for n in fn.get_concrete_function(*args).graph.get_operations()]


@pytest.fixture
def mwms():
    return tf.distribute.MultiWorkerMirroredStrategy()


def test_default_strategy_outside_any_scope():
    s = tf.distribute.get_strategy()
    assert s.num_replicas_in_sync == 1
    assert not tf.distribute.has_strategy()
    assert not tf.distribute.in_cross_replica_context()
    ctx = tf.distribute.get_replica_context()
    assert ctx.replica_id_in_sync_group == 0 and ctx.strategy is s


@pytest.mark.parametrize("make", [tf.distribute.MirroredStrategy,
                                  tf.distribute.MultiWorkerMirroredStrategy])
def test_scope_and_run_contexts(make):
    s = make()
    with s.scope() as entered:
        assert entered is s
        assert tf.distribute.get_strategy() is s and tf.distribute.has_strategy()
        assert tf.distribute.in_cross_replica_context()
        assert tf.distribute.get_replica_context() is None  # as TensorFlow
        ctx = s.run(tf.distribute.get_replica_context)
        assert ctx.strategy is s and ctx.num_replicas_in_sync == 1
        assert ctx.replica_id_in_sync_group == 0
        assert s.run(tf.distribute.in_cross_replica_context) is False
        merged = ctx.merge_call(lambda strategy, v: (strategy, v,
                                                     tf.distribute.in_cross_replica_context()),
                                args=(3,))
        assert merged == (s, 3, True)
    assert not tf.distribute.has_strategy()
    # run() outside the scope enters the replica context too.
    assert s.run(lambda a, b=0: a + b, args=(1,), kwargs={"b": 2}) == 3


def test_mixing_strategies_is_an_error():
    a, b = tf.distribute.MirroredStrategy(), tf.distribute.MirroredStrategy()
    with a.scope():
        with a.scope():  # the same strategy again is fine
            pass
        with pytest.raises(ValueError, match="Mixing different"):
            with b.scope():
                pass


def test_single_worker_multi_worker_strategy(mwms):
    assert mwms.num_replicas_in_sync == 1
    assert mwms.cluster_resolver.task_type == "worker"
    assert mwms.cluster_resolver.task_id == 0
    assert mwms.extended.should_checkpoint and mwms.extended.experimental_between_graph
    assert mwms.experimental_local_results(5) == (5,)
    assert _kiln.comm_info()[:2] == (0, 1)


@pytest.mark.parametrize("make", [tf.distribute.MirroredStrategy,
                                  tf.distribute.MultiWorkerMirroredStrategy])
def test_reduce(make):
    s = make()
    x = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 9.0]])
    np.testing.assert_allclose(s.reduce(SUM, x, axis=None).numpy(), x.numpy())
    np.testing.assert_allclose(s.reduce("mean", x, axis=None).numpy(), x.numpy())
    np.testing.assert_allclose(s.reduce(SUM, x, axis=0).numpy(), [9.0, 15.0])
    np.testing.assert_allclose(s.reduce(MEAN, x, axis=0).numpy(), [3.0, 5.0])
    np.testing.assert_allclose(s.reduce(MEAN, x, axis=1).numpy(), [1.5, 3.5, 7.0])
    ints = s.reduce(MEAN, tf.constant([1, 2], tf.int64), axis=0)
    assert ints.dtype == tf.int64 and int(ints.numpy()) == 1
    nested = s.reduce(SUM, {"a": x, "b": (tf.constant(2.0),)}, axis=None)
    assert set(nested) == {"a", "b"} and float(nested["b"][0].numpy()) == 2.0
    with pytest.raises(ValueError, match="reduce_op"):
        s.reduce("product", x)


def test_all_reduce_in_a_function_emits_collectives(mwms):
    @tf.function
    def step(x, y):
        ctx = tf.distribute.get_replica_context()
        return ctx.all_reduce(SUM, {"x": x, "y": y, "n": tf.constant(3)})

    x, y = tf.constant([1.0, 2.0]), tf.constant([[3.0]])
    out = mwms.run(step, args=(x, y))
    np.testing.assert_allclose(out["x"].numpy(), [1.0, 2.0])
    np.testing.assert_allclose(out["y"].numpy(), [[3.0]])
    assert int(out["n"].numpy()) == 3
    # float32 leaves packed into one collective, the int32 one in another
    assert _ops(step, x, y).count("CollectiveAllReduce") == 2

    mirrored = tf.distribute.MirroredStrategy()
    assert "CollectiveAllReduce" not in _ops(tf.function(
        lambda x: mirrored.run(lambda v: tf.distribute.get_replica_context().all_reduce(
            SUM, v), args=(x,))), x)


def test_gather_and_broadcast_with_one_worker(mwms):
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(mwms.gather(x, axis=0).numpy(), x.numpy())
    np.testing.assert_allclose(mwms.gather(x, axis=1).numpy(), x.numpy())
    np.testing.assert_allclose(mwms.extended.broadcast_to(x).numpy(), x.numpy())
    ctx = mwms.run(tf.distribute.get_replica_context)
    np.testing.assert_allclose(ctx.all_gather(x, axis=0).numpy(), x.numpy())


def test_gradient_buckets_round_trip():
    rng = np.random.RandomState(0)
    grads = [tf.constant(rng.rand(2, 3).astype(np.float32)), tf.constant([1.0, 2.0]),
             tf.constant(np.ones(3)), tf.constant(5.0), tf.constant(rng.rand(4, 4, 2))]
    shapes = [g.shape.as_list() for g in grads]
    for limit in (1, 24, collectives.BUCKET_BYTES):
        out = collectives.all_reduce_gradients(grads, shapes, bucket_bytes=limit)
        for g, o in zip(grads, out):
            assert o.dtype == g.dtype and o.shape == g.shape
            np.testing.assert_array_equal(o.numpy(), g.numpy())


def test_gradient_buckets_order_and_size():
    f32 = [tf.constant(np.zeros(n, np.float32)) for n in (4, 4, 4)]  # 16 bytes each
    f64 = tf.constant(np.zeros(2))
    grads = f32[:2] + [f64] + f32[2:]
    shapes = [g.shape.as_list() for g in grads]
    # last variable first; a bucket closes once it holds 32 bytes; one dtype per bucket
    groups = collectives._groups(grads, shapes, reversed(range(4)), 32)
    assert groups == [[3, 1], [2], [0]]

    @tf.function
    def reduce_all(a, b, c, d):
        return collectives.all_reduce_gradients([a, b, c, d], shapes, bucket_bytes=32)
    ops = _ops(reduce_all, *grads)
    assert ops.count("CollectiveAllReduceStart") == 3
    assert ops.count("CollectiveAllReduceDone") == 3


def test_distributed_dataset_shards_each_batch():
    ds = tf.data.Dataset.from_tensor_slices(
        (np.arange(14), np.arange(14) * 10)).batch(7)
    mine = input_lib.DistributedDataset(ds, rank=1, size=3)  # rows [2, 4) of 7
    got = [(a.tolist(), b.tolist()) for a, b in mine.as_numpy_iterator()]
    assert got == [([2, 3], [20, 30]), ([9, 10], [90, 100])]
    assert int(mine.cardinality().numpy()) == 2

    @tf.function
    def total(d):
        t = tf.constant(0, tf.int64)
        for a, b in d:
            t += tf.reduce_sum(b)
        return t
    assert int(total(mine).numpy()) == 20 + 30 + 90 + 100
    even = input_lib.DistributedDataset(ds.unbatch().batch(6, drop_remainder=True), 0, 2)
    assert even.element_spec[0].shape.as_list() == [3]
    assert [input_lib.local_rows(7, r, 3) for r in range(3)] == [(0, 2), (2, 4), (4, 7)]


def test_strategy_datasets_with_one_worker(mwms):
    ds = tf.data.Dataset.range(6).batch(4)
    dist = mwms.experimental_distribute_dataset(ds)
    assert [v.tolist() for v in dist.as_numpy_iterator()] == [[0, 1, 2, 3], [4, 5]]
    assert mwms.experimental_distribute_dataset(dist) is dist
    seen = []

    def dataset_fn(ctx):
        seen.append((ctx.num_input_pipelines, ctx.input_pipeline_id,
                     ctx.get_per_replica_batch_size(8)))
        return tf.data.Dataset.range(3)
    per = mwms.distribute_datasets_from_function(dataset_fn)
    assert seen == [(1, 0, 8)] and list(per.as_numpy_iterator()) == [0, 1, 2]
    assert mwms.experimental_distribute_values_from_function(
        lambda ctx: ctx.replica_id_in_sync_group + 10) == 10
    with pytest.raises(ValueError, match="divisible"):
        input_lib.InputContext(1, 0, 3).get_per_replica_batch_size(8)


def test_variables_created_in_scope_are_mirrored(mwms, monkeypatch):
    mirrored = []
    monkeypatch.setattr(type(mwms), "_mirror", lambda self, v: mirrored.append(v))
    tf.Variable(1.0)  # outside the scope: left alone
    made = []

    @tf.function
    def make():
        if not made:  # created while tracing: mirrored (eagerly) all the same
            made.append(tf.Variable(3.0))
        return made[0].read_value()

    with mwms.scope():
        v = tf.Variable([1.0, 2.0])
        layer = tf.keras.layers.Dense(2)
        layer.build((None, 3))
        make()
    assert mirrored == [v, layer.kernel, layer.bias, made[0]]


def test_mirroring_keeps_values_with_one_worker(mwms):
    with mwms.scope():
        v = tf.Variable([1.0, 2.0])
        i = tf.Variable(7, dtype=tf.int64)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    assert int(i.numpy()) == 7


def test_run_agrees_on_a_functions_graph_once(mwms, monkeypatch):
    agreed = []
    monkeypatch.setattr(_kiln, "comm_agree", lambda values, what: agreed.append((values, what)))

    @tf.function
    def double(x):
        return x * 2.0
    mwms.run(double, args=(tf.constant(1.0),))
    mwms.run(double, args=(tf.constant(2.0),))
    assert len(agreed) == 1 and agreed[0][1] == "the graph of double"
    # A later trace is not agreed on: workers may retrace at different steps.
    mwms.run(double, args=(tf.constant([1.0, 2.0]),))
    assert len(agreed) == 1
    assert double.experimental_get_tracing_count() == 2  # agreeing does not retrace
    tf.distribute.MirroredStrategy().run(double, args=(tf.constant(1.0),))
    assert len(agreed) == 1  # no communication, nothing to agree on


def test_graph_fingerprint_is_the_structure():
    def graph(fn, *args):
        return tf.function(fn, autograph=False).get_concrete_function(*args).graph
    x = tf.constant([1.0, 2.0])
    a = collectives.graph_fingerprint(graph(lambda t: t * 2.0 + 1.0, x))
    with tf.name_scope("other"):
        b = collectives.graph_fingerprint(graph(lambda t: t * 3.0 + 5.0, x))
    c = collectives.graph_fingerprint(graph(lambda t: (t * 2.0) * 1.0, x))
    d = collectives.graph_fingerprint(graph(lambda t: t * 2.0 + 1.0, tf.constant([1.0])))
    e = collectives.graph_fingerprint(graph(lambda t: t * 2.0 + 1.0,
                                            tf.constant([1.0], tf.float64)))
    assert a == b == d and a != c and a != e and 0 <= a < 2**62  # shapes may differ


def test_loss_scaling_follows_the_strategy():
    two = distribute_lib.Strategy(rank=0, size=2)  # two replicas, no communication
    loss = tf.keras.losses.MeanSquaredError()
    y, p = tf.constant([[1.0], [2.0]]), tf.constant([[2.0], [4.0]])
    assert float(loss(y, p).numpy()) == 2.5
    with two.scope():
        assert float(loss(y, p).numpy()) == 1.25
        assert float(tf.keras.losses.MeanSquaredError(reduction="sum")(y, p).numpy()) == 5.0
        assert float(distribute_lib.unscale_loss_for_distribution(
            tf.constant(1.25)).numpy()) == 2.5
    assert float(two.run(lambda: loss(y, p)).numpy()) == 1.25


def test_excepthook_reports_to_the_other_workers(monkeypatch):
    reported, chained = [], []
    monkeypatch.setattr(_kiln, "comm_fail", reported.append)
    monkeypatch.setattr(sys, "excepthook", lambda *a: chained.append(a[0]))
    strategies._report_failures()
    strategies._report_failures()  # installed once
    sys.excepthook(ValueError, ValueError("bad input"), None)
    assert reported == ["ValueError: bad input"] and chained == [ValueError]


def test_communication_options():
    opts = tf.distribute.experimental.CommunicationOptions(bytes_per_pack=1024)
    s = tf.distribute.MultiWorkerMirroredStrategy(communication_options=opts)
    assert s._bucket_bytes == 1024
    with pytest.raises(ValueError):
        tf.distribute.experimental.CommunicationOptions(timeout_seconds=0)
    with pytest.raises(NotImplementedError, match="cluster_resolver"):
        tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=object())
    with pytest.raises(ValueError, match="CPU"):
        tf.distribute.MirroredStrategy(["/gpu:0"])


def _mlp():
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)),
                                 tf.keras.layers.Dense(8, activation="relu"),
                                 tf.keras.layers.Dense(3)])
    model.compile(tf.keras.optimizers.Adam(0.01),
                  tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


@pytest.mark.parametrize("make", [tf.distribute.MirroredStrategy,
                                  tf.distribute.MultiWorkerMirroredStrategy])
def test_keras_fit_under_a_one_worker_strategy_matches_plain_fit(make):
    rng = np.random.RandomState(1)
    x, y = rng.rand(96, 4).astype(np.float32), rng.randint(0, 3, 96).astype(np.int32)
    s = make()
    with s.scope():
        model = _mlp()
    assert model.distribute_strategy is s
    plain = _mlp()
    assert plain.distribute_strategy is tf.distribute.get_strategy()
    hist = model.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
    ref = plain.fit(x, y, batch_size=32, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(model.get_weights(), plain.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(hist.history["loss"], ref.history["loss"], rtol=1e-6)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(48)
    np.testing.assert_allclose(model.evaluate(ds, verbose=0), plain.evaluate(ds, verbose=0),
                               rtol=1e-6)
    assert model.train_function.experimental_get_tracing_count() <= 2


def test_optimizer_takes_aggregation_arguments():
    v = tf.Variable([1.0])
    opt = tf.keras.optimizers.SGD(0.5)
    opt.apply_gradients([(tf.constant([1.0]), v)], skip_gradients_aggregation=True)
    opt.apply_gradients([(tf.constant([1.0]), v)], experimental_aggregate_gradients=False)
    np.testing.assert_allclose(v.numpy(), [0.0])
    with pytest.raises(TypeError, match="unexpected"):
        opt.apply_gradients([(tf.constant([1.0]), v)], bogus=1)


def test_train_distributed_example_as_one_process():
    pytest.importorskip("sklearn", reason="scikit-learn (scripts/requirements.txt) is not "
                        "installed")
    examples = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples")
    sys.path.insert(0, examples)
    try:
        spec = importlib.util.spec_from_file_location(
            "train_distributed", os.path.join(examples, "train_distributed.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        result = module.main(["--epochs", "5", "--verbose", "0"])
    finally:
        sys.path.remove(examples)
    assert result["workers"] == 1 and result["val_accuracy"] >= 0.9


def test_bucket_all_reduces_overlap_the_backward_pass():
    # Three Dense layers, one bucket each: in the optimized step each bucket's
    # start comes right after its gradients, before the earlier layers' backward
    # products; the dones wait until the update needs the sums.
    model = tf.keras.Sequential([tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(10)])
    model.build((None, 32))
    variables = model.trainable_variables

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, variables)
        summed = collectives.all_reduce_gradients(grads, [v.shape.as_list() for v in variables],
                                                  bucket_bytes=1000)
        for g, v in zip(summed, variables):
            v.assign_sub(0.1 * g)
        return loss

    x, y = tf.ones([8, 32]), tf.ones([8, 10])
    step(x, y)
    ops = [n.op for n in step.get_concrete_function(x, y).optimized_graph.get_operations()]
    starts = [i for i, op in enumerate(ops) if op == "CollectiveAllReduceStart"]
    dones = [i for i, op in enumerate(ops) if op == "CollectiveAllReduceDone"]
    products = [i for i, op in enumerate(ops) if op == "BatchMatMulV2"]
    assert len(starts) == 3 and len(dones) == 3
    # forward products, then backward ones with the first two starts among them
    assert starts[0] < products[-1] and starts[1] < products[-1], (starts, products)
    assert max(starts) < min(dones)
    traced = [n.op for n in step.get_concrete_function(x, y).graph.get_operations()]
    first_start = traced.index("CollectiveAllReduceStart")
    assert all(i < first_start for i, op in enumerate(traced) if op == "BatchMatMulV2")
