"""tf.data.TFRecordDataset and tf.data.experimental.TFRecordWriter: the records
of TFRecord files (kiln's C++ reader: masked CRC-32C checked on every record,
ZLIB/GZIP streams), one file after another or several in turns
(num_parallel_reads, tf.data's deterministic interleave order)."""
from kiln import _kiln, _tfrecord, nest
from kiln.data.sources import FileDataset

_STRING = _kiln.as_dtype("string")


class TFRecordDataset(FileDataset):
    """The records of one or more TFRecord files as scalar strings.

    Args: filenames (a path, a list of them, a string tensor or a dataset of
    paths), compression_type (None / "", "ZLIB" or "GZIP"), buffer_size (bytes
    read at a time), num_parallel_reads (files read in turns; None: one after
    another)."""

    _name = "TFRecordDataset"

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None, name=None):
        super().__init__(filenames, compression_type, buffer_size, num_parallel_reads)
        self._compression = _tfrecord.TFRecordOptions.get_compression_type_string(
            self._compression)

    def _read(self, path):
        for record in _tfrecord.read_records(path, self._compression, self._buffer):
            yield _kiln.constant(record, dtype=_STRING)


class TFRecordWriter:
    """Writes a dataset of scalar strings to one TFRecord file
    (tf.data.experimental.TFRecordWriter)."""

    def __init__(self, filename, compression_type=None):
        self._filename = filename
        self._options = _tfrecord.TFRecordOptions(compression_type)

    def write(self, dataset):
        """Writes every element of `dataset`, in order."""
        spec = dataset.element_spec
        if nest.is_nested(spec) or spec.dtype != _STRING or spec.shape.rank != 0:
            shapes = nest.map_structure(lambda s: s.shape, spec)
            types = nest.map_structure(lambda s: repr(s.dtype), spec)
            raise TypeError("Invalid `dataset`. Expected a`dataset` that produces scalar "
                            "`tf.string` elements, but got a dataset which produces elements "
                            f"with shapes {shapes} and types {types}.")
        with _tfrecord.TFRecordWriter(self._filename, self._options) as w:
            for record in dataset:
                w.write(record)
