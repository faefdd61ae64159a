"""kiln's first checkpoint format (before TensorFlow's bundle): a JSON index
and a raw data blob. Still read, so checkpoints written by earlier kilns load;
kiln.train.bundle writes TensorFlow's format now.

A checkpoint at prefix P is two files:

  P.index                  JSON: {"format": "kiln.checkpoint", "version": 1,
                           "data_nbytes", "tensors": {key: {"dtype", "shape",
                           "offset", "nbytes", "crc32"}}, "object_graph":
                           {"nodes": [...]}}
  P.data-00000-of-00001    the tensors' bytes (little-endian, C order), back to back

Keras files (.keras, .weights.h5) hold the same two parts as zip members.
Every field is checked before use: a damaged file is a kiln.errors error
(DataLossError, NotFoundError, UnimplementedError), never a crash or an
allocation larger than the file.
"""
import json
import os
import tempfile
import zlib

import numpy as np

from kiln import errors

FORMAT = "kiln.checkpoint"
VERSION = 1
DATA_SUFFIX = ".data-00000-of-00001"
INDEX_SUFFIX = ".index"
MAX_INDEX_BYTES = 1 << 26   # a larger index is refused before it is read
_MAX_RANK = 64
_MAX_DIM = 1 << 62
# kiln dtype name -> NumPy dtype as stored (little-endian)
DTYPES = {"bool": "|b1", "int8": "|i1", "uint8": "|u1", "int16": "<i2", "uint16": "<u2",
          "int32": "<i4", "uint32": "<u4", "int64": "<i8", "uint64": "<u8", "float16": "<f2",
          "float32": "<f4", "float64": "<f8", "complex64": "<c8", "complex128": "<c16",
          "bfloat16": "<u2"}  # bfloat16: its 16 bits, stored as uint16


class TensorEntry:
    """Where one tensor lies in the data blob."""
    __slots__ = ("dtype", "shape", "offset", "nbytes", "crc32")

    def __init__(self, dtype, shape, offset, nbytes, crc32):
        self.dtype, self.shape, self.offset = dtype, shape, offset
        self.nbytes, self.crc32 = nbytes, crc32


class Node:
    """One object of the saved object graph."""
    __slots__ = ("children", "variable", "slots")

    def __init__(self, children, variable, slots):
        self.children = children    # [(edge name, node id)]
        self.variable = variable    # the tensor key of a variable node, else None
        self.slots = slots          # [(optimizer node id, slot name, slot node id)]


class Index:
    """A validated index: ``tensors`` {key: TensorEntry}, ``nodes`` [Node]."""

    def __init__(self, tensors, nodes, graph_json):
        self.tensors, self.nodes, self.graph_json = tensors, nodes, graph_json


# ---- writing ----

def _as_array(value):
    arr = np.asarray(value, order="C")  # (ascontiguousarray would make scalars 1-D)
    name = arr.dtype.name
    if name not in DTYPES:
        raise errors.UnimplementedError(
            f"kiln checkpoints hold {sorted(DTYPES)} tensors; got a {name} value")
    if name == "bfloat16":
        arr = arr.view(np.uint16)
    return arr.astype(np.dtype(DTYPES[name]), copy=False), name


def encode(values, graph, out):
    """Writes the tensors ``values`` ({key: array}) to the binary file ``out``;
    returns the index as bytes (``graph``: the JSON object graph)."""
    tensors, offset = {}, 0
    for key, value in values.items():
        arr, name = _as_array(value)
        data = arr.tobytes()
        out.write(data)
        tensors[key] = {"dtype": name, "shape": list(arr.shape), "offset": offset,
                        "nbytes": len(data), "crc32": zlib.crc32(data)}
        offset += len(data)
    index = {"format": FORMAT, "version": VERSION, "data_nbytes": offset,
             "tensors": tensors, "object_graph": graph}
    return json.dumps(index, separators=(",", ":")).encode("utf-8")


def _temp_beside(path):
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp", dir=os.path.dirname(path)
                               or ".")
    return os.fdopen(fd, "wb"), tmp


