"""More source datasets: Dataset.counter (tf.data.experimental.Counter),
Dataset.random, Dataset.list_files and tf.data.TextLineDataset.

counter is index-addressable (a graph loop over an index inside a
kiln.function). random draws with NumPy (tf.data's semantics, not its random
values): seeded it repeats its values each iteration unless
rerandomize_each_iteration, unseeded they differ. list_files matches its
patterns when called (all the matches sorted together, hidden files included,
as TensorFlow lists them), then shuffles them unless shuffle=False.
TextLineDataset reads the files line by line (without their "\\n" or "\\r\\n"),
uncompressed, GZIP or ZLIB; with num_parallel_reads it takes lines from that
many files in turns (tf.data's deterministic interleave order)."""
import glob
import itertools
import zlib

import numpy as np

from kiln import _kiln, errors, nest
from kiln.data import loops, structure
from kiln.data.dataset import INFINITE, UNKNOWN, DatasetV2, install_methods
from kiln.data.interleave import AUTOTUNE, cpu_count
from kiln.data.sampling import _Seeded
from kiln.data.transforms import count_arg

_raw = _kiln.raw
TensorSpec = _kiln.TensorSpec
_STRING = _kiln.as_dtype("string")
_INT64 = _kiln.as_dtype("int64")
_END = object()
_BUFFER = 256 * 1024  # TextLineDataset's default read size (tf.data's)


# ---- counter ----

class CounterDataset(DatasetV2):
    _name = "CounterDataset"
    _indexable = True

    def __init__(self, start=0, step=1, dtype=_INT64):
        self._dtype = _kiln.as_dtype(dtype)
        if not (self._dtype.is_integer or self._dtype.is_floating):
            raise TypeError(f"counter: dtype must be numeric, got {self._dtype.name}")
        self._start = count_arg(start, "start", "counter")
        self._step = count_arg(step, "step", "counter")
        super().__init__(TensorSpec([], self._dtype), INFINITE)

    def _cast(self, t):
        return t if self._dtype == _INT64 else _raw.Cast(t, DstT=self._dtype)

    def _element_at(self, i):
        return self._cast(loops.int64(self._start) + i * loops.int64(self._step))

    def _slice(self, s, e):
        start, step = loops.int64(self._start), loops.int64(self._step)
        return self._cast(_raw.Range(start + s * step, start + e * step, step))

    def _eager_iter(self):
        np_dtype = self._dtype.as_numpy_dtype
        for v in itertools.count(self._start, self._step):
            yield structure.to_tensor(np.asarray(v, dtype=np_dtype), self._dtype)


# ---- random ----

class RandomDataset(DatasetV2):
    _name = "RandomDataset"

    def __init__(self, seed=None, rerandomize_each_iteration=None):
        self._draws = _Seeded(seed, bool(rerandomize_each_iteration))
        super().__init__(TensorSpec([], _INT64), INFINITE)

    def _eager_iter(self):
        rng = self._draws.generator()
        self._draws.next_epoch()
        while True:
            for v in rng.integers(0, 2 ** 32, size=64, dtype=np.int64):
                yield structure.to_tensor(v, _INT64)


# ---- list_files ----

def _strings(value, who):
    """A list of Python strings from a string, a list of them or a string tensor."""
    if isinstance(value, (str, bytes)):
        value = [value]
    if isinstance(value, (_kiln.Tensor, _kiln.Variable)):
        t = structure.to_tensor(value)
        if t.dtype != _STRING:
            raise TypeError(f"{who}: expected string patterns, got {t.dtype.name}")
        if t.is_symbolic:
            raise NotImplementedError(f"{who} with patterns computed inside a traced function "
                                      "is not supported; call it outside the function")
        value = np.asarray(t.numpy()).reshape(-1).tolist()
    out = []
    for v in value:
        if isinstance(v, bytes):
            v = v.decode("utf-8")
        if not isinstance(v, str):
            raise TypeError(f"{who}: expected string patterns, got {v!r}")
        out.append(v)
    return out


def _matching_files(patterns):
    """Every pattern's matches, sorted together (a file matched by two
    patterns is listed twice), as TensorFlow's list_files gives them."""
    out = []
    for p in patterns:
        out += glob.glob(p, include_hidden=True)
    out.sort()
    if not out:
        raise errors.InvalidArgumentError(
            "Expected 'tf.Tensor(False, shape=(), dtype=bool)' to be true. Summarized data: "
            f"b'No files matched pattern: {', '.join(patterns)}'")
    return out


def list_files(file_pattern, shuffle=None, seed=None, name=None):
    """The files matching file_pattern (a glob pattern or a list of them),
    shuffled unless shuffle=False (seed: the shuffle's)."""
    files = _matching_files(_strings(file_pattern, "list_files"))
    ds = DatasetV2.from_tensor_slices(np.array([f.encode("utf-8") for f in files],
                                               dtype=object))
    if shuffle is None or shuffle:
        ds = ds.shuffle(len(files), seed=seed)
    return ds


# ---- TextLineDataset ----

def _filenames(filenames):
    """The files to read as a dataset of string scalars."""
    if isinstance(filenames, DatasetV2):
        spec = filenames.element_spec
        if nest.is_nested(spec) or spec.dtype != _STRING:
            raise TypeError("The `filenames` argument must contain `tf.string` elements. Got "
                            f"a dataset of `{spec!r}` elements.")
        return filenames
    t = structure.to_tensor(filenames) if not isinstance(filenames, (str, bytes)) else \
        structure.to_tensor(filenames, _STRING)
    if t.dtype != _STRING:
        raise TypeError("The `filenames` argument must contain `tf.string` elements. Got "
                        f"`{t.dtype!r}` elements.")
    return DatasetV2.from_tensor_slices(_raw.Reshape(t, structure.to_tensor(np.int32([-1]))))


