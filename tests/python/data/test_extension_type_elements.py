"""ExtensionType values as tf.data elements (kiln.data.extension): element specs,
slicing / batching / unbatching of BatchableExtensionTypes, map functions taking and
returning them, loops inside a kiln.function, and the errors for plain ExtensionTypes,
as TensorFlow 2.21 printed and computed them (.venv-peers)."""
import pytest

import kiln as tf

D = tf.data.Dataset


class MT(tf.experimental.ExtensionType):
    values: tf.Tensor
    mask: tf.Tensor


class BMT(tf.experimental.BatchableExtensionType):
    values: tf.Tensor
    mask: tf.Tensor


class Pt(tf.experimental.BatchableExtensionType):
    x: tf.Tensor
    name: str = "p"


class Box(tf.experimental.BatchableExtensionType):
    shape: tf.TensorShape
    lo: Pt
    hi: tf.Tensor


class Positive(tf.experimental.BatchableExtensionType):
    v: tf.Tensor

    def __validate__(self):
        assert self.v.shape.rank == 1, "rank 1 only"


V = [[1, 2], [3, 4], [5, 6]]
M = [[True, False], [True, True], [False, False]]
MT_SPEC = ("MT.Spec(values=TensorSpec(shape=(3, 2), dtype=tf.int32, name=None), "
           "mask=TensorSpec(shape=(3, 2), dtype=tf.bool, name=None))")


def bmt_spec(shape):
    return (f"BMT.Spec(values=TensorSpec(shape={shape}, dtype=tf.int32, name=None), "
            f"mask=TensorSpec(shape={shape}, dtype=tf.bool, name=None))")


def box_spec(shape, dims):
    return (f"Box.Spec(shape=TensorShape({shape}), lo=Pt.Spec(x=TensorSpec(shape={dims}, "
            f"dtype=tf.float32, name=None), name='q'), hi=TensorSpec(shape={dims}, "
            "dtype=tf.int32, name=None))")


def mt():
    return MT(V, M)


def bmt():
    return BMT(V, M)


def box():
    return Box(tf.TensorShape([3]), Pt([1.0, 2.0, 3.0], name="q"), [4, 5, 6])


def vm(x):
    return (x.values.numpy().tolist(), x.mask.numpy().tolist())


def test_from_tensors_of_a_plain_extension_type():
    ds = D.from_tensors(mt())
    assert repr(ds.element_spec) == MT_SPEC
    assert ds.element_spec == mt()._type_spec
    (x,) = list(ds)
    assert type(x) is MT and vm(x) == (V, M)
    (y,) = list(ds.map(lambda m: MT(m.values * 2, m.mask)))
    assert vm(y) == ([[2, 4], [6, 8], [10, 12]], M)
    assert int(ds.get_single_element().values[2, 1]) == 6


def test_as_numpy_iterator_refuses_extension_types():
    for ds in (D.from_tensors(mt()), D.from_tensor_slices({"a": bmt()})):
        with pytest.raises(TypeError, match=r"^`tf.data.Dataset.as_numpy_iterator\(\)` is not "
                                            r"supported for datasets that produce values of "
                                            r"type <class '.*MT'>$"):
            ds.as_numpy_iterator()


def test_plain_extension_types_are_not_sliced_or_batched():
    no_list = r"^'MT.Spec' object has no attribute '_to_batched_tensor_list'$"
    with pytest.raises(AttributeError, match=no_list):
        D.from_tensor_slices(mt())
    with pytest.raises(AttributeError, match=no_list):
        D.from_tensors(mt()).unbatch()
    with pytest.raises(AttributeError, match=r"^'MT.Spec' object has no attribute '_batch'$"):
        D.from_tensors(mt()).batch(2)
    mapped = D.range(3).map(lambda i: MT(tf.fill([2], i), tf.fill([2], i > 0)))
    with pytest.raises(AttributeError, match=r"^'MT.Spec' object has no attribute '_batch'$"):
        mapped.batch(2)


