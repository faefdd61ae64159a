"""Dataset.choose_from_datasets, sample_from_datasets and rejection_resample.

Deterministic cases compare with literals printed by TensorFlow 2.21 for the
same expressions (.venv-peers). Random ones check tf.data's semantics (kiln
draws with NumPy, so the values differ from TF's): proportions, repeatability
under a seed, where a dataset ends."""
import numpy as np
import pytest

import kiln as tf
from kiln import errors

D = tf.data.Dataset
experimental = tf.data.experimental


def ints(ds):
    return [int(v) for v in ds.as_numpy_iterator()]


def foo_bar_baz():
    return [D.from_tensors("foo").repeat(), D.from_tensors("bar").repeat(),
            D.from_tensors("baz").repeat()]


def picks(choices):
    return D.from_tensor_slices(tf.constant(choices, tf.int64))


# (name, dataset factory, repr(element_spec), cardinality, elements): TF 2.21's.
CASES = [
    ("choose_doc", lambda: D.choose_from_datasets(foo_bar_baz(), D.range(3).repeat(3)),
     "TensorSpec(shape=(), dtype=tf.string, name=None)", -1,
     [(b"foo",), (b"bar",), (b"baz",)] * 3),
    ("choose_stop", lambda: D.choose_from_datasets([D.range(2), D.range(10, 12)],
                                                   picks([0, 0, 0, 1])),
     "TensorSpec(shape=(), dtype=tf.int64, name=None)", -2, [(0,), (1,)]),
    ("choose_skip_empty", lambda: D.choose_from_datasets([D.range(2), D.range(10, 12)],
                                                         picks([0, 0, 0, 1]),
                                                         stop_on_empty_dataset=False),
     "TensorSpec(shape=(), dtype=tf.int64, name=None)", -2, [(0,), (1,), (10,)]),
    ("choose_experimental",
     lambda: experimental.choose_from_datasets([D.range(2), D.range(10, 12)],
                                               picks([0, 0, 0, 1, 1])),
     "TensorSpec(shape=(), dtype=tf.int64, name=None)", -2, [(0,), (1,), (10,), (11,)]),
    ("sample_one_weight",
     lambda: D.sample_from_datasets([D.range(3), D.range(100, 103)], weights=[1.0, 0.0]),
     "TensorSpec(shape=(), dtype=tf.int64, name=None)", 3, [(0,), (1,), (2,)]),
    ("sample_single", lambda: D.sample_from_datasets([D.range(4)]),
     "TensorSpec(shape=(), dtype=tf.int64, name=None)", 4, [(0,), (1,), (2,), (3,)]),
    ("rejection_same_dist",
     lambda: D.from_tensor_slices(([0, 1, 1], [5., 6., 7.])).rejection_resample(
         lambda a, b: a, [0.5, 0.5], [0.5, 0.5]),
     "(TensorSpec(shape=(), dtype=tf.int32, name=None), (TensorSpec(shape=(), "
     "dtype=tf.int32, name=None), TensorSpec(shape=(), dtype=tf.float32, name=None)))", 3,
     [(0, 0, 5.0), (1, 1, 6.0), (1, 1, 7.0)]),
]


@pytest.mark.parametrize("name,make,spec,card,want", CASES, ids=[c[0] for c in CASES])
def test_values_as_tensorflow(name, make, spec, card, want, helpers):
    helpers.check(make(), spec, card, want)


def test_sample_from_datasets_semantics(helpers):
    ds = D.sample_from_datasets([D.range(3), D.range(100, 103)], weights=[0.5, 0.5], seed=5)
    got = ints(ds)
    # TF 2.21 (seed 5): all six elements, each dataset's in order; cardinality -2.
    assert sorted(got) == [0, 1, 2, 100, 101, 102] and int(ds.cardinality()) == -2
    assert [v for v in got if v < 100] == [0, 1, 2]
    assert ints(ds) == got  # seeded: the same draws each iteration
    assert [v for (v,) in helpers.graph(ds)] == got
    # stop_on_empty_dataset: the first draw of a used-up dataset ends it all, so
    # one dataset is always used up (TF 2.21 with seed 2 happened to give all 6).
    for seed in range(8):
        stop = ints(D.sample_from_datasets([D.range(3), D.range(100, 103)], seed=seed,
                                           stop_on_empty_dataset=True))
        assert {0, 1, 2} <= set(stop) or {100, 101, 102} <= set(stop)


def test_sample_from_datasets_proportions():
    ds = D.sample_from_datasets([D.from_tensors(0).repeat(), D.from_tensors(1).repeat()],
                                weights=[0.9, 0.1], seed=0).take(4000)
    assert int(ds.cardinality()) == 4000 and 0.07 < np.mean(ints(ds)) < 0.13
    reshuffled = D.sample_from_datasets(
        [D.from_tensors(0).repeat(), D.from_tensors(1).repeat()], seed=3,
        rerandomize_each_iteration=True).take(64)
    assert ints(reshuffled) != ints(reshuffled)


