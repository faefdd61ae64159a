import gc
import warnings
import weakref

import numpy as np
import pytest

import kiln as tf


def test_one_trace_per_dtype_and_reuse():
    traces = []

    @tf.function
    def double(a):
        traces.append(a.dtype)
        return a + a

    assert double(tf.constant(1)).numpy() == 2
    assert double(tf.constant(1.1)).numpy() == pytest.approx(2.2)
    assert double(tf.constant("a")).numpy() == b"aa"
    assert double(tf.constant(5)).numpy() == 10
    assert traces == [tf.int32, tf.float32, tf.string]
    assert double.experimental_get_tracing_count() == 3


def test_keyword_and_default_arguments():
    @tf.function
    def f(x, y=2, *, z=3):
        return x * y + z

    assert f(tf.constant(1)).numpy() == 5
    assert f(tf.constant(1), y=4, z=0).numpy() == 4
    assert f(x=tf.constant(2)).numpy() == 7
    with pytest.raises(TypeError, match="f\\(\\)"):
        f(tf.constant(1), 2, 3)


def test_python_values_are_part_of_the_key():
    @tf.function
    def f(x, n):
        return x * n

    f(tf.constant(1), 2)
    f(tf.constant(1), 2)
    f(tf.constant(1), 3)
    assert f.experimental_get_tracing_count() == 2
    reasons = [str(r) for r in f.retrace_reasons()]
    assert reasons == ["n: 2 -> 3"]