def test_slices_of_a_batchable_extension_type():
    ds = D.from_tensor_slices(bmt())
    assert repr(ds.element_spec) == bmt_spec("(2,)")
    got = list(ds)
    assert all(type(x) is BMT for x in got)
    assert [vm(x) for x in got] == [(V[i], M[i]) for i in range(3)]
    assert int(ds.cardinality()) == 3
    it = iter(ds)
    assert vm(next(it)) == ([1, 2], [True, False])
    d = D.from_tensor_slices({"a": bmt(), "b": [1, 2, 3]})
    assert repr(d.element_spec) == \
        "{'a': " + bmt_spec("(2,)") + ", 'b': TensorSpec(shape=(), dtype=tf.int32, name=None)}"


def test_batch_and_unbatch_a_batchable_extension_type():
    b = D.from_tensor_slices(bmt()).batch(2)
    assert repr(b.element_spec) == bmt_spec("(None, 2)")
    assert [vm(x) for x in b] == [(V[:2], M[:2]), (V[2:], M[2:])]
    d = D.from_tensor_slices(bmt()).batch(2, drop_remainder=True)
    assert repr(d.element_spec) == bmt_spec("(2, 2)")
    assert [vm(x) for x in d] == [(V[:2], M[:2])]
    u = D.from_tensors(bmt()).unbatch()
    assert repr(u.element_spec) == bmt_spec("(2,)")
    assert [vm(x) for x in u] == [(V[i], M[i]) for i in range(3)]
    assert [vm(x) for x in b.unbatch()] == [(V[i], M[i]) for i in range(3)]


def test_nested_extension_types_and_shape_fields():
    ds = D.from_tensor_slices(box())
    assert repr(ds.element_spec) == box_spec("[]", "()")
    assert repr(D.from_tensors(box()).element_spec) == box_spec("[3]", "(3,)")
    got = list(ds)
    assert [(x.lo.x.numpy().tolist(), x.lo.name, x.hi.numpy().tolist()) for x in got] == \
        [(1.0, "q", 4), (2.0, "q", 5), (3.0, "q", 6)]
    assert got[0].shape == tf.TensorShape([])
    b = ds.batch(2)
    assert repr(b.element_spec) == box_spec("[None]", "(None,)")
    first, last = list(b)
    assert first.shape.as_list() == [None] and first.lo.x.numpy().tolist() == [1.0, 2.0]
    assert last.hi.numpy().tolist() == [6]
    d = ds.batch(2, drop_remainder=True)
    assert repr(d.element_spec) == box_spec("[2]", "(2,)")
    (only,) = list(d)
    assert only.shape.as_list() == [2]  # TensorFlow's: the batched Spec's shape field
    u = D.from_tensors(box()).unbatch()
    assert repr(u.element_spec) == box_spec("[]", "()")
    assert [int(x.hi) for x in u] == [4, 5, 6]


def test_rebuilt_values_skip_validate():
    # Slices are rebuilt from their components, without __validate__ (as TensorFlow).
    ds = D.from_tensor_slices(Positive([1, 2, 3]))
    assert [int(x.v) for x in ds] == [1, 2, 3]


