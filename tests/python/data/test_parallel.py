"""prefetch and map(num_parallel_calls=...) on threads (kiln.data.parallel):
the same elements, in the same order, as the serial pipeline; errors at their
position; threads end when an iterator is closed, dropped or exhausted. No
timing is asserted (bench/data_pipeline.py measures the overlap)."""
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import kiln
from kiln import errors

Dataset = kiln.data.Dataset
AUTOTUNE = kiln.data.AUTOTUNE


def values(ds):
    return [tuple(np.asarray(x).tolist() for x in kiln.nest.flatten(e))
            for e in ds.as_numpy_iterator()]


def wait_threads(baseline, deadline_s=20.0):
    """Polls until no more threads than baseline run (a hang guard, not a timing)."""
    end = time.monotonic() + deadline_s
    while threading.active_count() > baseline and time.monotonic() < end:
        time.sleep(0.01)
    return threading.active_count()


@pytest.fixture
def baseline():
    n = threading.active_count()
    yield n
    assert wait_threads(n) == n, "a kiln.data thread outlived its iterator"


def gen_range(n):
    return Dataset.from_generator(lambda: range(n), kiln.int64, output_shapes=[])


# ---- random pipelines: threaded == serial ----

def _step(rng):
    """One random transformation: (threaded version, serial version)."""
    kind = rng.choice(["map", "pmap", "filter", "batch", "unbatch", "prefetch", "take",
                       "skip", "repeat"])
    k = int(rng.integers(1, 5))
    if kind in ("map", "pmap"):
        def f(x):
            return x * k + kiln.cast(kiln.reduce_sum(kiln.ones([3, 3])), x.dtype)
        n = [1, 2, 4, AUTOTUNE][int(rng.integers(4))] if kind == "pmap" else None
        return (lambda d: d.map(f, num_parallel_calls=n), lambda d: d.map(f))
    if kind == "filter":
        return (lambda d: d.filter(lambda x: kiln.reduce_sum(x) % (k + 1) != 0),) * 2
    if kind == "batch":
        return (lambda d: d.batch(k, drop_remainder=bool(k % 2)),) * 2
    if kind == "unbatch":
        return (lambda d: d.unbatch() if d.element_spec.shape.rank else d,) * 2
    if kind == "prefetch":
        size = [0, 1, 2, 5, AUTOTUNE][int(rng.integers(5))]
        return (lambda d: d.prefetch(size), lambda d: d)
    if kind == "take":
        return (lambda d: d.take(3 * k),) * 2
    if kind == "skip":
        return (lambda d: d.skip(k),) * 2
    return (lambda d: d.repeat(2),) * 2


def _pipelines(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 30))
    threaded = serial = (gen_range(n) if rng.random() < 0.3 else Dataset.range(n))
    for _ in range(int(rng.integers(1, 7))):
        a, b = _step(rng)
        threaded, serial = a(threaded), b(serial)
    return threaded, serial


def outcome(ds):
    """The elements read, and the error that stopped the reading (if any): a
    random pipeline may batch elements of different shapes."""
    got = []
    try:
        for e in ds.as_numpy_iterator():
            got.append(tuple(np.asarray(x).tolist() for x in kiln.nest.flatten(e)))
    except errors.OpError as e:
        return got, type(e).__name__, str(e)
    return got, None


@pytest.mark.parametrize("seed", range(40))
def test_random_pipelines_match_serial(seed, baseline):
    threaded, serial = _pipelines(seed)
    assert threaded.element_spec == serial.element_spec
    assert int(threaded.cardinality()) == int(serial.cardinality())
    assert outcome(threaded) == outcome(serial)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 5, 8])
def test_random_pipelines_in_function(seed, helpers, baseline):
    threaded, serial = _pipelines(seed)
    assert outcome(serial)[1] is None
    assert helpers.graph(threaded) == helpers.graph(serial) == helpers.eager(serial)


# ---- prefetch ----

@pytest.mark.parametrize("size", [0, 1, 3, AUTOTUNE, None])
def test_prefetch_keeps_spec_cardinality_and_elements(size, baseline):
    base = Dataset.from_tensor_slices(([1, 2, 3], [[1., 2.], [3., 4.], [5., 6.]]))
    ds = base.prefetch(size)
    assert ds.element_spec == base.element_spec
    assert int(ds.cardinality()) == 3
    assert values(ds) == values(base)
    assert repr(ds).startswith("<PrefetchDataset")


