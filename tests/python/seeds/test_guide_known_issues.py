"""Guide 002, "Problemas conocidos": globals and free variables, Python objects,
creating Variables, several Keras optimizers with one function.

Skipped from the guide: "Uso con varios modelos de Keras" has no code.
"""
import re

import pytest

import kiln as tf
from seed_helpers import assert_raises, caught, guide

# Module-level names, as in the guide: the functions read `foo` as a global.
foo = None


@tf.function
def buggy_add():
    return 1 + foo


@tf.function
def recommended_add(foo):
    return 1 + foo


@tf.function
def variable_add():
    return 1 + foo


def test_globals_captured_at_trace_time_values():
    global foo
    foo = 1
    assert int(buggy_add()) == 2 and int(recommended_add(foo)) == 2
    foo = 100
    assert int(buggy_add()) == 2  # Did not change!
    assert int(recommended_add(foo)) == 101


def test_globals_captured_at_trace_time(capsys):
    global foo

    @tf.function
    def buggy_add():
        return 1 + foo

    @tf.function
    def recommended_add(foo):
        return 1 + foo

    foo = 1
    print("Buggy:", buggy_add())
    print("Correct:", recommended_add(foo))
    print("Updating the value of `foo` to 100!")
    foo = 100
    print("Buggy:", buggy_add())  # Did not change!
    print("Correct:", recommended_add(foo))
    assert capsys.readouterr().out == guide("""
        Buggy: tf.Tensor(2, shape=(), dtype=int32)
        Correct: tf.Tensor(2, shape=(), dtype=int32)
        Updating the value of `foo` to 100!
        Buggy: tf.Tensor(2, shape=(), dtype=int32)
        Correct: tf.Tensor(101, shape=(), dtype=int32)
        """)


def test_global_variable_read_every_call(capsys):
    global foo
    foo = tf.Variable(1)
    print("Variable:", variable_add())
    print("Updating the value of `foo` to 100!")
    foo.assign(100)
    print("Variable:", variable_add())
    assert capsys.readouterr().out == guide("""
        Variable: tf.Tensor(2, shape=(), dtype=int32)
        Updating the value of `foo` to 100!
        Variable: tf.Tensor(101, shape=(), dtype=int32)
        """)


def test_closure_captured_at_trace_time():
    bias = 1

    @tf.function
    def add_bias(x):
        return x + bias

    assert add_bias(tf.constant(1)).numpy() == 2
    bias = 10  # noqa: F841 -- a closure: the trace keeps the old value
    assert add_bias(tf.constant(1)).numpy() == 2


# -- Dependiendo de los objetos de Python --

class SimpleModel(tf.Module):
    def __init__(self):
        # These values are *not* tf.Variables.
        self.bias = 0.
        self.weight = 2.


def test_object_attributes_not_in_cache_key(capsys):
    @tf.function
    def evaluate(model, x):
        return model.weight * x + model.bias

    simple_model = SimpleModel()
    x = tf.constant(10.)
    print(evaluate(simple_model, x))
    print("Adding bias!")
    simple_model.bias += 5.0
    print(evaluate(simple_model, x))  # Didn't change :(
    assert capsys.readouterr().out == guide("""
        tf.Tensor(20.0, shape=(), dtype=float32)
        Adding bias!
        tf.Tensor(20.0, shape=(), dtype=float32)
        """)


def test_new_function_per_object_state(capsys):
    def evaluate(model, x):
        return model.weight * x + model.bias

    x = tf.constant(10.)
    new_model = SimpleModel()
    evaluate_no_bias = tf.function(evaluate).get_concrete_function(new_model, x)
    # Don't pass in `new_model`, `Function` already captured its state during tracing.
    print(evaluate_no_bias(x))
    print("Adding bias!")
    new_model.bias += 5.0
    # Create new Function and ConcreteFunction since you modified new_model.
    evaluate_with_bias = tf.function(evaluate).get_concrete_function(new_model, x)
    print(evaluate_with_bias(x))  # Don't pass in `new_model`.
    assert capsys.readouterr().out == guide("""
        tf.Tensor(20.0, shape=(), dtype=float32)
        Adding bias!
        tf.Tensor(25.0, shape=(), dtype=float32)
        """)


