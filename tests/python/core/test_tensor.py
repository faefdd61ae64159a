import numpy as np
import pytest

import kiln as tf


def test_constant_dtypes_follow_tensorflow():
    assert tf.constant(1).dtype == tf.int32
    assert tf.constant(2**40).dtype == tf.int64
    assert tf.constant(1.5).dtype == tf.float32
    assert tf.constant([1, 2.5]).dtype == tf.float32  # mixed int/float lists
    assert tf.constant(True).dtype == tf.bool
    assert tf.constant("aa").dtype == tf.string
    assert tf.constant(np.zeros(3, np.float64)).dtype == tf.float64
    assert tf.constant([]).dtype == tf.float32
    assert tf.constant(1, dtype=tf.float32).dtype == tf.float32


def test_str_and_repr_as_in_the_guide():
    t = tf.constant([4, 1])
    assert str(t) == "kiln.Tensor([4 1], shape=(2,), dtype=int32)"
    assert repr(t) == "<kiln.Tensor: shape=(2,), dtype=int32, numpy=array([4, 1], dtype=int32)>"
    assert str(tf.constant(2.2)) == "kiln.Tensor(2.2, shape=(), dtype=float32)"
    assert str(tf.constant("aa")) == "kiln.Tensor(b'aa', shape=(), dtype=string)"
    assert str(tf.constant([1.0, 2.0])) == "kiln.Tensor([1. 2.], shape=(2,), dtype=float32)"


def test_numpy_is_zero_copy_and_read_only():
    t = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    a = t.numpy()
    b = np.asarray(t)
    assert a.ctypes.data == b.ctypes.data
    assert not a.flags.writeable
    d = np.from_dlpack(t)
    assert d.ctypes.data == a.ctypes.data
    np.testing.assert_array_equal(d, [[0, 1, 2], [3, 4, 5]])
    assert tf.constant(b"x").numpy() == b"x"
    assert isinstance(tf.constant(3).numpy(), np.int32)


def test_shape_is_a_tensorshape_comparable_to_lists():
    t = tf.zeros([2, 3]) if hasattr(tf, "zeros") else tf.constant(np.zeros((2, 3), np.float32))
    assert t.shape == [2, 3]
    assert t.shape == (2, 3)
    assert t.shape.as_list() == [2, 3]
    assert str(t.shape) == "(2, 3)"
    assert repr(t.shape) == "TensorShape([2, 3])"
    assert t.shape.rank == 2 and t.ndim == 2


def test_operators_and_python_number_conversion():
    x = tf.constant([1, 2])
    np.testing.assert_array_equal((x + 1).numpy(), [2, 3])
    np.testing.assert_array_equal((1 - x).numpy(), [0, -1])
    np.testing.assert_array_equal((x * x).numpy(), [1, 4])
    assert (x / 2).dtype == tf.float64  # truediv of ints, as in TensorFlow
    np.testing.assert_array_equal((x == 2).numpy(), [False, True])
    assert (x == None) is False  # noqa: E711
    with pytest.raises(TypeError, match="Cannot convert 1.5"):
        x + 1.5
    with pytest.raises(tf.errors.InvalidArgumentError):
        x + tf.constant([1.0, 2.0])


def test_bool_index_and_hash_protocols():
    assert bool(tf.constant(True))
    assert [10, 20, 30][tf.constant(1)] == 20
    with pytest.raises(ValueError, match="ambiguous"):
        bool(tf.constant([True, False]))
    with pytest.raises(TypeError, match="unhashable"):
        hash(tf.constant(1))
    t = tf.constant(1)
    assert {t.ref(): 1}[t.ref()] == 1


def test_basic_indexing():
    x = tf.constant(np.arange(12, dtype=np.int32).reshape(3, 4))
    np.testing.assert_array_equal(x[1].numpy(), [4, 5, 6, 7])
    np.testing.assert_array_equal(x[:, 1].numpy(), [1, 5, 9])
    np.testing.assert_array_equal(x[::2, None, -1].numpy(), [[3], [11]])
    np.testing.assert_array_equal(x[..., 0].numpy(), [0, 4, 8])


