"""tf.io: reading and writing files (more of tf.io is issue 44's work: TFRecords,
serialize_tensor, image codecs). Paths are local file names; TensorFlow's other
filesystems (gs://, hdfs://) are not supported."""
from kiln import _kiln
from kiln.ops import _helpers as h

raw = _kiln.raw
_STRING = _kiln.as_dtype("string")


def _scalar_string(x):
    return h.tensor(x) if h.is_tensor(x) else _kiln.convert_to_tensor(x, dtype=_STRING)


def read_file(filename, name=None):
    """The bytes of the file `filename` (a scalar string tensor), read when the op
    runs (inside a function: at each call). NotFoundError when it cannot be read."""
    return raw.ReadFile(_scalar_string(filename))


def write_file(filename, contents, name=None):
    """Writes the scalar string `contents` to `filename`, replacing the file."""
    return raw.WriteFile(_scalar_string(filename), _scalar_string(contents))
