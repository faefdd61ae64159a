"""Dataset.interleave, flat_map, window, group_by_window and
bucket_by_sequence_length, against the values TensorFlow 2.21 gives.

Every expected literal below was printed by running the same expression with
`import tensorflow as tf` (TF 2.21, .venv-peers): the elements (each as a
tuple of its leaves), repr(element_spec) and cardinality()."""
import numpy as np
import pytest

import kiln as tf
from kiln import errors

D = tf.data.Dataset
experimental = tf.data.experimental
DOC_SEQS = [[0], [1, 2, 3, 4], [5, 6, 7], [7, 8, 9, 10, 11], [13, 14, 15, 16, 19, 20], [21, 22]]


def seqs(data):
    return D.from_generator(lambda: data, tf.int64, output_shapes=[None])


def windows(ds):
    """Each window (a structure of datasets) with its datasets listed."""
    return [tf.nest.map_structure(lambda d: [np.asarray(x).tolist() for x in
                                             d.as_numpy_iterator()], w) for w in ds]


# (name, dataset factory, repr(element_spec), cardinality, elements): TF 2.21's.
CASES = [
    ('interleave_block',
     lambda: (D.range(1, 6)
              .interleave(lambda x: D.from_tensors(x).repeat(6), cycle_length=2, block_length=4)),
     'TensorSpec(shape=(), dtype=tf.int64, name=None)', -2,
     [(1,), (1,), (1,), (1,), (2,), (2,), (2,), (2,), (1,), (1,), (2,), (2,), (3,), (3,), (3,),
      (3,), (4,), (4,), (4,), (4,), (3,), (3,), (4,), (4,), (5,), (5,), (5,), (5,), (5,), (5,)]),
    ('interleave_ragged',
     lambda: D.range(1, 4).interleave(lambda x: D.range(x), cycle_length=2),
     'TensorSpec(shape=(), dtype=tf.int64, name=None)', -2,
     [(0,), (0,), (1,), (0,), (1,), (2,)]),
    ('interleave_cycle3_parallel',
     lambda: (D.range(1, 6)
              .interleave(lambda x: D.from_tensors(x).repeat(3), cycle_length=3,
                          num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)),
     'TensorSpec(shape=(), dtype=tf.int64, name=None)', -2,
     [(1,), (2,), (3,), (1,), (2,), (3,), (1,), (2,), (3,), (4,), (5,), (4,), (5,), (4,), (5,)]),
    ('interleave_cycle1',
     lambda: (D.range(3)
              .interleave(lambda x: D.range(10 * x, 10 * x + 2), cycle_length=1, block_length=2)),
     'TensorSpec(shape=(), dtype=tf.int64, name=None)', -2,
     [(0,), (1,), (10,), (11,), (20,), (21,)]),
    ('interleave_tuple',
     lambda: (D.from_tensor_slices(([1, 2], [3, 4]))
              .interleave(lambda a, b: D.from_tensor_slices([a, b]), cycle_length=2)),
     'TensorSpec(shape=(), dtype=tf.int32, name=None)', -2,
     [(1,), (2,), (3,), (4,)]),
    ('interleave_dict_out',
     lambda: (D.range(2)
              .interleave(lambda x: D.from_tensors({'v': x, 'w': [x, x]}), cycle_length=2)),
     "{'v': TensorSpec(shape=(), dtype=tf.int64, name=None)"
     ", 'w': TensorSpec(shape=(2,), dtype=tf.int64, name=None)}",
     -2,
     [(0, [0, 0]), (1, [1, 1])]),
    ('interleave_empty_inner',
     lambda: D.range(4).interleave(lambda x: D.range(x % 2), cycle_length=2),
     'TensorSpec(shape=(), dtype=tf.int64, name=None)', -2,
     [(0,), (0,)]),
    ('flat_map_slices',
     lambda: D.from_tensor_slices([[1, 2, 3], [4, 5, 6]]).flat_map(D.from_tensor_slices),
     'TensorSpec(shape=(), dtype=tf.int32, name=None)', -2,
     [(1,), (2,), (3,), (4,), (5,), (6,)]),
    ('flat_map_repeat',
     lambda: D.range(3).flat_map(lambda x: D.from_tensors(x).repeat(2)),
     'TensorSpec(shape=(), dtype=tf.int64, name=None)', -2,
     [(0,), (0,), (1,), (1,), (2,), (2,)]),
    ('window_flat_map',
     lambda: D.range(7).window(3, shift=1, drop_remainder=True).flat_map(lambda w: w.batch(3)),
     'TensorSpec(shape=(None,), dtype=tf.int64, name=None)', -2,
     [([0, 1, 2],), ([1, 2, 3],), ([2, 3, 4],), ([3, 4, 5],), ([4, 5, 6],)]),
    ('window_tuple_zip',
     lambda: (D.from_tensor_slices(([1, 2, 3], [4, 5, 6]))
              .window(2)
              .flat_map(lambda a, b: D.zip((a.batch(2), b.batch(2))))),
     '(TensorSpec(shape=(None,), dtype=tf.int32, name=None)'
     ', TensorSpec(shape=(None,), dtype=tf.int32, name=None))',
     -2,
     [([1, 2], [4, 5]), ([3], [6])]),
    ('window_map_batch',
     lambda: D.range(5).window(2).map(lambda w: w.batch(2)).flat_map(lambda d: d),
     'TensorSpec(shape=(None,), dtype=tf.int64, name=None)', -2,
     [([0, 1],), ([2, 3],), ([4],)]),
    ('window_stride',
     lambda: D.range(10).window(3, shift=2, stride=3).flat_map(lambda w: w.batch(3)),
     'TensorSpec(shape=(None,), dtype=tf.int64, name=None)', -2,
     [([0, 3, 6],), ([2, 5, 8],), ([4, 7],), ([6, 9],), ([8],)]),
    ('group_by_window_parity',
     lambda: (D.range(10)
              .group_by_window(key_func=lambda x: x % 2, reduce_func=lambda k, ds: ds.batch(10),
                               window_size=5)),
     'TensorSpec(shape=(None,), dtype=tf.int64, name=None)', -2,
     [([0, 2, 4, 6, 8],), ([1, 3, 5, 7, 9],)]),
    ('group_by_window_leftovers',
     lambda: (D.range(10)
              .group_by_window(key_func=lambda x: x % 3, reduce_func=lambda k, ds: ds.batch(4),
                               window_size=2)),
     'TensorSpec(shape=(None,), dtype=tf.int64, name=None)', -2,
     [([0, 3],), ([1, 4],), ([2, 5],), ([6, 9],), ([7],), ([8],)]),
    ('group_by_window_size_func',
     lambda: (D.range(12)
              .group_by_window(key_func=lambda x: x % 3, reduce_func=lambda k,
                               ds: ds.map(lambda v: (k, v)), window_size_func=lambda k: k + 1)),
     '(TensorSpec(shape=(), dtype=tf.int64, name=None)'
     ', TensorSpec(shape=(), dtype=tf.int64, name=None))',
     -2,
     [(0, 0), (0, 3), (1, 1), (1, 4), (0, 6), (2, 2), (2, 5), (2, 8), (0, 9), (1, 7), (1, 10),
      (2, 11)]),
    ('group_by_window_tuple',
     lambda: (D.from_tensor_slices(([5, 1, 5, 2, 1], [10, 20, 30, 40, 50]))
              .group_by_window(lambda a, b: tf.cast(a, tf.int64), lambda k, ds: ds.batch(2),
                               window_size=2)),
     '(TensorSpec(shape=(None,), dtype=tf.int32, name=None)'
     ', TensorSpec(shape=(None,), dtype=tf.int32, name=None))',
     -2,
     [([5, 5], [10, 30]), ([1, 1], [20, 50]), ([2], [40])]),
    ('group_by_window_key_order',
     lambda: (D.range(7)
              .group_by_window(lambda x: 3 - x % 3, lambda k, ds: ds.batch(5), window_size=5)),
     'TensorSpec(shape=(None,), dtype=tf.int64, name=None)', -2,
     [([2, 5],), ([1, 4],), ([0, 3, 6],)]),
    ('group_by_window_python_key',
     lambda: D.range(5).group_by_window(lambda x: 0, lambda k, d: d.batch(2), window_size=2),
     'TensorSpec(shape=(None,), dtype=tf.int64, name=None)', -2,
     [([0, 1],), ([2, 3],), ([4],)]),
    ('group_by_window_experimental',
     lambda: (D.range(6)
              .apply(experimental.group_by_window(lambda x: x % 2, lambda k, d: d.batch(3), 3))),
     'TensorSpec(shape=(None,), dtype=tf.int64, name=None)', -2,
     [([0, 2, 4],), ([1, 3, 5],)]),
    ('bucket_doc',
     lambda: (seqs(DOC_SEQS)
              .bucket_by_sequence_length(element_length_func=lambda elem: tf.shape(elem)[0],
                                         bucket_boundaries=[3, 5], bucket_batch_sizes=[2, 2, 2])),
     'TensorSpec(shape=(None, None), dtype=tf.int64, name=None)', -2,
     [([[1, 2, 3, 4], [5, 6, 7, 0]],), ([[7, 8, 9, 10, 11, 0], [13, 14, 15, 16, 19, 20]],),
      ([[0, 0], [21, 22]],)]),
    ('bucket_drop',
     lambda: (seqs(DOC_SEQS)
              .bucket_by_sequence_length(lambda elem: tf.shape(elem)[0], [3, 5], [2, 2, 2],
                                         drop_remainder=True)),
     'TensorSpec(shape=(None, None), dtype=tf.int64, name=None)', -2,
     [([[1, 2, 3, 4], [5, 6, 7, 0]],), ([[7, 8, 9, 10, 11, 0], [13, 14, 15, 16, 19, 20]],),
      ([[0, 0], [21, 22]],)]),
    ('bucket_padded_shapes',
     lambda: (seqs(DOC_SEQS[:3])
              .bucket_by_sequence_length(lambda elem: tf.shape(elem)[0], [3, 5], [1, 1, 1],
                                         padded_shapes=[8])),
     'TensorSpec(shape=(None, 8), dtype=tf.int64, name=None)', -2,
     [([[0, 0, 0, 0, 0, 0, 0, 0]],), ([[1, 2, 3, 4, 0, 0, 0, 0]],),
      ([[5, 6, 7, 0, 0, 0, 0, 0]],)]),
    ('bucket_to_boundary',
     lambda: (seqs(DOC_SEQS[:3] + [[8]])
              .bucket_by_sequence_length(lambda elem: tf.shape(elem)[0], [3, 5], [2, 2, 2],
                                         pad_to_bucket_boundary=True,
                                         padding_values=tf.constant(-1, tf.int64))),
     'TensorSpec(shape=(None, None), dtype=tf.int64, name=None)', -2,
     [([[1, 2, 3, 4], [5, 6, 7, -1]],), ([[0, -1], [8, -1]],)]),
    ('bucket_no_padding',
     lambda: (D.range(6)
              .map(lambda x: tf.fill([2], x))
              .bucket_by_sequence_length(lambda e: tf.cast(e[0], tf.int32), [2, 4], [2, 2, 2],
                                         no_padding=True)),
     'TensorSpec(shape=(None, 2), dtype=tf.int64, name=None)', -2,
     [([[0, 0], [1, 1]],), ([[2, 2], [3, 3]],), ([[4, 4], [5, 5]],)]),
    ('bucket_tuple_to_boundary',
     lambda: (D.from_tensor_slices(([1, 2, 3, 4], [5, 6, 7, 8]))
              .map(lambda a, b: (tf.fill([a], a), b))
              .bucket_by_sequence_length(lambda a, b: tf.shape(a)[0], [3, 10], [2, 2, 2],
                                         padded_shapes=([None], []),
                                         pad_to_bucket_boundary=True)),
     '(TensorSpec(shape=(None, None), dtype=tf.int32, name=None), '
     'TensorSpec(shape=(None,), dtype=tf.int32, name=None))', -2,
     [([[1, 0], [2, 2]], [5, 6]),
      ([[3, 3, 3, 0, 0, 0, 0, 0, 0], [4, 4, 4, 4, 0, 0, 0, 0, 0]], [7, 8])]),
    ('bucket_tuple',
     lambda: (D.from_tensor_slices(([1, 2, 3, 4], [5, 6, 7, 8]))
              .map(lambda a, b: (tf.fill([a], a), b))
              .bucket_by_sequence_length(lambda a, b: tf.shape(a)[0], [3], [2, 2])),
     '(TensorSpec(shape=(None, None), dtype=tf.int32, name=None)'
     ', TensorSpec(shape=(None,), dtype=tf.int32, name=None))',
     -2,
     [([[1, 0], [2, 2]], [5, 6]), ([[3, 3, 3, 0], [4, 4, 4, 4]], [7, 8])]),
]


