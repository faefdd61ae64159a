"""tf.strings' Unicode functions (re-exported by kiln.strings): decode, encode, transcode,
script and split, on TensorFlow's ops (UnicodeDecodeWithOffsets, UnicodeEncode,
UnicodeTranscode, UnicodeScript). Input encodings are any ICU reads, outputs UTF-8,
UTF-16-BE and UTF-32-BE; `errors` is "strict", "replace" or "ignore"; ill-formed input
becomes one replacement character per ill-formed sequence as ICU delimits it, as in
TensorFlow. Decoded results are RaggedTensors one rank above the input (a scalar input
gives a dense 1-D tensor).
"""
from kiln import _kiln
from kiln.ops import _helpers as h
from kiln.ops import array_ops, core, math_ops
from kiln.ragged import RaggedTensor

raw = _kiln.raw
_STRING = _kiln.as_dtype("string")
_INT32 = _kiln.as_dtype("int32")
_INT64 = _kiln.as_dtype("int64")


def _strings(x):
    return h.tensor(x) if h.is_tensor(x) else _kiln.convert_to_tensor(x, dtype=_STRING)


def _code_points(x):
    return h.tensor(x) if h.is_tensor(x) else _kiln.convert_to_tensor(x, dtype=_INT32)


def _per_string(input, fn):  # noqa: A002
    """fn (a 1-D string tensor -> (row_splits, *flat value tensors)) applied to every
    string of `input`: a tuple with one result per value tensor, one rank above the
    input (RaggedTensors; dense 1-D tensors for a scalar input)."""
    if isinstance(input, RaggedTensor):
        return tuple(input.with_flat_values(r) for r in _per_string(input.flat_values, fn))
    t = _strings(input)
    if t.ndim == 0:
        return tuple(fn(raw.Reshape(t, h.const_ints([1], "int32")))[1:])
    if t.ndim is None or t.ndim == 1:
        splits, *values = fn(t)
        return tuple(RaggedTensor.from_row_splits(v, splits, validate=False) for v in values)
    return _per_string(RaggedTensor.from_tensor(t), fn)


def _decoder(input_encoding, errors, replacement_char, replace_control_characters):
    def fn(t):
        return raw.UnicodeDecodeWithOffsets(
            t, input_encoding=input_encoding, errors=errors,
            replacement_char=int(replacement_char),
            replace_control_characters=bool(replace_control_characters))
    return fn


def unicode_decode(input, input_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                   replace_control_characters=False, name=None):
    """Each string's code points (int32), decoded from `input_encoding`."""
    return _per_string(input, _decoder(input_encoding, errors, replacement_char,
                                       replace_control_characters))[0]


def unicode_decode_with_offsets(input, input_encoding, errors="replace",  # noqa: A002
                                replacement_char=65533, replace_control_characters=False,
                                name=None):
    """(code points, byte offset where each character starts (int64))."""
    return _per_string(input, _decoder(input_encoding, errors, replacement_char,
                                       replace_control_characters))


def _encode_rows(values, splits, output_encoding, errors, replacement_char):
    return raw.UnicodeEncode(values, splits, output_encoding=output_encoding, errors=errors,
                             replacement_char=int(replacement_char))


def _encode_dense(t, *args):
    """A dense tensor of code points: one string per innermost row."""
    if t.ndim == 0:
        raise ValueError("input_tensor's rank must be at least 1.")
    shape = array_ops.shape(t, out_type="int64")
    outer = shape[:-1]
    width = shape[-1]
    rows = math_ops.reduce_prod(outer)
    splits = core.range(rows + 1, dtype=_INT64) * width
    out = _encode_rows(array_ops.reshape(t, [-1]), splits, *args)
    return array_ops.reshape(out, outer)


def unicode_encode(input, output_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                   name=None):
    """Each innermost row of code points (a dense tensor or RaggedTensor, int32) as a
    string in `output_encoding`: a result one rank below the input."""
    args = (output_encoding, errors, replacement_char)
    if not isinstance(input, RaggedTensor):
        return _encode_dense(_code_points(input), *args)
    if input.ragged_rank == 1 and input.values.ndim == 1:
        return _encode_rows(input.values, input.row_splits, *args)
    return input.with_values(unicode_encode(input.values, *args))


def unicode_transcode(input, input_encoding, output_encoding, errors="replace",  # noqa: A002
                      replacement_char=65533, replace_control_characters=False, name=None):
    """Each string decoded from `input_encoding` and written in `output_encoding`."""
    def fn(t):
        return raw.UnicodeTranscode(
            t, input_encoding=input_encoding, output_encoding=output_encoding, errors=errors,
            replacement_char=int(replacement_char),
            replace_control_characters=bool(replace_control_characters))
    if isinstance(input, RaggedTensor):
        return input.with_flat_values(fn(input.flat_values))
    return fn(_strings(input))


def unicode_script(input, name=None):  # noqa: A002
    """ICU's script code (UScriptCode, int32) of each code point: 0 Common, 25 Latin,
    8 Cyrillic, 17 Han, 2 Arabic, ...; -1 for values that are no code point."""
    if isinstance(input, RaggedTensor):
        return input.with_flat_values(raw.UnicodeScript(input.flat_values))
    return raw.UnicodeScript(_code_points(input))


def _splitter(input_encoding, errors, replacement_char):
    decode = _decoder(input_encoding, errors, replacement_char, False)

    def fn(t):
        splits, chars, starts = decode(t)
        one_each = core.range(array_ops.size(chars, out_type="int64") + 1, dtype=_INT64)
        pieces = _encode_rows(chars, one_each, input_encoding, errors, replacement_char)
        return splits, pieces, starts
    return fn


def unicode_split(input, input_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                  name=None):
    """Each string split into its characters, each a string in `input_encoding`."""
    return _per_string(input, _splitter(input_encoding, errors, replacement_char))[0]


def unicode_split_with_offsets(input, input_encoding, errors="replace",  # noqa: A002
                               replacement_char=65533, name=None):
    """(characters as strings, byte offset where each starts (int64))."""
    return _per_string(input, _splitter(input_encoding, errors, replacement_char))
