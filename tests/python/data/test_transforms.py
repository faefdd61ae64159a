"""Transformations, each checked eagerly and in a traced loop (index-addressable
chains and generator-fed ones)."""
import numpy as np
import pytest

import kiln
from kiln import errors

Dataset = kiln.data.Dataset
INF, UNK = kiln.data.INFINITE_CARDINALITY, kiln.data.UNKNOWN_CARDINALITY


def gen_range(n):
    """A generator-fed dataset of n int64 elements (not index-addressable)."""
    return Dataset.from_generator(lambda: range(n), kiln.int64, output_shapes=[])


def card(ds):
    return int(ds.cardinality().numpy())


CASES = [
    # (name, dataset factory, expected flat elements)
    ("map", lambda: Dataset.range(5).map(lambda x: x * 2), [(v * 2,) for v in range(5)]),
    ("map_tuple", lambda: Dataset.from_tensor_slices(([1, 2], [10, 20])).map(
        lambda a, b: (a + b, a * b)), [(11, 10), (22, 40)]),
    ("map_dict", lambda: Dataset.from_tensor_slices({"a": [1, 2]}).map(
        lambda d: {"b": d["a"] + 1}), [(2,), (3,)]),
    ("map_list_result", lambda: Dataset.range(2).map(lambda x: [x, x + 1]), [(0, 1), (1, 2)]),
    ("map_python_constant", lambda: Dataset.range(2).map(lambda x: (x, 7)), [(0, 7), (1, 7)]),
    ("filter", lambda: Dataset.range(10).filter(lambda x: x % 3 == 0),
     [(0,), (3,), (6,), (9,)]),
    ("batch", lambda: Dataset.range(7).batch(3), [([0, 1, 2],), ([3, 4, 5],), ([6],)]),
    ("batch_drop", lambda: Dataset.range(7).batch(3, drop_remainder=True),
     [([0, 1, 2],), ([3, 4, 5],)]),
    ("batch_tuple", lambda: Dataset.from_tensor_slices(([1, 2, 3], [[1., 1.], [2., 2.],
                                                                     [3., 3.]])).batch(2),
     [([1, 2], [[1., 1.], [2., 2.]]), ([3], [[3., 3.]])]),
    ("map_batch", lambda: Dataset.range(5).map(lambda x: x + 1).batch(2),
     [([1, 2],), ([3, 4],), ([5],)]),
    ("batch_map", lambda: Dataset.range(4).batch(2).map(lambda b: b * 10),
     [([0, 10],), ([20, 30],)]),
    ("take", lambda: Dataset.range(10).take(3), [(0,), (1,), (2,)]),
    ("take_all", lambda: Dataset.range(3).take(-1), [(0,), (1,), (2,)]),
    ("take_more", lambda: Dataset.range(2).take(5), [(0,), (1,)]),
    ("skip", lambda: Dataset.range(5).skip(3), [(3,), (4,)]),
    ("skip_all", lambda: Dataset.range(5).skip(-1), []),
    ("repeat", lambda: Dataset.range(2).repeat(3), [(0,), (1,)] * 3),
    ("repeat_take", lambda: Dataset.range(3).repeat().take(7),
     [(0,), (1,), (2,), (0,), (1,), (2,), (0,)]),
    ("repeat_empty", lambda: Dataset.range(0).repeat(), []),
    ("enumerate", lambda: Dataset.from_tensor_slices([5, 6]).enumerate(10),
     [(10, 5), (11, 6)]),
    ("zip", lambda: Dataset.zip((Dataset.range(3), Dataset.range(10, 20))),
     [(0, 10), (1, 11), (2, 12)]),
    ("zip_args_dict", lambda: Dataset.zip({"a": Dataset.range(2), "b": Dataset.range(5)}),
     [(0, 0), (1, 1)]),
    ("concatenate", lambda: Dataset.range(2).concatenate(Dataset.range(5, 7)),
     [(0,), (1,), (5,), (6,)]),
    ("unbatch", lambda: Dataset.range(5).batch(2).unbatch(), [(v,) for v in range(5)]),
    ("prefetch_cache", lambda: Dataset.range(3).prefetch(2).cache(), [(0,), (1,), (2,)]),
    ("chain", lambda: Dataset.range(20).filter(lambda x: x % 2 == 1).map(
        lambda x: x * x).skip(1).take(3), [(9,), (25,), (49,)]),
    ("from_tensors_repeat_batch", lambda: Dataset.from_tensors([1, 2]).repeat(3).batch(2),
     [([[1, 2], [1, 2]],), ([[1, 2]],)]),
    # generator-fed (pulled at run time)
    ("gen_map", lambda: gen_range(4).map(lambda x: x - 1), [(-1,), (0,), (1,), (2,)]),
    ("gen_filter", lambda: gen_range(6).filter(lambda x: x > 3), [(4,), (5,)]),
    ("gen_take", lambda: gen_range(6).take(2), [(0,), (1,)]),
    ("gen_skip", lambda: gen_range(4).skip(2), [(2,), (3,)]),
    ("gen_enumerate", lambda: gen_range(2).enumerate(), [(0, 0), (1, 1)]),
    ("gen_batch", lambda: gen_range(5).batch(2), [([0, 1],), ([2, 3],), ([4],)]),
    ("gen_repeat", lambda: gen_range(2).repeat(2), [(0,), (1,), (0,), (1,)]),
    ("gen_zip", lambda: Dataset.zip((gen_range(2), Dataset.range(5))), [(0, 0), (1, 1)]),
    ("gen_map_batch", lambda: gen_range(3).map(lambda x: x * 2).batch(2),
     [([0, 2],), ([4],)]),
]


