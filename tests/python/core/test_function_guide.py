"""TensorFlow's guide "Better performance with tf.function", cell by cell.

Printed concrete-function signatures follow the seed document
(/work/shared/seeds/002_*.txt, the guide as an earlier TensorFlow release printed it):
"ConcreteFunction double(a)\n  Args:\n    a: string Tensor, shape=()\n  Returns:\n
string Tensor, shape=()", not TensorFlow 2.21's "Input Parameters: / Output Type: /
Captures:" form, because the seed documents are kiln's behaviour contract. Signatures
the seed does not show (containers, *args/**kwargs, no result) keep the same form.

Each cell is the guide's code (or a small program on one of its rules) run with
``import kiln as tf``; the other expected texts are what TensorFlow 2.21 printed for the
same program (.venv-peers), with TensorFlow's repr prefixes turned into kiln's
(``tf_text``). Cells print through Python's print and tf.print (stderr) into one stream,
in order, as a notebook shows them. The cells that raise, the tracing rules and the known
differences (strict xfails naming what kiln lacks) are in test_function_guide_errors.py.
"""
import collections
import contextlib
import io
import re
import sys
import textwrap

import numpy as np
import pytest

import kiln as tf


def tf_text(text):
    """TensorFlow's printed text, dedented, as kiln prints it: kiln's reprs use its
    module name."""
    text = textwrap.dedent(text)
    text = text[1:] if text.startswith("\n") else text
    return text.replace("tf.Tensor(", "kiln.Tensor(").replace("<tf.Tensor:", "<kiln.Tensor:")


@contextlib.contextmanager
def notebook():
    """Python print (stdout) and tf.print (stderr) captured in one stream, in order."""
    buf, old = io.StringIO(), (sys.stdout, sys.stderr)
    sys.stdout = sys.stderr = buf
    try:
        yield buf
    finally:
        sys.stdout, sys.stderr = old


def run_cell(cell):
    with notebook() as out:
        cell()
    return out.getvalue()


# -- Cells whose whole printed output is compared --

def basics():
    @tf.function  # The decorator converts `add` into a `Function`.
    def add(a, b):
        return a + b

    print(add(tf.ones([2, 2]), tf.ones([2, 2])))
    v = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        result = add(v, 1.0)
    print(tape.gradient(result, v))

    @tf.function
    def dense_layer(x, w, b):
        return add(tf.matmul(x, w), b)

    print(dense_layer(tf.ones([3, 2]), tf.ones([2, 2]), tf.ones([2])))
    print(type(add).__name__)


def make_double():
    @tf.function
    def double(a):
        print("Tracing with", a)
        return a + a
    return double


def tracing():
    double = make_double()
    print(double(tf.constant(1)))
    print()
    print(double(tf.constant(1.1)))
    print()
    print(double(tf.constant("a")))
    print()
    print(double(tf.constant("b")))  # This doesn't print 'Tracing with ...'
    print(double.pretty_printed_concrete_signatures())
    print("count", double.experimental_get_tracing_count())


def concrete():
    double = make_double()
    print("Obtaining concrete trace")
    double_strings = double.get_concrete_function(tf.constant("a"))
    print("Executing traced function")
    print(double_strings(tf.constant("a")))
    print(double_strings(a=tf.constant("b")))
    from_spec = double.get_concrete_function(tf.TensorSpec(shape=[], dtype=tf.string))
    print(from_spec(tf.constant("c")))
    print(double_strings)
    print(repr(double_strings).split(" at 0x")[0])
    print(double_strings.structured_input_signature)
    print(double_strings.structured_outputs)
    for node in double_strings.graph.as_graph_def().node:
        print(f'{node.input} -> {node.name}')


def pow_cell():
    @tf.function
    def pow(a, b):
        return a ** b

    square = pow.get_concrete_function(a=tf.TensorSpec(None, tf.float32), b=2)
    print(square)
    print(square(tf.constant(10.0)))


