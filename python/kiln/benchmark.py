"""kiln.benchmark: honest timing of eager code, functions and compiled models.

    import kiln as tf
    r = tf.benchmark.benchmark(step, x, name="step")
    print(r)          # step: median 1.23 ms (IQR 0.02 ms, mean 1.24 ± 0.03 ms, 812 runs); first call 45 ms

What it does, and why (seed documents 000 and 003):
- The first call is timed on its own and reported as ``first_call_s``: for a
  function it includes tracing and optimization, which steady-state numbers
  must not hide nor be polluted by.
- Warm-up continues until the per-call time stops falling, then samples are
  taken until ``min_time`` seconds and ``min_runs`` samples are collected.
  Fast callables are timed in batches of ``number`` calls per sample so that the
  clock's own cost does not dominate.
- Every result is materialized before the clock stops (``block_until_ready()`` on
  JAX arrays; kiln, PyTorch and TensorFlow CPU tensors are complete when
  returned; other objects are copied with ``.numpy()``), so asynchronous work
  is counted and host copies are not.
- A callable that returns nothing is refused: seed 000's ``tf.function`` looked
  10x faster only because it returned nothing and its work was pruned away.
- A result that does not change when the inputs change gets a warning: the
  work may have been constant-folded or the inputs ignored.
- Statistics: median, mean ± std, interquartile range, min, max and the number
  of samples (seed 003: ten runs without spread mislead).

This module imports nothing from kiln at load time, so peer frameworks'
environments can load it by path and time TensorFlow, JAX or PyTorch with the
same rules; NumPy and the frameworks are imported inside the functions that
handle their values, for the same reason.
"""
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings

__all__ = ["benchmark", "Result", "materialize", "to_host", "NoResultError", "ConstantResultWarning",
           "format_seconds", "machine_info"]


class NoResultError(ValueError):
    """The benchmarked callable returned None, so nothing forces its work to run."""


class ConstantResultWarning(UserWarning):
    """The result did not change when the inputs changed."""


_NO_RESULT_HELP = (
    "returned None, so there is nothing to wait for and nothing that forces its work to run. "
    "A traced function that returns nothing keeps only stateful operations: its computation "
    "is pruned from the graph and it looks much faster than it is (seed 000's CharUnpack "
    "benchmark measured a 10x speed-up that way). Return the value you want to time.")


def _leaves(x):
    if isinstance(x, dict):
        for v in x.values():
            yield from _leaves(v)
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _leaves(v)
    else:
        yield x


# Frameworks whose CPU tensors are complete when the call returns (kiln and
# PyTorch run ops synchronously; TensorFlow's eager mode is synchronous by
# default). Their results need no host copy inside the timed region.
_SYNCHRONOUS_MODULES = ("torch", "tensorflow")


def materialize(x):
    """Waits until every tensor in the (nested) result is computed: calls
    ``block_until_ready()`` where it exists (JAX; kiln's is a no-op because kiln
    runs ops synchronously); PyTorch and TensorFlow CPU tensors are complete when
    returned; any other object with ``.numpy()`` is copied to the host."""
    for leaf in _leaves(x):
        sync = getattr(leaf, "block_until_ready", None)
        if callable(sync):
            sync()
        elif type(leaf).__module__.split(".")[0] in _SYNCHRONOUS_MODULES:
            pass
        elif callable(getattr(leaf, "numpy", None)):
            leaf.numpy()
    return x


def to_host(x):
    """The leaves of a (nested) result as host values (NumPy arrays where
    possible), for comparing results."""
    out = []
    for leaf in _leaves(x):
        sync = getattr(leaf, "block_until_ready", None)
        if callable(sync):
            sync()
        if callable(getattr(leaf, "numpy", None)):
            detach = getattr(leaf, "detach", None)  # PyTorch tensors that require grad
            out.append((detach() if callable(detach) else leaf).numpy())
        else:
            out.append(leaf)
    return out


def machine_info():
    """The machine a result was measured on: CPU model, cores, Python, system."""
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "system": f"{platform.system()} {platform.release()}"}


