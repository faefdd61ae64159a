"""kiln's checkpoints: TensorFlow's tensor-bundle format.

A checkpoint at prefix P is ``P.index`` (a sorted table of entries) and
``P.data-00000-of-00001`` (the values), read and written by kiln's C++ side
(include/kiln/checkpoint.h), so TensorFlow's ``tf.train.Checkpoint`` and
``tf.train.load_checkpoint`` read kiln's checkpoints and kiln reads theirs.
The object graph is TF 2's ``TrackableObjectGraph`` under the key
``_CHECKPOINTABLE_OBJECT_GRAPH``. Checkpoints in kiln's earlier JSON format
(kiln.train.kiln_json) are still read.

Every file is validated before use (docs/CHECKPOINTS.md): a damaged one is a
kiln.errors error, never a crash.
"""
import os

import numpy as np

from kiln import _kiln, errors
from kiln.train import kiln_json
from kiln.train.kiln_json import Index, Node, Reader, TensorEntry, atomic_write  # noqa: F401

INDEX_SUFFIX = ".index"
DATA_SUFFIX = ".data-00000-of-00001"
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
VALUE = "VARIABLE_VALUE"
# NumPy dtypes a checkpoint holds (TensorFlow's names), strings as bytes objects
DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "bfloat16", "float32", "float64", "complex64", "complex128", "string")


# ---- writing ----

def _proto_nodes(graph):
    """TrackableObjectGraph nodes (children, attributes, slots) of kiln's
    JSON object graph (slots move from each variable to its optimizer)."""
    nodes = graph["nodes"]
    out = [([(c["name"], c["node"]) for c in n.get("children", [])],
            [(VALUE, n.get("full_name", ""), n["variable"])] if "variable" in n else [], [])
           for n in nodes]
    for vi, n in enumerate(nodes):
        for s in n.get("slots", []):
            out[s["optimizer"]][2].append((vi, s["slot_name"], s["node"]))
    return out


def _add(writer, key, value):
    if isinstance(value, (str, bytes)) or (isinstance(value, np.ndarray) and
                                           value.dtype == object):
        arr = np.asarray(value, dtype=object)
        items = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in arr.ravel()]
        writer.add_strings(key, list(arr.shape), items)
        return
    arr = np.ascontiguousarray(value) if np.ndim(value) else np.asarray(value)
    name = arr.dtype.name
    if name not in DTYPES:
        raise errors.UnimplementedError(f"Cannot save {key}: checkpoints hold {list(DTYPES)} "
                                        f"values, not {name}")
    writer.add_bytes(key, name, list(arr.shape), arr.astype(arr.dtype.newbyteorder("<"),
                                                            copy=False).tobytes())


def write(prefix, values, graph):
    """Writes the checkpoint ``prefix`` (``values``: {key: NumPy value or
    strings}; ``graph``: kiln's JSON object graph); returns ``prefix``."""
    prefix = os.fspath(prefix)
    directory = os.path.dirname(prefix)
    if directory:
        os.makedirs(directory, exist_ok=True)
    writer = _kiln._BundleWriter(prefix)
    try:
        for key, value in values.items():
            _add(writer, key, value)
        graph_bytes = _kiln._encode_object_graph(_proto_nodes(graph))
        writer.add_strings(OBJECT_GRAPH_KEY, [], [graph_bytes])
        writer.finish()
    except BaseException:
        writer.abandon()
        raise
    return prefix


# ---- reading ----

def _numpy_dtype(name):
    if name == "bfloat16":
        return kiln_json._bfloat16()
    return np.dtype(name).newbyteorder("<")


def _nodes(proto_nodes, tensors, where):
    """kiln's Nodes of TrackableObjectGraph nodes (slots back on their variables)."""
    nodes = []
    for children, attributes, _ in proto_nodes:
        key = next((k for name, _, k in attributes if name == VALUE), None)
        if key is not None and key not in tensors:
            raise errors.DataLossError(f"{where}: the object graph names a missing value {key!r}")
        nodes.append(Node(list(children), key, []))
    for oi, (_, _, slots) in enumerate(proto_nodes):
        for vi, slot_name, si in slots:
            nodes[vi].slots.append((oi, slot_name, si))
    return nodes


class BundleSource:
    """A checkpoint in TensorFlow's format (the C++ reader validates it)."""

    def __init__(self, prefix):
        self.prefix = os.fspath(prefix)
        self.where = self.prefix
        self.reader = _kiln._BundleReader(self.prefix)

    def index(self):
        tensors = {}
        for key in self.reader.keys():
            if key != OBJECT_GRAPH_KEY:
                dtype, shape = self.reader.entry(key)
                tensors[key] = TensorEntry(dtype, tuple(shape), 0, 0, 0)
        self.graph_bytes = None
        if OBJECT_GRAPH_KEY in self.reader.keys():
            self.graph_bytes = self.reader.read_strings(OBJECT_GRAPH_KEY)[0]
            nodes = _nodes(_kiln._decode_object_graph(self.graph_bytes, self.where), tensors,
                           self.where)
        else:  # a name-based (TF 1 Saver) checkpoint: no objects to match
            nodes = [Node([], None, [])]
        return Index(tensors, nodes, None)

    def read(self, entry, key):
        if entry.dtype == "string":
            flat = self.reader.read_strings(key)
            out = np.empty(len(flat), dtype=object)
            out[:] = flat
            return out.reshape(entry.shape)
        out = np.empty(entry.shape, dtype=_numpy_dtype(entry.dtype))
        if out.size:
            self.reader.read_into(key, out.reshape(-1).view(np.uint8))
        return out.astype(out.dtype.newbyteorder("="), copy=False)


def is_bundle(prefix):
    """True when ``prefix.index`` is in TensorFlow's table format."""
    return _kiln._is_bundle(os.fspath(prefix))


def _looks_like_json(prefix):
    try:
        with open(prefix + INDEX_SUFFIX, "rb") as f:
            head = f.read(64).lstrip()
    except OSError:
        return True  # kiln_json's reader says what is missing
    return head.startswith(b"{")


def FileSource(prefix):  # noqa: N802 (the name callers of the JSON format used)
    """The source of the checkpoint files at ``prefix``, in either format."""
    prefix = os.fspath(prefix)
    if is_bundle(prefix):
        return BundleSource(prefix)
    if _looks_like_json(prefix):
        return kiln_json.FileSource(prefix)
    raise errors.DataLossError(
        f"{prefix}{INDEX_SUFFIX}: not a checkpoint index: neither TensorFlow's table format "
        "(its footer is missing) nor kiln's earlier JSON (the file is truncated or damaged)")


def open_reader(prefix):
    """A Reader of the checkpoint ``prefix``, in either format."""
    return Reader(FileSource(prefix))
