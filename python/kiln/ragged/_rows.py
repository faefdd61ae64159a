"""Row-partition arithmetic over kiln ops (row splits, lengths, row ids, ranges).

Every function builds ops only, so it runs eagerly and inside a traced function;
row splits are 1-D int32/int64 tensors [0, ..., nvals] (TensorFlow's encoding).
"""
from kiln import _kiln

raw = _kiln.raw
Tensor = _kiln.Tensor
INT64 = _kiln.as_dtype("int64")
INT32 = _kiln.as_dtype("int32")


def scalar(v, dtype):
    """A scalar tensor of dtype from a Python number (a tensor is cast if needed)."""
    if isinstance(v, Tensor):
        return cast(v, dtype)
    return _kiln.convert_to_tensor(v, dtype=dtype)


def cast(t, dtype):
    """t as dtype (no op when it already is)."""
    return t if t.dtype == dtype else raw.Cast(t, DstT=dtype)


def vector(vals, dtype):
    """A 1-D tensor from a list of Python ints and scalar tensors."""
    items = [raw.Reshape(scalar(v, dtype), _kiln.convert_to_tensor([1], dtype=INT64))
             for v in vals]
    return items[0] if len(items) == 1 else raw.ConcatV2(items, axis=0)


def shape(t, dtype=INT64):
    """The dynamic shape of t as a 1-D tensor."""
    return raw.Shape(t, out_type=dtype)


def dim(t, i, dtype=INT64):
    """Dimension i of t as a scalar tensor."""
    return shape(t, dtype)[i]


def lengths(splits):
    """The row lengths of a row-splits vector."""
    return raw.Sub(splits[1:], splits[:-1])


def nrows(splits):
    """The number of rows of a row-splits vector (a scalar of its dtype)."""
    return raw.Sub(dim(splits, 0, splits.dtype), scalar(1, splits.dtype))


def splits_from_lengths(lens):
    """Row splits [0, cumsum(lengths)]."""
    zero = raw.Reshape(scalar(0, lens.dtype), _kiln.convert_to_tensor([1], dtype=INT64))
    return raw.ConcatV2([zero, raw.Cumsum(lens, axis=0, exclusive=False, reverse=False)], axis=0)


def rowids(splits):
    """The row of each value: rowids[i] = #{k >= 1 : splits[k] <= i}, as a count of the
    splits at each position followed by a cumulative sum (empty rows add nothing)."""
    dt = splits.dtype
    nvals = splits[-1]
    limits = splits[1:]
    counts = raw.UnsortedSegmentSum(raw.OnesLike(limits), limits,
                                    raw.AddV2(nvals, scalar(1, dt)))
    return raw.Cumsum(counts, axis=0, exclusive=False, reverse=False)[:-1]


def positions(n, dtype):
    """range(n) as a 1-D tensor of dtype."""
    return raw.Range(scalar(0, dtype), cast(n, dtype), scalar(1, dtype))


def gather_ranges(starts, limits):
    """For rows given by [starts[r], limits[r]): the concatenated positions of all rows
    and the row splits of the result."""
    dt = starts.dtype
    lens = raw.Maximum(raw.Sub(limits, starts), scalar(0, dt))
    splits = splits_from_lengths(lens)
    ids = rowids(splits)
    offset = raw.Sub(positions(splits[-1], dt), raw.GatherV2(splits, ids, axis=0, batch_dims=0))
    return raw.AddV2(raw.GatherV2(starts, ids, axis=0, batch_dims=0), offset), splits


def column_ids(splits, ids=None):
    """The column (position within its row) of each value."""
    if ids is None:
        ids = rowids(splits)
    n = splits[-1]
    return raw.Sub(positions(n, splits.dtype), raw.GatherV2(splits, ids, axis=0, batch_dims=0))


def max_length(splits):
    """The longest row's length (0 when there are no rows)."""
    lens = lengths(splits)
    zero = raw.Reshape(scalar(0, lens.dtype), _kiln.convert_to_tensor([1], dtype=INT64))
    return raw.Max(raw.ConcatV2([lens, zero], axis=0), axis=[0], keepdims=False)
