"""tf.strings: operations on string tensors.

Strings are byte strings (``.numpy()`` gives ``bytes``). The ops are TensorFlow's
(StringLength, StringJoin, ReduceJoin, Substr, AsString, StringToNumber, RegexReplace,
StringSplitV2, StringFormat, ...) with TensorFlow's semantics; regular expressions use
RE2's syntax as TensorFlow does. What differs is listed in docs/OPS.md ("Strings"):
lower/upper map ASCII letters only. ``split``, ``bytes_split``, ``unicode_split`` and
``unicode_decode`` return RaggedTensors (the Unicode functions are kiln._unicode's); the
elementwise functions also take RaggedTensors. ``ngrams`` is a composition of kiln ops
(kiln._ngrams).
"""
from kiln import _kiln
from kiln import errors
from kiln._ngrams import ngrams
from kiln._unicode import (unicode_decode, unicode_decode_with_offsets, unicode_encode,
                           unicode_script, unicode_split, unicode_split_with_offsets,
                           unicode_transcode)
from kiln.ops import _helpers as h
from kiln.ops import array_ops, core, math_ops
from kiln.ragged import RaggedTensor

raw = _kiln.raw
_STRING = _kiln.as_dtype("string")
_INT32 = _kiln.as_dtype("int32")
_INT64 = _kiln.as_dtype("int64")


def _is_ragged(x):
    return isinstance(x, RaggedTensor)


def _strings(x):
    """x as a tensor; Python values (str, bytes, nested lists, []) become strings."""
    if h.is_tensor(x):
        return h.tensor(x)
    return _kiln.convert_to_tensor(x, dtype=_STRING)


def _map(x, fn, convert=_strings):
    """fn applied to a string tensor, or to a RaggedTensor's flat values."""
    if _is_ragged(x):
        return x.with_flat_values(fn(x.flat_values))
    return fn(convert(x))


def length(input, unit="BYTE", name=None):  # noqa: A002
    """The length of each string (int32): in bytes, or with unit="UTF8_CHAR" in UTF-8
    characters (bytes that are not continuation bytes)."""
    return _map(input, lambda t: raw.StringLength(t, unit=unit))


def _num_buckets(num_buckets):
    if isinstance(num_buckets, bool) or not isinstance(num_buckets, int) or num_buckets < 1:
        raise errors.InvalidArgumentError(
            f"num_buckets must be a positive integer, got {num_buckets!r}")
    return num_buckets


def to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002
    """Each string's bucket in [0, num_buckets) (int64): FarmHash's Fingerprint64
    modulo num_buckets, TensorFlow's buckets for the same strings."""
    n = _num_buckets(num_buckets)
    return _map(input, lambda t: raw.StringToHashBucketFast(t, num_buckets=n))


def to_hash_bucket_strong(input, num_buckets, key, name=None):  # noqa: A002
    """Each string's bucket in [0, num_buckets) (int64) by SipHash-2-4 keyed with
    `key` (two integers), for inputs an adversary may choose."""
    n = _num_buckets(num_buckets)
    key = list(key)
    if len(key) != 2 or not all(isinstance(k, int) and not isinstance(k, bool) for k in key):
        raise errors.InvalidArgumentError(
            f"key must be a list of two integers, got {key!r}")
    key = [k - (1 << 64) if k >= (1 << 63) else k for k in key]  # uint64 bits in int64
    return _map(input, lambda t: raw.StringToHashBucketStrong(t, num_buckets=n, key=key))


def _separator(separator):
    """A separator as the op's string attribute takes it (bytes as UTF-8, as TensorFlow)."""
    return separator.decode("utf-8") if isinstance(separator, bytes) else separator


def join(inputs, separator="", name=None):
    """Joins the strings of `inputs` element by element (tf.strings.join). Non-scalar
    inputs must have one shape; scalars are repeated. RaggedTensors with one row
    partition join their flat values."""
    separator = _separator(separator)
    if h.is_tensor(inputs) or isinstance(inputs, (str, bytes)):
        raise TypeError("tf.strings.join: inputs must be a list of string tensors, got "
                        f"{type(inputs).__name__}")
    inputs = list(inputs)
    like = next((x for x in inputs if _is_ragged(x)), None)
    if like is not None:
        flat = []
        for x in inputs:
            if _is_ragged(x):
                flat.append(x.flat_values)
                continue
            t = _strings(x)
            if t.ndim != 0:
                raise errors.InvalidArgumentError(
                    "tf.strings.join: RaggedTensors join with RaggedTensors or scalars only, "
                    f"got a dense tensor of shape {t.shape}")
            flat.append(t)
        return like.with_flat_values(raw.StringJoin(flat, separator=separator))
    return raw.StringJoin([_strings(x) for x in inputs], separator=separator)


