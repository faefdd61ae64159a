"""`for x in dataset` and iterators inside kiln.function: the seed guide's
examples (002, "Better performance with tf.function") and graph sizes."""
import io
import warnings

import numpy as np
import pytest

import kiln as tf
from kiln import errors

Dataset = tf.data.Dataset


@pytest.fixture(autouse=True)
def _quiet_retracing():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tf.RetracingWarning)
        yield


def i64(v):
    return tf.constant(int(v), dtype=tf.int64)


def graph_size(f, *args):
    return len(f.get_concrete_function(*args).graph.as_graph_def().node)


def make_train():
    @tf.function
    def train(dataset):
        loss = tf.constant(0)
        for x, y in dataset:
            loss += tf.abs(y - x)  # Some dummy computation.
        return loss
    return train


def test_seed_measure_graph_size():
    # The guide: a Python list unrolls (grows with the data); a dataset does not.
    train = make_train()
    small_data = [(1, 1)] * 3
    big_data = [(1, 1)] * 10
    assert graph_size(train, small_data) < graph_size(train, big_data)
    small = graph_size(train, Dataset.from_generator(lambda: small_data, (tf.int32, tf.int32)))
    big = graph_size(train, Dataset.from_generator(lambda: big_data, (tf.int32, tf.int32)))
    assert small == big
    assert small <= 8  # the guide shows 6 nodes for TensorFlow; kiln has 6 too


def test_seed_train_values():
    train = make_train()
    data = [(1, 4), (2, 2), (5, 1)]
    want = sum(abs(y - x) for x, y in data)
    assert int(train(data).numpy()) == want
    gen = Dataset.from_generator(lambda: data, (tf.int32, tf.int32))
    assert int(train(gen).numpy()) == want
    assert int(train(gen).numpy()) == want  # the generator restarts on every call
    x = np.array([d[0] for d in data], np.int32)
    y = np.array([d[1] for d in data], np.int32)
    assert int(train(Dataset.from_tensor_slices((x, y))).numpy()) == want


def test_tensor_slices_graph_size_does_not_grow():
    train = make_train()
    sizes = []
    for n in (3, 10, 1000):
        x = np.ones(n, np.int32)
        sizes.append(graph_size(train, Dataset.from_tensor_slices((x, 2 * x))))
    assert sizes[0] == sizes[1] == sizes[2]
    x = np.arange(1000, dtype=np.int32)
    assert int(train(Dataset.from_tensor_slices((x, 2 * x))).numpy()) == int(x.sum())


def test_train_loop_with_variables():
    # A training-style loop over from_tensor_slices((x, y)) updating a variable.
    x = np.linspace(0., 1., 8).astype(np.float32)
    y = (3. * x + 1.).astype(np.float32)
    dataset = Dataset.from_tensor_slices((x, y)).batch(4)
    w = tf.Variable(0.)

    @tf.function
    def train_epoch(ds):
        total = tf.constant(0.)
        for xb, yb in ds:
            err = tf.reduce_mean(yb - w * xb)
            w.assign_add(0.1 * err)
            total += err
        return total

    t1 = float(train_epoch(dataset).numpy())
    v1 = float(w.numpy())
    t2 = float(train_epoch(dataset).numpy())
    assert v1 > 0 and float(w.numpy()) > v1 and t2 < t1
    n_nodes = graph_size(train_epoch, dataset)
    big = Dataset.from_tensor_slices((np.tile(x, 50), np.tile(y, 50))).batch(4)
    assert graph_size(train_epoch, big) == n_nodes


def test_seed_good_consume_next():
    out = io.StringIO()

    @tf.function
    def good_consume_next(iterator):
        # This is ok, iterator is a tf.data.Iterator
        tf.print("Value:", next(iterator), output_stream=out)

    ds = Dataset.from_tensor_slices([1, 2, 3])
    iterator = iter(ds)
    good_consume_next(iterator)
    good_consume_next(iterator)
    good_consume_next(iterator)
    assert out.getvalue() == "Value: 1\nValue: 2\nValue: 3\n"
    with pytest.raises(errors.OpError, match="End of sequence"):
        good_consume_next(iterator)


def test_next_in_function_returns_structures():
    it = iter(Dataset.from_tensor_slices(({"a": [1, 2]}, [[1., 2.], [3., 4.]])))

    @tf.function
    def f(i):
        d, v = next(i)
        return d["a"], v
    a, v = f(it)
    assert int(a.numpy()) == 1 and v.numpy().tolist() == [1., 2.]
    assert v.shape == tf.TensorShape([2])  # static shapes from element_spec
    a, v = f(it)
    assert int(a.numpy()) == 2 and v.numpy().tolist() == [3., 4.]


def test_eager_next_and_get_next():
    it = iter(Dataset.range(2))
    assert int(next(it).numpy()) == 0
    assert int(it.get_next().numpy()) == 1
    with pytest.raises(StopIteration):
        next(it)
    with pytest.raises(errors.OutOfRangeError):
        it.get_next()
    assert it.element_spec == tf.TensorSpec([], tf.int64)


def test_iterator_created_in_function():
    @tf.function
    def f():
        it = iter(Dataset.range(5))
        a = next(it)
        b = next(it)
        return a * 10 + b
    assert int(f().numpy()) == 1
    assert int(f().numpy()) == 1  # a fresh iterator each call


def test_for_over_iterator_takes_the_rest():
    it = iter(Dataset.range(10))
    assert int(next(it).numpy()) == 0

    @tf.function
    def rest(i):
        s = i64(0)
        for x in i:
            s += x
        return s
    assert int(rest(it).numpy()) == sum(range(1, 10))


