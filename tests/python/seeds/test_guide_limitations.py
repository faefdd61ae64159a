"""Guide 002, "Limitaciones": Python side effects, py_function, globals, init_scope,
iterators, leaked tensors, recursion."""
import pytest

import kiln as tf
from seed_helpers import assert_raises, caught, Interleaved


def test_side_effects_only_when_tracing():
    with Interleaved() as out:
        @tf.function
        def f(x):
            print("Traced with", x)
            tf.print("Executed with", x)

        f(1)
        f(1)
        f(2)
    assert out.text == ("Traced with 1\nExecuted with 1\nExecuted with 1\n"
                        "Traced with 2\nExecuted with 2\n")


def test_py_function_runs_python_every_call():
    calls = []

    def py_side_effect(x):
        calls.append(int(x.numpy()))
        return x * 10

    @tf.function
    def f(x):
        return tf.py_function(py_side_effect, [x], tf.int32)

    assert f(tf.constant(1)).numpy() == 10
    assert f(tf.constant(2)).numpy() == 20
    assert f(tf.constant(3)).numpy() == 30
    assert calls == [1, 2, 3]
    assert f.experimental_get_tracing_count() == 1


def test_external_list_append_only_once(capsys):
    external_list = []

    @tf.function
    def side_effect(x):
        print('Python side effect')
        external_list.append(x)

    side_effect(1)
    side_effect(1)
    side_effect(1)
    # The list append only happened once!
    assert len(external_list) == 1
    assert capsys.readouterr().out == "Python side effect\n"


class _CounterModel(tf.Module):
    def __init__(self):
        self.v = tf.Variable(0)
        self.counter = 0

    @tf.function
    def __call__(self):
        if self.counter == 0:
            # A python side-effect
            self.counter += 1
            self.v.assign_add(1)

        return self.v


def test_python_counter_guard_is_captured_at_trace(capsys):
    m = _CounterModel()
    for n in range(3):
        print(m().numpy())  # prints 1, 2, 3
    assert capsys.readouterr().out == "1\n2\n3\n"
    assert m.counter == 1


class _InitScopeModel(tf.Module):
    def __init__(self):
        self.v = tf.Variable(0)
        self.counter = 0

    @tf.function
    def __call__(self):
        if self.counter == 0:
            # Lifts ops out of function-building graphs
            with tf.init_scope():
                self.counter += 1
                self.v.assign_add(1)

        return self.v


def test_init_scope_lifts_ops_out_of_the_graph(capsys):
    m = _InitScopeModel()
    for n in range(3):
        print(m().numpy())  # prints 1, 1, 1
    assert capsys.readouterr().out == "1\n1\n1\n"
    assert m.v.numpy() == 1


def test_python_iterator_consumed_only_at_trace():
    with Interleaved() as out:
        @tf.function
        def buggy_consume_next(iterator):
            tf.print("Value:", next(iterator))

        iterator = iter([1, 2, 3])
        buggy_consume_next(iterator)
        # This reuses the first value from the iterator, rather than consuming the next value.
        buggy_consume_next(iterator)
        buggy_consume_next(iterator)
    assert out.text == "Value: 1\nValue: 1\nValue: 1\n"


def test_dataset_iterator_advances_every_call():
    with Interleaved() as out:
        @tf.function
        def good_consume_next(iterator):
            # This is ok, iterator is a tf.data.Iterator
            tf.print("Value:", next(iterator))

        ds = tf.data.Dataset.from_tensor_slices([1, 2, 3])
        iterator = iter(ds)
        good_consume_next(iterator)
        good_consume_next(iterator)
        good_consume_next(iterator)
    assert out.text == "Value: 1\nValue: 2\nValue: 3\n"
    assert good_consume_next.experimental_get_tracing_count() == 1


def test_dataset_iterator_exhausted_raises_out_of_range():
    @tf.function
    def good_consume_next(iterator):
        return next(iterator)

    iterator = iter(tf.data.Dataset.from_tensor_slices([1]))
    assert good_consume_next(iterator).numpy() == 1
    with pytest.raises(tf.errors.OutOfRangeError):
        good_consume_next(iterator)


# -- Todas las salidas de una tf.function deben ser valores de retorno --

x = None  # the guide's global, leaked into by leaky_function


