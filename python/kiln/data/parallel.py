"""Background threads for eager tf.data iteration: prefetch and parallel map.

A traced kiln.function releases the GIL while its plan runs, so Python threads
that call the map function (or pull a pipeline's elements) overlap with the
consumer's own kiln compute.

- Prefetcher(source, n): a daemon thread pulls from `source` into a buffer of
  at most n elements; the consumer takes them in order. The source's end and
  its errors reach the consumer at their position.
- ParallelMap(source, fn, n): the consumer pulls inputs and hands fn(input) to
  n worker threads, keeping up to n calls in flight beyond the element being
  waited for; results (and errors) come back in input order.

Neither thread holds a reference to the iterator the consumer sees: when it is
closed or garbage collected, a stop flag ends its threads (a worker finishes
the call it is in first). At interpreter exit, live threads are stopped and
joined briefly, so no daemon is inside kiln while the runtime shuts down.
Inside a kiln.function, index-addressable pipelines become while loops and never
come here; other pipelines pulled at run time do use these iterators.
"""
import atexit
import collections
import concurrent.futures
import os
import queue
import threading

from kiln import errors

AUTOTUNE = -1
_PREFETCH_AUTOTUNE = 2  # tf.data's autotuner starts small too
_EXIT_JOIN_S = 2.0

_live_lock = threading.Lock()
_live = {}  # thread -> the stop callable of what it serves


def usable_cpus():
    """The CPUs this process may run on (AUTOTUNE's parallelism)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def prefetch_size(n):
    """buffer_size as given to prefetch (an int) -> the buffer to use (0: none)."""
    if n == AUTOTUNE:
        return _PREFETCH_AUTOTUNE
    if n < 0:
        raise errors.InvalidArgumentError(
            "buffer_size must be >= 0 or set buffer_size to be -1 for auto-tuning")
    return n


def parallel_calls(n):
    """num_parallel_calls as given to map (an int) -> the number of threads."""
    if n == AUTOTUNE:
        return usable_cpus()
    if n <= 0:
        raise errors.InvalidArgumentError("num_parallel_calls must be greater than zero.")
    return n


def _start(target, args, stop, name):
    thread = threading.Thread(target=_run, args=(target, args), name=name, daemon=True)
    with _live_lock:
        _live[thread] = stop
    try:
        thread.start()
    except BaseException:
        with _live_lock:
            _live.pop(thread, None)
        raise
    return thread


def _run(target, args):
    try:
        target(*args)
    finally:
        with _live_lock:
            _live.pop(threading.current_thread(), None)


@atexit.register
def _stop_all():
    with _live_lock:
        live = list(_live.items())
    for _, stop in live:
        stop()
    for thread, _ in live:
        thread.join(_EXIT_JOIN_S / max(1, len(live)))


class _Failure:
    """An exception travelling from a thread to the consumer."""

    def __init__(self, exc):
        self.exc = exc


_END = object()


class _Channel:
    """A bounded FIFO between one producer thread and the consumer."""

    def __init__(self, capacity):
        self._items = collections.deque()
        self._capacity = capacity
        self._cond = threading.Condition()
        self.stopped = False

    def wait_room(self):
        """Blocks until there is room; False once stopped."""
        with self._cond:
            while len(self._items) >= self._capacity and not self.stopped:
                self._cond.wait()
            return not self.stopped

    def put(self, item):
        with self._cond:
            if not self.stopped:
                self._items.append(item)
                self._cond.notify_all()

    def get(self):
        with self._cond:
            while not self._items:
                self._cond.wait()
            item = self._items.popleft()
            self._cond.notify_all()
            return item

    def stop(self):
        with self._cond:
            self.stopped = True
            self._items.clear()
            self._cond.notify_all()


def _close(it):
    close = getattr(it, "close", None)
    if close is not None:
        try:
            close()
        except Exception:  # noqa: BLE001 -- an abandoned input's cleanup must not escape
            pass


def _produce(source, channel):
    """The prefetch thread: source's elements, then its end or its error."""
    try:
        while channel.wait_room():
            try:
                item = next(source)
            except StopIteration:
                channel.put(_END)
                return
            except BaseException as e:  # noqa: BLE001 -- delivered to the consumer
                channel.put(_Failure(e))
                return
            channel.put(item)
            del item
    finally:
        _close(source)