def test_input_signature_and_errors():
    @tf.function(input_signature=(tf.TensorSpec(shape=[None], dtype=tf.int32),))
    def next_collatz(x):
        return tf.where(x % 2 == 0, x // 2, 3 * x + 1) if hasattr(tf, "where") else x + 1

    next_collatz(tf.constant([1, 2]))
    next_collatz([1, 2, 3])  # converted by the signature
    assert next_collatz.experimental_get_tracing_count() == 1
    with pytest.raises(ValueError, match="input_signature"):
        next_collatz(tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="input_signature"):
        next_collatz(tf.constant([[1, 2], [3, 4]]))


def test_variables_bound_to_input_signature_specs_are_read():
    # TensorFlow converts a variable passed for a TensorSpec to a tensor: the
    # call reads it (no retrace; a tape sees the read).
    f = tf.function(lambda x: x * 2, input_signature=[tf.TensorSpec([None], tf.float32)])
    v = tf.Variable([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(f(v).numpy(), [2, 4, 6])
    np.testing.assert_array_equal(f(tf.constant([1.0])).numpy(), [2])
    assert f.experimental_get_tracing_count() == 1
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(f(v))
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [2, 2, 2])
    with pytest.raises(ValueError, match="input_signature"):
        f(tf.Variable([1, 2]))


def test_input_signature_with_var_positional_arguments():
    # TensorFlow binds the specs to the *args elements.
    @tf.function(input_signature=[tf.TensorSpec([2], tf.float32), tf.TensorSpec([], tf.int32)])
    def f(*args):
        return args[0] * tf.cast(args[1], tf.float32)

    np.testing.assert_array_equal(f(tf.constant([1.0, 2.0]), tf.constant(3)).numpy(), [3, 6])
    np.testing.assert_array_equal(f([2.0, 4.0], 2).numpy(), [4, 8])
    assert f.experimental_get_tracing_count() == 1
    cf = f.get_concrete_function()
    # TensorFlow's (args, kwargs): the *args items among the positional arguments.
    assert cf.structured_input_signature == (
        (tf.TensorSpec([2], tf.float32, name="args_0"), tf.TensorSpec([], tf.int32, name="args_1")),
        {})
    with pytest.raises(ValueError, match="input_signature"):
        f(tf.constant([1.0, 2.0]))


def test_concrete_function_signature_graph_and_keyword_call():
    @tf.function
    def double(a):
        return a + a

    cf = double.get_concrete_function(tf.constant("a"))
    assert str(cf) == (
        "ConcreteFunction double(a)\n  Args:\n    a: string Tensor, shape=()\n"
        "  Returns:\n    string Tensor, shape=()")
    assert cf(tf.constant("b")).numpy() == b"bb"
    assert cf(a=tf.constant("c")).numpy() == b"cc"
    lines = [f"{n.input} -> {n.name}" for n in cf.graph.as_graph_def().node]
    assert lines == ["[] -> a", "['a', 'a'] -> add", "['add'] -> Identity"]
    assert "digraph" in cf.graph.to_dot()
    # The seed's text (TensorFlow's kernel message); kiln's own line, naming the
    # argument, is a note.
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"input #0\(zero-based\) was expected to be a string tensor") as info:
        cf(tf.constant(1))
    assert any("'a'" in n for n in getattr(info.value, "__notes__", [])), info.value


def test_methods_have_their_own_cache_and_are_stable():
    class M:
        def __init__(self, k):
            self.k = k

        @tf.function
        def f(self, x):
            return x * self.k

    a, b = M(2), M(3)
    assert a.f(tf.constant(1)).numpy() == 2
    assert b.f(tf.constant(1)).numpy() == 3
    assert a.f is a.f
    for _ in range(5):
        a.f(tf.constant(1))
    assert a.f.experimental_get_tracing_count() == 1
    r = weakref.ref(a)
    del a
    gc.collect()
    assert r() is None  # the method cache does not keep the object alive


def test_variables_read_at_run_time_and_assign_ordering():
    v = tf.Variable(1)

    @tf.function
    def inc():
        v.assign_add(1)
        return v.read_value()

    assert inc().numpy() == 2
    assert inc().numpy() == 3
    v.assign(10)
    assert inc().numpy() == 11


def test_variable_creation_only_on_first_trace():
    @tf.function
    def f(x):
        v = tf.Variable(1.0)
        return v + x

    # Like tf.function, the first call traces again when variables were
    # created, so a variable created on every call fails right away.
    with pytest.raises(ValueError, match="first call") as info:
        f(tf.constant(1.0))
    assert "v = tf.Variable(1.0)" in str(info.value)
    assert f.experimental_get_tracing_count() == 0


def test_variable_created_once_traces_twice_on_first_call():
    traces = []

    class Model(tf.Module):
        def __init__(self):
            self.v = None

        @tf.function
        def __call__(self, x):
            traces.append(1)
            if self.v is None:
                self.v = tf.Variable(2.0)
            return self.v * x

    m = Model()
    assert m(tf.constant(3.0)).numpy() == 6.0
    assert len(traces) == 2  # the creating trace, then the one kept
    assert m(tf.constant(4.0)).numpy() == 8.0 and len(traces) == 2


def test_no_return_warning_names_the_function():
    @tf.function
    def fun(x):
        y = tf.cast(x, tf.float32) * 2.0  # noqa: F841

    with pytest.warns(tf.NoReturnWarning, match="'fun' returns no value"):
        fun(tf.constant([1, 2]))


def test_retracing_warning_lists_reasons():
    @tf.function
    def f(x):
        return x

    with pytest.warns(tf.RetracingWarning, match="x: int32\\[1\\] -> int32\\[2\\]"):
        for n in range(1, 8):
            f(tf.constant(np.zeros(n, np.int32)))


def test_leaked_symbolic_tensor():
    leaked = []

    @tf.function
    def f(x):
        leaked.append(x + 1)
        return x

    f(tf.constant(1))
    with pytest.raises(AttributeError, match="symbolic"):
        leaked[0].numpy()

    @tf.function
    def g():
        return leaked[0] + 1

    with pytest.raises(TypeError, match="external symbolic tensor"):
        g()


def test_symbolic_tensor_as_bool_explains():
    @tf.function(autograph=False)
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(tf.errors.OperatorNotAllowedInGraphError, match="kiln.cond"):
        f(tf.constant(1))


def test_run_functions_eagerly():
    calls = []

    @tf.function
    def f(x):
        calls.append(1)
        return x.numpy()

    tf.config.run_functions_eagerly(True)
    assert f(tf.constant(3)) == 3
    assert f(tf.constant(3)) == 3
    assert len(calls) == 2


def test_init_scope_runs_eagerly():
    seen = []

    @tf.function
    def f(x):
        with tf.init_scope():
            seen.append(tf.executing_eagerly())
        seen.append(tf.executing_eagerly())
        return x

    f(tf.constant(1))
    assert seen == [True, False]


def test_nested_structures_and_namedtuples():
    import collections
    Point = collections.namedtuple("Point", ["x", "y"])

    @tf.function
    def f(p, d):
        return Point(p.x + d["a"], p.y), [d["a"]]

    out = f(Point(tf.constant(1), tf.constant(2)), {"a": tf.constant(10)})
    assert isinstance(out[0], Point)
    assert out[0].x.numpy() == 11 and out[0].y.numpy() == 2
    assert out[1][0].numpy() == 10


def test_cond_while_loop_and_print(capsys):
    @tf.function
    def f(x):
        def body(i, acc):
            return i + 1, acc * 2
        _, r = tf.while_loop(lambda i, acc: i < 3, body, (tf.constant(0), x))
        tf.print("r =", r, output_stream=__import__("sys").stdout)
        return tf.cond(x > 0, lambda: r, lambda: -r)

    assert f(tf.constant(5)).numpy() == 40
    assert f(tf.constant(-1)).numpy() == 8
    assert capsys.readouterr().out == "r = 40\nr = -8\n"


def test_tensor_array_in_while_loop():
    @tf.function
    def f(n):
        ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True)

        def body(i, ta):
            return i + 1, ta.write(i, i * i)
        _, ta = tf.while_loop(lambda i, ta: i < n, body, (tf.constant(0), ta))
        return ta.stack()

    np.testing.assert_array_equal(f(tf.constant(4)).numpy(), [0, 1, 4, 9])


