"""Guide 002, "Obtención de funciones concretas" and "Obtención de gráficos"."""
import re

import pytest

import kiln as tf
from seed_helpers import assert_raises, caught, guide


def _double():
    @tf.function
    def double(a):
        print("Tracing with", a)
        return a + a
    return double


def test_get_concrete_function_and_call(capsys):
    double = _double()
    print("Obtaining concrete trace")
    double_strings = double.get_concrete_function(tf.constant("a"))
    print("Executing traced function")
    print(double_strings(tf.constant("a")))
    print(double_strings(a=tf.constant("b")))
    out = capsys.readouterr().out
    # The guide's cell ran after `double` had traced for strings, so it shows no
    # "Tracing with" line; here the trace happens in get_concrete_function.
    assert out == guide("""
        Obtaining concrete trace
        Tracing with Tensor("a:0", shape=(), dtype=string)
        Executing traced function
        tf.Tensor(b'aa', shape=(), dtype=string)
        tf.Tensor(b'bb', shape=(), dtype=string)
        """)


def test_get_concrete_function_reuses_existing_trace(capsys):
    double = _double()
    double(tf.constant("x"))
    capsys.readouterr()
    print("Obtaining concrete trace")
    double_strings = double.get_concrete_function(tf.constant("a"))
    print("Executing traced function")
    print(double_strings(tf.constant("a")))
    print(double_strings(a=tf.constant("b")))
    assert capsys.readouterr().out == guide("""
        Obtaining concrete trace
        Executing traced function
        tf.Tensor(b'aa', shape=(), dtype=string)
        tf.Tensor(b'bb', shape=(), dtype=string)
        """)
    assert double.experimental_get_tracing_count() == 1


def test_get_concrete_function_from_tensorspec(capsys):
    double = _double()
    double.get_concrete_function(tf.constant("a"))
    # You can also call get_concrete_function on an InputSpec
    double_strings_from_inputspec = double.get_concrete_function(
        tf.TensorSpec(shape=[], dtype=tf.string))
    capsys.readouterr()
    print(double_strings_from_inputspec(tf.constant("c")))
    assert capsys.readouterr().out == guide("tf.Tensor(b'cc', shape=(), dtype=string)\n")
    assert double.experimental_get_tracing_count() == 1


def test_print_concrete_function(capsys):
    double_strings = _double().get_concrete_function(tf.constant("a"))
    capsys.readouterr()
    print(double_strings)
    assert capsys.readouterr().out == guide("""
        ConcreteFunction double(a)
          Args:
            a: string Tensor, shape=()
          Returns:
            string Tensor, shape=()
        """)
    # The repr names the function and its arguments, then the object's address.
    assert repr(double_strings).split(" at 0x")[0] == "<ConcreteFunction double(a)"


def test_structured_outputs(capsys):
    double_strings = _double().get_concrete_function(tf.constant("a"))
    capsys.readouterr()
    print(double_strings.structured_outputs)
    assert capsys.readouterr().out == 'Tensor("Identity:0", shape=(), dtype=string)\n'


def test_structured_input_signature_values():
    double_strings = _double().get_concrete_function(tf.constant("a"))
    args, kwargs = double_strings.structured_input_signature
    assert kwargs == {}
    assert len(args) == 1
    spec = args[0]
    assert isinstance(spec, tf.TensorSpec)
    assert spec.dtype == tf.string and tuple(spec.shape) == ()


def test_structured_input_signature_print(capsys):
    double_strings = _double().get_concrete_function(tf.constant("a"))
    capsys.readouterr()
    print(double_strings.structured_input_signature)
    assert capsys.readouterr().out == \
        "((TensorSpec(shape=(), dtype=tf.string, name='a'),), {})\n"


def test_incompatible_type_raises_invalid_argument(capsys):
    double_strings = _double().get_concrete_function(tf.constant("a"))
    capsys.readouterr()
    with assert_raises(tf.errors.InvalidArgumentError):
        double_strings(tf.constant(1))
    out = capsys.readouterr()
    assert out.out == caught(tf.errors.InvalidArgumentError)
    assert "InvalidArgumentError" in out.err
    assert "string" in out.err and "int32" in out.err
    with pytest.raises(tf.errors.InvalidArgumentError) as info:  # TensorFlow 2.21's text
        double_strings(tf.constant(1))
    assert re.search(r"cannot compute __inference_double(_\d+)? as input #0\(zero-based\) was "
                     r"expected to be a string tensor but is a int32 tensor "
                     r"\[Op:__inference_double(_\d+)?\]", str(info.value)), str(info.value)


def test_python_argument_fixed_in_signature(capsys):
    @tf.function
    def pow(a, b):
        return a ** b

    square = pow.get_concrete_function(a=tf.TensorSpec(None, tf.float32), b=2)
    print(square)
    assert capsys.readouterr().out == guide("""
        ConcreteFunction pow(a, b=2)
          Args:
            a: float32 Tensor, shape=<unknown>
          Returns:
            float32 Tensor, shape=<unknown>
        """)
    assert square(tf.constant(10.0)) == 100
    assert square(tf.constant(3.0)).numpy() == 9.0
    assert square(tf.constant([1.0, 2.0, 3.0])).numpy().tolist() == [1.0, 4.0, 9.0]
    # Passing the traced value again is allowed.
    assert square(tf.constant(10.0), b=2).numpy() == 100.0


def test_python_argument_different_value_is_an_error():
    @tf.function
    def pow(a, b):
        return a ** b

    square = pow.get_concrete_function(a=tf.TensorSpec(None, tf.float32), b=2)
    with pytest.raises(Exception) as info:
        square(tf.constant(10.0), b=3)
    assert str(info.value) == ("ConcreteFunction pow(a, b) was constructed with int value 2 "
                               "in b, but was called with int value 3.")


def test_python_argument_different_value_type_error(capsys):
    @tf.function
    def pow(a, b):
        return a ** b

    square = pow.get_concrete_function(a=tf.TensorSpec(None, tf.float32), b=2)
    with assert_raises(TypeError):
        square(tf.constant(10.0), b=3)
    out = capsys.readouterr()
    assert out.out == caught(TypeError)
    assert out.err.rstrip("\n").endswith(
        "TypeError: ConcreteFunction pow(a, b) was constructed with int value 2 in b, "
        "but was called with int value 3.")


def test_graph_listing(capsys):
    double_strings = _double().get_concrete_function(tf.constant("a"))
    capsys.readouterr()
    graph = double_strings.graph
    for node in graph.as_graph_def().node:
        print(f'{node.input} -> {node.name}')
    assert capsys.readouterr().out == guide("""
        [] -> a
        ['a', 'a'] -> add
        ['add'] -> Identity
        """)
