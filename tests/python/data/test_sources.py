"""Source datasets: from_tensor_slices, from_tensors, range, from_generator."""
import collections

import numpy as np
import pytest

import kiln
from kiln import errors

Dataset = kiln.data.Dataset


def spec(shape, dtype):
    return kiln.TensorSpec(shape, dtype)


# ---- from_tensor_slices ----

def test_slices_of_list(helpers):
    ds = Dataset.from_tensor_slices([1, 2, 3])
    assert ds.element_spec == spec([], kiln.int32)
    assert helpers.eager(ds) == [(1,), (2,), (3,)]
    assert helpers.graph(ds) == [(1,), (2,), (3,)]
    assert helpers.graph(ds, autograph=False) == [(1,), (2,), (3,)]
    assert len(ds) == 3
    assert int(ds.cardinality().numpy()) == 3


def test_slices_of_tensor_and_array(helpers):
    t = kiln.constant([[1., 2.], [3., 4.], [5., 6.]])
    ds = Dataset.from_tensor_slices(t)
    assert ds.element_spec == spec([2], kiln.float32)
    assert helpers.eager(ds) == [([1., 2.],), ([3., 4.],), ([5., 6.],)]
    assert helpers.graph(ds) == helpers.eager(ds)
    arr = np.arange(12, dtype=np.float64).reshape(4, 3)
    ds = Dataset.from_tensor_slices(arr)
    assert ds.element_spec == spec([3], kiln.float64)
    assert helpers.graph(ds) == [tuple([r.tolist()]) for r in arr]


def test_slices_of_tuple(helpers):
    x = np.array([[1, 2], [3, 4], [5, 6]], dtype=np.int32)
    y = np.array([0.5, 1.5, 2.5], dtype=np.float32)
    ds = Dataset.from_tensor_slices((x, y))
    assert ds.element_spec == (spec([2], kiln.int32), spec([], kiln.float32))
    first = next(iter(ds))
    assert isinstance(first, tuple) and len(first) == 2
    assert first[0].numpy().tolist() == [1, 2] and float(first[1].numpy()) == 0.5
    expected = [([1, 2], 0.5), ([3, 4], 1.5), ([5, 6], 2.5)]
    assert helpers.eager(ds) == expected
    assert helpers.graph(ds) == expected


def test_slices_of_dict_and_nested(helpers):
    ds = Dataset.from_tensor_slices({"a": [1, 2], "b": ([[1., 2.], [3., 4.]], [True, False])})
    assert ds.element_spec == {"a": spec([], kiln.int32),
                               "b": (spec([2], kiln.float32), spec([], kiln.bool))}
    el = next(iter(ds))
    assert set(el) == {"a", "b"} and isinstance(el["b"], tuple)
    # nest order: dict keys sorted
    assert helpers.eager(ds) == [(1, [1., 2.], True), (2, [3., 4.], False)]
    assert helpers.graph(ds) == helpers.eager(ds)


def test_slices_of_namedtuple():
    Point = collections.namedtuple("Point", ["x", "y"])
    ds = Dataset.from_tensor_slices(Point([1, 2], [3, 4]))
    el = next(iter(ds))
    assert isinstance(el, Point)
    assert int(el.x.numpy()) == 1 and int(el.y.numpy()) == 3


def test_list_of_tuples_is_one_tensor():
    # As in tf.data: a Python list is one tensor, not a structure.
    ds = Dataset.from_tensor_slices([(1, 2), (3, 4)])
    assert ds.element_spec == spec([2], kiln.int32)


def test_slices_strings():
    ds = Dataset.from_tensor_slices(["ab", "c"])
    assert ds.element_spec.dtype == kiln.string
    assert list(ds.as_numpy_iterator()) == [b"ab", b"c"]


def test_slices_empty(helpers):
    ds = Dataset.from_tensor_slices(np.zeros((0, 2), np.float32))
    assert len(ds) == 0
    assert helpers.eager(ds) == [] and helpers.graph(ds) == []


def test_slices_errors():
    with pytest.raises(errors.InvalidArgumentError, match="same size in their first dimension"):
        Dataset.from_tensor_slices(([1, 2], [1, 2, 3]))
    with pytest.raises(errors.InvalidArgumentError, match="scalar"):
        Dataset.from_tensor_slices(5)
    with pytest.raises(TypeError, match="None"):
        Dataset.from_tensor_slices(([1, 2], None))
    with pytest.raises(TypeError, match="could not be converted"):
        Dataset.from_tensor_slices([[1, 2], [3]])


# ---- from_tensors ----

def test_from_tensors(helpers):
    ds = Dataset.from_tensors(([1, 2, 3], "x"))
    assert ds.element_spec == (spec([3], kiln.int32), spec([], kiln.string))
    assert len(ds) == 1
    vals = list(ds.as_numpy_iterator())
    assert vals[0][0].tolist() == [1, 2, 3] and vals[0][1] == b"x"
    assert helpers.graph(Dataset.from_tensors([1, 2])) == [([1, 2],)]


# ---- range ----

@pytest.mark.parametrize("args", [(5,), (2, 7), (1, 10, 3), (10, 2, -3), (5, 5), (5, 1),
                                  (0, -6, -2)])
def test_range_like_python(args, helpers):
    ds = Dataset.range(*args)
    want = [(v,) for v in range(*args)]
    assert ds.element_spec == spec([], kiln.int64)
    assert helpers.eager(ds) == want
    assert helpers.graph(ds) == want
    assert len(ds) == len(want)


