"""py_function / numpy_function, eagerly and inside traced functions."""
import numpy as np
import pytest

import kiln
from kiln import errors
from kiln.data import numpy_function, py_function


def test_eager_call_runs_now():
    seen = []

    def f(x, y):
        seen.append((x.numpy().tolist(), y.numpy().tolist()))
        return x + y
    out = py_function(f, [kiln.constant([1, 2]), 3], kiln.int32)
    assert out.numpy().tolist() == [4, 5] and seen == [([1, 2], 3)]


def test_traced_runs_every_call():
    calls = []

    def f(x):
        calls.append(int(x.numpy()))
        return x * 2

    @kiln.function
    def g(x):
        return py_function(f, [x], kiln.int32) + 1
    assert int(g(kiln.constant(3)).numpy()) == 7
    assert int(g(kiln.constant(4)).numpy()) == 9
    assert int(g(kiln.constant(5)).numpy()) == 11
    assert calls == [3, 4, 5]  # run by the graph each call, not at trace time
    ops = [n.op for n in g.get_concrete_function(kiln.constant(1)).graph.as_graph_def().node]
    assert sum(1 for o in ops if "PyFunc" in o) == 1


def test_tout_forms():
    x = kiln.constant(2.)
    one = py_function(lambda v: v * 2, [x], kiln.float32)
    assert isinstance(one, kiln.Tensor) and float(one.numpy()) == 4.
    lst = py_function(lambda v: v * 2, [x], [kiln.float32])
    assert isinstance(lst, list) and float(lst[0].numpy()) == 4.
    two = py_function(lambda v: (v, kiln.cast(v, kiln.int32)), [x], [kiln.float32, kiln.int32])
    assert [t.dtype for t in two] == [kiln.float32, kiln.int32]
    assert py_function(lambda v: None, [x], None) is None
    assert py_function(lambda v: None, [x], []) == []
    # Python values are converted to Tout
    assert py_function(lambda: 3, [], kiln.float32).dtype == kiln.float32
    assert py_function(lambda: np.int64(3), [], kiln.int64).shape == kiln.TensorShape([])


def test_side_effect_only_in_loop():
    log = []

    @kiln.function
    def f(n):
        for i in kiln.range(n):
            py_function(lambda v: log.append(int(v.numpy())), [i], [])
        return n
    f(kiln.constant(3))
    assert log == [0, 1, 2]


def test_numpy_function():
    @kiln.function
    def f(x):
        return numpy_function(lambda a: np.sort(a), [x], kiln.int32)
    assert f(kiln.constant([3, 1, 2])).numpy().tolist() == [1, 2, 3]
    a, b = numpy_function(lambda v: (v + 1, v.astype(np.float32)), [kiln.constant([1, 2])],
                          [kiln.int32, kiln.float32])
    assert a.numpy().tolist() == [2, 3] and b.dtype == kiln.float32


def test_errors_eager():
    with pytest.raises(TypeError, match="callable"):
        py_function(5, [], kiln.int32)
    with pytest.raises(TypeError, match="Tout"):
        py_function(lambda: 1, [], "not a dtype")
    with pytest.raises(TypeError, match="cannot be converted to int32"):
        py_function(lambda: 1.5, [], kiln.int32)
    with pytest.raises(TypeError, match="Tout says float32"):
        py_function(lambda: kiln.constant(1), [], kiln.float32)
    with pytest.raises(ValueError, match="returned 1 values, expected 2"):
        py_function(lambda: [1], [], [kiln.int32, kiln.int32])
    with pytest.raises(TypeError, match="input 0"):
        py_function(lambda x: x, [object()], kiln.int32)
    with pytest.raises(ZeroDivisionError):
        py_function(lambda: 1 / 0, [], kiln.float32)


def test_errors_traced():
    @kiln.function
    def bad_dtype(x):
        return py_function(lambda v: 1.5, [x], kiln.int32)
    with pytest.raises(errors.OpError, match="cannot be converted to int32"):
        bad_dtype(kiln.constant(1))

    @kiln.function
    def raises(x):
        return py_function(lambda v: 1 / 0, [x], kiln.float32)
    with pytest.raises(errors.OpError, match="ZeroDivisionError"):
        raises(kiln.constant(1))


def test_bytes_results_keep_trailing_nul_bytes():
    # Serialized messages often end in 0 bytes; NumPy's "S" arrays would drop them.
    assert py_function(lambda: b"a\x00", [], kiln.string).numpy() == b"a\x00"
    ds = kiln.data.Dataset.from_generator(lambda: iter([b"\x00", b"b\x00\x00"]),
                                        output_types=kiln.string, output_shapes=())
    assert list(ds.as_numpy_iterator()) == [b"\x00", b"b\x00\x00"]
    mapped = kiln.data.Dataset.range(2).map(
        lambda i: py_function(lambda j: b"x\x00" * int(j + 1), [i], kiln.string))
    assert list(mapped.as_numpy_iterator()) == [b"x\x00", b"x\x00x\x00"]
