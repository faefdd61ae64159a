"""Dataset.padded_batch and Dataset.scan, against the values TensorFlow 2.21
gives.

Every expected literal below was printed by running the same expression with
`import tensorflow as tf` (TF 2.21, .venv-peers): the elements (each as a
tuple of its leaves), repr(element_spec) and cardinality()."""
import pytest

import kiln as tf
from kiln import errors

D = tf.data.Dataset
experimental = tf.data.experimental


def filled(n):
    """Elements [1], [2, 2], ..., [n] * n (int64 vectors of growing length)."""
    return D.range(1, n + 1).map(lambda x: tf.fill([x], x))


# (name, dataset factory, repr(element_spec), cardinality, elements): TF 2.21's.
CASES = [
    ('padded_default',
     lambda: filled(5).padded_batch(2),
     'TensorSpec(shape=(None, None), dtype=tf.int64, name=None)', 3,
     [([[1, 0], [2, 2]],), ([[3, 3, 3, 0], [4, 4, 4, 4]],), ([[5, 5, 5, 5, 5]],)]),
    ('padded_fixed_int',
     lambda: filled(5).padded_batch(2, padded_shapes=5),
     'TensorSpec(shape=(None, 5), dtype=tf.int64, name=None)', 3,
     [([[1, 0, 0, 0, 0], [2, 2, 0, 0, 0]],), ([[3, 3, 3, 0, 0], [4, 4, 4, 4, 0]],),
      ([[5, 5, 5, 5, 5]],)]),
    ('padded_value_drop',
     lambda: (D.range(1, 6)
              .map(lambda x: tf.fill([x], x))
              .padded_batch(2, padded_shapes=[None], padding_values=tf.constant(-1, tf.int64),
                            drop_remainder=True)),
     'TensorSpec(shape=(2, None), dtype=tf.int64, name=None)', 2,
     [([[1, -1], [2, 2]],), ([[3, 3, 3, -1], [4, 4, 4, 4]],)]),
    ('padded_tuple',
     lambda: (D.from_tensor_slices(([1, 2, 3], [[1., 2.], [3., 4.], [5., 6.]]))
              .map(lambda a, b: (tf.fill([a], a), b))
              .padded_batch(2, padded_shapes=([4], [None]),
                            padding_values=(tf.constant(9, tf.int32), 0.5))),
     '(TensorSpec(shape=(None, 4), dtype=tf.int32, name=None)'
     ', TensorSpec(shape=(None, None), dtype=tf.float32, name=None))',
     2,
     [([[1, 9, 9, 9], [2, 2, 9, 9]], [[1.0, 2.0], [3.0, 4.0]]), ([[3, 3, 3, 9]], [[5.0, 6.0]])]),
    ('padded_dict_strings',
     lambda: D.from_tensor_slices({'a': [1, 2], 's': ['x', 'y']}).padded_batch(2),
     "{'a': TensorSpec(shape=(None,), dtype=tf.int32, name=None)"
     ", 's': TensorSpec(shape=(None,), dtype=tf.string, name=None)}",
     1,
     [([1, 2], [b'x', b'y'])]),
    ('padded_dict_2d',
     lambda: (D.range(3)
              .map(lambda x: {'v': tf.fill([x, 2], x), 'w': tf.fill([2, x], x)})
              .padded_batch(2, padded_shapes={'v': [-1, 3], 'w': [2, None]})),
     "{'v': TensorSpec(shape=(None, None, 3), dtype=tf.int64, name=None)"
     ", 'w': TensorSpec(shape=(None, 2, None), dtype=tf.int64, name=None)}",
     2,
     [([[[0, 0, 0]], [[1, 1, 0]]], [[[0], [0]], [[1], [1]]]),
      ([[[2, 2, 0], [2, 2, 0]]], [[[2, 2], [2, 2]]])]),
    ('padded_string_pad',
     lambda: (D.from_tensor_slices([['a'], ['b']])
              .map(lambda s: tf.concat([s, s], 0))
              .padded_batch(2, padded_shapes=[3])),
     'TensorSpec(shape=(None, 3), dtype=tf.string, name=None)', 1,
     [([[b'a', b'a', b''], [b'b', b'b', b'']],)]),
    ('padded_string_value',
     lambda: (D.from_tensor_slices([['a'], ['b', ]])
              .padded_batch(1, padded_shapes=[2], padding_values='?')),
     'TensorSpec(shape=(None, 2), dtype=tf.string, name=None)', 2,
     [([[b'a', b'?']],), ([[b'b', b'?']],)]),
    ('padded_scalars',
     lambda: D.range(3).padded_batch(2),
     'TensorSpec(shape=(None,), dtype=tf.int64, name=None)', 2,
     [([0, 1],), ([2],)]),
    ('padded_generator',
     lambda: (D.from_generator(lambda: [[1], [1, 2, 3]], tf.int32, output_shapes=[None])
              .padded_batch(2, padded_shapes=[None])),
     'TensorSpec(shape=(None, None), dtype=tf.int32, name=None)', -2,
     [([[1, 0, 0], [1, 2, 3]],)]),
    ('padded_tensor_shape',
     lambda: (D.range(1, 3)
              .map(lambda x: tf.fill([x], x))
              .padded_batch(2, padded_shapes=tf.constant([3], tf.int64))),
     'TensorSpec(shape=(None, 3), dtype=tf.int64, name=None)', 1,
     [([[1, 0, 0], [2, 2, 0]],)]),
    ('padded_bool',
     lambda: D.range(1, 3).map(lambda x: tf.fill([x], True)).padded_batch(2),
     'TensorSpec(shape=(None, None), dtype=tf.bool, name=None)', 1,
     [([[True, False], [True, True]],)]),
    ('scan_running',
     lambda: D.range(5).scan(tf.constant(0, tf.int64), lambda s, x: (s + x, s * 2)),
     'TensorSpec(shape=(), dtype=tf.int64, name=None)', 5,
     [(0,), (0,), (2,), (6,), (12,)]),
    ('scan_python_state',
     lambda: D.from_tensor_slices([1, 2, 3]).scan(0, lambda s, x: (s + x, (x, s))),
     '(TensorSpec(shape=(), dtype=tf.int32, name=None)'
     ', TensorSpec(shape=(), dtype=tf.int32, name=None))',
     3,
     [(1, 0), (2, 1), (3, 3)]),
    ('scan_relax',
     lambda: D.range(4).scan(tf.constant([], tf.int64), lambda s, x: (tf.concat([s, [x]], 0), s)),
     'TensorSpec(shape=(None,), dtype=tf.int64, name=None)', 4,
     [([],), ([0],), ([0, 1],), ([0, 1, 2],)]),
    ('scan_tuple_state',
     lambda: (D.range(6)
              .scan((tf.constant(0, tf.int64), tf.constant(1, tf.int64)), lambda s,
                    x: ((s[1], s[0] + s[1]), s[0]))),
     'TensorSpec(shape=(), dtype=tf.int64, name=None)', 6,
     [(0,), (1,), (1,), (2,), (3,), (5,)]),
    ('scan_tuple_element',
     lambda: D.from_tensor_slices(([1, 2], [3, 4])).scan(0, lambda s, el: (s + el[0] * el[1], s)),
     'TensorSpec(shape=(), dtype=tf.int32, name=None)', 2,
     [(0,), (3,)]),
    ('scan_dict_state',
     lambda: (D.range(3)
              .scan({'n': tf.constant(0, tf.int64)}, lambda s,
                    x: ({'n': s['n'] + 1}, s['n'] * x))),
     'TensorSpec(shape=(), dtype=tf.int64, name=None)', 3,
     [(0,), (1,), (4,)]),
    ('scan_experimental',
     lambda: (D.range(3)
              .apply(experimental.scan(tf.constant(10, tf.int64), lambda s, x: (s - x, s)))),
     'TensorSpec(shape=(), dtype=tf.int64, name=None)', 3,
     [(10,), (10,), (9,)]),
]