def _sync_dir(directory):
    try:
        fd = os.open(directory or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path, write_fn):
    """Writes ``path`` through a temporary file renamed over it at the end, so
    a crash leaves the old file or the new one, never a part."""
    f, tmp = _temp_beside(path)
    try:
        with f:
            write_fn(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _sync_dir(os.path.dirname(path))


def write(prefix, values, graph):
    """Writes the checkpoint files of ``prefix`` (data first, the index last)."""
    prefix = os.fspath(prefix)
    directory = os.path.dirname(prefix)
    if directory:
        os.makedirs(directory, exist_ok=True)
    index = []
    atomic_write(prefix + DATA_SUFFIX, lambda f: index.append(encode(values, graph, f)))
    atomic_write(prefix + INDEX_SUFFIX, lambda f: f.write(index[0]))
    return prefix


# ---- reading ----

def _lose(where, what):
    return errors.DataLossError(f"{where}: {what} (the checkpoint is truncated or damaged)")


def _int(v, where, what, lo=0, hi=None):
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
        raise _lose(where, f"bad {what} {v!r}")
    return v


def _check_header(doc, where):
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise _lose(where, f"not a kiln checkpoint index (no \"format\": \"{FORMAT}\")")
    version = doc.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise _lose(where, f"bad format version {version!r}")
    if version > VERSION:
        raise errors.UnimplementedError(
            f"{where}: checkpoint format version {version} is newer than this kiln reads "
            f"(up to {VERSION}); upgrade kiln to read it")


def _check_entry(key, e, where, data_nbytes):
    what = f"tensor {key!r}"
    if not isinstance(e, dict) or e.get("dtype") not in DTYPES:
        raise _lose(where, f"{what} has a bad entry or dtype")
    shape = e.get("shape")
    if not isinstance(shape, list) or len(shape) > _MAX_RANK:
        raise _lose(where, f"{what} has a bad shape {shape!r}")
    count = 1
    for d in shape:
        count *= _int(d, where, f"dimension of {what}", hi=_MAX_DIM)
    offset = _int(e.get("offset"), where, f"offset of {what}")
    nbytes = _int(e.get("nbytes"), where, f"size of {what}")
    if nbytes != count * np.dtype(DTYPES[e["dtype"]]).itemsize:
        raise _lose(where, f"{what}: {nbytes} bytes do not hold a {e['dtype']} tensor of "
                           f"shape {shape}")
    if offset + nbytes > data_nbytes:
        raise _lose(where, f"{what} lies past the end of the data ({offset} + {nbytes} > "
                           f"{data_nbytes} bytes)")
    crc = _int(e.get("crc32"), where, f"checksum of {what}", hi=0xFFFFFFFF)
    return TensorEntry(e["dtype"], tuple(shape), offset, nbytes, crc)


def _list(n, field, i, where):
    items = n.get(field, [])
    if not isinstance(items, list):
        raise _lose(where, f"object graph node {i} has a bad {field} list {items!r}")
    return items


def _check_node(i, n, where, count, tensors):
    if not isinstance(n, dict):
        raise _lose(where, f"object graph node {i} is not an object")
    children = []
    for c in _list(n, "children", i, where):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise _lose(where, f"object graph node {i} has a bad child {c!r}")
        children.append((c["name"], _int(c.get("node"), where, "node id", hi=count - 1)))
    variable = n.get("variable")
    if variable is not None and variable not in tensors:
        raise _lose(where, f"object graph node {i} names a missing tensor {variable!r}")
    slots = []
    for s in _list(n, "slots", i, where):
        if not isinstance(s, dict) or not isinstance(s.get("slot_name"), str):
            raise _lose(where, f"object graph node {i} has a bad slot {s!r}")
        slots.append((_int(s.get("optimizer"), where, "node id", hi=count - 1), s["slot_name"],
                      _int(s.get("node"), where, "node id", hi=count - 1)))
    return Node(children, variable, slots)


def parse_index(raw, where, data_nbytes):
    """The validated Index of the index bytes ``raw``, whose data blob holds
    ``data_nbytes`` bytes."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _lose(where, "the index is not valid JSON") from None
    _check_header(doc, where)
    want = _int(doc.get("data_nbytes"), where, "data size")
    if want != data_nbytes:
        raise _lose(where, f"the data holds {data_nbytes} bytes, the index expects {want}")
    table = doc.get("tensors")
    if not isinstance(table, dict):
        raise _lose(where, "the index has no tensor table")
    tensors = {k: _check_entry(k, e, where, data_nbytes) for k, e in table.items()}
    graph = doc.get("object_graph")
    nodes = graph.get("nodes") if isinstance(graph, dict) else None
    if not isinstance(nodes, list) or not nodes:
        raise _lose(where, "the index has no object graph")
    nodes = [_check_node(i, n, where, len(nodes), tensors) for i, n in enumerate(nodes)]
    return Index(tensors, nodes, graph)


def decode(entry, buf, where, key):
    """The NumPy array of ``entry`` from its bytes ``buf`` (checked)."""
    if len(buf) != entry.nbytes:
        raise _lose(where, f"tensor {key!r}: read {len(buf)} of {entry.nbytes} bytes")
    if zlib.crc32(buf) != entry.crc32:
        raise _lose(where, f"tensor {key!r}: checksum mismatch")
    arr = np.frombuffer(buf, dtype=np.dtype(DTYPES[entry.dtype]))
    if entry.dtype == "bool" and arr.view(np.uint8).max(initial=0) > 1:
        raise _lose(where, f"tensor {key!r}: bool bytes other than 0 and 1")
    arr = arr.astype(arr.dtype.newbyteorder("="), copy=False).reshape(entry.shape)
    return arr.view(_bfloat16()) if entry.dtype == "bfloat16" else arr


def _bfloat16():
    try:
        return np.dtype("bfloat16")  # registered by ml_dtypes, which kiln's bfloat16 uses
    except TypeError:
        raise errors.UnimplementedError("reading bfloat16 values needs the ml_dtypes "
                                        "package") from None


class FileSource:
    """The two files of a checkpoint prefix."""

    def __init__(self, prefix):
        self.prefix = os.fspath(prefix)
        self.where = self.prefix
        self.data_path = self.prefix + DATA_SUFFIX

    def index(self):
        path = self.prefix + INDEX_SUFFIX
        try:
            size = os.path.getsize(path)
            data_nbytes = os.path.getsize(self.data_path)
        except OSError as e:
            raise errors.NotFoundError(
                f"Unsuccessful reading of checkpoint {self.prefix!r}: {e.strerror}: "
                f"{e.filename}") from None
        if size > MAX_INDEX_BYTES:
            raise _lose(path, f"the index is {size} bytes, more than any kiln index")
        with open(path, "rb") as f:
            raw = f.read(MAX_INDEX_BYTES + 1)
        return parse_index(raw, self.where, data_nbytes)

    def read(self, entry, key):
        buf = bytearray(entry.nbytes)
        try:
            with open(self.data_path, "rb") as f:
                f.seek(entry.offset)
                n = f.readinto(buf)
        except OSError as e:
            raise errors.NotFoundError(f"{self.data_path}: {e.strerror}") from None
        return decode(entry, buf[:n] if n != len(buf) else buf, self.where, key)


class BytesSource:
    """A checkpoint held in memory (the members of a Keras zip file)."""

    def __init__(self, index_bytes, data, where):
        self.raw, self.data, self.where = index_bytes, data, where

    def index(self):
        return parse_index(self.raw, self.where, len(self.data))

    def read(self, entry, key):
        buf = bytearray(self.data[entry.offset:entry.offset + entry.nbytes])
        return decode(entry, buf, self.where, key)


class Reader:
    """A validated checkpoint: its index, and tensors read on demand."""

    def __init__(self, source):
        self.source = source
        self.index = source.index()
        self.where = source.where

    @property
    def nodes(self):
        return self.index.nodes

    def tensor(self, key):
        entry = self.index.tensors.get(key)
        if entry is None:
            raise errors.NotFoundError(f"Key {key} not found in checkpoint")
        return self.source.read(entry, key)