@pytest.mark.parametrize("name,make,spec,card,want", CASES, ids=[c[0] for c in CASES])
def test_values_as_tensorflow(name, make, spec, card, want, helpers):
    helpers.check(make(), spec, card, want)


# TF 2.21: [[w as lists] for w in ds], element_spec and cardinality of window().
INT64_WINDOW = "DatasetSpec(TensorSpec(shape=(), dtype=tf.int64, name=None), TensorShape([]))"
WINDOWS = [
    ("size3", lambda: D.range(7).window(3), 3, [[0, 1, 2], [3, 4, 5], [6]]),
    ("drop", lambda: D.range(7).window(3, drop_remainder=True), 2, [[0, 1, 2], [3, 4, 5]]),
    ("shift1_drop", lambda: D.range(7).window(3, shift=1, drop_remainder=True), 5,
     [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6]]),
    ("stride", lambda: D.range(7).window(3, shift=2, stride=2), 4,
     [[0, 2, 4], [2, 4, 6], [4, 6], [6]]),
    ("stride_drop", lambda: D.range(7).window(3, shift=2, stride=2, drop_remainder=True), 2,
     [[0, 2, 4], [2, 4, 6]]),
    ("shift_past_size", lambda: D.range(10).window(3, shift=4), 3, [[0, 1, 2], [4, 5, 6], [8, 9]]),
    ("short_input", lambda: D.range(3).window(5, shift=1), 3, [[0, 1, 2], [1, 2], [2]]),
    ("empty", lambda: D.range(0).window(2), 0, []),
    ("known_after_take", lambda: D.range(5).repeat().take(5).window(2), 3, [[0, 1], [2, 3], [4]]),
]


