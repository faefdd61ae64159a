"""Summary writers and the per-thread summary state (tf.summary's default writer,
default step and record_if condition)."""
import contextlib
import threading

from kiln import _kiln

_DEFAULTS = {"max_queue": 10, "flush_millis": 120000, "filename_suffix": ".v2"}


class _State(threading.local):
    def __init__(self):
        self.writer = None
        self.step = None
        self.recording = True


state = _State()


class SummaryWriter:
    """tf.summary.SummaryWriter: writes events into one event file of a log
    directory. Writes go through the default writer (`as_default`)."""

    def __init__(self, handle=None, path=None, logdir=None):
        self._handle, self._path, self._logdir = handle, path, logdir

    @property
    def logdir(self):
        return self._logdir

    def set_as_default(self, step=None):
        """Makes this the default writer (and `step`, if given, the default step)."""
        state.writer = self
        if step is not None:
            state.step = step

    @contextlib.contextmanager
    def as_default(self, step=None):
        """This writer (and `step`) as the defaults inside the block; flushed on exit."""
        old_writer, old_step = state.writer, state.step
        self.set_as_default(step)
        try:
            yield self
        finally:
            state.writer, state.step = old_writer, old_step
            self.flush()

    def init(self):
        """Nothing to do: the file is created with the writer."""

    def flush(self):
        """Writes buffered events out (a FlushSummaryWriter op inside a function)."""
        if self._handle is not None:
            _kiln.raw.FlushSummaryWriter(self._handle)

    def close(self):
        """Flushes and closes the file; later writes raise FailedPreconditionError."""
        if self._handle is not None:
            _kiln.raw.CloseSummaryWriter(self._handle)

    def __repr__(self):
        return f"<kiln.summary.SummaryWriter logdir={self._logdir!r}>"


class _NoopSummaryWriter(SummaryWriter):
    """tf.summary.create_noop_writer(): a default writer that writes nothing."""


def _option(value, name, kind):
    value = _DEFAULTS[name] if value is None else value
    if not isinstance(value, kind) or isinstance(value, bool):
        raise TypeError(f"create_file_writer: {name} must be {kind.__name__}, got {value!r}")
    return value


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None,
                       name=None, experimental_trackable=False, experimental_mesh=None):
    """tf.summary.create_file_writer: a SummaryWriter of a new event file in `logdir`
    (made with its parents). Events are buffered up to `max_queue` (10) and at most
    `flush_millis` (120000) ms."""
    if logdir is None:
        raise ValueError("Argument `logdir` cannot be None")
    if hasattr(logdir, "numpy"):
        logdir = logdir.numpy()
    if isinstance(logdir, bytes):
        logdir = logdir.decode()
    if not isinstance(logdir, str):
        raise TypeError(f"create_file_writer: logdir must be a str, got {type(logdir).__name__}")
    handle, path = _kiln._summary_writer(
        logdir, _option(max_queue, "max_queue", int), _option(flush_millis, "flush_millis", int),
        _option(filename_suffix, "filename_suffix", str))
    return SummaryWriter(handle, path, logdir)


def create_noop_writer():
    return _NoopSummaryWriter()


def flush(writer=None, name=None):
    """Flushes `writer` (default: the default writer)."""
    writer = state.writer if writer is None else writer
    if writer is not None:
        writer.flush()


@contextlib.contextmanager
def record_if(condition):
    """Writes happen only where `condition` (a bool, a boolean tensor or a callable
    returning one) holds."""
    old = state.recording
    state.recording = condition
    try:
        yield
    finally:
        state.recording = old


def should_record_summaries():
    """Whether a write would happen now: a default writer and the record_if condition."""
    if state.writer is None or isinstance(state.writer, _NoopSummaryWriter):
        return False
    cond = state.recording
    return cond() if callable(cond) else cond