@pytest.mark.parametrize("name,make,want", CASES, ids=[c[0] for c in CASES])
def test_transform_values(name, make, want, helpers):
    ds = make()
    assert helpers.eager(ds) == want
    assert helpers.graph(ds) == want
    assert helpers.graph(ds, autograph=False) == want


def test_element_specs():
    ds = Dataset.from_tensor_slices(np.zeros((6, 2), np.float32))
    assert ds.batch(4).element_spec == kiln.TensorSpec([None, 2], kiln.float32)
    assert ds.batch(4, drop_remainder=True).element_spec == \
        kiln.TensorSpec([4, 2], kiln.float32)
    assert ds.map(lambda x: kiln.cast(x, kiln.int32)).element_spec == \
        kiln.TensorSpec([2], kiln.int32)
    assert ds.enumerate().element_spec == (kiln.TensorSpec([], kiln.int64),
                                           kiln.TensorSpec([2], kiln.float32))
    assert ds.batch(2).unbatch().element_spec == kiln.TensorSpec([2], kiln.float32)


def test_cardinality():
    r = Dataset.range(10)
    assert card(r) == 10
    assert card(r.batch(3)) == 4 and card(r.batch(3, drop_remainder=True)) == 3
    assert card(r.take(4)) == 4 and card(r.skip(4)) == 6 and card(r.skip(20)) == 0
    assert card(r.repeat(2)) == 20 and card(r.repeat()) == INF
    assert card(r.repeat().take(5)) == 5
    assert card(r.filter(lambda x: x > 2)) == UNK
    assert card(gen_range(3)) == UNK
    assert card(Dataset.zip((r, r.take(3)))) == 3
    assert card(r.concatenate(r)) == 20
    assert len(r.map(lambda x: x)) == 10
    with pytest.raises(TypeError, match="infinite"):
        len(r.repeat())
    with pytest.raises(TypeError, match="unknown"):
        len(gen_range(3))
    assert bool(Dataset.range(0))  # datasets are always true, even empty ones


def test_map_traced_once():
    traces = []

    def fn(x):
        traces.append(1)
        return x + 1
    ds = Dataset.range(50).map(fn)
    assert len(traces) == 1  # traced when map() is called, as in tf.data
    assert [int(v) for v in ds.as_numpy_iterator()][-1] == 50
    assert len(traces) == 1