def test_sample_from_datasets_weights_dataset():
    weights = D.from_tensors([0.0, 1.0]).repeat(3).concatenate(D.from_tensors([1.0, 0.0]))
    ds = D.sample_from_datasets([D.range(10), D.range(100, 110)], weights=weights, seed=1)
    assert ints(ds) == [100, 101, 102, 0]  # one weight vector per draw; their end ends it


# Class 1 is about 20% of these 2000 elements (NumPy seed 0; 428 of them).
LABELS = np.random.RandomState(0).choice(2, size=2000, p=[0.8, 0.2])


@pytest.mark.parametrize("initial", [[0.8, 0.2], None], ids=["given", "estimated"])
def test_rejection_resample_reaches_the_target(initial):
    ds = D.from_tensor_slices(LABELS).rejection_resample(
        class_func=lambda x: x, target_dist=[0.5, 0.5], initial_dist=initial, seed=1)
    assert repr(ds.element_spec) == ("(TensorSpec(shape=(), dtype=tf.int64, name=None), "
                                     "TensorSpec(shape=(), dtype=tf.int64, name=None))")
    assert int(ds.cardinality()) == -2
    pairs = [(int(c), int(x)) for c, x in ds.as_numpy_iterator()]
    assert all(c == x for c, x in pairs)
    classes = [c for c, _ in pairs]
    # TF 2.21: 1113 elements, 50.5% of class 1 (given); 1140, 49.6% (estimated): the
    # class-1 elements all kept, the class-0 ones mixed in with probability 0.625.
    assert 1000 < len(classes) < 1300 and 0.45 < np.mean(classes) < 0.55
    assert [(int(c), int(x)) for c, x in ds.as_numpy_iterator()] == pairs  # seeded


def test_rejection_resample_to_one_class():
    ds = D.from_tensor_slices(LABELS).rejection_resample(lambda x: x, [0.0, 1.0],
                                                         [0.8, 0.2], seed=3)
    # TF 2.21: 428 elements, all of class 1 (only the rejecting pass is used).
    assert [int(c) for c, _ in ds.as_numpy_iterator()] == [1] * 428


def test_rejection_resample_tuple_elements(helpers):
    ds = D.from_tensor_slices((LABELS[:200], np.arange(200))).rejection_resample(
        lambda c, i: tf.cast(c, tf.int32), [0.5, 0.5], seed=7)
    got = helpers.eager(ds)
    assert got == helpers.graph(ds)
    assert all(c == label == LABELS[i] for c, label, i in got)


ERRORS = [
    # (name, call, exception, message): TF 2.21's texts (run eagerly there).
    ("sample_empty", lambda: D.sample_from_datasets([]), ValueError,
     "Invalid `datasets`. `datasets` should not be empty."),
    ("sample_weights_length", lambda: D.sample_from_datasets([D.range(3)], weights=[0.5, 0.5]),
     ValueError, r"Invalid `weights`. `weights` should have the same length as `datasets` but "
     r"got `len\(weights\)=2` vs. `len\(datasets\)=1`."),
    ("sample_weights_dtype",
     lambda: D.sample_from_datasets([D.range(3), D.range(2)], weights=[1, 2]), TypeError,
     "Invalid `weights`. `weights` type must be either `tf.float32` or `tf.float64` but is "
     "<dtype: 'int32'>."),
    ("sample_structures", lambda: D.sample_from_datasets([D.range(3), D.from_tensors(1.0)]),
     TypeError, "Invalid `datasets`. `datasets` must have compatible element specs."),
    ("choose_int32",
     lambda: D.choose_from_datasets([D.range(2)], D.range(2).map(lambda x: tf.cast(x, tf.int32))),
     TypeError, r"Invalid `choice_dataset`. Elements of `choice_dataset` must be scalar "
     r"`tf.int64` tensors but are TensorSpec\(shape=\(\), dtype=tf.int32, name=None\)."),
    ("choose_out_of_range", lambda: list(D.choose_from_datasets([D.range(2)], picks([3]))),
     errors.InvalidArgumentError, "Selector index out of range: 3 >= 1"),
    ("rejection_float_class",
     lambda: list(D.range(3).rejection_resample(lambda x: tf.cast(x, tf.float32), [0.5, 0.5],
                                                [0.2, 0.8])),
     TypeError, "Value passed to parameter 'indices' has DataType float32 not in list of "
     "allowed values: int16, int32, int64"),
]


@pytest.mark.parametrize("name,call,exc,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_as_tensorflow(name, call, exc, message):
    with pytest.raises(exc, match=message):
        call()
