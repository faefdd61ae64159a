"""kiln.data: input pipelines (a subset of tf.data).

``for x in dataset`` inside a kiln.function becomes one graph loop whose size
does not grow with the data.
"""
from kiln.data.dataset import Dataset, DatasetV2, INFINITE, UNKNOWN
from kiln.data import transforms  # noqa: F401  (installs map, batch, ... on DatasetV2)
from kiln.data import interleave, padding, windowing, scan, sampling  # noqa: F401  (more methods)
from kiln.data import saving  # noqa: F401  (save, load, snapshot)
from kiln.data import selection  # noqa: F401  (shard, take_while, unique, rebatch, ...)
from kiln.data import composite_batching  # noqa: F401  (ragged_batch, sparse_batch)
from kiln.data.sources import TextLineDataset  # (and counter, random, list_files)
from kiln.data.records import TFRecordDataset
from kiln.data.options import Options, ThreadingOptions
from kiln.data.nested import DatasetSpec
from kiln.data.iterator import DatasetIterator, Iterator
from kiln.data.py_func import py_function, numpy_function
from kiln.data import experimental

INFINITE_CARDINALITY = INFINITE
UNKNOWN_CARDINALITY = UNKNOWN
AUTOTUNE = -1

__all__ = ["Dataset", "DatasetV2", "DatasetSpec", "Iterator", "DatasetIterator", "Options",
           "ThreadingOptions", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "AUTOTUNE",
           "TextLineDataset", "TFRecordDataset", "experimental"]
