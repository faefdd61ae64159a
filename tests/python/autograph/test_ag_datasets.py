"""`for x in dataset` inside kiln.function with kiln.data datasets: the loop
is delegated to the dataset (one graph loop, whatever the data size)."""
import pytest

import kiln as tf

data = pytest.importorskip("kiln.data")


def val(t):
    return t.numpy().item() if hasattr(t, "numpy") else t


@tf.function
def train(dataset):
    loss = tf.constant(0)
    for x, y in dataset:
        loss += tf.abs(y - x)
    return loss


def _graph_size(f, *args):
    return len(f.get_concrete_function(*args).graph.as_graph_def().node)


def test_guide_graph_sizes_python_data_vs_dataset():
    small_data = [(1, 1)] * 3
    big_data = [(1, 1)] * 10
    # Python data is unrolled: the graph grows with the data.
    assert _graph_size(train, small_data) < _graph_size(train, big_data)
    small = tf.data.Dataset.from_generator(lambda: small_data, (tf.int32, tf.int32))
    big = tf.data.Dataset.from_generator(lambda: big_data, (tf.int32, tf.int32))
    # A dataset is one loop: the same graph for any size.
    assert _graph_size(train, small) == _graph_size(train, big)


def test_dataset_loop_values():
    ds = tf.data.Dataset.from_tensor_slices(([1, 2], [5, 1]))
    assert val(train(ds)) == 4 + 1


def test_dataset_loop_with_break_and_enumerate():
    @tf.function
    def f(ds):
        total = tf.constant(0)
        for i, x in enumerate(ds):
            if x > 3:
                break
            total += x * i
        return total

    assert val(f(tf.data.Dataset.from_tensor_slices([1, 2, 3, 4, 5]))) == 0 + 2 + 6


def test_dataset_loop_with_return():
    @tf.function
    def first_big(ds):
        for x in ds:
            if x > 2:
                return x
        return -1

    assert val(first_big(tf.data.Dataset.from_tensor_slices([1, 5, 7]))) == 5
    assert val(first_big(tf.data.Dataset.from_tensor_slices([1, 2]))) == -1


def test_dataset_loop_runs_eagerly_through_to_graph():
    from kiln import autograph
    f = autograph.to_graph(train.python_function)
    assert val(f(tf.data.Dataset.from_tensor_slices(([3], [1])))) == 2


def test_dataset_loop_without_state_prints_each_element(capsys):
    @tf.function
    def f(ds):
        for x in ds:
            tf.print("element", x)

    f(tf.data.Dataset.from_tensor_slices([4, 5]))
    assert capsys.readouterr().err.splitlines() == ["element 4", "element 5"]


def test_loop_over_dataset_iterator():
    @tf.function
    def f(it):
        total = tf.constant(0)
        for x in it:
            total += x
        return total

    it = iter(tf.data.Dataset.from_tensor_slices([1, 2, 3]))
    assert val(f(it)) == 6
