"""kiln.autograph's public API and call policy: to_code, to_graph,
convert_for_trace, do_not_convert, which callees are converted, caching,
closures, methods, lambdas and functions without source."""
import functools
import inspect
import warnings

import numpy as np
import pytest

import kiln as tf
from kiln import autograph
from kiln.autograph import transpiler


def val(t):
    return t.numpy().item() if hasattr(t, "numpy") else t


def user_helper(x):
    if x > 0:
        return x * 10
    return x


def test_to_code_shows_operator_calls():
    def f(x, n):
        s = 0
        for i in tf.range(n):
            if i > x:
                break
            s += i
        assert s >= 0, "negative"
        return s if s > 1 and not x < 0 else -s

    code = autograph.to_code(f)
    assert code.startswith("def ag__f(x, n):\n")
    for piece in ("break_ = False", "break_ = True", "def extra_test():",
                  "return ag__.not_(break_)", "ag__.for_stmt(ag__.converted_call(tf.range, (n,)"
                  ", None), extra_test, loop_body", "ag__.if_stmt(i > x, if_body, else_body",
                  "ag__.assert_stmt(s >= 0, lambda: 'negative')",
                  "ag__.if_exp(ag__.and_(s > 1, lambda: ag__.not_(x < 0)), lambda: s, "
                  "lambda: -s)", "i = ag__.Undefined('i')"):
        assert piece in code, piece
    compile(code, "<to_code>", "exec")  # the text is valid Python


def test_to_code_of_returns_and_function_objects():
    code = autograph.to_code(tf.function(user_helper))
    assert "do_return = False" in code and "retval_ = ag__.UndefinedReturnValue()" in code
    assert code.rstrip().endswith("return ag__.retval(retval_)")
    assert autograph.to_code(user_helper) == code


def test_to_code_of_method_and_callable_object():
    class Model:
        def __call__(self, x):
            while x > 0:
                x -= 1
            return x

    assert "ag__.while_stmt" in autograph.to_code(Model())
    assert "ag__.while_stmt" in autograph.to_code(Model().__call__)


def test_generated_names_avoid_user_names():
    def f(x, get_state, break_):
        for i in tf.range(x):
            if i > 2:
                break
        return get_state, break_

    code = autograph.to_code(f)
    assert "def get_state():" not in code and "break_ = True" not in code
    assert autograph.to_graph(f)(3, "a", "b") == ("a", "b")


def test_to_graph_runs_eagerly_and_in_functions():
    g = autograph.to_graph(user_helper)
    assert g(2) == 20 and val(g(tf.constant(-2))) == -2
    assert val(tf.function(g)(tf.constant(3))) == 30


def test_convert_for_trace_keeps_signature():
    def f(a, b=2, *args, c, d=4, **kw):
        return a

    conv = autograph.convert_for_trace(f)
    assert conv is not f
    assert inspect.signature(conv) == inspect.signature(f)
    assert conv.__name__ == "f" and conv.__qualname__ == f.__qualname__
    assert conv(1, c=3) == 1


def test_conversion_is_cached_per_code_object():
    def make(k):
        def f(x):
            if x > k:
                return x - k
            return x + k
        return f

    f1, f2 = make(1), make(100)
    assert f1.__code__ is f2.__code__
    c1, c2 = autograph.to_graph(f1), autograph.to_graph(f2)
    assert c1.__code__ is c2.__code__  # converted once
    assert (c1(5), c2(5)) == (4, 105)  # each keeps its own closure


def test_closure_cells_are_shared_with_the_original():
    def outer():
        count = 0

        def bump(x):
            nonlocal count
            if x > 0:
                count += x
            return count

        def read():
            return count
        return bump, read

    bump, read = outer()
    conv = autograph.to_graph(bump)
    assert conv(3) == 3 and read() == 3
    assert bump(2) == 5 and conv(0) == 5


def test_user_functions_are_converted_recursively():
    @tf.function
    def f(x):
        return user_helper(x) + 1

    assert val(f(tf.constant(2))) == 21
    assert val(f(tf.constant(-2))) == -1


def test_library_functions_are_not_converted():
    from kiln.autograph import api
    assert api.is_library(np.sum) and api.is_library(functools.reduce)
    assert api.is_library(inspect.getsource) and api.is_library(tf.reduce_sum)
    assert not api.is_library(user_helper)
    assert autograph.convert_for_trace(inspect.getsource) is inspect.getsource


def test_kiln_functions_are_called_as_they_are():
    traces = []

    @tf.function
    def inner(x):
        traces.append(1)
        return x * 2

    @tf.function
    def outer(x):
        return inner(x) + 1

    assert val(outer(tf.constant(3))) == 7
    from kiln.autograph import api
    assert api._target(inner) is inner