@pytest.mark.parametrize("name,make,spec,card,want", CASES, ids=[c[0] for c in CASES])
def test_values_as_tensorflow(name, make, spec, card, want, helpers):
    helpers.check(make(), spec, card, want)


def test_padded_batch_cardinality():
    # TF 2.21: 3 and -1 (INFINITE), as batch().
    assert int(D.range(7).padded_batch(3).cardinality()) == 3
    assert int(D.range(5).repeat().padded_batch(3).cardinality()) == -1


def test_scan_in_function_keeps_state_in_the_graph(helpers):
    ds = D.range(100).scan(tf.constant(0, tf.int64), lambda s, x: (s + x, s + x))

    @tf.function
    def last(d):
        out = tf.constant(0, tf.int64)
        for v in d:
            out = v
        return out
    assert int(last(ds)) == 4950
    assert helpers.size(last, ds) < 200  # one while loop, not 100 unrolled steps


def test_scan_traced_once_per_state_shape():
    traces = []

    def step(s, x):
        traces.append(s.shape)
        return tf.concat([s, [x]], 0), x
    D.range(3).scan(tf.constant([], tf.int64), step)
    assert [str(t) for t in traces] == ["(0,)", "(None,)"]  # relaxed once, as tf.data


ERRORS = [
    # (name, call, exception, message): TF 2.21's texts (run eagerly there).
    ("pad_smaller", lambda: list(filled(5).padded_batch(2, padded_shapes=[3])),
     errors.DataLossError, "Attempted to pad to a smaller size than the input element."),
    ("incompatible_shape", lambda: D.from_tensors([1, 2, 3]).padded_batch(2, padded_shapes=[2]),
     ValueError, r"The padded shape \(2,\) is not compatible with the shape \(3,\) of the "
     "corresponding input component."),
    ("incompatible_rank",
     lambda: D.from_tensors([1, 2, 3]).padded_batch(2, padded_shapes=[2, 3]),
     ValueError, r"The padded shape \(2, 3\) is not compatible with the shape \(3,\)"),
    ("padding_value_dtype", lambda: D.from_tensors([1, 2, 3]).padded_batch(2, padding_values=1.5),
     TypeError, "Invalid `padding_values`. `padding_values` values type <dtype: 'float32'> does "
     "not match type <dtype: 'int32'> of the corresponding input component."),
    ("padding_value_python_int_for_int64", lambda: filled(2).padded_batch(2, padding_values=-1),
     TypeError, "type <dtype: 'int32'> does not match type <dtype: 'int64'>"),
    ("padding_value_shape",
     lambda: D.from_tensors([1, 2, 3]).padded_batch(2, padding_values=[1, 2]),
     ValueError, r"Invalid `padding_values`. `padding_values` values should be scalars, but "
     r"got \(2,\)."),
    ("unknown_rank", lambda: D.from_generator(lambda: [[1]], tf.int32).padded_batch(2),
     ValueError, "You must provide `padded_shapes` argument because component 0 has unknown "
     "rank."),
    ("shapes_structure", lambda: D.from_tensors(([1], [2])).padded_batch(2, padded_shapes=[3]),
     TypeError, "If shallow structure is a sequence, input must also be a sequence. Input has "
     "type: 'list'."),
    ("batch_size_0", lambda: D.range(3).padded_batch(0), errors.InvalidArgumentError,
     "Batch size must be greater than zero."),
    ("scan_not_pair", lambda: D.range(3).scan(tf.constant(0, tf.int64), lambda s, x: s + x),
     TypeError, r"Invalid `scan_func`. `scan_func` should return a pair consisting of new state "
     r"and the output value but its return type is TensorSpec\(shape=\(\), dtype=tf.int64, "
     r"name=None\)."),
    ("scan_state_dtype",
     lambda: D.range(3).scan(tf.constant(0, tf.int32),
                             lambda s, x: (tf.cast(x, tf.int64), x)),
     TypeError, "Invalid `scan_func`. The element types for the new state must match the "
     "initial state. Expected <dtype: 'int32'>, got <dtype: 'int64'>."),
    # TF 2.21 accepts this one (it compares only the first leaf); kiln rejects it.
    ("scan_state_structure",
     lambda: D.range(3).scan(tf.constant(0, tf.int64), lambda s, x: ((s, s), x)),
     TypeError, "The element classes for the new state must match the initial state."),
]


@pytest.mark.parametrize("name,call,exc,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_as_tensorflow(name, call, exc, message):
    with pytest.raises(exc, match=message):
        call()