def test_cond_structure_mismatch_names_both():
    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: (x, x), lambda: x)

    with pytest.raises(ValueError, match="true_fn returned"):
        f(tf.constant(1))


def test_warning_categories_filterable():
    @tf.function
    def fun(x):
        tf.cast(x, tf.float32)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=tf.NoReturnWarning)
        fun(tf.constant(1))


def test_concrete_function_flat_tensor_call_and_structure_errors():
    @tf.function
    def f(scale, pair, bias):
        return scale * (pair[0] + pair[1]) + bias

    cf = f.get_concrete_function(2.0, (tf.constant(1.0), tf.constant(2.0)), tf.constant(0.5))
    # Structured call: Python values as traced, tensors in their places.
    assert cf(2.0, (tf.constant(3.0), tf.constant(4.0)), tf.constant(1.0)).numpy() == 15.0
    # Flat call: the tensors alone, in order (TensorFlow's fallback).
    assert cf(tf.constant(3.0), tf.constant(4.0), tf.constant(1.0)).numpy() == 15.0
    with pytest.raises(TypeError, match="traced structure"):
        cf(2.0, {"a": tf.constant(3.0), "b": tf.constant(4.0)}, tf.constant(1.0))
    with pytest.raises(TypeError, match="has 3 elements"):
        cf(2.0, (tf.constant(3.0),) * 3, tf.constant(1.0))
    with pytest.raises(TypeError):
        cf(tf.constant(3.0), tf.constant(4.0))  # too few tensors for a flat call
    with pytest.raises(TypeError):
        cf(3.0, (tf.constant(3.0), tf.constant(4.0)), tf.constant(1.0))  # other bound value


# ---- the C++ call path: binding in C++, the all-tensor fast path ----


def test_keywords_defaults_and_binding_errors_match_python():
    @tf.function
    def f(x, y, z=10):
        return x * y + z

    a, b = tf.constant(2), tf.constant(3)
    assert f(a, b).numpy() == 16
    assert f(x=a, y=b).numpy() == 16
    assert f(y=b, x=a).numpy() == 16
    assert f(a, y=b, z=tf.constant(0)).numpy() == 6
    assert f(a, b, 1).numpy() == 7  # a Python value: part of the key
    assert f(a, b, z=1).numpy() == 7
    # Keyword names that are not interned strings.
    kw = {"".join(["x"]): a, "".join(["y"]): b}
    assert f(**kw).numpy() == 16
    # z=10 (default), z=tensor, z=1: 3 traces
    assert f.experimental_get_tracing_count() == 3
    for call, match in [(lambda: f(a), "missing a required argument: 'y'"),
                        (lambda: f(a, b, 1, 2), "too many positional arguments"),
                        (lambda: f(a, x=a, y=b), "multiple values for argument 'x'"),
                        (lambda: f(a, b, w=1), "unexpected keyword argument 'w'")]:
        with pytest.raises(TypeError, match=match):
            call()
    assert f.experimental_get_tracing_count() == 3


