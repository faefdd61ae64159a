"""Guide 002, "Rastreo": what tracing is, trace reuse, pretty_printed_concrete_signatures,
and the tracing rules (cache keys)."""
import collections

import pytest

import kiln as tf
from seed_helpers import guide


def _make_double():
    @tf.function
    def double(a):
        print("Tracing with", a)
        return a + a
    return double


def test_double_traces_per_dtype(capsys):
    double = _make_double()
    print(double(tf.constant(1)))
    print()
    print(double(tf.constant(1.1)))
    print()
    print(double(tf.constant("a")))
    print()
    assert capsys.readouterr().out == guide("""
        Tracing with Tensor("a:0", shape=(), dtype=int32)
        tf.Tensor(2, shape=(), dtype=int32)

        Tracing with Tensor("a:0", shape=(), dtype=float32)
        tf.Tensor(2.2, shape=(), dtype=float32)

        Tracing with Tensor("a:0", shape=(), dtype=string)
        tf.Tensor(b'aa', shape=(), dtype=string)

        """)
    # This doesn't print 'Tracing with ...'
    print(double(tf.constant("b")))
    assert capsys.readouterr().out == guide("tf.Tensor(b'bb', shape=(), dtype=string)\n")
    assert double.experimental_get_tracing_count() == 3


def _double_with_three_traces():
    double = _make_double()
    double(tf.constant(1))
    double(tf.constant(1.1))
    double(tf.constant("a"))
    return double


EXPECTED_SIGNATURES = guide("""
    double(a)
      Args:
        a: int32 Tensor, shape=()
      Returns:
        int32 Tensor, shape=()

    double(a)
      Args:
        a: float32 Tensor, shape=()
      Returns:
        float32 Tensor, shape=()

    double(a)
      Args:
        a: string Tensor, shape=()
      Returns:
        string Tensor, shape=()""")


def test_pretty_printed_concrete_signatures_content():
    # The three traces are listed, each with its argument and return types.
    text = _double_with_three_traces().pretty_printed_concrete_signatures()
    blocks = [b.strip("\n") for b in text.split("\n\n") if b.strip()]
    assert len(blocks) == 3
    expected = [b.strip("\n") for b in EXPECTED_SIGNATURES.split("\n\n")]
    assert blocks == expected   # in trace order


def test_pretty_printed_concrete_signatures_exact(capsys):
    double = _double_with_three_traces()
    capsys.readouterr()  # the "Tracing with" lines
    print(double.pretty_printed_concrete_signatures())
    assert capsys.readouterr().out == EXPECTED_SIGNATURES + "\n"


# -- Reglas de rastreo: the cache key of each kind of argument --

def _counting():
    @tf.function
    def f(x):
        return x
    return f


def test_rule_tensor_key_is_shape_and_dtype():
    f = _counting()
    f(tf.constant([1, 2]))
    f(tf.constant([3, 4]))          # same shape and dtype: reused
    assert f.experimental_get_tracing_count() == 1
    f(tf.constant([1, 2, 3]))       # new shape
    f(tf.constant([1., 2.]))        # new dtype
    assert f.experimental_get_tracing_count() == 3


def test_rule_variable_key_is_identity():
    f = _counting()
    v1, v2 = tf.Variable(1.0), tf.Variable(2.0)
    assert f(v1).numpy() == 1.0
    assert f(v1).numpy() == 1.0
    assert f.experimental_get_tracing_count() == 1
    assert f(v2).numpy() == 2.0
    assert f.experimental_get_tracing_count() == 2


def test_rule_python_primitive_key_is_value():
    f = _counting()
    f(1)
    f(1)
    f(2)
    f("a")
    f("a")
    f(1.5)
    assert f.experimental_get_tracing_count() == 4


def test_rule_nested_structures_flatten_to_leaves():
    Pair = collections.namedtuple("Pair", "a b")
    f = _counting()
    f([tf.constant(1), {"k": tf.constant(2.0)}])
    f([tf.constant(5), {"k": tf.constant(6.0)}])       # same structure and specs
    assert f.experimental_get_tracing_count() == 1
    r = f(Pair(tf.constant(1), 2))
    assert isinstance(r, Pair) and r.b == 2 and r.a.numpy() == 1
    assert f.experimental_get_tracing_count() == 2


def test_rule_concrete_function_with_other_structure_is_an_error():
    @tf.function
    def f(pair):
        return pair[0] + pair[1]

    cf = f.get_concrete_function([tf.constant(1), tf.constant(2)])
    assert cf([tf.constant(3), tf.constant(4)]).numpy() == 7
    with pytest.raises(Exception, match="structure"):
        cf([tf.constant(3), tf.constant(4), tf.constant(5)])


def test_rule_concrete_function_with_other_structure_is_type_error():
    @tf.function
    def f(pair):
        return pair[0] + pair[1]

    cf = f.get_concrete_function([tf.constant(1), tf.constant(2)])
    with pytest.raises(TypeError):
        cf({"a": tf.constant(3), "b": tf.constant(4)})
    with pytest.raises(TypeError):
        cf([tf.constant(3), tf.constant(4), tf.constant(5)])


def test_rule_other_objects_key_is_identity():
    class Obj:
        pass

    @tf.function
    def f(o, x):
        return x + 1

    a, b = Obj(), Obj()
    f(a, tf.constant(1))
    f(a, tf.constant(2))
    assert f.experimental_get_tracing_count() == 1
    f(b, tf.constant(1))
    assert f.experimental_get_tracing_count() == 2


def test_rule_method_traced_per_instance():
    class M:
        @tf.function
        def f(self, x):
            return x * 2

    m1, m2 = M(), M()
    assert m1.f(tf.constant(3)).numpy() == 6
    assert m2.f(tf.constant(4)).numpy() == 8
    assert m1.f.experimental_get_tracing_count() == 1
    assert m2.f.experimental_get_tracing_count() == 1