def test_map_returning_and_receiving_extension_types():
    m = D.range(3).map(lambda i: MT(tf.fill([2], i), tf.fill([2], i > 0)))
    assert repr(m.element_spec) == (
        "MT.Spec(values=TensorSpec(shape=(2,), dtype=tf.int64, name=None), "
        "mask=TensorSpec(shape=(2,), dtype=tf.bool, name=None))")
    assert [vm(x) for x in m] == [([0, 0], [False, False]), ([1, 1], [True, True]),
                                  ([2, 2], [True, True])]
    s = D.from_tensors(mt()).map(lambda x: tf.reduce_sum(x.values))
    assert [int(x) for x in s] == [21]
    t = D.from_tensors((mt(), 1)).map(lambda x, k: x.values + k)
    assert [x.numpy().tolist() for x in t] == [[[2, 3], [4, 5], [6, 7]]]
    p = D.range(2).map(lambda i: (MT(tf.reshape(i, [1]), [True]), i))
    assert repr(p.element_spec) == (
        "(MT.Spec(values=TensorSpec(shape=(1,), dtype=tf.int64, name=None), "
        "mask=TensorSpec(shape=(1,), dtype=tf.bool, name=None)), "
        "TensorSpec(shape=(), dtype=tf.int64, name=None))")
    b = D.range(3).map(lambda i: BMT(tf.fill([2], i), tf.fill([2], i > 0))).batch(2)
    assert [x.values.numpy().tolist() for x in b] == [[[0, 0], [1, 1]], [[2, 2]]]


def test_pass_through_transformations():
    ds = D.from_tensor_slices(bmt())
    assert [vm(x) for x in ds.filter(lambda x: x.mask[0])] == [(V[0], M[0]), (V[1], M[1])]
    z = D.zip((ds, D.range(3)))
    assert repr(z.element_spec) == \
        "(" + bmt_spec("(2,)") + ", TensorSpec(shape=(), dtype=tf.int64, name=None))"
    assert [int(x) for x in z.map(lambda x, i: x.values[0] + tf.cast(i, tf.int32))] == \
        [1, 4, 7]
    assert [vm(x) for x in ds.skip(1).take(1)] == [(V[1], M[1])]
    assert len(list(ds.repeat(2))) == 6
    assert sorted(int(x.values[0]) for x in ds.shuffle(3, seed=1)) == [1, 3, 5]
    assert [vm(x) for x in ds.cache().prefetch(1)] == [(V[i], M[i]) for i in range(3)]
    assert int(ds.reduce(tf.constant(0), lambda s, x: s + tf.reduce_sum(x.values))) == 21
    e = ds.enumerate()
    assert repr(e.element_spec) == \
        "(TensorSpec(shape=(), dtype=tf.int64, name=None), " + bmt_spec("(2,)") + ")"


def test_concatenate_relaxes_shapes_and_refuses_other_types():
    c = D.from_tensors(bmt()).concatenate(D.from_tensors(BMT([[1]], [[True]])))
    assert repr(c.element_spec) == bmt_spec("(None, None)")
    assert [x.values.numpy().tolist() for x in c] == [V, [[1]]]
    with pytest.raises(TypeError, match=r"^Incompatible dataset elements:\n  BMT.Spec\(.*\) vs"
                                        r"\.   MT.Spec\("):
        D.from_tensors(bmt()).concatenate(D.from_tensors(mt()))


def test_padded_batch_and_window_need_a_shape_property():
    text = (r"^It appears that the Spec of the ExtensionType is missing a shape property\. In "
            r"order to support tf\.Data, it is recommended that you implement a shape "
            r"property on the Spec\.$")
    for ds in (D.from_tensors(mt()), D.from_tensor_slices(bmt())):
        with pytest.raises(NotImplementedError, match=text):
            ds.padded_batch(2)
    with pytest.raises(NotImplementedError, match=text):
        D.from_tensor_slices(bmt()).window(2)


def test_batching_different_shapes_fails():
    ds = D.from_tensors(BMT([1, 2], [True, True])).concatenate(
        D.from_tensors(BMT([1, 2, 3], [True, True, True])))
    with pytest.raises(tf.errors.InvalidArgumentError):
        list(ds.batch(2))


def test_for_loops_inside_a_function():
    @tf.function
    def sliced():
        s = tf.constant(0, tf.int32)
        for m in D.from_tensor_slices(bmt()):
            s += tf.reduce_sum(m.values)
        return s

    @tf.function
    def whole():
        s = tf.constant(0, tf.int32)
        for m in D.from_tensors(mt()):
            s += tf.reduce_sum(m.values)
        return s

    @tf.function
    def mapped_batches():
        ds = D.range(3).map(lambda i: BMT(tf.fill([2], i), tf.fill([2], i > 0))).batch(2)
        s = tf.constant(0, tf.int64)
        for m in ds:
            s += tf.reduce_sum(m.values)
        return s

    assert int(sliced()) == 21 and int(whole()) == 21 and int(mapped_batches()) == 6