def test_map_with_tensor_control_flow():
    def fn(x):
        if x % 2 == 0:
            y = x * 10
        else:
            y = -x
        return y
    ds = Dataset.range(5).map(fn)
    assert [int(v) for v in ds.as_numpy_iterator()] == [0, -1, 20, -3, 40]


def test_shuffle():
    ds = Dataset.range(20).shuffle(5, seed=7, reshuffle_each_iteration=False)
    a = [int(v) for v in ds.as_numpy_iterator()]
    b = [int(v) for v in ds.as_numpy_iterator()]
    assert sorted(a) == list(range(20)) and a == b and a != list(range(20))
    ds = Dataset.range(20).shuffle(20, seed=1)
    assert sorted(int(v) for v in ds.as_numpy_iterator()) == list(range(20))


def test_shuffle_in_function(helpers):
    ds = Dataset.range(10).shuffle(4, seed=3)
    got = helpers.graph(ds)
    assert sorted(v for (v,) in got) == list(range(10))


def test_reduce():
    assert int(Dataset.range(5).reduce(np.int64(0), lambda s, x: s + x).numpy()) == 10

    @kiln.function
    def f(d):
        return d.reduce(np.int64(0), lambda s, x: s + x)
    assert int(f(Dataset.range(101)).numpy()) == 5050
    assert int(f(gen_range(4)).numpy()) == 6


def test_apply():
    ds = Dataset.range(4).apply(lambda d: d.skip(2))
    assert [int(v) for v in ds.as_numpy_iterator()] == [2, 3]
    with pytest.raises(TypeError, match="must return a Dataset"):
        Dataset.range(3).apply(lambda d: 5)


def test_transform_errors():
    r = Dataset.range(4)
    with pytest.raises(errors.InvalidArgumentError,
                       match="Batch size must be greater than zero."):  # TF 2.21's text
        r.batch(0)
    with pytest.raises(TypeError, match="batch_size"):
        r.batch(2.5)
    with pytest.raises(TypeError, match="callable"):
        r.map(5)
    with pytest.raises(ValueError, match="scalar bool"):
        r.filter(lambda x: x)
    with pytest.raises(TypeError):
        r.map(lambda a, b: a)  # one element, two parameters: error at map() time
    with pytest.raises(TypeError, match="None"):
        r.map(lambda x: None)
    with pytest.raises(errors.InvalidArgumentError, match="buffer_size"):
        r.shuffle(0)
    with pytest.raises(TypeError, match="different dtypes"):
        r.concatenate(Dataset.from_tensor_slices([1.0]))
    with pytest.raises(TypeError, match="dataset"):
        Dataset.zip((r, 5))
    with pytest.raises(errors.InvalidArgumentError, match="scalar"):
        r.unbatch()


def test_batch_of_mismatched_shapes():
    ds = Dataset.from_generator(lambda: [[1, 2], [3]], kiln.int32, output_shapes=[None])
    with pytest.raises(errors.InvalidArgumentError, match="different shapes"):
        list(ds.batch(2))


@pytest.mark.parametrize("make,want", [
    (lambda: Dataset.range(5).batch(2).repeat(2),
     [([0, 1],), ([2, 3],), ([4],), ([0, 1],), ([2, 3],), ([4],)]),
    (lambda: Dataset.range(3).repeat().batch(2).take(3), [([0, 1],), ([2, 0],), ([1, 2],)]),
    (lambda: Dataset.range(3).repeat().map(lambda x: x * 2).enumerate().skip(2).take(2),
     [(2, 4), (3, 0)]),
    (lambda: Dataset.zip((Dataset.range(2).repeat(), Dataset.range(5))).batch(5),
     [([0, 1, 0, 1, 0], [0, 1, 2, 3, 4])]),
], ids=["batch_repeat", "repeat_forever_batch_take", "long_chain", "zip_infinite"])
def test_infinite_and_nested_chains(make, want, helpers):
    ds = make()
    assert helpers.eager(ds) == want
    assert helpers.graph(ds) == want