@pytest.mark.parametrize("name,make,card,want", WINDOWS, ids=[w[0] for w in WINDOWS])
def test_window_as_tensorflow(name, make, card, want):
    ds = make()
    assert repr(ds.element_spec) == INT64_WINDOW
    assert int(ds.cardinality()) == card
    assert windows(ds) == want


def test_window_structures():
    # TF 2.21: window over (int32, int32) and {'a': int32, 'b': float32 [1]} elements.
    ds = D.from_tensor_slices(([1, 2, 3], [4, 5, 6])).window(2)
    assert ds.element_spec == (tf.data.DatasetSpec(tf.TensorSpec([], tf.int32)),) * 2
    assert windows(ds) == [([1, 2], [4, 5]), ([3], [6])]
    ds = D.from_tensor_slices({"a": [1, 2, 3], "b": [[1.], [2.], [3.]]}).window(2, 1)
    assert repr(ds.element_spec["b"]) == \
        "DatasetSpec(TensorSpec(shape=(1,), dtype=tf.float32, name=None), TensorShape([]))"
    assert windows(ds) == [{"a": [1, 2], "b": [[1.0], [2.0]]},
                           {"a": [2, 3], "b": [[2.0], [3.0]]}, {"a": [3], "b": [[3.0]]}]
    assert int(D.range(5).repeat().window(2).cardinality()) == tf.data.INFINITE_CARDINALITY
    spec = D.range(4).window(2).map(lambda w: w.batch(2)).element_spec
    assert repr(spec) == \
        "DatasetSpec(TensorSpec(shape=(None,), dtype=tf.int64, name=None), TensorShape([]))"