def retracing_rules():
    @tf.function(input_signature=(tf.TensorSpec(shape=[None], dtype=tf.int32),))
    def next_collatz(x):
        print("Tracing with", x)
        return tf.where(x % 2 == 0, x // 2, 3 * x + 1)

    print(next_collatz(tf.constant([1, 2])))

    @tf.function(reduce_retracing=True)
    def g(x):
        print('Tracing with', x)
        return x

    for n in (3, 5, 7, 9):
        print(g(tf.constant(list(range(1, n + 1)))))
    print(g.experimental_get_tracing_count())

    @tf.function(experimental_relax_shapes=True)
    def h(x):
        print('Tracing with', x)
        return x

    h(tf.constant([1, 2, 3]))
    h(tf.constant([1, 2]))
    h(tf.constant([1]))
    print(h.experimental_get_tracing_count())


def python_vs_tensor_arguments():
    def train_one_step():
        pass

    @tf.function
    def train(num_steps):
        print("Tracing with num_steps = ", num_steps)
        tf.print("Executing with num_steps = ", num_steps)
        for _ in tf.range(num_steps):
            train_one_step()

    print("Retracing occurs for different Python arguments.")
    train(num_steps=10)
    train(num_steps=20)
    print()
    print("Traces are reused for Tensor arguments.")
    train(num_steps=tf.constant(10))
    train(num_steps=tf.constant(20))
    print(train.experimental_get_tracing_count())

    def f():
        print('Tracing!')
        tf.print('Executing')

    tf.function(f)()
    tf.function(f)()


def side_effects():
    @tf.function
    def f(x):
        print("Traced with", x)
        tf.print("Executed with", x)

    f(1)
    f(1)
    f(2)
    external_list = []

    @tf.function
    def side_effect(x):
        print('Python side effect')
        external_list.append(x)

    side_effect(1)
    side_effect(1)
    side_effect(1)
    print(len(external_list))


def iterators():
    external_var = tf.Variable(0)

    @tf.function
    def buggy_consume_next(iterator):
        external_var.assign_add(next(iterator))
        tf.print("Value of external_var:", external_var)

    iterator = iter([0, 1, 2, 3])
    for _ in range(3):
        buggy_consume_next(iterator)

    @tf.function
    def good_consume_next(iterator):
        external_var.assign_add(next(iterator))
        tf.print("Value of external_var:", external_var)

    iterator = iter(tf.data.Dataset.from_tensor_slices([1, 2, 3]))
    for _ in range(3):
        good_consume_next(iterator)


def recursion_on_python_values():
    @tf.function
    def recursive_fn(n):
        if n > 0:
            print('tracing')
            return recursive_fn(n - 1)
        else:
            return 1

    print(recursive_fn(5))


FOO = {"foo": 1}


def globals_and_variables():
    @tf.function
    def buggy_add():
        return 1 + FOO["foo"]

    @tf.function
    def recommended_add(foo):
        return 1 + foo

    print("Buggy:", buggy_add())
    print("Correct:", recommended_add(FOO["foo"]))
    FOO["foo"] = 100
    print("Buggy:", buggy_add())  # Did not change!
    print("Correct:", recommended_add(FOO["foo"]))
    foo = tf.Variable(1)

    @tf.function
    def variable_add():
        return 1 + foo

    print("Variable:", variable_add())
    foo.assign(100)
    print("Variable:", variable_add())


class SimpleModel(tf.Module):
    def __init__(self):
        self.bias = 0.
        self.weight = 2.


class BetterModel:
    def __init__(self):
        self.bias = tf.Variable(0.)
        self.weight = tf.Variable(2.)


def python_objects():
    @tf.function
    def evaluate(model, x):
        return model.weight * x + model.bias

    simple_model, x = SimpleModel(), tf.constant(10.)
    print(evaluate(simple_model, x))
    simple_model.bias += 5.0
    print(evaluate(simple_model, x))  # Didn't change :(

    def evaluate_fn(model, x):
        return model.weight * x + model.bias

    new_model = SimpleModel()
    print(tf.function(evaluate_fn).get_concrete_function(new_model, x)(x))
    new_model.bias += 5.0
    print(tf.function(evaluate_fn).get_concrete_function(new_model, x)(x))
    better_model = BetterModel()
    print(evaluate(better_model, x))
    better_model.bias.assign_add(5.0)
    print(evaluate(better_model, x))


class Count(tf.Module):
    def __init__(self):
        self.count = None

    @tf.function
    def __call__(self):
        if self.count is None:
            self.count = tf.Variable(0)
        return self.count.assign_add(1)


def variables_created_once():
    c = Count()
    print(c())
    print(c())


def autograph_loops():
    @tf.function
    def fizzbuzz(n):
        for i in tf.range(1, n + 1):
            print('Tracing for loop')
            if i % 15 == 0:
                print('Tracing fizzbuzz branch')
                tf.print('fizzbuzz')
            elif i % 3 == 0:
                print('Tracing fizz branch')
                tf.print('fizz')
            elif i % 5 == 0:
                print('Tracing buzz branch')
                tf.print('buzz')
            else:
                print('Tracing default branch')
                tf.print(i)

    fizzbuzz(tf.constant(5))
    fizzbuzz(tf.constant(16))


def accumulate_in_loops():
    @tf.function
    def dynamic_rnn(rnn_step, input_data, initial_state):
        input_data = tf.transpose(input_data, [1, 0, 2])
        max_seq_len = input_data.shape[0]
        states = tf.TensorArray(tf.float32, size=max_seq_len)
        state = initial_state
        for i in tf.range(max_seq_len):
            state = rnn_step(input_data[i], state)
            states = states.write(i, state)
        return tf.transpose(states.stack(), [1, 0, 2])

    data = tf.reshape(tf.range(24, dtype=tf.float32), [2, 3, 4])
    print(dynamic_rnn(lambda inp, state: inp + state, data, tf.zeros([2, 4])))
    print(dynamic_rnn.pretty_printed_concrete_signatures())

    @tf.function
    def squares(n):
        ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
        for i in tf.range(n):
            ta = ta.write(i, i * i)
        return ta.stack()

    @tf.function
    def unrolled(n):
        out = []
        for i in range(n):
            out.append(i)
        return tf.stack(out)

    print(squares(tf.constant(4)), unrolled(3))


def run_eagerly():
    @tf.function
    def get_MSE(y_true, y_pred):
        print("Calculating MSE!")
        return tf.reduce_mean(tf.pow(y_true - y_pred, 2))

    y_true, y_pred = tf.constant([1, 2, 3]), tf.constant([2, 2, 2])
    print(get_MSE(y_true, y_pred))
    tf.config.run_functions_eagerly(True)
    try:
        print(get_MSE(y_true, y_pred))
        print(get_MSE(y_true, y_pred))
        print(get_MSE.experimental_get_tracing_count())
    finally:
        tf.config.run_functions_eagerly(False)
    print(get_MSE(y_true, y_pred))


def tf_print_structures():
    x = tf.constant([1.5, 2.0])
    tf.print(1.5, 3, True, None)
    tf.print(np.array([1, 2]))
    tf.print([x, "a", {"k": (x, 1)}], sep="|")
    tf.print({"b": 1, "a": x})
    tf.print(collections.defaultdict(list, {"b": x, "a": 1}),
             collections.OrderedDict([("b", x), ("a", 1)]))
    tf.print()
    tf.print("{}", x)
    tf.print("x:", tf.constant("abc"))
    tf.print(tf.constant("abc"))
    tf.print(tf.constant(["a", "b"]))
    tf.print(tf.range(10), summarize=2)
    tf.print([tf.range(10)], summarize=2)
    tf.print(tf.constant([[1, 2], [3, 4]]), tf.constant(True), tf.constant(123456789.0))

    @tf.function
    def f(x):
        print("print", x)
        tf.print(x, [x, "a", 1], {"z": x, "a": 2})

    f(x)
    f(x)


def signatures():
    v = tf.Variable(2.0)

    @tf.function
    def f(x, y=3, *args, z=None, **kw):
        return {"a": x * v, "b": (x, y)}

    print(f.get_concrete_function(tf.constant(1.0)))

    @tf.function
    def g(x):
        v.assign(x)

    print(g.get_concrete_function(tf.constant(1.0)))

    @tf.function
    def h(xs, d):
        return xs[0] + xs[1]

    cf = h.get_concrete_function([tf.constant(1), tf.constant(2)], {"b": tf.constant(1.0)})
    print(cf)
    print(cf.structured_input_signature)

    @tf.function
    def k(x, *args, k=1, **kwargs):
        return x

    cf = k.get_concrete_function(tf.constant(1.0), 2, tf.constant(3), k=2, z=tf.constant(1))
    print(repr(cf).split(" at 0x")[0])
    print(cf.structured_input_signature)
    print(cf.pretty_printed_signature(verbose=False))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int32, name="q")])
    def n(x):
        return None

    print(n.pretty_printed_concrete_signatures())


