"""tf.profiler.experimental: start/stop a profile, the Profile and Trace context managers.

A profile records, per thread, every kernel kiln runs (op type, node name, output shapes,
dtypes and bytes), graph function runs, tracing, optimization passes, JIT compiles and disk-cache
hits, and ``Trace`` annotations. ``stop()`` writes them as a Chrome/Perfetto trace,
``<logdir>/plugins/profile/<run>/<host>.trace.json.gz`` (TensorBoard's layout; open it in
https://ui.perfetto.dev or chrome://tracing), and keeps the result: ``last_profile()`` and
``last_profile_table()`` (the ops by total time, as torch.profiler's ``key_averages().table()``).
See docs/PROFILER.md.
"""
import collections
import os
import threading

from kiln import _kiln, errors

__all__ = ["ProfilerOptions", "start", "stop", "Profile", "Trace", "last_profile",
           "last_profile_table"]

ProfilerOptions = collections.namedtuple(
    "ProfilerOptions", ["host_tracer_level", "python_tracer_level", "device_tracer_level",
                        "delay_ms"])
ProfilerOptions.__new__.__defaults__ = (2, 0, 1, None)
ProfilerOptions.__doc__ = """Options of a profile, TensorFlow's fields.

host_tracer_level: 0 nothing, 1 ``Trace`` annotations only, 2 (default) + kernels, function
  runs, tracing, passes and the JIT, 3 + the allocator's bytes in use after each kernel.
python_tracer_level, device_tracer_level: accepted; kiln traces neither Python calls nor devices.
delay_ms: events of the first ``delay_ms`` milliseconds after ``start()`` are dropped.
"""

_lock = threading.Lock()
_logdir = None  # the running profile's logdir; None when none runs
_last = None  # the last stopped profile (a ProfileResult)


class ProfileResult:
    """A stopped profile: its events, its table, and where its trace was written."""

    def __init__(self, profile, trace_path):
        self._profile = profile
        self.trace_path = trace_path  # None when stop(save=False)

    def table(self, row_limit=20):
        """The top ``row_limit`` ops by total time: Name, Calls, Total ms, Avg/Min/Max us, %."""
        return self._profile.table(row_limit)

    def events(self):
        """The events as dicts: name, cat, ph, start_ns, dur_ns, tid, args; kernels add
        op, shapes, dtype and bytes."""
        return self._profile.events()

    def op_stats(self):
        """(op, calls, total_ns, min_ns, max_ns) per op type, most total time first."""
        return self._profile.op_stats()

    def chrome_trace(self):
        """The Chrome trace JSON text (what the .trace.json.gz file holds)."""
        return self._profile.chrome_trace_json()

    def xspace(self):
        """The serialized XSpace (TensorFlow's xplane.proto) that TensorBoard's profile
        plugin reads: what the .xplane.pb file beside the trace holds."""
        return self._profile.xspace()

    def __repr__(self):
        return f"ProfileResult(events={self._profile.num_events}, trace_path={self.trace_path!r})"


_worker = {"rank": -1}


def _set_worker(rank):
    """Labels later profiles with this process's rank in a multi-worker job (kiln.distribute
    calls it): process "kiln worker <rank>", file "<host>_worker<rank>.trace.json.gz". -1:
    none."""
    _worker["rank"] = int(rank)


def _check_logdir(logdir):
    """FailedPreconditionError naming the first of logdir/plugins/profile that is a file."""
    path = logdir
    for part in ("", "plugins", "profile"):
        path = os.path.join(path, part) if part else path
        if os.path.exists(path) and not os.path.isdir(path):
            raise errors.FailedPreconditionError(f"{path} is not a directory")


def start(logdir, options=None):
    """Starts profiling; ``stop()`` writes the trace under ``logdir``.

    Raises AlreadyExistsError when a profile is already running (as TensorFlow), and
    FailedPreconditionError when ``logdir`` (or its plugins/profile folders) is a file.
    """
    global _logdir
    logdir = os.fspath(logdir)
    options = options if options is not None else ProfilerOptions()
    with _lock:
        if _logdir is not None:
            raise errors.AlreadyExistsError("Another profiler is running.")
        _check_logdir(logdir)
        try:
            _kiln.profiler_start(int(options.host_tracer_level), int(options.python_tracer_level),
                                 int(options.device_tracer_level), int(options.delay_ms or 0),
                                 _worker["rank"])
        except errors.FailedPreconditionError:  # started from C++
            raise errors.AlreadyExistsError("Another profiler is running.") from None
        _logdir = logdir


def stop(save=True):
    """Stops profiling and writes the trace (when ``save``); prints nothing.

    Raises UnavailableError when no profile is running, as TensorFlow. The result stays
    available through ``last_profile()`` and ``last_profile_table()``.
    """
    global _logdir, _last
    with _lock:
        if _logdir is None:
            raise errors.UnavailableError(
                "Cannot export profiling results. No profiler is running.")
        profile = _kiln.profiler_stop()
        logdir, _logdir = _logdir, None
        _last = ProfileResult(profile, None)
        if save:
            _last.trace_path = profile.save(logdir)


def last_profile():
    """The last stopped profile (a ProfileResult), or None before the first ``stop()``."""
    return _last


def last_profile_table(row_limit=20):
    """The table of the last stopped profile: its top ``row_limit`` ops by total time."""
    if _last is None:
        raise errors.FailedPreconditionError(
            "No profile has been recorded: call start() and stop() first.")
    return _last.table(row_limit)


class Profile:
    """``with Profile(logdir, options=None):`` profiles the block (start, then stop)."""

    def __init__(self, logdir, options=None):
        self._logdir = logdir
        self._options = options

    def __enter__(self):
        start(self._logdir, self._options)
        return self

    def __exit__(self, exc_type, exc, tb):
        stop()


class Trace:
    """``with Trace(name, **kwargs):`` an annotation on the timeline of this thread.

    The keyword arguments (e.g. ``step_num=step``) are shown with the event. Costs one check
    when no profile runs.
    """

    def __init__(self, name, **kwargs):
        self._name = name
        self._kwargs = kwargs
        self._start = 0

    def __enter__(self):
        if _kiln.profiler_enabled():
            self._start = _kiln.profiler_now_ns()
        return self

    def set_metadata(self, **kwargs):
        """Adds arguments to the event (TensorFlow's Trace.set_metadata)."""
        self._kwargs.update(kwargs)

    def __exit__(self, exc_type, exc, tb):
        if self._start:
            _kiln.profiler_record(str(self._name), self._start,
                                  [(str(k), str(v)) for k, v in self._kwargs.items()])
            self._start = 0