class SimpleModelInit(tf.Module):
    """SimpleModel with the base initializer called (not in the guide)."""

    def __init__(self):
        super().__init__()
        self.bias = 0.
        self.weight = 2.


def test_object_attributes_not_in_cache_key_module_initialized():
    @tf.function
    def evaluate(model, x):
        return model.weight * x + model.bias

    model = SimpleModelInit()
    x = tf.constant(10.)
    assert evaluate(model, x).numpy() == 20.0
    model.bias += 5.0
    assert evaluate(model, x).numpy() == 20.0  # Didn't change: same object, same trace
    assert tf.function(evaluate.python_function)(model, x).numpy() == 25.0  # new Function
    assert evaluate(SimpleModelInit(), x).numpy() == 20.0  # another object: another trace
    assert evaluate.experimental_get_tracing_count() == 2


class BetterModel:

    def __init__(self):
        self.bias = tf.Variable(0.)
        self.weight = tf.Variable(2.)


def test_variable_attributes_mutate_without_retrace(capsys):
    @tf.function
    def evaluate(model, x):
        return model.weight * x + model.bias

    x = tf.constant(10.)
    better_model = BetterModel()
    print(evaluate(better_model, x))
    print("Adding bias!")
    better_model.bias.assign_add(5.0)  # Note: instead of better_model.bias += 5
    print(evaluate(better_model, x))  # This works!
    assert capsys.readouterr().out == guide("""
        tf.Tensor(20.0, shape=(), dtype=float32)
        Adding bias!
        tf.Tensor(25.0, shape=(), dtype=float32)
        """)
    assert evaluate.experimental_get_tracing_count() == 1


# -- Creando tf.Variables --

VARIABLE_ERROR = ("tf.function only supports singleton tf.Variables created on the first "
                  "call. Make sure the tf.Variable is only created once or created outside "
                  "tf.function.")


def test_variable_created_every_call_raises(capsys):
    @tf.function
    def f(x):
        v = tf.Variable(1.0)
        return v

    with assert_raises(ValueError):
        f(1.0)
    out = capsys.readouterr()
    assert out.out == caught(ValueError)
    assert "singleton" in out.err and "first call" in out.err


def test_variable_creation_on_later_trace_raises():
    @tf.function
    def f(x):
        v = tf.Variable(1.0)
        return v

    try:
        f(1.0)     # raises already (the first call traces twice, see above)
    except ValueError:
        pass
    with pytest.raises(ValueError) as info:
        f(2.0)     # a second trace creating a variable
    msg = str(info.value)
    assert "first call" in msg and "created outside kiln.function" in msg


def test_variable_creation_error_text():
    @tf.function
    def f(x):
        v = tf.Variable(1.0)
        return v

    with pytest.raises(ValueError) as info:
        f(1.0)
        f(2.0)
    msg = str(info.value).replace("kiln.function", "tf.function") \
        .replace("kiln.Variable", "tf.Variable")
    assert VARIABLE_ERROR in msg
    # In user code: the error points at the line that created the variable.
    assert "v = tf.Variable(1.0)" in msg
    assert "defined()" not in msg
    # TensorFlow 2.21's frame: the user's file and line, then the error, indented.
    msg = str(info.value)
    assert msg.startswith('in user code:\n\n    File "')
    assert re.search(r'line \d+, in f  \*\n        v = tf\.Variable\(1\.0\)\n\n    ValueError: '
                     r'kiln\.function only supports singleton kiln\.Variables created on the '
                     r'first call\. Make sure the kiln\.Variable is only created once or '
                     r'created outside kiln\.function\.', msg), msg


