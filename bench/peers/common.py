"""Shared pieces of the peers run: the harness (loaded by path), the inputs,
the case records and the runner that times them.

The inputs are the ones bench/workloads.py gives kiln (same NumPy generator
seeds), so every framework computes on the same values.
"""
import importlib.util
import os
import time
import warnings

import numpy as np

import model_common as mc

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def load_harness():
    """kiln.benchmark loaded by path: it imports nothing from kiln, so the peers
    environment (which has no kiln) times with exactly the same rules."""
    path = os.path.join(REPO, "python", "kiln", "benchmark.py")
    spec = importlib.util.spec_from_file_location("kiln_benchmark", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


kb = load_harness()


def cores():
    """CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def machine():
    """The same machine record bench/demo.py writes."""
    return kb.machine_info()


def chain(c, n):
    """The chain workload in any framework: n times y = y * c + x (2n ops)."""
    def fn(x):
        y = x
        for _ in range(n):
            y = y * c + x
        return y
    return fn


# ---- inputs (NumPy; each framework converts them) ----

def charunpack_input(rows):
    return np.random.default_rng(0).integers(0, 256, (rows, 400), dtype=np.uint8)


def conv_input():
    return np.random.default_rng(1).standard_normal((1, 200, 200, 100), dtype=np.float32)


def conv_kernel_hwio():
    # Keras' default initializer is Glorot uniform; the values do not change the time.
    limit = np.sqrt(6.0 / (3 * 3 * 100 + 3 * 3 * 100))
    return np.random.default_rng(11).uniform(-limit, limit, (3, 3, 100, 100)).astype(np.float32)


def while_tanh_input():
    return np.random.default_rng(2).uniform(size=5).astype(np.float32)


def while_tanh_reference(x):
    """The loop in NumPy: (result, iterations) for checking the peers' outputs."""
    x = x.astype(np.float32)
    n = 0
    while x.sum() > 1:
        x = np.tanh(x)
        n += 1
    return x, n


RNN_SHAPE = (2, 3, 4)  # the guide's batch_size, seq_len, feature_size


def rnn_input():
    return np.random.default_rng(3).uniform(size=RNN_SHAPE).astype(np.float32)


def chain_input():
    return np.random.default_rng(4).standard_normal((10, 10), dtype=np.float32)


def train_step_input():
    """x [32, 64] float32 and integer labels y [32] (seed 6, as bench/workloads.py)."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((32, 64), dtype=np.float32)
    return x, rng.integers(0, 10, 32).astype(np.int32)


def efficientnet_input():
    return np.random.default_rng(5).random((1, 384, 384, 3), dtype=np.float32)


def micro_inputs():
    return np.array([1.0], np.float32), np.array([2.0], np.float32)


TRACE_OPS = 1000  # 500 x (y = y * c + x)
TRACE_NOTE = ("first call of a fresh function: y = x; 500 x (y = y * c + x) (1,000 ops) on "
              "float32 [10, 10]; includes tracing, optimization/compilation and one run. "
              "Each sample builds a new function with its own constant c so that no "
              "compilation cache can answer.")

TITLES = {
    "charunpack_64x400": "seed 000 CharUnpack, uint8 [64, 400]",
    "charunpack_8192x400": "seed 000 CharUnpack, uint8 [8192, 400]",
    "conv2d_seed002": "seed 002 Conv2D(100, 3) on [1, 200, 200, 100]",
    "while_tanh": "seed 002 while reduce_sum(x) > 1: x = tanh(x), [5]",
    "dynamic_rnn": "seed 002 dynamic_rnn with TensorArray, [2, 3, 4]",
    "chain100": "100 small ops (50 x y * 0.5 + x) on [10, 10]",
    "train_step": "guide train step: tape + Adam, MLP 64-64-10, batch 32",
    "efficientnetv2s": "seed 003 EfficientNetV2-S forward, [1, 384, 384, 3]",
    "eager_add_overhead": "eager a + b, 1-element float32",
    "function_call_overhead": "cached function call f(a, b) = a + b",
    "trace_1000_ops": "first call of a fresh 1,000-op function",
}
TITLES.update(mc.TITLES)  # the model workloads (run_peers.py --models)
ORDER = list(TITLES)


# ---- cases ----

class Case:
    """One (workload, mode) to time.

    build() -> (fn, args): called only when the case runs, so a failure or a
    slow construction stays inside its own case. also_as: extra modes that get
    a copy of the result (JAX and PyTorch have one compiled mode). min_runs and
    max_warmup_time go to the harness. fresh: build(i) returns a zero-argument
    callable that makes and calls a new function (trace_1000_ops).
    """

    def __init__(self, name, mode, build, also_as=(), min_runs=7, max_warmup_time=5.0,
                 meta=None, fresh=False, check=None, extra=None):
        self.name, self.mode, self.build = name, mode, build
        self.also_as = tuple(also_as)
        self.min_runs, self.max_warmup_time = min_runs, max_warmup_time
        self.meta = dict(meta or {})
        self.fresh = fresh
        self.check = check  # optional (host output list) -> None, raises on wrong result
        self.extra = extra  # optional () -> dict merged into meta after timing


class Skip:
    """A (workload, mode) this framework cannot run, with the reason."""

    def __init__(self, name, mode, reason):
        self.name, self.mode, self.reason = name, mode, reason

    def to_dict(self):
        return {"name": self.name, "mode": self.mode, "reason": self.reason}


def time_fresh(case, min_time, max_runs=10):
    """Times case.build(i)() for fresh i until min_time and case.min_runs."""
    samples = []
    start = time.perf_counter()
    i = 0
    while len(samples) < max_runs and (len(samples) < case.min_runs or
                                       time.perf_counter() - start < min_time):
        call = case.build(i)
        t0 = time.perf_counter()
        out = call()
        kb.materialize(out)
        samples.append(time.perf_counter() - t0)
        i += 1
    meta = dict(case.meta, title=TITLES.get(case.name, case.name), measure=TRACE_NOTE)
    return kb.Result(case.name, case.mode, samples, 1, samples[0], meta)


def run_case(case, min_time):
    """Times one case with the harness; returns a list of result dicts (the
    case's mode first, then the copies in also_as)."""
    title = TITLES.get(case.name, case.name)
    if case.fresh:
        r = time_fresh(case, min_time)
    else:
        fn, args = case.build()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", kb.ConstantResultWarning)
            r = kb.benchmark(fn, *args, name=case.name, mode=case.mode, min_time=min_time,
                             min_runs=case.min_runs, max_warmup_time=case.max_warmup_time,
                             meta=dict(case.meta, title=title))
        for c in caught:
            if issubclass(c.category, kb.ConstantResultWarning):
                r.meta["warning"] = str(c.message)
        if case.check is not None:  # after timing, so that first_call_s stays the first call
            case.check(kb.to_host(fn(*args)))
    if case.extra is not None:
        r.meta.update(case.extra())
    out = [r.to_dict()]
    for mode in case.also_as:
        d = r.to_dict()
        d["mode"] = mode
        d["meta"] = dict(d["meta"], same_as=case.mode,
                         copy_note=f"copy of the {case.mode!r} row: this framework has one "
                                   "compiled mode")
        out.append(d)
    return out


def close(actual, expected, what, rtol=1e-5, atol=1e-6):
    """Raises AssertionError when a peer's output is not the NumPy reference."""
    a = np.asarray(actual)
    if a.shape != np.shape(expected) or not np.allclose(a, expected, rtol=rtol, atol=atol):
        raise AssertionError(f"{what}: output differs from the NumPy reference")


def charunpack_reference(x):
    shifts = np.arange(7, -1, -1, dtype=np.uint8).reshape(1, 1, 8)
    bits = (np.expand_dims(x, 2) >> shifts) & 1
    return bits.reshape(x.shape[0], -1).astype(np.float32)


def chain_reference(x, n=50, c=0.5):
    y = x
    for _ in range(n):
        y = y * np.float32(c) + x
    return y


def rnn_reference(data):
    # rnn_step(inp, state) = inp + state from zeros: a cumulative sum over time.
    return np.cumsum(data, axis=1, dtype=np.float32)
