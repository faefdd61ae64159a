"""Which calls share a trace, and how traced structures look (TensorFlow 2.21's rules,
checked side by side with it): Python numbers by ==, NumPy scalars as tensors, dict order,
__tf_tracing_type__, nested input_signatures and their errors, printed signatures of
nested and composite values."""
import numpy as np
import pytest

import kiln as tf


def _counting():
    seen = []

    @tf.function
    def f(x):
        seen.append(x)
        return x
    return f, seen


def test_python_numbers_key_by_equality():
    f, seen = _counting()
    for x in (1, 1.0, True, 2, 2.0, 0, False, -0.0, 0.5, "1"):
        f(x)
    assert f.experimental_get_tracing_count() == 5  # 1, 2, 0, 0.5, "1"
    assert seen == [1, 2, 0, 0.5, "1"]  # each trace ran with the first equal value


def test_numpy_scalars_trace_as_tensors_of_their_dtype():
    f, seen = _counting()
    for x in (np.float32(1), np.float32(2), np.int64(3), np.bool_(True), np.float64(1)):
        f(x)
    assert [(s.dtype.name, s.shape.rank) for s in seen] == [
        ("float32", 0), ("int64", 0), ("bool", 0), ("float64", 0)]
    assert f(np.float32(5)).numpy() == 5.0
    f(np.str_("a"))  # NumPy strings stay Python values, as in TensorFlow
    assert seen[-1] == "a" and isinstance(seen[-1], str)


def test_dicts_keep_their_order():
    @tf.function
    def f(d):
        assert list(d) == ["b", "a"]
        return {"y": d["b"], "x": d["a"]}

    out = f({"b": tf.constant(1), "a": tf.constant(2)})
    assert list(out) == ["y", "x"] and int(out["y"]) == 1
    cf = f.get_concrete_function({"b": tf.constant(1), "a": tf.constant(2)})
    assert list(cf.structured_input_signature[0][0]) == ["b", "a"]
    assert [s.name for s in cf.structured_input_signature[0][0].values()] == ["d_b", "d_a"]
    names = [n.name for n in cf.graph.as_graph_def().node if n.op == "Placeholder"]
    assert names == ["d", "d_1"]  # TensorFlow names placeholders after the argument


class _Kind(tf.types.experimental.TraceType):
    def __init__(self, obj):
        self.kind, self.obj = type(obj), obj

    def is_subtype_of(self, other):
        return self == other

    def most_specific_common_supertype(self, others):
        return self if all(self == o for o in others) else None

    def placeholder_value(self, placeholder_context=None):
        return self.obj

    def __eq__(self, other):
        return isinstance(other, _Kind) and self.kind is other.kind

    def __hash__(self):
        return hash(self.kind)


class _Apple:
    def __init__(self, n):
        self.n = tf.constant(n)

    def __tf_tracing_type__(self, context):
        return _Kind(self)


class _Pear(_Apple):
    pass


def test_tracing_protocol_keys_by_trace_type():
    f, seen = _counting()
    a, b = _Apple(1), _Apple(2)
    f(a)
    f(b)
    f(_Pear(3))
    assert f.experimental_get_tracing_count() == 2
    assert seen[0] is a  # the trace ran with the type's placeholder_value


def test_nested_input_signature_converts_and_checks():
    @tf.function(input_signature=[{"a": tf.TensorSpec([None], tf.int32),
                                   "b": (tf.TensorSpec([], tf.float32),)}])
    def f(d):
        return d["a"] * 2, d["b"][0] + 1

    a, b = f({"a": [1, 2], "b": (1.0,)})
    assert a.numpy().tolist() == [2, 4] and b.numpy() == 2.0
    a, _ = f({"a": tf.constant([3]), "b": (tf.constant(0.0),)})
    assert a.numpy().tolist() == [6]
    assert f.experimental_get_tracing_count() == 1
    with pytest.raises(ValueError, match="Python inputs incompatible with input_signature") as e:
        f({"a": [1.5], "b": (1.0,)})
    assert isinstance(e.value, TypeError)
    with pytest.raises(ValueError, match="incompatible"):
        f({"a": [1]})
    with pytest.raises(TypeError, match="input_signature must be a list of kiln.TensorSpec"):
        tf.function(lambda x: x, input_signature=[[tf.TensorSpec([]), 3]])


def test_conversion_error_under_input_signature_in_every_call_path():
    @tf.function(input_signature=[tf.TensorSpec([], tf.int32)] * 2)
    def f(x, *args):
        return x

    @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
    def g(x):
        return x

    for call in (lambda: f(1, "s"), lambda: g("s"), lambda: g(x="s")):
        with pytest.raises(ValueError, match="When input_signature is provided, all inputs to "
                                             "the Python function must be convertible to "
                                             "tensors:\n  inputs: \\(") as e:
            call()
        assert isinstance(e.value, TypeError)
        assert "input_signature: (\n    TensorSpec(shape=(), dtype=tf.int32" in str(e.value)


def test_printed_signatures_of_nested_and_composite_values():
    @tf.function
    def f(r, pair, s):
        return {"r": r, "n": pair[1]}

    cf = f.get_concrete_function(tf.ragged.constant([[1.0], [2.0, 3.0], []]),
                                 (tf.constant(1), [tf.constant([1.0])]),
                                 tf.sparse.from_dense(tf.constant([[0, 1]])))
    text = str(cf)
    assert "    r: RaggedTensorSpec(TensorShape([3, None]), tf.float32, 1, tf.int64)\n" in text
    assert "    pair: (<1>, [<2>])\n      <1>: int32 Tensor, shape=()\n" \
           "      <2>: float32 Tensor, shape=(1,)\n" in text
    assert "    s: SparseTensorSpec(TensorShape([None, None]), tf.int32)\n" in text
    assert text.endswith("  Returns:\n    {'n': [<1>], 'r': <2>}\n"
                         "      <1>: float32 Tensor, shape=(1,)\n"
                         "      <2>: RaggedTensorSpec(TensorShape([3, None]), tf.float32, 1, "
                         "tf.int64)")