class Count(tf.Module):
    def __init__(self):
        self.count = None

    @tf.function
    def __call__(self):
        if self.count is None:
            self.count = tf.Variable(0)
        return self.count.assign_add(1)


def test_create_variable_on_first_call_only(capsys):
    c = Count()
    print(c())
    print(c())
    assert capsys.readouterr().out == guide("""
        tf.Tensor(1, shape=(), dtype=int32)
        tf.Tensor(2, shape=(), dtype=int32)
        """)
    assert isinstance(c.count, tf.Variable)
    assert [v.numpy() for v in c.trainable_variables] == [2]


def test_variable_creating_trace_counts_twice():
    # TensorFlow 2.21 traces Count.__call__ again once its variable exists, and counts and
    # lists both traces.
    c = Count()
    c()
    assert c.__call__.experimental_get_tracing_count() == 2
    assert c.__call__.pretty_printed_concrete_signatures().count("Args:") == 2


def test_separate_instances_have_separate_variables():
    a, b = Count(), Count()
    assert a().numpy() == 1 and a().numpy() == 2
    assert b().numpy() == 1
    assert a().numpy() == 3


# -- Uso con múltiples optimizadores de Keras --

@pytest.mark.filterwarnings("ignore::kiln.NoReturnWarning")
def test_multiple_optimizers_same_function_raises(capsys):
    opt1 = tf.keras.optimizers.Adam(learning_rate=1e-2)
    opt2 = tf.keras.optimizers.Adam(learning_rate=1e-3)

    @tf.function
    def train_step(w, x, y, optimizer):
        with tf.GradientTape() as tape:
            L = tf.reduce_sum(tf.square(w*x - y))
        gradients = tape.gradient(L, [w])
        optimizer.apply_gradients(zip(gradients, [w]))

    w = tf.Variable(2.)
    x = tf.constant([-1.])
    y = tf.constant([2.])

    train_step(w, x, y, opt1)
    print("Calling `train_step` with different optimizer...")
    with assert_raises(ValueError):
        train_step(w, x, y, opt2)
    out = capsys.readouterr()
    assert out.out == "Calling `train_step` with different optimizer...\n" + caught(ValueError)
    err = out.err.replace("kiln.function", "tf.function").replace("kiln.Variable", "tf.Variable")
    assert VARIABLE_ERROR in err
    assert "optimizer.apply_gradients(zip(gradients, [w]))" in err  # the user's line
    assert 1.98 < w.numpy() < 2.0  # opt1's first Adam step moved w by about lr


@pytest.mark.filterwarnings("ignore::kiln.NoReturnWarning")
def test_multiple_optimizers_one_concrete_function_each():
    opt1 = tf.keras.optimizers.Adam(learning_rate=1e-2)
    opt2 = tf.keras.optimizers.Adam(learning_rate=1e-3)

    # Not a tf.function.
    def train_step(w, x, y, optimizer):
        with tf.GradientTape() as tape:
            L = tf.reduce_sum(tf.square(w*x - y))
        gradients = tape.gradient(L, [w])
        optimizer.apply_gradients(zip(gradients, [w]))

    w = tf.Variable(2.)
    x = tf.constant([-1.])
    y = tf.constant([2.])

    # Make a new Function and ConcreteFunction for each optimizer.
    train_step_1 = tf.function(train_step).get_concrete_function(w, x, y, opt1)
    train_step_2 = tf.function(train_step).get_concrete_function(w, x, y, opt2)
    for i in range(10):
        if i % 2 == 0:
            train_step_1(w, x, y)  # `opt1` is not used as a parameter.
        else:
            train_step_2(w, x, y)  # `opt2` is not used as a parameter.
    assert int(opt1.iterations) == 5 and int(opt2.iterations) == 5
    # Each Adam step moves w by about its learning rate (the gradient is positive).
    assert w.numpy() == pytest.approx(2.0 - 5 * 1e-2 - 5 * 1e-3, abs=2e-3)
    assert round(float(w.numpy()), 4) == 1.945  # TensorFlow 2.21 gives the same
