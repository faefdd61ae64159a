"""tf.io: reading and writing files and the image codecs (PNG on libpng, JPEG on
libjpeg-turbo). Paths are local file names; TensorFlow's other filesystems (gs://,
hdfs://) are not supported."""
from kiln import _kiln, errors
from kiln import _gfile as gfile  # noqa: F401
from kiln.ops import _helpers as h
from kiln._parse_example import (FixedLenFeature, FixedLenSequenceFeature,  # noqa: F401
                                 RaggedFeature, SparseFeature, VarLenFeature, parse_example,
                                 parse_single_example)
from kiln._parse_sequence import (parse_sequence_example,  # noqa: F401
                                  parse_single_sequence_example)
from kiln._tfrecord import (TFRecordCompressionType, TFRecordOptions,  # noqa: F401
                            TFRecordWriter, tf_record_iterator)

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


_UINT8 = _kiln.as_dtype("uint8")


def _dtype_name(dtype):
    return _kiln.as_dtype(dtype).name


def decode_png(contents, channels=0, dtype=_UINT8, name=None):
    """A PNG's pixels as uint8 [height, width, channels] (tf.io.decode_png): channels 0
    keeps the file's (gray 1, gray+alpha 2, RGB 3, RGBA 4); 1, 3 and 4 convert (alpha
    dropped or added opaque). 16-bit files are scaled to 8 bits; dtype=uint16 is not
    supported (kiln has no uint16). InvalidArgumentError names what is wrong with bad bytes."""
    if getattr(dtype, "name", dtype) == "uint16":
        raise errors.UnimplementedError(
            "decode_png: dtype uint16 is not supported (kiln has no uint16; decode to uint8)")
    return raw.DecodePng(_scalar_string(contents), channels=int(channels),
                         dtype=_kiln.as_dtype(dtype))


def encode_png(image, compression=-1, name=None):
    """The PNG encoding of a uint8 [height, width, channels] image (1 to 4 channels;
    compression -1 is zlib's default, 0-9 its levels) (tf.io.encode_png)."""
    return raw.EncodePng(h.tensor(image), compression=int(compression))


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True,
                try_recover_truncated=False, acceptable_fraction=1, dct_method="", name=None):
    """A JPEG's pixels as uint8 [height / ratio, width / ratio, channels] (rounded up)
    (tf.io.decode_jpeg): channels 0 keeps the file's (1 or 3), 1 and 3 convert. A
    truncated file is an error unless try_recover_truncated (the decodable part is kept;
    acceptable_fraction is accepted and not checked). dct_method "" is TensorFlow's
    default, the fast integer DCT ("INTEGER_FAST"); "INTEGER_ACCURATE" is the slow one."""
    return raw.DecodeJpeg(_scalar_string(contents), channels=int(channels), ratio=int(ratio),
                          fancy_upscaling=bool(fancy_upscaling),
                          try_recover_truncated=bool(try_recover_truncated),
                          acceptable_fraction=float(acceptable_fraction),
                          dct_method=str(dct_method))


def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False,  # noqa: A002
                chroma_downsampling=True, density_unit="in", x_density=300, y_density=300,
                xmp_metadata=None, name=None):
    """The JPEG encoding of a uint8 [height, width, 1 or 3] image (tf.io.encode_jpeg).
    optimize_size, the density fields and xmp_metadata are accepted and not written
    (TurboJPEG's API has no switch for them)."""
    return raw.EncodeJpeg(h.tensor(image), format=str(format), quality=int(quality),
                          progressive=bool(progressive), optimize_size=bool(optimize_size),
                          chroma_downsampling=bool(chroma_downsampling),
                          density_unit=str(density_unit), x_density=int(x_density),
                          y_density=int(y_density), xmp_metadata=str(xmp_metadata or ""))


def decode_image(contents, channels=None, dtype=_UINT8, name=None, expand_animations=True):
    """PNG or JPEG bytes decoded by their signature (tf.io.decode_image); GIF and BMP are
    an InvalidArgumentError naming the format. dtype float32/float64 scales to [0, 1) as
    TensorFlow's convert_image_dtype does."""
    want = _kiln.as_dtype(dtype)
    image = raw.DecodeImage(_scalar_string(contents), channels=int(channels or 0),
                            dtype=_UINT8, expand_animations=bool(expand_animations))
    if want == _UINT8:
        return image
    if not want.is_floating:
        raise ValueError(f"decode_image: dtype must be uint8 or a float dtype, got {want.name}")
    return raw.Cast(image, DstT=want) / 255.0


def is_jpeg(contents, name=None):
    """Whether the bytes start with JPEG's signature (tf.io.is_jpeg)."""
    three = [_kiln.convert_to_tensor(v, dtype=_kiln.as_dtype("int32")) for v in (0, 3)]
    return raw.Equal(raw.Substr(_scalar_string(contents), *three),
                     _kiln.convert_to_tensor(b"\xff\xd8\xff", dtype=_STRING))


def serialize_tensor(tensor, name=None):
    """The bytes of TensorFlow's TensorProto holding `tensor` (tf.io.serialize_tensor):
    numbers as raw bytes, strings one by one; parse_tensor (or TensorFlow's) reads them."""
    return raw.SerializeTensor(h.tensor(tensor) if h.is_tensor(tensor)
                               else _kiln.convert_to_tensor(tensor))


def parse_tensor(serialized, out_type, name=None):
    """The tensor a serialized TensorProto holds (tf.io.parse_tensor); out_type must be
    its dtype (InvalidArgumentError "Type mismatch ..." otherwise, as TensorFlow)."""
    return raw.ParseTensor(_scalar_string(serialized), out_type=_kiln.as_dtype(out_type))


def decode_raw(input_bytes, out_type, little_endian=True, fixed_length=None, name=None):
    """Each string's bytes as a vector of out_type values (tf.io.decode_raw): the result
    has the input's shape plus one dimension. Without fixed_length every string must have
    the same length, a multiple of out_type's size; with it, each is cut or zero-padded
    to fixed_length bytes."""
    data = h.tensor(input_bytes) if h.is_tensor(input_bytes) else \
        _kiln.convert_to_tensor(input_bytes, dtype=_STRING)
    out_type = _kiln.as_dtype(out_type)
    if fixed_length is None:
        return raw.DecodeRaw(data, out_type=out_type, little_endian=bool(little_endian))
    length = h.tensor(fixed_length) if h.is_tensor(fixed_length) else \
        _kiln.convert_to_tensor(fixed_length, dtype=_kiln.as_dtype("int32"))
    return raw.DecodePaddedRaw(data, length, out_type=out_type, little_endian=bool(little_endian))