def _axes_tensor(axis):
    if h.is_tensor(axis):
        return h.tensor(axis)
    return h.const_ints(h.int_list(axis, "axis", "ReduceJoin"), "int32")


def reduce_join(inputs, axis=None, keepdims=False, separator="", name=None):
    """Joins strings along `axis` (tf.strings.reduce_join); axis=None joins everything in
    row-major order. With several axes the first listed varies fastest, as in TensorFlow
    ([["a", "b"], ["c", "d"]] over [0, 1] is "acbd")."""
    separator = _separator(separator)
    if _is_ragged(inputs):
        return _ragged_reduce_join(inputs, axis, keepdims, separator)
    t = _strings(inputs)
    if axis is None:
        if t.ndim is not None:
            axes = h.const_ints(list(range(t.ndim - 1, -1, -1)), "int32")
        else:
            one = _kiln.convert_to_tensor(1, dtype=_INT32)
            minus = _kiln.convert_to_tensor(-1, dtype=_INT32)
            axes = raw.Range(raw.Sub(raw.Rank(t), one), minus, minus)
    else:
        axes = _axes_tensor(axis)
    return raw.ReduceJoin(t, axes, keep_dims=bool(keepdims), separator=separator)


def _join_last_axis(rt, separator):
    """Each innermost row of a RaggedTensor joined: its ragged rank drops by one."""
    if isinstance(rt.values, RaggedTensor):
        return rt.with_values(_join_last_axis(rt.values, separator))
    if rt.values.ndim != 1:  # a uniform innermost dimension: join it in the flat values
        return rt.with_flat_values(
            raw.ReduceJoin(rt.values, h.const_ints([-1], "int32"), keep_dims=False,
                           separator=separator))
    return raw.UnsortedSegmentJoin(rt.values, rt.value_rowids(), rt.nrows(),
                                   separator=separator)


def _ragged_reduce_join(rt, axis, keepdims, separator):
    rank = rt.shape.rank
    if axis is None:
        return reduce_join(rt.flat_values, None, False, separator)
    axes = h.int_list(axis, "axis", "reduce_join")
    if len(axes) != 1 or keepdims or not -rank <= axes[0] < rank:
        raise errors.UnimplementedError(
            "tf.strings.reduce_join of a RaggedTensor: kiln joins one axis (the last, or the "
            f"rows of a 2-D RaggedTensor) without keepdims; got axis={axis!r}, "
            f"keepdims={keepdims!r} for rank {rank}")
    a = axes[0] % rank
    if a == rank - 1:
        return _join_last_axis(rt, separator)
    if a == 0 and rank == 2 and rt.values.ndim == 1:
        # Column j joins the j-th value of every row that has one, top to bottom.
        rowids = rt.value_rowids()
        dt = rowids.dtype
        cols = core.range(array_ops.size(rt.values, out_type=dt), dtype=dt) - \
            array_ops.gather(rt.row_splits, rowids)
        width = math_ops.reduce_max(array_ops.concat([rt.row_lengths(),
                                                      array_ops.zeros([1], dt)], 0))
        return raw.UnsortedSegmentJoin(rt.values, cols, width, separator=separator)
    raise errors.UnimplementedError(
        f"tf.strings.reduce_join of a rank-{rank} RaggedTensor along axis {axes[0]}: kiln "
        "joins the last axis, or the rows of a 2-D RaggedTensor")


def lower(input, encoding="", name=None):  # noqa: A002
    """ASCII letters to lower case; other bytes (UTF-8 letters too) are left as they are."""
    return _map(input, lambda t: raw.StringLower(t, encoding=encoding))


def upper(input, encoding="", name=None):  # noqa: A002
    """ASCII letters to upper case; other bytes (UTF-8 letters too) are left as they are."""
    return _map(input, lambda t: raw.StringUpper(t, encoding=encoding))


def strip(input, name=None):  # noqa: A002
    """The strings without leading and trailing ASCII whitespace."""
    return _map(input, raw.StringStrip)


def _positions(pos, len_):
    """pos and len as tensors of one integer dtype (int32 unless a value needs int64)."""
    if h.is_tensor(pos) or h.is_tensor(len_):
        like = h.tensor(pos) if h.is_tensor(pos) else h.tensor(len_)
        return (h.tensor(pos, like.dtype, "Substr"), h.tensor(len_, like.dtype, "Substr"))
    p = _kiln.convert_to_tensor(pos)
    n = _kiln.convert_to_tensor(len_)
    if p.dtype != n.dtype:
        p, n = (_kiln.convert_to_tensor(pos, dtype=_INT64),
                _kiln.convert_to_tensor(len_, dtype=_INT64))
    return p, n