def test_prefetch_buffer_size_errors():
    # TensorFlow 2.21: -1 is AUTOTUNE and 0 is accepted; below -1 is an error.
    with pytest.raises(errors.InvalidArgumentError,
                       match="^buffer_size must be >= 0 or set buffer_size to be -1 for "
                             "auto-tuning$"):
        Dataset.range(3).prefetch(-2)
    with pytest.raises(TypeError):
        Dataset.range(3).prefetch(1.5)
    assert values(Dataset.range(3).prefetch(kiln.constant(2, kiln.int64))) == [(0,), (1,), (2,)]


def test_prefetch_runs_on_another_thread(baseline):
    seen = []

    def gen():
        for i in range(3):
            seen.append(threading.get_ident())
            yield i
    ds = Dataset.from_generator(gen, output_signature=kiln.TensorSpec([], kiln.int32))
    assert values(ds.prefetch(2)) == [(0,), (1,), (2,)]
    assert seen and threading.get_ident() not in seen


def test_nested_prefetch(baseline):
    ds = Dataset.range(20).prefetch(1).map(lambda x: x + 1).prefetch(3).batch(4).prefetch(2)
    assert values(ds) == values(Dataset.range(20).map(lambda x: x + 1).batch(4))
    it = iter(ds)
    next(it)
    del it  # three threads stop, the inner ones once the outer lets go of them


def test_prefetch_in_generator_pipelines(baseline):
    def gen():
        for i in range(6):
            yield np.full([2], i, np.float32), f"s{i}".encode()
    sig = (kiln.TensorSpec([2], kiln.float32), kiln.TensorSpec([], kiln.string))
    ds = Dataset.from_generator(gen, output_signature=sig).prefetch(2)
    ds = ds.map(lambda v, s: (v * 2, s), num_parallel_calls=2).prefetch(1)
    want = [([2. * i, 2. * i], f"s{i}".encode()) for i in range(6)]
    assert values(ds) == want
    assert values(ds.repeat(2)) == want * 2
    assert values(Dataset.zip((ds, ds.prefetch(1)))) == [w + w for w in want]


def test_prefetch_error_at_its_position(baseline):
    def gen():
        yield 1
        yield 2
        raise ValueError("generator broke")

    def run(ds):
        got = []
        with pytest.raises(Exception) as info:
            for x in ds:
                got.append(int(x))
        return got, type(info.value), str(info.value)
    ds = Dataset.from_generator(gen, output_signature=kiln.TensorSpec([], kiln.int32))
    serial = run(ds)
    assert serial[0] == [1, 2]
    assert run(ds.prefetch(5)) == serial
    assert run(ds.prefetch(1).prefetch(1)) == serial


def test_prefetch_iterator_after_its_end(baseline):
    it = iter(Dataset.range(2).prefetch(2))
    assert [int(x) for x in it] == [0, 1]
    with pytest.raises(StopIteration):
        next(it)
    it = iter(Dataset.range(2).prefetch(2))
    next(it), next(it)
    with pytest.raises(errors.OutOfRangeError):
        it.get_next()


# ---- parallel map ----

def _check_less_than(limit):
    def f(x):
        kiln.debugging.assert_less(x, kiln.constant(limit, kiln.int64))
        return x * 10
    return f


@pytest.mark.parametrize("calls", [1, 2, 3, AUTOTUNE])
@pytest.mark.parametrize("prefetch", [None, 1, 4])
def test_parallel_map_error_at_its_position(calls, prefetch, baseline):
    ds = Dataset.range(20).map(_check_less_than(7), num_parallel_calls=calls)
    if prefetch:
        ds = ds.prefetch(prefetch)
    got = []
    with pytest.raises(errors.InvalidArgumentError):
        for x in ds:
            got.append(int(x))
    assert got == [10 * i for i in range(7)]


def test_parallel_map_argument_errors_and_warning():
    # TensorFlow 2.21's texts.
    for bad in (0, -2):
        with pytest.raises(errors.InvalidArgumentError,
                           match="^num_parallel_calls must be greater than zero.$"):
            Dataset.range(3).map(lambda x: x, num_parallel_calls=bad)
    with pytest.warns(UserWarning, match="no effect unless the `num_parallel_calls`"):
        Dataset.range(3).map(lambda x: x, deterministic=True)


@pytest.mark.parametrize("deterministic", [None, True, False])
def test_parallel_map_order(deterministic, baseline):
    ds = Dataset.range(50).map(lambda x: kiln.cast(x, kiln.float32) * 2.0,
                               num_parallel_calls=4, deterministic=deterministic)
    assert values(ds) == [(2.0 * i,) for i in range(50)]
    options = kiln.data.Options()
    options.deterministic = False
    assert values(ds.with_options(options)) == [(2.0 * i,) for i in range(50)]