def machine_load():
    """The 1-, 5- and 15-minute load averages (None where the system has none):
    other work on the machine makes timings noisy, so results record it."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def busy_note(load, own=0):
    """A warning when the machine was busy: the 1-minute load, less `own` (the
    spinning processes a busy-machine run starts itself), at half the cores or more."""
    cores = os.cpu_count() or 1
    if load is None or load[0] - own < 0.5 * cores:
        return None
    return (f"the machine was busy (load {load[0]:g} on {cores} cores"
            + (f", {own} of it our own spinners" if own else "") + "): timings are slower and noisier")


class Spinners:
    """A busy machine on purpose: `n` processes that spin on the CPU while the
    context is open (each stops by itself after `limit` seconds, whatever happens).

        with Spinners(os.cpu_count()):
            ...  # timings under load
    """

    def __init__(self, n, limit=1800):
        self.n, self.limit, self.procs = n, limit, []

    def __enter__(self):
        code = f"import time\nend = time.time() + {self.limit}\nwhile time.time() < end: pass\n"
        self.procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(self.n)]
        time.sleep(0.5)  # let them reach the cores
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()
        self.procs = []
        return False


def _quantile(sorted_values, q):
    # Linear interpolation between closest ranks (NumPy's default).
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def format_seconds(s):
    """A duration with a unit chosen for reading: 812 ns, 1.23 ms, 4.5 s."""
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(s) >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


class Result:
    """Timing statistics of one benchmark; times are seconds per call."""

    def __init__(self, name, mode, samples, number, first_call_s, meta=None):
        if not samples:
            raise ValueError("a benchmark result needs at least one sample")
        self.name = name
        self.mode = mode
        self.samples = list(samples)
        self.number = number
        self.first_call_s = first_call_s
        self.meta = dict(meta or {})
        s = sorted(self.samples)
        self.runs = len(s)
        self.median = statistics.median(s)
        self.mean = statistics.fmean(s)
        self.std = statistics.stdev(s) if len(s) > 1 else 0.0
        self.q1 = _quantile(s, 0.25)
        self.q3 = _quantile(s, 0.75)
        self.iqr = self.q3 - self.q1
        self.min = s[0]
        self.max = s[-1]

    @property
    def calls(self):
        """Calls timed in total (samples x calls per sample)."""
        return self.runs * self.number

    def to_dict(self):
        return {"name": self.name, "mode": self.mode, "median_s": self.median,
                "mean_s": self.mean, "std_s": self.std, "iqr_s": self.iqr, "q1_s": self.q1,
                "q3_s": self.q3, "min_s": self.min, "max_s": self.max, "runs": self.runs,
                "calls_per_run": self.number, "first_call_s": self.first_call_s,
                "meta": self.meta}

    def __str__(self):
        f = format_seconds
        label = self.name if self.mode is None else f"{self.name} [{self.mode}]"
        return (f"{label}: median {f(self.median)} (IQR {f(self.iqr)}, mean {f(self.mean)} "
                f"± {f(self.std)}, min {f(self.min)}, {self.runs} runs x {self.number}); "
                f"first call {f(self.first_call_s)}")

    __repr__ = __str__


def _time_batch(clock, fn, args, kwargs, number, sink):
    start = clock()
    for _ in range(number):
        out = fn(*args, **kwargs)
        sink(out)
    return (clock() - start) / number


def _perturbed(args):
    # The same arguments with every numeric array changed; None when nothing could be.
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a kiln dependency
        return None
    changed = False
    new = []
    for a in args:
        host = None
        if hasattr(a, "numpy") and callable(a.numpy) and hasattr(a, "dtype"):
            try:
                host = np.asarray(a.numpy())
            except Exception:  # noqa: BLE001 - symbolic or non-host values: leave as is
                host = None
        elif isinstance(a, np.ndarray):
            host = a
        if host is not None and host.dtype.kind in "fiub" and host.size:
            if host.dtype.kind == "b":
                p = ~host
            elif host.dtype.kind == "f":
                rng = np.random.default_rng(1234)
                p = (host + rng.uniform(0.5, 1.5, host.shape)).astype(host.dtype)
            else:
                # Integers: each value becomes the next of the values present
                # (cyclic), so indices and labels stay in their range; +1
                # (wrapping) when all are equal.
                u = np.unique(host)
                if u.size > 1:
                    p = u[(np.searchsorted(u, host) + 1) % u.size].astype(host.dtype)
                else:
                    p = (host.astype(np.int64) + 1).astype(host.dtype)
            new.append(_like(a, p))
            changed = True
        else:
            new.append(a)
    return new if changed else None


def _like(original, host):
    # A value of the original's framework holding host data.
    mod = type(original).__module__.split(".")[0]
    if mod in ("kiln", "tensorflow"):
        import importlib
        return importlib.import_module(mod).constant(host)
    if mod in ("jax", "jaxlib"):
        import jax.numpy as jnp
        return jnp.asarray(host)
    if mod == "torch":
        import torch
        return torch.from_numpy(host.copy())
    return host


def _same(a, b):
    import numpy as np
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        try:
            if not np.array_equal(np.asarray(x), np.asarray(y)):
                return False
        except Exception:  # noqa: BLE001 - incomparable leaves: assume they differ
            return False
    return True


def benchmark(fn, *args, name=None, mode=None, min_time=1.0, min_runs=7, max_runs=10000,
              sample_time=2e-3, max_warmup_time=5.0, check_inputs=True, meta=None,
              kwargs=None, clock=time.perf_counter):
    """Times fn(*args, **kwargs) and returns a Result.

    - The first call is timed alone (``first_call_s``; tracing for functions).
    - Warm-up runs until the per-call time stops improving (at most
      ``max_warmup_time`` seconds), and decides how many calls each sample
      holds so that a sample lasts at least ``sample_time`` seconds.
    - Samples are taken until ``min_time`` seconds have passed and at least
      ``min_runs`` samples exist (at most ``max_runs``).
    - Results are materialized (see ``materialize``) inside the timed region.

    ``clock`` returns seconds (time.perf_counter; tests pass a fake one).
    Raises NoResultError when fn returns None; warns ConstantResultWarning when
    ``check_inputs`` and the result does not change with different float inputs.
    """
    kwargs = dict(kwargs or {})
    label = name or getattr(fn, "__name__", None) or type(fn).__name__
    if min_time < 0 or min_runs < 1 or max_runs < min_runs or sample_time <= 0:
        raise ValueError("benchmark: need min_time >= 0, 1 <= min_runs <= max_runs and "
                         "sample_time > 0")

    start = clock()
    first = fn(*args, **kwargs)
    if first is None:
        raise NoResultError(f"benchmark {label!r}: the callable {_NO_RESULT_HELP}")
    materialize(first)
    first_call_s = clock() - start
    first_host = to_host(first)

    if check_inputs:
        alt = _perturbed(args)
        if alt is not None:
            alt_host = to_host(fn(*alt, **kwargs))
            if _same(first_host, alt_host):
                warnings.warn(
                    f"benchmark {label!r}: the result is the same for different inputs; its "
                    "work may have been constant-folded or the inputs ignored, and the time "
                    "would not measure the computation.", ConstantResultWarning, stacklevel=2)

    def sink(out):
        if out is None:
            raise NoResultError(f"benchmark {label!r}: the callable {_NO_RESULT_HELP}")
        materialize(out)

    # Warm-up: grow the batch until a sample lasts sample_time, then repeat until
    # the per-call time no longer improves by more than 2 % (or time runs out).
    number = 1
    warm_start = clock()
    per_call = _time_batch(clock, fn, args, kwargs, number, sink)
    while per_call * number < sample_time and number < 1 << 20:
        number = max(number * 2, min(1 << 20, int(sample_time / max(per_call, 1e-9)) + 1))
        per_call = _time_batch(clock, fn, args, kwargs, number, sink)
    best = per_call
    stable = 0
    while stable < 2 and clock() - warm_start < max_warmup_time:
        t = _time_batch(clock, fn, args, kwargs, number, sink)
        if t < best * 0.98:
            best, stable = t, 0
        else:
            stable += 1

    samples = []
    sample_start = clock()
    while len(samples) < max_runs and (len(samples) < min_runs or
                                       clock() - sample_start < min_time):
        samples.append(_time_batch(clock, fn, args, kwargs, number, sink))
    return Result(label, mode, samples, number, first_call_s, meta)