@pytest.mark.parametrize("make", [lambda: Dataset.range(10),
                                  lambda: Dataset.from_generator(lambda: range(10), tf.int64)],
                         ids=["indexed", "generator"])
def test_break_and_continue(make):
    @tf.function
    def f(ds):
        s = i64(0)
        for x in ds:
            if x % 2 == 1:
                continue
            if x > 6:
                break
            s += x
        return s
    assert int(f(make()).numpy()) == 0 + 2 + 4 + 6


def test_break_does_not_pull_extra_elements():
    pulled = []

    def gen():
        for i in range(100):
            pulled.append(i)
            yield i

    @tf.function
    def f(ds):
        s = i64(0)
        for x in ds:
            s += x
            if x >= 2:
                break
        return s
    assert int(f(Dataset.from_generator(gen, tf.int64, output_shapes=[])).numpy()) == 3
    assert pulled == [0, 1, 2]


def test_take_from_generator_pulls_only_what_it_needs():
    pulled = []

    def gen():
        for i in range(100):
            pulled.append(i)
            yield i

    @tf.function
    def f(ds):
        s = i64(0)
        for x in ds:
            s += x
        return s
    assert int(f(Dataset.from_generator(gen, tf.int64).take(3)).numpy()) == 3
    assert pulled == [0, 1, 2]


def test_loop_state_with_tensor_array():
    @tf.function
    def squares(ds):
        ta = tf.TensorArray(tf.int64, size=0, dynamic_size=True)
        i = 0
        for x in ds:
            ta = ta.write(i, x * x)
            i += 1
        return ta.stack()
    assert squares(Dataset.range(5)).numpy().tolist() == [0, 1, 4, 9, 16]


def test_nested_dataset_loops():
    @tf.function
    def f(outer, inner):
        s = i64(0)
        for x in outer:
            for y in inner:
                s += x * y
        return s
    got = f(Dataset.range(1, 4), Dataset.from_generator(lambda: [1, 10], tf.int64))
    assert int(got.numpy()) == (1 + 2 + 3) * 11


def test_dataset_built_inside_function():
    @tf.function
    def f(x):
        ds = Dataset.from_tensor_slices(x).map(lambda v: v * 2).filter(lambda v: v > 2)
        s = tf.constant(0.)
        for v in ds.batch(2):
            s += tf.reduce_sum(v)
        return s
    assert float(f(tf.constant([1., 2., 3.])).numpy()) == 10.
    assert float(f(tf.constant([5., 0.5, 1., 7., 2.])).numpy()) == 28.


def test_unconverted_python_for_fails_clearly():
    @tf.function(autograph=False)
    def f(ds):
        s = i64(0)
        for x in ds:  # a Python loop over a dataset while tracing never ends
            s += x
        return s
    with pytest.raises(RuntimeError, match="AutoGraph"):
        f(Dataset.range(3))


def test_eager_for_loop_matches():
    tf.config.run_functions_eagerly(True)
    try:
        train = make_train()
        assert int(train(Dataset.from_tensor_slices(([1, 2], [3, 7]))).numpy()) == 7
    finally:
        tf.config.run_functions_eagerly(False)


def test_kiln_for_loop_eager_respects_extra_test():
    ds = Dataset.range(10)
    state = ds._kiln_for_loop(lambda x, s: (s[0] + x,), (i64(0),),
                              lambda s: s[0] < 5)
    assert int(state[0].numpy()) == 6  # 0+1+2+3, then 6 stops the loop


@pytest.mark.parametrize("drop,want", [(False, [[4, 6], [8, 10], [12]]),
                                       (True, [[4, 6], [8, 10]])])
def test_batch_of_filtered_dataset_built_inside_function(drop, want):
    got = []

    @tf.function
    def f(x):
        ds = Dataset.from_tensor_slices(x).map(lambda v: v * 2).filter(lambda v: v > 2)
        for b in ds.batch(2, drop_remainder=drop):
            tf.data.py_function(lambda t: got.append(t.numpy().tolist()), [b], [])
        return 0
    f(tf.constant(np.arange(7, dtype=np.int32)))
    assert got == want


def test_batch_of_filtered_dataset_with_break():
    @tf.function
    def f(x):
        s = tf.constant(0)
        for b in Dataset.from_tensor_slices(x).filter(lambda v: v % 2 == 0).batch(2):
            if tf.reduce_sum(b) > 10:
                break
            s += tf.reduce_sum(b)
        return s
    # batches: [0, 2], [4, 6] (sum 10), [8, 10] (break)
    assert int(f(tf.constant(np.arange(12, dtype=np.int32))).numpy()) == 12


def test_map_capturing_traced_tensor_and_unknown_length():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32),
                                  tf.TensorSpec([], tf.float32)])
    def f(x, scale):
        s = tf.constant(0.)
        for v in Dataset.from_tensor_slices(x).map(lambda v: v * scale).skip(1):
            s += v
        return s
    assert float(f(tf.constant([1., 2., 3.]), tf.constant(2.)).numpy()) == 10.
    assert float(f(tf.constant([5.]), tf.constant(2.)).numpy()) == 0.
    assert float(f(tf.constant(np.ones(100, np.float32)), tf.constant(.5)).numpy()) == 49.5


def test_pulled_dataset_of_traced_tensors_fails_clearly():
    @tf.function
    def f(x):
        s = tf.constant(0)
        for v in Dataset.from_tensor_slices(x).shuffle(4):
            s += v
        return s
    with pytest.raises(NotImplementedError, match="built from tensors of a traced function"):
        f(tf.constant([1, 2, 3]))