def test_iteration_and_len():
    x = tf.constant([[1, 2], [3, 4]])
    rows = [r.numpy().tolist() for r in x]
    assert rows == [[1, 2], [3, 4]]
    assert len(x) == 2
    with pytest.raises(TypeError, match="scalar"):
        iter(tf.constant(1))


def test_iterating_a_variable_iterates_its_value():
    # TensorFlow: "When executing eagerly, iterates over the value of the variable."
    v = tf.Variable([1.0, 2.0, 3.0])
    a, b, c = v
    assert [a.numpy(), b.numpy(), c.numpy()] == [1.0, 2.0, 3.0]
    assert [r.numpy().tolist() for r in tf.Variable([[1, 2], [3, 4]])] == [[1, 2], [3, 4]]
    with tf.GradientTape() as tape:
        first, _, last = v
        y = first * 2.0 + last * last
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [2.0, 0.0, 6.0])
    with pytest.raises(TypeError, match="scalar"):
        iter(tf.Variable(1.0))


def test_variable_api():
    v = tf.Variable(1.0, name="v")
    assert v.name == "v:0" and v.dtype == tf.float32 and v.shape == []
    v.assign_add(2.0)
    v.assign_sub(0.5)
    assert v.numpy() == 2.5
    assert float(v + 1) == 3.5
    assert repr(v) == "<kiln.Variable 'v:0' shape=() dtype=float32, numpy=2.5>"
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
        v.assign([1.0, 2.0])
    w = tf.Variable(lambda: tf.constant([1, 2]), trainable=False)
    assert not w.trainable and w.numpy().tolist() == [1, 2]


def test_bad_conversions_raise_clear_errors():
    with pytest.raises(TypeError, match="unsupported type"):
        tf.constant(object())
    with pytest.raises(TypeError, match="ragged"):
        tf.constant([[1, 2], [3]])
    with pytest.raises(ValueError, match="requested dtype"):
        tf.convert_to_tensor(tf.constant(1), dtype=tf.float32)


def test_variable_repr_and_ref_inside_a_function():
    v = tf.Variable(1.0, name="v")
    seen = {}

    @tf.function
    def f(a):
        seen["repr"] = repr(a)
        seen["same_ref"] = a.ref() == v.ref() and hash(a.ref()) == hash(v.ref())
        return a + 1.0

    f(v)
    assert seen["repr"] == "<kiln.Variable 'v:0' shape=() dtype=float32>"
    assert seen["same_ref"]
    assert v.ref() != tf.Variable(1.0).ref()
    assert repr(v) == "<kiln.Variable 'v:0' shape=() dtype=float32, numpy=1.0>"


@pytest.mark.parametrize("dtype", [tf.bool, tf.int8, tf.uint8, tf.int32, tf.int64, tf.float32,
                                   tf.float64, tf.float16, tf.string])
def test_iterating_a_vector_gives_its_scalars(dtype):
    # Eagerly, with no tape, int/bool/float vectors are cut into scalars
    # without the Unpack op; the other dtypes unstack. Same values either way.
    values = np.array([1, 0, 3], dtype=object if dtype == tf.string else dtype.as_numpy_dtype)
    if dtype == tf.string:
        values = np.array([b"a", b"", b"c"], dtype=object)
    t = tf.constant(values, dtype=dtype)
    items = list(t)
    assert len(items) == 3
    for item, v in zip(items, values):
        assert isinstance(item, tf.Tensor) and item.dtype == dtype and item.shape == ()
        assert item.numpy() == v
    assert list(tf.zeros([0], dtype=tf.int32)) == []
    assert [int(i) for i in tf.range(2, 5)] == [2, 3, 4]
    with pytest.raises(TypeError, match="Cannot iterate over a scalar tensor"):
        iter(tf.constant(1))