class _ClosedWhenCollected:
    """An iterator whose close() ends its threads, also when it is garbage collected."""

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 -- at interpreter exit the module may be gone
            pass


class Prefetcher(_ClosedWhenCollected):
    """An iterator over `source` filled ahead by a daemon thread (at most
    `capacity` elements buffered). The thread starts at the first next()."""

    def __init__(self, source, capacity):
        self._source = source
        self._channel = _Channel(capacity)
        self._thread = None
        self._done = False

    def __iter__(self):
        return self

    def start(self):
        """Starts filling the buffer now (next() starts it otherwise)."""
        if self._thread is None and not self._done:
            source, self._source = self._source, None
            self._thread = _start(_produce, (source, self._channel), self._channel.stop,
                                  "kiln.data prefetch")

    def __next__(self):
        if self._done:
            raise StopIteration
        self.start()
        item = self._channel.get()
        if item is _END:
            self.close()
            raise StopIteration
        if isinstance(item, _Failure):
            self.close()
            raise item.exc
        return item

    def close(self):
        """Stops the thread (it ends after the element it is computing)."""
        self._done = True
        self._channel.stop()
        if self._source is not None:
            _close(self._source)
            self._source = None


def _work(tasks, stopped):
    """A parallel map worker: runs (future, fn, element) tasks until stopped."""
    while True:
        task = tasks.get()
        if task is None or stopped.is_set():
            return
        future, fn, element = task
        del task
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(fn(element))
            except BaseException as e:  # noqa: BLE001 -- delivered to the consumer
                future.set_exception(e)
        del future, element


class _Pool:
    """Up to `size` daemon workers, started as tasks arrive."""

    def __init__(self, size):
        self._size = size
        self._tasks = queue.SimpleQueue()
        self._workers = 0
        self._stopped = threading.Event()

    def submit(self, fn, element):
        future = concurrent.futures.Future()
        self._tasks.put((future, fn, element))
        if self._workers < self._size:
            self._workers += 1
            _start(_work, (self._tasks, self._stopped), self.stop, "kiln.data parallel map")
        return future

    def stop(self):
        """Workers end after the call they are in; queued calls never run."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        for _ in range(self._workers):
            self._tasks.put(None)


def _failed(exc):
    future = concurrent.futures.Future()
    future.set_exception(exc)
    return future


class ParallelMap(_ClosedWhenCollected):
    """fn over `source`'s elements on `size` threads, results in input order.
    The consumer's thread pulls the inputs; fn runs on the workers."""

    def __init__(self, source, fn, size):
        self._source = source
        self._fn = fn
        self._size = size
        self._pool = _Pool(size)
        self._pending = collections.deque()
        self._exhausted = False
        self._done = False

    def __iter__(self):
        return self

    def _fill(self):
        while len(self._pending) < self._size and not self._exhausted:
            try:
                element = next(self._source)
            except StopIteration:
                self._exhausted = True
                return
            except BaseException as e:  # noqa: BLE001 -- raised at its position
                self._exhausted = True
                self._pending.append(_failed(e))
                return
            self._pending.append(self._pool.submit(self._fn, element))

    def __next__(self):
        if self._done:
            raise StopIteration
        self._fill()
        if not self._pending:
            self.close()
            raise StopIteration
        head = self._pending.popleft()
        self._fill()  # keep `size` calls running while the consumer works
        try:
            return head.result()
        except BaseException:
            self.close()
            raise

    def close(self):
        """Cancels the calls not started; workers end after their current one."""
        self._done = True
        for future in self._pending:
            future.cancel()
        self._pending.clear()
        self._pool.stop()
        if self._source is not None:
            _close(self._source)
            self._source = None