def _compression(value):
    if value is None:
        return ""
    if isinstance(value, (_kiln.Tensor, _kiln.Variable)):
        value = structure.to_tensor(value).numpy()
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _open(path):
    try:
        return open(path, "rb")  # noqa: SIM115 -- closed by the reading generator
    except FileNotFoundError:
        raise errors.NotFoundError(f"{path}; No such file or directory") from None
    except IsADirectoryError:
        raise errors.FailedPreconditionError(f"{path}; Is a directory") from None
    except PermissionError:
        raise errors.FailedPreconditionError(f"{path}; Permission denied") from None


def _decompressor(compression):
    if compression == "":
        return None
    if compression == "GZIP":
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if compression == "ZLIB":
        return zlib.decompressobj()
    raise errors.InvalidArgumentError("Unsupported compression_type.")


def _inflate(decomp, chunk, compression):
    """The decompressed bytes of chunk (GZIP members may follow one another)."""
    try:
        out = decomp.decompress(chunk)
        while decomp.eof and decomp.unused_data:
            rest = decomp.unused_data
            decomp = _decompressor(compression)
            out += decomp.decompress(rest)
    except zlib.error as e:
        text = str(e)  # "Error -3 while decompressing data: incorrect header check"
        code, _, why = text.partition(" while decompressing data: ")
        raise errors.DataLossError(f"inflate() failed with error "
                                   f"{code.replace('Error ', '')}: {why or text}") from None
    return out, decomp


def _chunks(path, compression, buffer_size):
    """The file's (decompressed) bytes, a piece at a time."""
    decomp = _decompressor(compression)
    with _open(path) as f:
        while True:
            chunk = f.read(buffer_size)
            if not chunk:
                return
            if decomp is not None:
                chunk, decomp = _inflate(decomp, chunk, compression)
            yield chunk


def _lines(path, compression, buffer_size):
    """The file's lines as string tensors, without "\\n" (or "\\r\\n")."""
    pending = b""
    for chunk in _chunks(path, compression, buffer_size):
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            yield _line(line)
    if pending:
        yield _line(pending)


def _line(data):
    return _kiln.constant(data[:-1] if data.endswith(b"\r") else data, dtype=_STRING)


def _in_turns(iterables, cycle):
    """tf.data's interleave order (block_length 1) over lazily opened iterables."""
    inputs = iter(iterables)
    slots, index, opened, done = [None] * cycle, 0, 0, False
    while not done or opened:
        if slots[index] is None and not done:
            nxt = next(inputs, _END)
            if nxt is _END:
                done = True
            else:
                slots[index], opened = iter(nxt), opened + 1
            continue
        if slots[index] is not None:
            value = next(slots[index], _END)
            if value is not _END:
                yield value
            else:  # the slot refills when the cycle comes back to it
                slots[index], opened = None, opened - 1
        index = (index + 1) % cycle


class FileDataset(DatasetV2):
    """Items read from one or more files (lines, records), one file after another
    or several in turns. Subclasses name themselves and read one file (_read)."""

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        self._files = _filenames(filenames)
        self._compression = _compression(compression_type)
        self._buffer = _BUFFER if buffer_size is None else \
            count_arg(buffer_size, "buffer_size", self._name)
        if self._buffer <= 0:
            self._buffer = _BUFFER
        reads = None if num_parallel_reads is None else \
            count_arg(num_parallel_reads, "num_parallel_reads", self._name)
        self._reads = cpu_count() if reads == AUTOTUNE else reads
        super().__init__(TensorSpec([], _STRING), UNKNOWN, self._files._symbolic)

    def _read(self, path):
        raise NotImplementedError

    def _inputs(self):
        return [self._files]

    def _eager_iter(self):
        names = (f.numpy().decode("utf-8") for f in self._files._eager_iter())
        readers = (self._read(n) for n in names)
        if self._reads is None or self._reads <= 1:
            return itertools.chain.from_iterable(readers)
        return _in_turns(readers, self._reads)


class TextLineDataset(FileDataset):
    """The lines of one or more text files (tf.data.TextLineDataset).

    Args: filenames (a path, a list of them, a string tensor or a dataset of
    paths), compression_type (None / "", "GZIP" or "ZLIB"), buffer_size (bytes
    read at a time), num_parallel_reads (files read in turns; None: one after
    another)."""

    _name = "TextLineDataset"

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None, name=None):
        super().__init__(filenames, compression_type, buffer_size, num_parallel_reads)

    def _read(self, path):
        return _lines(path, self._compression, self._buffer)


class _Methods:
    @staticmethod
    def counter(start=0, step=1, dtype=_INT64, name=None):
        """start, start + step, ... forever (int64 unless dtype says otherwise)."""
        return CounterDataset(start, step, dtype)

    @staticmethod
    def random(seed=None, rerandomize_each_iteration=None, name=None):
        """Random int64 values in [0, 2**32), forever."""
        return RandomDataset(seed, rerandomize_each_iteration)

    list_files = staticmethod(list_files)


install_methods(DatasetV2, _Methods)
