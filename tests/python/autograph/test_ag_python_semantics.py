"""Converted code run on Python values must behave exactly like the original:
every rewrite (flags for break/continue/return, branch and loop functions,
converted calls, logical operators) is checked against plain Python."""
import functools

import pytest

from kiln import autograph

COUNTER = 0


def loops_with_jumps(n):
    out = []
    for i in range(n):
        if i == 1:
            continue
        if i == 5:
            break
        out.append(i)
    else:
        out.append("no-break")
    j = 0
    while j < n:
        j += 1
        if j % 2:
            continue
        out.append(-j)
    else:
        out.append("while-else")
    return out


def nested_loops(n):
    pairs = []
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            if (i + j) % 3 == 0:
                continue
            pairs.append((i, j))
        if len(pairs) > 4:
            break
    return pairs


def early_returns(x):
    if x < 0:
        return "negative"
    for i in range(10):
        if i * i > x:
            return i
        if i == 7:
            break
    while x > 100:
        x //= 2
        if x == 64:
            return "sixty-four"
    return None if x == 50 else x


def return_in_else(x):
    if x > 0:
        y = x
    else:
        return -1
    y += 1
    return y


def no_return(lst):
    for v in [1, 2]:
        lst.append(v)


def bare_return(x):
    if x:
        return
    return 5


def return_in_try_finally(items):
    log = []
    for v in items:
        try:
            if v == 2:
                return log
            log.append(v)
        finally:
            log.append("f")
    return log


def logical(a, b, c):
    r1 = a and b
    r2 = a or b or c
    r3 = not a
    r4 = 1 < a < 5
    r5 = a if b else c
    return r1, r2, r3, r4, r5


def short_circuit(calls):
    def f(v):
        calls.append(v)
        return v
    return f(0) and f(1), f(2) or f(3), f(0) or f(0) or f(4)


def closures(n):
    total = 0

    def add(v):
        nonlocal total
        total += v
        return total

    for i in range(n):
        if i % 2:
            add(i)
    return total, [add(0) for _ in range(2)]


def uses_global(x):
    global COUNTER
    if x > 0:
        COUNTER += x
    return COUNTER


def try_in_loop(items):
    out = []
    for v in items:
        try:
            if v is None:
                raise ValueError("none")
            out.append(10 // v)
        except ZeroDivisionError:
            out.append("div0")
            continue
        except ValueError:
            break
        finally:
            out.append("f")
    return out


def with_statement(n):
    class Ctx:
        def __init__(self, log):
            self.log = log

        def __enter__(self):
            self.log.append("enter")
            return self

        def __exit__(self, *exc):
            self.log.append("exit")
            return False

    log = []
    for i in range(n):
        with Ctx(log):
            if i == 2:
                break
            log.append(i)
    return log


def generator(n):
    i = 0
    while i < n:
        if i == 3:
            return
        yield i
        i += 1


def uses_generator(n):
    return list(generator(n)), sum(x for x in range(n) if x % 2)


def walrus_and_comprehensions(xs):
    if (n := len(xs)) > 2:
        doubled = [x * 2 for x in xs if x]
    else:
        doubled = {x: x for x in xs}
    return n, doubled


def star_args(*args, sep="-", **kwargs):
    def join(*parts, **kw):
        return sep.join(str(p) for p in parts) + str(sorted(kw))
    return join(*args, **kwargs)


def defaults(a, b=2, *, c=3):
    if a:
        b, c = c, b
    return a, b, c


def unpacking(pairs):
    acc = []
    for k, (a, b) in enumerate(pairs):
        acc.append(k * a + b)
    first, *rest = acc
    return first, rest


def deletes_and_imports(x):
    if x:
        import math
        y = math.floor(2.5)
        del math
    else:
        y = 0
    return y


def recursive(n):
    if n <= 1:
        return 1
    return n * recursive(n - 1)


def decorated_inner(n):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*a):
            return fn(*a) + 1
        return wrapper

    @deco
    def inner(v):
        return v * 2

    return [inner(i) for i in range(n)]


class Base:
    def value(self, x):
        return x + 1


class Child(Base):
    def __init__(self):
        self.__secret = 7

    def value(self, x):
        for _ in range(2):
            if x > 0:
                x = super().value(x)
        return x + self.__secret


def method_call(x):
    return Child().value(x)


def while_true(n):
    i = 0
    while True:
        i += 1
        if i >= n:
            break
    return i


def assert_python(x):
    assert x > 0, f"bad {x}"
    return x


def match_statement(v):
    match v:
        case [a, b]:
            return a + b
        case {"k": k}:
            return k
        case _:
            return None