def test_fast_path_retraces_on_dtype_and_shape_and_keeps_python_values():
    traces = []

    @tf.function
    def f(x, y):
        traces.append((x.dtype, tuple(x.shape)))
        return x + y

    one = tf.constant([1.0, 2.0])
    for _ in range(3):
        np.testing.assert_allclose(f(one, one).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(f(tf.constant([1, 2]), tf.constant([3, 4])).numpy(), [4, 6])
    np.testing.assert_allclose(f(tf.constant([1.0]), tf.constant([2.0])).numpy(), [3.0])
    np.testing.assert_allclose(f(one, one).numpy(), [2.0, 4.0])
    assert traces == [(tf.float32, (2,)), (tf.int32, (2,)), (tf.float32, (1,))]
    # Python scalars and numpy values mixed with tensors take the general path.
    np.testing.assert_allclose(f(one, 1.0).numpy(), [2.0, 3.0])
    np.testing.assert_allclose(f(one, np.float32(1.0)).numpy(), [2.0, 3.0])
    # 1.0 is a Python value; np.float32(1.0) a float32 scalar tensor (TensorFlow's rule).
    assert f.experimental_get_tracing_count() == 5


def test_fast_path_with_variables_and_methods():
    v = tf.Variable([1.0, 1.0])

    @tf.function
    def f(x, w):
        return x * w

    x = tf.constant([2.0, 3.0])
    np.testing.assert_allclose(f(x, v).numpy(), [2.0, 3.0])
    v.assign([2.0, 2.0])
    np.testing.assert_allclose(f(x, w=v).numpy(), [4.0, 6.0])  # read at run time
    assert f.experimental_get_tracing_count() == 1

    class M:
        def __init__(self, k):
            self.k = k

        @tf.function
        def scale(self, x, bias=0.0):
            return x * self.k + bias

    m = M(3.0)
    np.testing.assert_allclose(m.scale(x).numpy(), [6.0, 9.0])
    np.testing.assert_allclose(m.scale(x=x).numpy(), [6.0, 9.0])
    np.testing.assert_allclose(m.scale(x, bias=1.0).numpy(), [7.0, 10.0])
    assert m.scale.experimental_get_tracing_count() == 2


def test_fast_path_errors_keep_their_types():
    @tf.function
    def bad(x, y):
        return x + y

    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype mismatch"):
        bad(tf.constant(1.0), tf.constant(1))

    @tf.function
    def raises(x):
        raise KeyError("from the body")

    with pytest.raises(KeyError, match="from the body"):
        raises(tf.constant(1))

    @tf.function(input_signature=(tf.TensorSpec(shape=[None], dtype=tf.float32),))
    def sig(x):
        return x * 2.0

    np.testing.assert_allclose(sig(tf.constant([1.0])).numpy(), [2.0])
    np.testing.assert_allclose(sig(x=tf.constant([1.0, 2.0])).numpy(), [2.0, 4.0])
    with pytest.raises(ValueError, match="Python inputs incompatible with input_signature"):
        sig(tf.constant([1, 2]))
    with pytest.raises(ValueError, match="Python inputs incompatible with input_signature"):
        sig(tf.constant(1.0))
    assert sig.experimental_get_tracing_count() == 1


def test_run_functions_eagerly_with_keywords():
    @tf.function
    def f(x, y=1):
        return x.numpy() + y

    tf.config.run_functions_eagerly(True)
    try:
        assert f(tf.constant(3), y=2) == 5
        assert f(x=tf.constant(3)) == 4
    finally:
        tf.config.run_functions_eagerly(False)
    assert f.experimental_get_tracing_count() == 0


@pytest.mark.filterwarnings("ignore::kiln._warnings.RetracingWarning")
def test_concurrent_calls_from_threads():
    import threading

    @tf.function
    def f(x, y):
        return x * 2 + y

    inputs = [tf.constant(np.arange(n, dtype=np.int32)) for n in range(1, 13)]
    errors = []

    def work(t):
        try:
            for k in range(300):
                x = inputs[(k * 7 + t) % 12]
                got = f(x, y=x) if k % 2 else f(x, x)
                np.testing.assert_array_equal(got.numpy(), x.numpy() * 3)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert f.experimental_get_tracing_count() == 12


_WAIT_FOR_TRACE = """
import threading, time
import kiln as tf

@tf.function
def slow(x):
    time.sleep(0.05)  # trace-time only; releases the GIL
    return x + 1

start = threading.Barrier(4)
results = []

def work():
    start.wait()
    results.append(int(slow(tf.constant(1)).numpy()))

threads = [threading.Thread(target=work) for _ in range(4)]
for th in threads:
    th.start()
for th in threads:
    th.join()
print(sorted(results), slow.experimental_get_tracing_count())
"""


def test_threads_waiting_for_a_trace_do_not_deadlock():
    # One thread traces (its Python body sleeps, releasing the GIL) while
    # others call with the same new signature: they must wait for the trace
    # with the GIL released, or the tracer can never resume. Run in a child
    # process so a regression fails by timeout instead of hanging the suite.
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-c", _WAIT_FOR_TRACE], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[2, 2, 2, 2] 1"


def test_function_in_a_reference_cycle_is_collected():
    import gc
    import weakref

    class Holder:
        def __init__(self):
            # The function refers to the object that stores it: a cycle
            # through the C++ side, which the garbage collector must see.
            self.f = tf.function(lambda x: self.g(x))

        def g(self, x):
            return x + 1.0

    h = Holder()
    assert h.f(tf.constant(1.0)).numpy() == 2.0
    ref = weakref.ref(h)
    del h
    gc.collect()
    assert ref() is None