def test_leaked_tensor_has_no_numpy(capsys):
    @tf.function
    def leaky_function(a):
        global x
        x = a + 1  # Bad - leaks local tensor
        return a + 2

    correct_a = leaky_function(tf.constant(1))

    print(correct_a.numpy())  # Good - value obtained from function's returns
    try:
        x.numpy()  # Bad - tensor leaked from inside the function, cannot be used here
    except AttributeError as expected:
        print(expected)
    out = capsys.readouterr().out
    # The guide prints the AttributeError's text; kiln's may add an explanation after it.
    assert out.startswith("3\n'Tensor' object has no attribute 'numpy'")
    assert out.count("\n") == 2


def test_leaked_tensor_even_if_returned(capsys):
    @tf.function
    def leaky_function(a):
        global x
        x = a + 1  # Bad - leaks local tensor
        return x  # Good - uses local tensor

    correct_a = leaky_function(tf.constant(1))

    print(correct_a.numpy())  # Good - value obtained from function's returns
    try:
        x.numpy()  # Bad - tensor leaked from inside the function, cannot be used here
    except AttributeError as expected:
        print(expected)

    @tf.function
    def captures_leaked_tensor(b):
        b += x  # Bad - `x` is leaked from `leaky_function`
        return b

    with assert_raises(TypeError):
        captures_leaked_tensor(tf.constant(2))
    out = capsys.readouterr()
    assert out.out.startswith("2\n'Tensor' object has no attribute 'numpy'")
    assert out.out.endswith("\n" + caught(TypeError))
    assert out.out.count("\n") == 4
    # The error says a symbolic tensor of another graph was captured, and names it.
    assert "captured an external symbolic tensor" in out.err
    assert "node 'add'" in out.err


def _leaked_tensor():
    """A tensor leaked out of a traced function."""
    leaked = {}

    @tf.function
    def leaky_function(a):
        leaked["x"] = a + 1
        return a

    leaky_function(tf.constant(1))
    return leaked["x"]


def test_leaked_tensor_used_eagerly_is_an_error():
    with pytest.raises((TypeError, ValueError, tf.errors.OpError)):
        _leaked_tensor() + 1


def test_leaked_tensor_text_is_the_seeds():
    # The seed's release says 'Tensor' (TensorFlow 2.21: "'SymbolicTensor' object has no
    # attribute 'numpy'", with nothing after it). The seed is the contract; kiln adds
    # which tensor it is and what to do instead.
    with pytest.raises(AttributeError) as info:
        _leaked_tensor().numpy()
    assert str(info.value).startswith("'Tensor' object has no attribute 'numpy': ")
    assert "symbolic tensor" in str(info.value)


def test_leaking_into_external_collections():
    class MyClass:

        def __init__(self):
            self.field = None

    external_list = []
    external_object = MyClass()

    def leaky_function():
        a = tf.constant(1)
        external_list.append(a)  # Bad - leaks tensor
        external_object.field = a  # Bad - leaks tensor

    tf.function(leaky_function)()
    assert len(external_list) == 1
    assert external_object.field is external_list[0]

    # A leaked op result (not a constant) is a symbolic tensor without a value.
    def leaky_computation(x):
        a = x + 1
        external_list.append(a)  # Bad - leaks tensor
        return x

    tf.function(leaky_computation)(tf.constant(1))
    assert len(external_list) == 2
    with pytest.raises(AttributeError):
        external_list[1].numpy()


# -- Las funciones tf. recursivas no son compatibles --

def test_recursive_function_on_tensor_raises(capsys):
    @tf.function
    def recursive_fn(n):
        if n > 0:
            return recursive_fn(n - 1)
        else:
            return 1

    with assert_raises(Exception):
        recursive_fn(tf.constant(5))  # Bad - maximum recursion error.
    out = capsys.readouterr()
    assert out.out == caught(Exception)
    assert "recursive_fn" in out.err
    # TensorFlow recurses until Python's RecursionError (a StagingError "in user code");
    # kiln stops at the first recursive trace with an error saying why.
    assert "called itself while being traced" in out.err


def test_recursive_function_on_python_int_traces_each_level(capsys):
    @tf.function
    def recursive_fn(n):
        if n > 0:
            print('tracing')
            return recursive_fn(n - 1)
        else:
            return 1

    r = recursive_fn(5)  # Warning - multiple tracings
    assert capsys.readouterr().out == "tracing\n" * 5
    assert r.numpy() == 1 and r.dtype == tf.int32
    assert repr(r).startswith("<kiln.Tensor: shape=(), dtype=int32, numpy=")