CASES = [
    (loops_with_jumps, [(0,), (3,), (7,)]),
    (nested_loops, [(0,), (4,), (6,)]),
    (early_returns, [(-1,), (5,), (60,), (50,), (128,), (1000,)]),
    (return_in_else, [(3,), (-3,)]),
    (bare_return, [(True,), (False,)]),
    (return_in_try_finally, [([1, 2, 3],), ([1, 3],)]),
    (logical, [(0, 1, 2), (3, 0, 2), (3, 4, 0), (0, 0, 0), (9, 1, 1)]),
    (closures, [(0,), (5,)]),
    (try_in_loop, [([1, 2, 0, 5],), ([5, None, 1],), ([],)]),
    (with_statement, [(1,), (5,)]),
    (uses_generator, [(2,), (6,)]),
    (walrus_and_comprehensions, [([1, 0, 3],), ([4],)]),
    (star_args, [(1, 2, 3), ()]),
    (unpacking, [([(1, 2), (3, 4)],)]),
    (deletes_and_imports, [(True,), (False,)]),
    (recursive, [(1,), (5,)]),
    (decorated_inner, [(3,)]),
    (method_call, [(1,), (-1,)]),
    (while_true, [(1,), (4,)]),
    (match_statement, [([1, 2],), ({"k": 5},), (3,)]),
]


@pytest.mark.parametrize("fn,arg_sets", CASES, ids=[c[0].__name__ for c in CASES])
def test_converted_matches_python(fn, arg_sets):
    converted = autograph.to_graph(fn)
    assert converted is not fn
    for args in arg_sets:
        assert converted(*args) == fn(*args), args


def test_keyword_defaults_and_signature():
    import inspect
    converted = autograph.to_graph(defaults)
    assert inspect.signature(converted) == inspect.signature(defaults)
    assert converted(0) == defaults(0)
    assert converted(1, c=9) == defaults(1, c=9)
    assert converted(1, 5, c=9) == defaults(1, 5, c=9)
    assert converted(1, sep="+") if False else True
    assert autograph.to_graph(star_args)(1, 2, sep="+", z=1) == star_args(1, 2, sep="+", z=1)


def test_side_effects_and_globals():
    global COUNTER
    COUNTER = 0
    converted = autograph.to_graph(uses_global)
    assert converted(2) == 2
    assert converted(-1) == 2
    assert converted(3) == 5
    lst = []
    assert autograph.to_graph(no_return)(lst) is None
    assert lst == [1, 2]


def test_short_circuit_order():
    calls_a, calls_b = [], []
    assert autograph.to_graph(short_circuit)(calls_a) == short_circuit(calls_b)
    assert calls_a == calls_b == [0, 2, 0, 0, 4]


def test_python_assert():
    converted = autograph.to_graph(assert_python)
    assert converted(2) == 2
    with pytest.raises(AssertionError, match="bad -1"):
        converted(-1)


def test_generator_stays_a_generator():
    converted = autograph.to_graph(generator)
    assert list(converted(10)) == [0, 1, 2]


def test_undefined_python_variable_raises_unbound_local():
    def f(x):
        if x:
            y = 1
        return y

    converted = autograph.to_graph(f)
    assert converted(True) == 1
    with pytest.raises(UnboundLocalError, match="'y'"):
        converted(False)


class Awkward:
    def method_with_flush_left_string(self, x):
        text = """
flush left
"""
        if x > 0 and \
                x < 10:
            return text.strip()
        return None

    def one_liner(self, x): return x + 1  # noqa: E704

    @staticmethod
    @functools.lru_cache(
        maxsize=None)
    def cached(x):
        return [i for i in range(x)]


def test_awkward_sources_parse():
    a = Awkward()
    conv = autograph.to_graph(a.method_with_flush_left_string)
    assert conv(3) == "flush left" and conv(30) is None
    assert autograph.to_graph(a.one_liner)(1) == 2
    assert "ag__" in autograph.to_code(Awkward.one_liner)


def generator_loop_with_return(x):
    out = []
    for i in range(5):
        out.append(i)
        if i == 1:
            continue
        if i == x:
            break
        if i == 3:
            yield out
            return
    yield out


def walrus_in_while(items):
    items = list(items)
    seen = []
    while (item := (items.pop() if items else None)) is not None:
        if item == 0:
            break
        seen.append(item)
    return seen, item


def test_generator_loops_and_walrus_tests():
    for x in (0, 2, 9):
        assert list(autograph.to_graph(generator_loop_with_return)(x)) == \
            list(generator_loop_with_return(x))
    conv = autograph.to_graph(walrus_in_while)
    for items in ([1, 2, 3], [1, 0, 2], []):
        assert conv(items) == walrus_in_while(items)
