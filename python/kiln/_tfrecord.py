"""TFRecord files (tf.io.TFRecordWriter, TFRecordOptions, tf_record_iterator) on
kiln's C++ record reader and writer (include/kiln/record_io.h): TensorFlow's byte
format (length, masked CRC-32C, bytes, masked CRC-32C), uncompressed, ZLIB or GZIP.

zlib's tuning options (window_bits, mem_level, strategy, buffer sizes, flush_mode)
are accepted and kept on the options object; the writer uses zlib's defaults for
them (the files read the same either way)."""
import enum
import os

from kiln import _kiln

_STRING = _kiln.as_dtype("string")


class TFRecordCompressionType(enum.IntEnum):
    """The compression of a TFRecord file."""
    NONE = 0
    ZLIB = 1
    GZIP = 2


class TFRecordOptions:
    """How a TFRecord file is compressed (tf.io.TFRecordOptions)."""

    compression_type_map = {TFRecordCompressionType.ZLIB: "ZLIB",
                            TFRecordCompressionType.GZIP: "GZIP",
                            TFRecordCompressionType.NONE: ""}

    def __init__(self, compression_type=None, flush_mode=None, input_buffer_size=None,
                 output_buffer_size=None, window_bits=None, compression_level=None,
                 compression_method=None, mem_level=None, compression_strategy=None):
        self.get_compression_type_string(compression_type)  # validates
        self.compression_type = compression_type
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_level = compression_level
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy

    @classmethod
    def get_compression_type_string(cls, options):
        """"", "ZLIB" or "GZIP" for options, a TFRecordCompressionType or a string;
        ValueError for anything else."""
        if not options:
            return ""
        if isinstance(options, TFRecordOptions):
            return cls.get_compression_type_string(options.compression_type)
        if isinstance(options, TFRecordCompressionType):
            return cls.compression_type_map[options]
        if options in cls.compression_type_map.values():
            return options
        raise ValueError(f'Not a valid compression_type: "{options}"')


def _path(path):
    if isinstance(path, _kiln.Tensor):
        path = path.numpy()
    path = os.fspath(path)
    return path.decode("utf-8") if isinstance(path, bytes) else path


def _record_bytes(record):
    if isinstance(record, _kiln.Tensor):
        if record.dtype != _STRING or record.shape.rank != 0:
            raise TypeError(f"TFRecordWriter.write: a record is a scalar string, got "
                            f"{record.dtype.name} of shape {record.shape}")
        record = record.numpy()
    if isinstance(record, str):
        return record.encode("utf-8")
    if isinstance(record, (bytes, bytearray, memoryview)):
        return bytes(record)
    raise TypeError(f"TFRecordWriter.write: a record is bytes or str, got "
                    f"{type(record).__name__}")


class TFRecordWriter:
    """Writes records to a TFRecord file (tf.io.TFRecordWriter); a context manager
    that closes the file. Writing after close is FailedPreconditionError."""

    def __init__(self, path, options=None):
        if not isinstance(options, TFRecordOptions):
            options = TFRecordOptions(compression_type=options)
        level = -1 if options.compression_level is None else int(options.compression_level)
        self._writer = _kiln.RecordWriter(
            _path(path), TFRecordOptions.get_compression_type_string(options), level)

    def write(self, record):
        """Appends one record (bytes, str as UTF-8, or a scalar string tensor)."""
        self._writer.write(_record_bytes(record))

    def flush(self):
        """Hands the buffered records to the operating system."""
        self._writer.flush()

    def close(self):
        """Finishes the file (a compressed stream's end too)."""
        self._writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def read_records(path, compression="", buffer_size=256 * 1024):
    """The records of one file as bytes, lazily (DataLossError for a cut or
    corrupted record, NotFoundError for a missing file)."""
    reader = _kiln.RecordReader(_path(path), compression, buffer_size)
    while (record := reader.read()) is not None:
        yield record


def tf_record_iterator(path, options=None):
    """The records of a TFRecord file as bytes (tf.compat.v1.io.tf_record_iterator)."""
    return read_records(path, TFRecordOptions.get_compression_type_string(options))


__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "tf_record_iterator"]