def test_window_of_infinite_input_is_lazy():
    ds = D.range(3).repeat().window(4, shift=3).take(2)
    assert windows(ds) == [[0, 1, 2, 0], [0, 1, 2, 0]]


def test_windows_do_not_iterate_in_functions():
    @tf.function
    def f(d):
        for w in d:
            pass
        return 0
    with pytest.raises(NotImplementedError, match="elements are datasets"):
        f(D.range(4).window(2))


def test_map_functions_traced_once():
    traces = []

    def to_dataset(x):
        traces.append(x)
        return D.from_tensors(x).repeat(2)
    ds = D.range(3).interleave(to_dataset, cycle_length=2)
    assert len(traces) == 1 and traces[0].is_symbolic  # the tracing probe
    assert [int(v) for v in ds] == [0, 1, 0, 1, 2, 2]


def test_interleave_default_cycle_is_the_cpu_count():
    # TF 2.21: cycle_length None is AUTOTUNE, one slot per CPU; on 2 CPUs
    # range(1, 6).interleave(lambda x: from_tensors(x).repeat(3)) gives
    # [1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 5, 5, 5].
    n = tf.data.interleave.cpu_count()
    ds = D.range(n + 1).interleave(lambda x: D.from_tensors(x).repeat(2))
    assert [int(v) for v in ds] == list(range(n)) * 2 + [n, n]


def test_interleave_deterministic_warns():
    with pytest.warns(UserWarning, match="no effect unless the `num_parallel_calls`"):
        D.range(2).interleave(lambda x: D.range(x), deterministic=False)