def test_for_loops_over_traced_tensors():
    @tf.function
    def captured(x):
        s = tf.constant(0, tf.int32)
        for m in D.from_tensor_slices(BMT(x, x > 1)):
            s += tf.where(m.mask, m.values, 0)
        return s

    @tf.function
    def filtered_batches(x):
        ds = D.from_tensor_slices(BMT(x, x > 1)).filter(lambda m: m.values[0] > 0).batch(2)
        s = tf.constant(0, tf.int32)
        for m in ds:
            s += tf.reduce_sum(tf.where(m.mask, m.values, 0))
        return s

    assert int(captured(tf.constant([1, 2, 3]))) == 5
    assert int(filtered_batches(tf.constant(V))) == 20


def test_for_loop_over_a_dataset_built_outside():
    ds = D.from_tensor_slices(bmt()).filter(lambda m: m.mask[0])

    @tf.function
    def total(d):
        s = tf.constant(0, tf.int32)
        for m in d:
            s += tf.reduce_sum(m.values)
        return s

    assert int(total(ds)) == 10 and int(total(ds.batch(2))) == 10


def test_nested_specs_are_components():
    spec = box()._type_spec
    assert repr(spec._component_specs) == (
        "(Pt.Spec(x=TensorSpec(shape=(3,), dtype=tf.float32, name=None), name='q'), "
        "TensorSpec(shape=(3,), dtype=tf.int32, name=None))")
    again = spec._from_components(spec._to_components(box()))
    assert again.lo.x.numpy().tolist() == [1.0, 2.0, 3.0] and again.lo.name == "q"
    assert again.hi.numpy().tolist() == [4, 5, 6]


def test_from_generator_with_a_spec_signature():
    spec = BMT.Spec(tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.bool))

    def gen():
        yield BMT([1, 2], [True, False])
        yield BMT([3], [True])

    ds = D.from_generator(gen, output_signature=spec)
    assert repr(ds.element_spec) == bmt_spec("(None,)")
    assert [x.values.numpy().tolist() for x in ds] == [[1, 2], [3]]
    pairs = D.from_generator(lambda: iter([(BMT([1], [True]), 2)]),
                             output_signature=(spec, tf.TensorSpec([], tf.int32)))
    assert [(a.values.numpy().tolist(), int(b)) for a, b in pairs] == [([1], 2)]

    @tf.function
    def total():
        s = tf.constant(0)
        for m in D.from_generator(gen, output_signature=spec):
            s += tf.reduce_sum(m.values)
        return s

    assert int(total()) == 6


@pytest.mark.parametrize("value, got", [
    (MT([1, 2], [True, False]), "MT.Spec(values=TensorSpec(shape=(2,), dtype=tf.int32, "
                                "name=None), mask=TensorSpec(shape=(2,), dtype=tf.bool, "
                                "name=None))"),
    (BMT([[1, 2]], [[True, False]]), bmt_spec("(1, 2)")),
    (1, "TensorSpec(shape=(), dtype=tf.int32, name=None)")])
def test_from_generator_mismatches(value, got):
    # TensorFlow 2.21 raises this TypeError inside the generator's py_func (an
    # InvalidArgumentError carrying its text when the iterator pulls).
    spec = BMT.Spec(tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.bool))
    ds = D.from_generator(lambda: iter([value]), output_signature=spec)
    text = f"`generator` yielded an element of {got} where an element of " + \
        bmt_spec("(None,)") + " was expected."
    with pytest.raises(TypeError) as e:
        list(ds)
    assert str(e.value) == text