def test_parallel_map_tuple_and_dict_elements(baseline):
    ds = Dataset.from_tensor_slices(({"a": [1, 2, 3]}, [4., 5., 6.]))
    f = (lambda d, y: (d["a"] + 1, {"y": y * 2}))
    assert values(ds.map(f, num_parallel_calls=2)) == values(ds.map(f))


def test_parallel_map_stateful_functions(baseline):
    calls = []

    def record(x):
        calls.append(int(x))
        return x + 1
    ds = Dataset.range(30).map(
        lambda x: (kiln.py_function(record, [x], kiln.int64), kiln.random.uniform([])),
        num_parallel_calls=3)
    got = values(ds)
    assert [g[0] for g in got] == list(range(1, 31))
    assert sorted(calls) == list(range(30))
    draws = [g[1] for g in got]
    assert len(set(draws)) == 30 and all(0.0 <= d < 1.0 for d in draws)


def test_parallel_map_in_function_is_the_loop(helpers, baseline):
    ds = Dataset.range(8).map(lambda x: x * 3, num_parallel_calls=AUTOTUNE).prefetch(2)
    assert helpers.graph(ds) == [(3 * i,) for i in range(8)]
    assert helpers.graph(ds.filter(lambda x: x % 2 == 0)) == [(6 * i,) for i in range(4)]


# ---- threads end ----

def _slow(x):
    m = kiln.ones([64, 64])
    for _ in range(4):
        m = kiln.matmul(m, m) * (1.0 / 64)
    return x + kiln.cast(kiln.reduce_sum(m) * 0.0, x.dtype)


@pytest.mark.parametrize("make", [
    lambda: Dataset.range(10**9).prefetch(3),
    lambda: Dataset.range(10**9).map(_slow, num_parallel_calls=3),
    lambda: Dataset.range(10**9).map(_slow, num_parallel_calls=2).prefetch(2).prefetch(1),
    lambda: Dataset.range(10**9).repeat().map(_slow, num_parallel_calls=2).batch(3)
    .prefetch(AUTOTUNE),
])
def test_partially_consumed_iterator_threads_end(make, baseline):
    it = iter(make())
    for _ in range(5):
        next(it)
    assert threading.active_count() > baseline
    del it


def test_early_break_ends_threads(baseline):
    ds = Dataset.range(10**9).map(_slow, num_parallel_calls=2).prefetch(2)
    for x in ds:
        if int(x) == 3:
            break
    for x in ds.take(4):  # take stops pulling; its input is dropped with it
        pass
    assert int(x) == 3


def test_exhausted_iterators_leave_no_threads(baseline):
    ds = Dataset.range(12).map(_slow, num_parallel_calls=3).prefetch(2)
    it = iter(ds)
    assert len(list(it)) == 12
    assert wait_threads(baseline) == baseline
    del it


def test_interpreter_exit_with_running_threads():
    script = (
        "import kiln as tf\n"
        "def f(x):\n"
        "    m = tf.ones([128, 128])\n"
        "    for _ in range(8):\n"
        "        m = tf.matmul(m, m) * (1.0 / 128)\n"
        "    return x + tf.cast(tf.reduce_sum(m), tf.int64)\n"
        "ds = tf.data.Dataset.range(10**9).map(f, num_parallel_calls=2).prefetch(4)\n"
        "it = iter(ds)\n"
        "for _ in range(3):\n"
        "    next(it)\n"
        "print('done', flush=True)\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "done\n"


# ---- interleave(num_parallel_calls=...) ----

@pytest.mark.parametrize("cycle,block", [(1, 1), (2, 1), (3, 2), (None, 3)])
def test_parallel_interleave_keeps_order(cycle, block, baseline):
    def make(calls):
        return Dataset.range(1, 7).interleave(
            lambda x: Dataset.range(x).map(lambda y: y * 10 + x), cycle_length=cycle,
            block_length=block, num_parallel_calls=calls)
    assert values(make(AUTOTUNE)) == values(make(None))
    it = iter(make(2))
    next(it)
    del it


def test_parallel_interleave_error_at_its_position(baseline):
    def make(calls):
        return Dataset.range(4).interleave(
            lambda x: Dataset.range(3).map(lambda y: y + x).map(_check_less_than(4)),
            cycle_length=2, num_parallel_calls=calls)
    assert outcome(make(2)) == outcome(make(None))
    assert outcome(make(None))[1] == "InvalidArgumentError"