ERRORS = [
    # (name, call, exception, message): TF 2.21's texts (run eagerly there).
    ("interleave_not_dataset", lambda: D.range(3).interleave(lambda x: x), TypeError,
     "The `map_func` argument must return a `Dataset` object"),
    ("flat_map_not_dataset", lambda: D.range(3).flat_map(lambda x: x + 1), TypeError,
     "The `map_func` argument must return a `Dataset` object"),
    ("cycle_length_0", lambda: D.range(3).interleave(lambda x: D.range(x), cycle_length=0),
     errors.InvalidArgumentError, "cycle_length must be greater than zero."),
    ("block_length_0", lambda: D.range(3).interleave(lambda x: D.range(x), block_length=0),
     errors.InvalidArgumentError, "block_length must be greater than zero."),
    ("parallel_calls_0",
     lambda: D.range(3).interleave(lambda x: D.range(x), num_parallel_calls=0),
     errors.InvalidArgumentError, "num_parallel_calls must be greater than zero."),
    ("window_size_0", lambda: D.range(3).window(0), errors.InvalidArgumentError,
     "Window size must be greater than zero."),
    ("window_shift_0", lambda: D.range(3).window(2, 0), errors.InvalidArgumentError,
     "Window shift must be greater than zero."),
    ("window_stride_0", lambda: D.range(3).window(2, 1, 0), errors.InvalidArgumentError,
     "Window stride must be greater than zero."),
    ("window_padded_batch", lambda: D.range(3).window(2).padded_batch(2), TypeError,
     "`padded_batch` is not supported for datasets of datasets"),
    ("gbw_both_sizes",
     lambda: D.range(3).group_by_window(lambda x: x, lambda k, d: d, window_size=2,
                                        window_size_func=lambda k: k),
     ValueError, "Either the `window_size` argument or the `window_size_func` argument must "
     "be specified."),
    ("gbw_no_size", lambda: D.range(3).group_by_window(lambda x: x, lambda k, d: d),
     ValueError, "Either the `window_size` argument or the `window_size_func` argument"),
    ("gbw_int32_key",
     lambda: D.range(3).group_by_window(lambda x: tf.cast(x, tf.int32), lambda k, d: d,
                                        window_size=2),
     ValueError, "Tensor conversion requested dtype int64 for Tensor with dtype int32"),
    ("gbw_vector_key",
     lambda: D.range(3).group_by_window(lambda x: tf.stack([x, x]), lambda k, d: d,
                                        window_size=2),
     ValueError, r"Invalid `key_func`. `key_func` must return a single `tf.int64` scalar "
     r"tensor but its return type is TensorSpec\(shape=\(2,\), dtype=tf.int64, name=None\)."),
    ("gbw_reduce_not_dataset",
     lambda: D.range(3).group_by_window(lambda x: x, lambda k, d: k, window_size=2),
     TypeError, r"Invalid `reduce_func`. `reduce_func` must return a single `tf.data.Dataset` "
     r"object but its return type is TensorSpec\(shape=\(\), dtype=tf.int64, name=None\)."),
    ("gbw_window_size_0",
     lambda: list(D.range(3).group_by_window(lambda x: x, lambda k, d: d, window_size=0)),
     errors.InvalidArgumentError, "Window size must be greater than zero, but got 0."),
    ("gbw_int32_window_size_func",
     lambda: D.range(3).group_by_window(lambda x: x, lambda k, d: d,
                                        window_size_func=lambda k: tf.cast(k, tf.int32)),
     ValueError, "Tensor conversion requested dtype int64 for Tensor with dtype int32"),
    ("bucket_sizes_length",
     lambda: seqs(DOC_SEQS).bucket_by_sequence_length(lambda e: tf.shape(e)[0], [3, 5], [2, 2]),
     ValueError, r"`len\(bucket_batch_sizes\)` must equal `len\(bucket_boundaries\) \+ 1` but "
     r"`len\(bucket_batch_sizes\)=2` and `len\(bucket_boundaries\)=2`."),
    ("bucket_past_boundary",
     lambda: list(seqs(DOC_SEQS).bucket_by_sequence_length(
         lambda e: tf.shape(e)[0], [3, 5], [2, 2, 2], pad_to_bucket_boundary=True)),
     errors.InvalidArgumentError, r"When pad_to_bucket_boundary=True, elements must have "
     r"length < max\(bucket_boundaries\)."),
]


@pytest.mark.parametrize("name,call,exc,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_as_tensorflow(name, call, exc, message):
    with pytest.raises(exc, match=message):
        call()