def test_do_not_convert():
    @autograph.experimental.do_not_convert
    def plain(x):
        if x > 0:
            return x
        return -x

    assert autograph.convert_for_trace(plain) is plain

    @tf.function
    def f(x):
        return plain(x)

    with pytest.raises(TypeError):  # a Python `if` on a symbolic tensor
        f(tf.constant(1))
    assert autograph.experimental.do_not_convert()(user_helper) is user_helper


def test_methods_and_super_and_private_names():
    class Base:
        def step(self, x):
            return x + 1

    class Child(Base):
        def __init__(self):
            self.__bonus = 10

        def step(self, x):
            if x > 0:
                x = super().step(x) + self.__bonus
            return x

    c = Child()
    conv = autograph.to_graph(c.step)
    assert conv(1) == 12 and conv(-1) == -1
    assert val(tf.function(c.step)(tf.constant(1))) == 12


def test_callable_objects_and_partials():
    class Scale:
        def __init__(self, k):
            self.k = k

        def __call__(self, x):
            if x > 0:
                x = x * self.k
            return x

    def add(a, b):
        if a > b:
            return a - b
        return a + b

    @tf.function
    def f(x):
        return Scale(3)(x) + functools.partial(add, b=1)(x)

    assert val(f(tf.constant(2))) == 6 + 1
    assert val(f(tf.constant(-2))) == -2 + -1


def test_lambdas_are_converted_when_their_source_is_found():
    @tf.function
    def f(x):
        g = lambda v: v * 2 if v > 0 else -v  # noqa: E731
        return g(x)

    assert val(f(tf.constant(-3))) == 3 and val(f(tf.constant(3))) == 6


def test_function_without_source_warns_and_runs_unconverted():
    namespace = {}
    exec("def nosrc(x):\n    return x + 1\n", namespace)
    fn = namespace["nosrc"]
    with pytest.warns(autograph.AutoGraphWarning, match="could not convert 'nosrc'.*source"):
        assert autograph.convert_for_trace(fn) is fn
    with pytest.raises(autograph.ConversionError, match="source code of 'nosrc'"):
        autograph.to_graph(fn)


def test_lambda_without_source_is_left_alone():
    fn = eval("lambda x: x + 1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert autograph.convert_for_trace(fn) is fn


def test_unconvertible_inputs_give_clear_errors():
    with pytest.raises(TypeError, match="functions, not classes"):
        autograph.to_graph(int)
    with pytest.raises(TypeError, match="expected a function"):
        autograph.to_code(3)


def test_async_function_is_not_converted():
    async def f(x):
        return x

    with pytest.raises(autograph.ConversionError, match="async"):
        autograph.to_graph(f)


def test_converted_code_points_at_user_lines():
    def f(x):
        y = x + 1
        return undefined_name + y  # noqa: F821

    conv = autograph.to_graph(f)
    with pytest.raises(NameError) as e:
        conv(1)
    tb = e.tb
    while tb.tb_next:
        tb = tb.tb_next
    assert tb.tb_frame.f_code.co_filename == __file__
    assert tb.tb_lineno == f.__code__.co_firstlineno + 2
    assert transpiler.is_converted_code(tb.tb_frame.f_code)


def test_method_with_class_private_state_inside_kiln_function():
    class Counter(tf.Module if hasattr(tf, "Module") else object):
        def __init__(self):
            self.v = tf.Variable(0)

        @tf.function
        def __call__(self, n):
            for _ in tf.range(n):
                self.v.assign_add(1)
            return self.v.read_value()

    c = Counter()
    assert val(c(tf.constant(4))) == 4


def test_maybe_convert_for_library_code_calling_user_code():
    class LibraryLayer:
        @autograph.experimental.do_not_convert
        def __call__(self, x):
            return autograph.maybe_convert(self.call)(x)

    class UserLayer(LibraryLayer):
        def call(self, x):
            if x > 0:
                return x
            return -x

    layer = UserLayer()

    @tf.function
    def f(x):
        return layer(x)

    assert val(f(tf.constant(-3))) == 3
    assert autograph.maybe_convert(layer.call) == layer.call  # not under AutoGraph

    @tf.function(autograph=False)
    def g(x):
        return layer(x)

    with pytest.raises(TypeError):
        g(tf.constant(-3))


def test_cache_is_weak(tmp_path, monkeypatch):
    import gc
    import importlib
    import sys
    import weakref
    (tmp_path / "ag_weak_mod.py").write_text(
        "def f(x):\n    while x > 0:\n        x -= 1\n    return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("ag_weak_mod")
    conv = autograph.to_graph(mod.f)
    assert conv(3) == 0
    original, converted = weakref.ref(mod.f.__code__), weakref.ref(conv.__code__)
    assert original() in transpiler._cache and transpiler.is_converted_code(converted())
    del mod, conv
    sys.modules.pop("ag_weak_mod")
    gc.collect()
    assert original() is None and converted() is None