def test_iteration_keeps_check_numerics_and_tapes():
    v = tf.constant([1.0, float("nan")])
    tf.debugging.enable_check_numerics()
    try:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Unpack: output 1 contains NaN"):
            list(v)
        assert [int(i) for i in tf.range(3)] == [0, 1, 2]  # ints have no NaN to check
    finally:
        tf.debugging.disable_check_numerics()
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        a, b, c = x  # the tape sees the Unpack
        y = a * b * c
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [6.0, 3.0, 2.0])


def test_iterating_an_eager_tensor_while_tracing_records_the_unpack():
    c = tf.constant([1, 2, 3])

    @tf.function
    def f():
        return [x * 2 for x in c]

    assert [int(x) for x in f()] == [2, 4, 6]
    assert "Unpack" in {n.op for n in f.get_concrete_function().graph.as_graph_def().node}


def test_int_and_scalar_tensor_indices():
    x = tf.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    xs = x.numpy()
    for key in (0, 1, -1, -2, tf.constant(1), tf.constant(-1, tf.int64), np.int64(1)):
        np.testing.assert_array_equal(x[key].numpy(), xs[int(key)])
    for i in tf.range(2):  # scalar int32 tensors, as in an eager loop
        np.testing.assert_array_equal(x[i].numpy(), xs[int(i)])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"index 5 \(begin\[0\]\) is out of"):
        x[5]
    with pytest.raises(tf.errors.InvalidArgumentError, match="index 1099511627776"):
        x[2 ** 40]
    with pytest.raises(tf.errors.InvalidArgumentError, match="input has rank 0"):
        tf.constant(1.0)[0]
    with pytest.raises(TypeError, match="Only integers, slices"):
        x[True]


def test_int_indices_under_a_tape_and_in_a_function():
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    with tf.GradientTape() as tape:
        y = v[1] * v[tf.constant(1)]
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [[0.0, 0.0], [6.0, 8.0]])

    @tf.function
    def f(x, i):
        return x[1] + x[i] + x[-1]

    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(f(x, tf.constant(0)).numpy(), [7.0, 10.0])
    assert "StridedSlice" in {n.op for n in
                              f.get_concrete_function(x, tf.constant(0)).graph.as_graph_def().node}


def test_a_known_tensor_shape_converts_to_a_tensor():
    # TensorFlow 2.21's results.
    t = tf.convert_to_tensor(tf.TensorShape([2, 3]))
    assert t.dtype == tf.int32 and t.numpy().tolist() == [2, 3]
    assert tf.convert_to_tensor(tf.TensorShape([2**33, 3])).dtype == tf.int64
    assert tf.convert_to_tensor(tf.TensorShape([2, 3]), dtype=tf.int64).dtype == tf.int64
    assert tf.convert_to_tensor(tf.TensorShape([])).shape == (0,)
    assert tf.zeros(tf.TensorShape([2, 3])).shape == (2, 3)
    assert tf.reshape(tf.range(6), tf.TensorShape([3, 2])).shape == (3, 2)
    for dims, text in (([None, 3], r"\(None, 3\)"), (None, "<unknown>")):
        with pytest.raises(ValueError, match="Cannot convert a partially known TensorShape " + text):
            tf.convert_to_tensor(tf.TensorShape(dims))


def test_strings_mixed_with_non_utf8_bytes_convert_as_in_tensorflow():
    # NumPy cannot pick a string type for str beside non-ASCII bytes; TensorFlow
    # converts each item to bytes (str as UTF-8).
    assert tf.constant(["a", b"\xff"]).numpy().tolist() == [b"a", b"\xff"]
    assert tf.constant([[b"\xff"], ["\u00e9"]]).numpy().tolist() == [[b"\xff"], ["\u00e9".encode()]]
    with pytest.raises(TypeError):
        tf.constant([["a"], [b"\xff", "b"]])  # ragged stays an error
    with pytest.raises(TypeError):
        tf.constant(["a", b"\xff", 1])


def test_numpy_scalars_keep_their_dtype():
    assert tf.constant(np.float64(1)).dtype == tf.float64
    assert tf.convert_to_tensor(np.float64(1.5), dtype=tf.float32).numpy() == 1.5
    assert tf.constant(np.float32(1)).dtype == tf.float32
    assert tf.constant(1.0).dtype == tf.float32
