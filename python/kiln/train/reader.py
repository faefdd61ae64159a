"""Inspecting checkpoints: list_variables, load_checkpoint, load_variable."""
import json
import os

import numpy as np

from kiln import _kiln
from kiln.train import bundle
from kiln.train.management import latest_checkpoint

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


def _checkpoint_prefix(ckpt_dir_or_file):
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        found = latest_checkpoint(path)
        if found is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given "
                             f"directory {path}")
        return found
    return path


def _dtype(name):
    try:
        return _kiln.as_dtype(name)
    except (TypeError, ValueError):
        return np.dtype(name)


class CheckpointReader:
    """Reads the keys, shapes, dtypes and values of one checkpoint (TensorFlow's
    CheckpointReader). The object graph is listed as ``_CHECKPOINTABLE_OBJECT_GRAPH``
    (its value: the serialized TrackableObjectGraph; the JSON text of the graph in a
    checkpoint of kiln's earlier format)."""

    def __init__(self, prefix):
        self._reader = bundle.open_reader(prefix)

    def get_variable_to_shape_map(self):
        out = {k: list(e.shape) for k, e in self._reader.index.tensors.items()}
        if self._has_graph():
            out[OBJECT_GRAPH_KEY] = []
        return out

    def get_variable_to_dtype_map(self):
        out = {k: _dtype(e.dtype) for k, e in self._reader.index.tensors.items()}
        if self._has_graph():
            out[OBJECT_GRAPH_KEY] = _kiln.as_dtype("string")
        return out

    def _has_graph(self):
        """False for a name-based (TF 1 Saver) checkpoint, which has no object graph."""
        return (getattr(self._reader.source, "graph_bytes", None) is not None
                or self._reader.index.graph_json is not None)

    def has_tensor(self, name):
        if name == OBJECT_GRAPH_KEY:
            return self._has_graph()
        return name in self._reader.index.tensors

    def get_tensor(self, name):
        """The saved value of key ``name`` as a NumPy array (NotFoundError if absent)."""
        if name == OBJECT_GRAPH_KEY:
            graph = getattr(self._reader.source, "graph_bytes", None)
            if graph is not None:  # the serialized TrackableObjectGraph, as TensorFlow gives it
                return graph
            return json.dumps(self._reader.index.graph_json).encode("utf-8")
        return self._reader.tensor(name)


def load_checkpoint(ckpt_dir_or_file):
    """A CheckpointReader for a checkpoint prefix, or a directory's latest checkpoint."""
    return CheckpointReader(_checkpoint_prefix(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file):
    """[(key, shape)] of every value in the checkpoint, sorted by key."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return [(k, shapes[k]) for k in sorted(shapes)]


def load_variable(ckpt_dir_or_file, name):
    """The saved value of key ``name`` (a trailing ':0' is ignored)."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)