def test_range_output_type():
    ds = Dataset.range(3, output_type=kiln.int32)
    assert ds.element_spec.dtype == kiln.int32
    assert next(iter(ds)).dtype == kiln.int32
    assert Dataset.range(2, output_type=kiln.float32).element_spec.dtype == kiln.float32


def test_range_errors():
    with pytest.raises(errors.InvalidArgumentError, match="step"):
        Dataset.range(0, 5, 0)
    with pytest.raises(TypeError, match="integer"):
        Dataset.range(1.5)
    with pytest.raises(TypeError):
        Dataset.range()


def test_range_with_tensor_args_in_function():
    @kiln.function
    def f(n):
        s = kiln.constant(np.int64(0).item(), dtype=kiln.int64)
        for x in Dataset.range(n):
            s += x
        return s
    assert int(f(kiln.constant(5)).numpy()) == 10
    assert int(f(kiln.constant(0)).numpy()) == 0
    assert int(f(kiln.constant(101)).numpy()) == 5050


# ---- from_generator ----

def test_generator_output_types(helpers):
    ds = Dataset.from_generator(lambda: [(1, 2), (3, 4)], (kiln.int32, kiln.int32))
    assert ds.element_spec == (spec(None, kiln.int32), spec(None, kiln.int32))
    assert helpers.eager(ds) == [(1, 2), (3, 4)]
    assert helpers.graph(ds) == [(1, 2), (3, 4)]
    assert int(ds.cardinality().numpy()) == kiln.data.UNKNOWN_CARDINALITY
    # each iteration calls the generator again
    assert helpers.eager(ds) == [(1, 2), (3, 4)]
    assert helpers.graph(ds) == [(1, 2), (3, 4)]


def test_generator_shapes_and_signature(helpers):
    def gen():
        for i in range(3):
            yield {"x": np.full([2], i, np.float32), "n": i}
    ds = Dataset.from_generator(gen, output_types={"x": kiln.float32, "n": kiln.int64},
                                output_shapes={"x": [2], "n": []})
    assert ds.element_spec == {"x": spec([2], kiln.float32), "n": spec([], kiln.int64)}
    want = [(0, [0., 0.]), (1, [1., 1.]), (2, [2., 2.])]
    assert helpers.eager(ds) == want and helpers.graph(ds) == want

    ds2 = Dataset.from_generator(gen, output_signature={"x": spec([None], kiln.float32),
                                                         "n": spec([], kiln.int64)})
    assert helpers.graph(ds2) == want


def test_generator_args():
    def gen(n, scale):
        for i in range(int(n)):
            yield i * scale
    ds = Dataset.from_generator(gen, kiln.float32, output_shapes=[], args=(3, 0.5))
    assert list(ds.as_numpy_iterator()) == [0.0, 0.5, 1.0]


def test_generator_repr_like_tf():
    ds = Dataset.from_generator(lambda: [(1, 1)], (kiln.int32, kiln.int32))
    assert repr(ds) == ("<FlatMapDataset shapes: (<unknown>, <unknown>), "
                        "types: (tf.int32, tf.int32)>")
    assert repr(Dataset.range(3)) == "<RangeDataset shapes: (), types: tf.int64>"


def test_generator_wrong_dtype_eager():
    ds = Dataset.from_generator(lambda: [1, 2.5], kiln.int32)
    it = iter(ds)
    assert int(next(it).numpy()) == 1
    with pytest.raises(TypeError, match="expected type was int32.*2.5"):
        next(it)
    with pytest.raises(TypeError, match="expected type"):
        list(Dataset.from_generator(lambda: ["a"], kiln.float32))
    with pytest.raises(TypeError, match="expected type"):
        list(Dataset.from_generator(lambda: [1], kiln.bool))


def test_generator_wrong_dtype_in_function():
    ds = Dataset.from_generator(lambda: [1, 2.5], kiln.int32)

    @kiln.function
    def total(d):
        s = kiln.constant(0)
        for x in d:
            s += x
        return s
    with pytest.raises(errors.OpError, match="expected type was int32"):
        total(ds)


def test_generator_wrong_structure_and_shape():
    with pytest.raises(TypeError, match="did not match the expected structure"):
        list(Dataset.from_generator(lambda: [5], (kiln.int32, kiln.int32)))
    with pytest.raises(errors.InvalidArgumentError, match="shape"):
        list(Dataset.from_generator(lambda: [[1, 2, 3]], kiln.int32, output_shapes=[2]))


def test_generator_bad_arguments():
    with pytest.raises(TypeError, match="callable"):
        Dataset.from_generator([1, 2], kiln.int32)
    with pytest.raises(TypeError, match="output_signature"):
        Dataset.from_generator(lambda: [1])
    with pytest.raises(TypeError, match="not both"):
        Dataset.from_generator(lambda: [1], kiln.int32, output_signature=spec([], kiln.int32))
    with pytest.raises(TypeError, match="output_shapes"):
        Dataset.from_generator(lambda: [1], output_shapes=[])
    with pytest.raises(TypeError, match="iterable"):
        list(Dataset.from_generator(lambda: 5, kiln.int32))
    with pytest.raises(TypeError, match="does not match"):
        Dataset.from_generator(lambda: [1], (kiln.int32, kiln.int32), output_shapes=[[]])
