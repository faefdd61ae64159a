"""kiln._kiln.raw.<TypeName> and kiln._kiln.execute (python/src/ops.cpp): inputs
positionally, attributes by keyword (interned or built at run time), the
errors of bad calls, outputs, and that tapes and traces see the ops."""
import numpy as np
import pytest

import kiln as tf
from kiln import errors

raw = tf._kiln.raw
X = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_attributes_by_keyword_in_any_form():
    x = tf.constant(X)
    for perm in ([1, 0], (1, 0), np.array([1, 0]), tf.constant([1, 0]), [np.int64(1), 0]):
        np.testing.assert_array_equal(raw.Transpose(x, perm=perm).numpy(), X.T)
    # A keyword made at run time is not interned: it is compared by its text.
    key = "".join(["pe", "rm"])
    np.testing.assert_array_equal(raw.Transpose(x, **{key: [1, 0]}).numpy(), X.T)
    # `name` is TensorFlow's and ignored; defaults fill the attributes not given.
    np.testing.assert_array_equal(raw.Transpose(x, perm=[1, 0], name="t").numpy(), X.T)
    np.testing.assert_array_equal(raw.Sum(x, axis=[1]).numpy(), X.sum(1))
    np.testing.assert_array_equal(raw.Sum(x, axis=1, keepdims=True).numpy(), X.sum(1, keepdims=True))
    assert raw.Cast(x, DstT=tf.int32).dtype == tf.int32
    assert raw.Cast(x, DstT="int64").dtype == tf.int64


def test_bad_attributes_raise_as_before():
    x = tf.constant(X)
    with pytest.raises(TypeError, match="Transpose: unknown attribute 'prm'"):
        raw.Transpose(x, prm=[1, 0])
    with pytest.raises(TypeError, match="unknown attribute 'foo'"):
        raw.Transpose(x, **{"".join(["f", "oo"]): 1})
    with pytest.raises(TypeError, match="attribute 'keepdims' expects a bool, got 1"):
        raw.Sum(x, axis=1, keepdims=1)
    with pytest.raises(ValueError, match="invalid literal for int"):
        raw.Transpose(x, perm="ab")
    with pytest.raises(TypeError, match="Cannot convert 3 to a kiln DType"):
        raw.Cast(x, DstT=3)
    with pytest.raises(errors.InvalidArgumentError, match="missing required attribute 'DstT'"):
        raw.Cast(x)
    # A bool in a list of ints is converted by Python's int(), as before.
    np.testing.assert_array_equal(raw.Transpose(x, perm=[True, 0]).numpy(), X.T)


def test_bad_inputs_raise_as_before():
    x = tf.constant(X)
    with pytest.raises(TypeError, match=r"unsupported type \(<class 'object'>\) to a Tensor \(AddV2\)"):
        raw.AddV2(x, object())
    with pytest.raises(TypeError, match="Cannot convert 'x' to EagerTensor of dtype float32"):
        raw.AddV2(x, "x")
    with pytest.raises(errors.InvalidArgumentError, match="AddV2: expected 2 inputs, got 1"):
        raw.AddV2(x)
    with pytest.raises(errors.InvalidArgumentError, match="Identity: expected 1 inputs, got 0"):
        raw.Identity()
    with pytest.raises(errors.InvalidArgumentError, match="perm .* has 3 entries"):
        raw.Transpose(x, perm=[1, 0, 2])
    # A Python number takes the dtype of the tensor operand of an elementwise op.
    assert raw.AddV2(x, 1).dtype == tf.float32 and raw.AddV2(1, x).dtype == tf.float32


def test_many_inputs_and_outputs():
    x = tf.constant(X)
    many = [x] * 9  # more than the inline input buffer holds
    np.testing.assert_array_equal(raw.Pack(many, axis=0).numpy(), np.stack([X] * 9))
    np.testing.assert_array_equal(raw.Pack(*many, axis=1).numpy(), np.stack([X] * 9, 1))
    assert raw.Pack([x, x], axis=0).shape == (2, 2, 3)
    assert raw.Pack(x, x, axis=0).shape == (2, 2, 3)
    parts = raw.Unpack(x, num=2, axis=0)
    assert isinstance(parts, list) and len(parts) == 2
    np.testing.assert_array_equal(parts[1].numpy(), X[1])
    one = raw.Unpack(x[:1], num=1, axis=0)  # variadic outputs: a list even of one
    assert isinstance(one, list) and len(one) == 1
    v = tf.Variable(1.0)
    assert raw.AssignVariableOp(v.handle, tf.constant(2.0), dtype=tf.float32) is None
    assert v.numpy() == 2.0


def test_execute_by_name():
    x = tf.constant(X)
    np.testing.assert_array_equal(tf._kiln.execute("Transpose", x, perm=[1, 0]).numpy(), X.T)
    assert tf._kiln.execute("Identity", x, name="i").shape == (2, 3)
    with pytest.raises(ValueError, match="unknown op type 'Nope'"):
        tf._kiln.execute("Nope", x)
    with pytest.raises(TypeError, match="Transpose: unknown attribute 'foo'"):
        tf._kiln.execute("Transpose", x, perm=[1, 0], foo=1)


def test_a_tape_sees_raw_ops():
    x = tf.Variable(X)
    with tf.GradientTape() as tape:
        y = raw.Transpose(x.read_value(), perm=[1, 0])
        parts = raw.Unpack(y, num=3, axis=0)
        z = raw.Sum(raw.Mul(parts[2], parts[2]), axis=[0])
    g = tape.gradient(z, x)
    expected = np.zeros_like(X)
    expected[:, 2] = 2 * X[:, 2]
    np.testing.assert_allclose(g.numpy(), expected)


def test_a_trace_records_raw_ops():
    @tf.function
    def f(x):
        parts = raw.Unpack(raw.Transpose(x, perm=[1, 0]), num=3, axis=0)
        return raw.AddV2(parts[0], parts[2])

    x = tf.constant(X)
    np.testing.assert_array_equal(f(x).numpy(), X[:, 0] + X[:, 2])
    ops = {n.op for n in f.get_concrete_function(x).graph.as_graph_def().node}
    assert {"Transpose", "Unpack", "AddV2"} <= ops

    @tf.function
    def bad(x):
        return raw.Transpose(x, perm=x)  # a symbolic tensor is not a constant attribute

    with pytest.raises(TypeError, match="attribute 'perm' expects a constant list of ints"):
        bad(tf.constant([1, 0]))


def test_ints_beyond_int64_are_clear_errors():
    x = tf.constant(X)
    big = 2 ** 70
    for call in (lambda: raw.Transpose(x, perm=[big, 0]), lambda: raw.Transpose(x, perm=(1, -big)),
                 lambda: raw.ExpandDims(x, axis=big), lambda: raw.Transpose(x, perm=[np.int64(1), big])):
        with pytest.raises(ValueError, match="does not fit in int64"):
            call()


def test_indices_beyond_int64_raise_index_error_and_slices_clamp():
    v = tf.constant(np.arange(6, dtype=np.float32))
    with pytest.raises(IndexError, match="out of range"):
        v[2 ** 70]
    np.testing.assert_array_equal(v[:2 ** 70].numpy(), np.arange(6))
    np.testing.assert_array_equal(v[-2 ** 70:2].numpy(), [0, 1])
    np.testing.assert_array_equal(v[::-2 ** 70].numpy(), [5])