def substr(input, pos, len, unit="BYTE", name=None):  # noqa: A002
    """`len` bytes (or UTF-8 characters) of each string from `pos` (tf.strings.substr).
    A negative pos counts from the end; |pos| beyond the string is InvalidArgumentError.
    pos and len have one shape, which broadcasts with the input's."""
    p, n = _positions(pos, len)
    return _map(input, lambda t: raw.Substr(t, p, n, unit=unit))


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="",  # noqa: A002
              name=None):
    """Numbers and bools as strings, printf-style (tf.strings.as_string): floats "%f"
    (6 decimals unless `precision`), `scientific` "%e", `shortest` "%g"; `width` pads,
    with `fill` "0" zeros (or the flags "-", "+", " ", "#")."""
    return _map(input, lambda t: raw.AsString(
        t, precision=int(precision), scientific=bool(scientific), shortest=bool(shortest),
        width=int(width), fill=fill), h.tensor)


def to_number(string_tensor, out_type="float32", name=None):
    """Parses each string as a number of `out_type` (float32, float64, int32, int64);
    one that does not parse is InvalidArgumentError naming it."""
    out = _kiln.as_dtype(out_type)
    return _map(string_tensor, lambda t: raw.StringToNumber(t, out_type=out))


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Replaces matches of `pattern` (RE2 syntax) by `rewrite` (\\1 for a group); every
    match, or only the first when replace_global is False."""
    pat, rew = _strings(pattern), _strings(rewrite)
    return _map(input, lambda t: raw.RegexReplace(t, pat, rew,
                                                  replace_global=bool(replace_global)))


def regex_full_match(input, pattern, name=None):  # noqa: A002
    """Whether each whole string matches `pattern` (RE2 syntax)."""
    pat = _strings(pattern)
    return _map(input, lambda t: raw.RegexFullMatch(t, pat))


def _split_to_ragged(input, split, op):  # noqa: A002
    """The pieces `split` (a 1-D string tensor -> indices, values, shape) makes of each
    string, as TensorFlow returns them: a RaggedTensor one rank above the input (for a
    scalar, a 1-D tensor of its pieces)."""
    if isinstance(input, RaggedTensor):
        return input.with_flat_values(_split_to_ragged(input.flat_values, split, op))
    t = _strings(input)
    rank = t.ndim
    if rank == 0:
        return split(raw.Reshape(t, h.const_ints([1], "int32")))[1]
    if rank is None or rank == 1:
        indices, values, shape = split(t)
        return RaggedTensor.from_value_rowids(values, indices[:, 0], shape[0], validate=False)
    return _split_to_ragged(RaggedTensor.from_tensor(t), split, op)


def split(input, sep=None, maxsplit=-1, name=None):  # noqa: A002
    """Splits each string at `sep` (tf.strings.split), at most `maxsplit` times; with
    sep=None at runs of whitespace, dropping whitespace at both ends (Python's
    str.split). Returns a RaggedTensor with one more (ragged) dimension."""
    sep_t = _strings("" if sep is None else sep)
    return _split_to_ragged(
        input, lambda t: raw.StringSplitV2(t, sep_t, maxsplit=int(maxsplit)), "split")


def bytes_split(input, name=None):  # noqa: A002
    """Each string split into single bytes: a RaggedTensor."""
    return _split_to_ragged(
        input, lambda t: _kiln.execute("_StringCharSplit", t, unit="BYTE"), "bytes_split")


def unsorted_segment_join(inputs, segment_ids, num_segments, separator="", name=None):
    """Joins the strings of each segment (tf.strings.unsorted_segment_join): output[k]
    joins inputs[i] for the i (in order) with segment_ids[i] == k; empty segments are ""."""
    ids = h.tensor(segment_ids)
    n = h.tensor(num_segments) if h.is_tensor(num_segments) else _kiln.convert_to_tensor(
        num_segments, dtype=ids.dtype)
    return raw.UnsortedSegmentJoin(_strings(inputs), ids, n, separator=separator)


def format(template, inputs, placeholder="{}", summarize=3, name=None):  # noqa: A001
    """`template` with each `placeholder` replaced by the next tensor of `inputs`, printed
    as tf.print prints it ("[1 2 3]", strings in double quotes, `summarize` elements at
    each end of an axis, -1 for all). A scalar string tensor."""
    if not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
    ts = [x.read_value() if isinstance(x, h.Variable) else
          (x if isinstance(x, h.Tensor) else _kiln.convert_to_tensor(x)) for x in inputs]
    return raw.StringFormat(ts, template=template, placeholder=placeholder,
                            summarize=-1 if summarize is None else int(summarize))


__all__ = ["length", "join", "reduce_join", "lower", "upper", "strip", "substr", "as_string",
           "to_number", "regex_replace", "regex_full_match", "split", "bytes_split",
           "unicode_split", "unicode_split_with_offsets", "unicode_decode",
           "unicode_decode_with_offsets", "unicode_encode", "unicode_transcode", "unicode_script",
           "unsorted_segment_join", "format", "ngrams"]