CELLS = {
    "basics": (basics, """
        tf.Tensor(
        [[2. 2.]
         [2. 2.]], shape=(2, 2), dtype=float32)
        tf.Tensor(1.0, shape=(), dtype=float32)
        tf.Tensor(
        [[3. 3.]
         [3. 3.]
         [3. 3.]], shape=(3, 2), dtype=float32)
        Function
        """),
    "tracing": (tracing, """
        Tracing with Tensor("a:0", shape=(), dtype=int32)
        tf.Tensor(2, shape=(), dtype=int32)

        Tracing with Tensor("a:0", shape=(), dtype=float32)
        tf.Tensor(2.2, shape=(), dtype=float32)

        Tracing with Tensor("a:0", shape=(), dtype=string)
        tf.Tensor(b'aa', shape=(), dtype=string)

        tf.Tensor(b'bb', shape=(), dtype=string)
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
            string Tensor, shape=()
        count 3
        """),
    "concrete": (concrete, """
        Obtaining concrete trace
        Tracing with Tensor("a:0", shape=(), dtype=string)
        Executing traced function
        tf.Tensor(b'aa', shape=(), dtype=string)
        tf.Tensor(b'bb', shape=(), dtype=string)
        tf.Tensor(b'cc', shape=(), dtype=string)
        ConcreteFunction double(a)
          Args:
            a: string Tensor, shape=()
          Returns:
            string Tensor, shape=()
        <ConcreteFunction double(a)
        ((TensorSpec(shape=(), dtype=tf.string, name='a'),), {})
        Tensor("Identity:0", shape=(), dtype=string)
        [] -> a
        ['a', 'a'] -> add
        ['add'] -> Identity
        """),
    "pow": (pow_cell, """
        ConcreteFunction pow(a, b=2)
          Args:
            a: float32 Tensor, shape=<unknown>
          Returns:
            float32 Tensor, shape=<unknown>
        tf.Tensor(100.0, shape=(), dtype=float32)
        """),
    "retracing_rules": (retracing_rules, """
        Tracing with Tensor("x:0", shape=(None,), dtype=int32)
        tf.Tensor([4 1], shape=(2,), dtype=int32)
        Tracing with Tensor("x:0", shape=(3,), dtype=int32)
        tf.Tensor([1 2 3], shape=(3,), dtype=int32)
        Tracing with Tensor("x:0", shape=(None,), dtype=int32)
        tf.Tensor([1 2 3 4 5], shape=(5,), dtype=int32)
        tf.Tensor([1 2 3 4 5 6 7], shape=(7,), dtype=int32)
        tf.Tensor([1 2 3 4 5 6 7 8 9], shape=(9,), dtype=int32)
        2
        Tracing with Tensor("x:0", shape=(3,), dtype=int32)
        Tracing with Tensor("x:0", shape=(None,), dtype=int32)
        2
        """),
    "python_vs_tensor_arguments": (python_vs_tensor_arguments, """
        Retracing occurs for different Python arguments.
        Tracing with num_steps =  10
        Executing with num_steps =  10
        Tracing with num_steps =  20
        Executing with num_steps =  20

        Traces are reused for Tensor arguments.
        Tracing with num_steps =  Tensor("num_steps:0", shape=(), dtype=int32)
        Executing with num_steps =  10
        Executing with num_steps =  20
        3
        Tracing!
        Executing
        Tracing!
        Executing
        """),
    "side_effects": (side_effects, """
        Traced with 1
        Executed with 1
        Executed with 1
        Traced with 2
        Executed with 2
        Python side effect
        1
        """),
    "iterators": (iterators, """
        Value of external_var: 0
        Value of external_var: 0
        Value of external_var: 0
        Value of external_var: 1
        Value of external_var: 3
        Value of external_var: 6
        """),
    "recursion_on_python_values": (recursion_on_python_values, """
        tracing
        tracing
        tracing
        tracing
        tracing
        tf.Tensor(1, shape=(), dtype=int32)
        """),
    "globals_and_variables": (globals_and_variables, """
        Buggy: tf.Tensor(2, shape=(), dtype=int32)
        Correct: tf.Tensor(2, shape=(), dtype=int32)
        Buggy: tf.Tensor(2, shape=(), dtype=int32)
        Correct: tf.Tensor(101, shape=(), dtype=int32)
        Variable: tf.Tensor(2, shape=(), dtype=int32)
        Variable: tf.Tensor(101, shape=(), dtype=int32)
        """),
    "python_objects": (python_objects, """
        tf.Tensor(20.0, shape=(), dtype=float32)
        tf.Tensor(20.0, shape=(), dtype=float32)
        tf.Tensor(20.0, shape=(), dtype=float32)
        tf.Tensor(25.0, shape=(), dtype=float32)
        tf.Tensor(20.0, shape=(), dtype=float32)
        tf.Tensor(25.0, shape=(), dtype=float32)
        """),
    "variables_created_once": (variables_created_once, """
        tf.Tensor(1, shape=(), dtype=int32)
        tf.Tensor(2, shape=(), dtype=int32)
        """),
    "autograph_loops": (autograph_loops, """
        Tracing for loop
        Tracing fizzbuzz branch
        Tracing fizz branch
        Tracing buzz branch
        Tracing default branch
        1
        2
        fizz
        4
        buzz
        1
        2
        fizz
        4
        buzz
        fizz
        7
        8
        fizz
        buzz
        11
        fizz
        13
        14
        fizzbuzz
        16
        """),
    "accumulate_in_loops": (accumulate_in_loops, """
        tf.Tensor(
        [[[ 0.  1.  2.  3.]
          [ 4.  6.  8. 10.]
          [12. 15. 18. 21.]]

         [[12. 13. 14. 15.]
          [28. 30. 32. 34.]
          [48. 51. 54. 57.]]], shape=(2, 3, 4), dtype=float32)
        dynamic_rnn(rnn_step=<function accumulate_in_loops.<locals>.<lambda> at ADDRESS>, \
input_data, initial_state)
          Args:
            input_data: float32 Tensor, shape=(2, 3, 4)
            initial_state: float32 Tensor, shape=(2, 4)
          Returns:
            float32 Tensor, shape=(2, 3, 4)
        tf.Tensor([0 1 4 9], shape=(4,), dtype=int32) tf.Tensor([0 1 2], shape=(3,), dtype=int32)
        """),
    "run_eagerly": (run_eagerly, """
        Calculating MSE!
        tf.Tensor(0, shape=(), dtype=int32)
        Calculating MSE!
        tf.Tensor(0, shape=(), dtype=int32)
        Calculating MSE!
        tf.Tensor(0, shape=(), dtype=int32)
        1
        tf.Tensor(0, shape=(), dtype=int32)
        """),
    "tf_print_structures": (tf_print_structures, """
        1.5 3 True None
        array([1, 2])
        [[1.5 2], 'a', {'k': ([1.5 2], 1)}]
        {'a': [1.5 2], 'b': 1}
        defaultdict(<class 'list'>, {'b': [1.5 2], 'a': 1}) OrderedDict([('b', [1.5 2]), ('a', 1)])

        {} [1.5 2]
        x: "abc"
        abc
        ["a" "b"]
        [0 1 ... 8 9]
        [[0 1 ... 8 9]]
        [[1 2]
         [3 4]] 1 123456792
        print Tensor("x:0", shape=(2,), dtype=float32)
        [1.5 2] [[1.5 2], 'a', 1] {'a': 2, 'z': [1.5 2]}
        [1.5 2] [[1.5 2], 'a', 1] {'a': 2, 'z': [1.5 2]}
        """),
    # Cases the seed does not show, in its form: a Python value bound at trace time
    # as name=value, a container argument as its structure, no result as NoneTensorSpec().
    "signatures": (signatures, """
        ConcreteFunction f(x, y=3, args, z=None, kw)
          Args:
            x: float32 Tensor, shape=()
            args: ()
            kw: {}
          Returns:
            {'a': Tensor("Identity:0", shape=(), dtype=float32), \
'b': (Tensor("Identity_1:0", shape=(), dtype=float32), \
Tensor("Identity_2:0", shape=(), dtype=int32))}
        ConcreteFunction g(x)
          Args:
            x: float32 Tensor, shape=()
          Returns:
            NoneTensorSpec()
        ConcreteFunction h(xs, d)
          Args:
            xs: [TensorSpec(shape=(), dtype=tf.int32, name='xs_0'), \
TensorSpec(shape=(), dtype=tf.int32, name='xs_1')]
            d: {'b': TensorSpec(shape=(), dtype=tf.float32, name='d_b')}
          Returns:
            int32 Tensor, shape=()
        (([TensorSpec(shape=(), dtype=tf.int32, name='xs_0'), \
TensorSpec(shape=(), dtype=tf.int32, name='xs_1')], \
{'b': TensorSpec(shape=(), dtype=tf.float32, name='d_b')}), {})
        <ConcreteFunction k(x, args, k=2, kwargs)
        ((TensorSpec(shape=(), dtype=tf.float32, name='x'), 2, \
TensorSpec(shape=(), dtype=tf.int32, name='args_1')), \
{'k': 2, 'z': TensorSpec(shape=(), dtype=tf.int32, name='z')})
        k(x, args, k=2, kwargs)
        n(x)
          Args:
            x: int32 Tensor, shape=(None,)
          Returns:
            NoneTensorSpec()
        """),
}


def _normalized(text):
    """Addresses vary between runs."""
    return re.sub(r" at 0x[0-9a-f]+", " at ADDRESS", text)


@pytest.mark.parametrize("name", list(CELLS))
def test_cell_prints_what_tensorflow_prints(name):
    cell, expected = CELLS[name]
    expected = tf_text(expected).replace("\\\n", "")
    assert _normalized(run_cell(cell)) == expected
