"""tf.strings.ngrams as a composition of kiln ops (TensorFlow's StringNGrams semantics).

Each row of strings is padded with `padding` copies of the left and right pad values
(``min(padding_width, width - 1)`` per width, ``width - 1`` by default, none without
pad_values), and every window of `width` adjacent strings of the padded row is joined
with the separator: ``max(0, length + 2 * padding - width + 1)`` n-grams per width, the
widths in the order given. With preserve_short_sequences a non-empty row that gets no
n-gram at all gets one: the whole row padded with `padding_width` values on each side.
As in TensorFlow, when the input holds no strings at all there are no n-grams (not even
rows of padding only).

The windows are built as index arithmetic over every (row, width) segment at once, then
one GatherV2 and one UnsortedSegmentJoin: no loop over values, so it traces into a
kiln.function like any op.
"""
import numbers

from kiln import _kiln, errors
from kiln.ops import _helpers as h
from kiln.ragged import _rows
from kiln.ragged.ragged_tensor import RaggedTensor

raw = _kiln.raw
_STRING = _kiln.as_dtype("string")


def pad_pair(pad_values):
    """(left, right) pad strings, or None for no padding (TensorFlow's checks)."""
    if pad_values is None:
        return None
    if isinstance(pad_values, (list, tuple)):
        pair = tuple(pad_values[:2])
        if len(pair) == 2 and all(isinstance(p, (str, bytes)) for p in pair):
            return pair
    elif isinstance(pad_values, (str, bytes)):
        return (pad_values, pad_values)
    raise TypeError("pad_values must be a string, tuple of strings, or None.")


def _width(w):
    """One n-gram width as a Python int (an eager scalar tensor or integral float too)."""
    if isinstance(w, h.Tensor):
        if w.is_symbolic:
            raise TypeError("tf.strings.ngrams: ngram_width must be Python integers, got a "
                            "symbolic tensor")
        w = w.numpy().item()
    if isinstance(w, numbers.Integral):
        return int(w)
    if isinstance(w, numbers.Real) and float(w).is_integer():
        return int(w)
    raise TypeError(f"tf.strings.ngrams: ngram_width must be integers, got {w!r}")


def widths(ngram_width):
    """The static list of n-gram widths, each > 0 (ValueError otherwise, as TensorFlow)."""
    ws = ngram_width if isinstance(ngram_width, (list, tuple)) else [ngram_width]
    out = [_width(w) for w in ws]
    if any(w < 1 for w in out):
        raise ValueError(f"All ngram_widths must be greater than 0. Got {ngram_width}")
    return out


def _pack(cols):
    return raw.Pack(cols, axis=1)  # [rows, segments per row]


def _segments(lens, nvals, ws, pad_width, preserve):
    """Per row and n-gram group: (counts, window widths, paddings), each [rows, J].

    pad_width is TensorFlow's attribute: -1 for width - 1, 0 without padding."""
    dt = lens.dtype
    zero = _rows.scalar(0, dt)
    some = raw.Minimum(nvals, _rows.scalar(1, dt))  # 0 when there are no strings at all
    counts, wcols, pcols = [], [], []
    for w in ws:
        p = w - 1 if pad_width < 0 else min(pad_width, w - 1)
        n = raw.Maximum(raw.AddV2(lens, _rows.scalar(2 * p - w + 1, dt)), zero)
        counts.append(raw.Mul(n, some))
        wcols.append(raw.Fill(raw.Shape(lens), _rows.scalar(w, dt)))
        pcols.append(raw.Fill(raw.Shape(lens), _rows.scalar(p, dt)))
    if preserve:
        if pad_width < 0 and not ws:
            raise errors.InvalidArgumentError(
                "Pad width should be >= 0 when preserve_short_sequences is True and "
                f"ngram_widths are not provided, got {pad_width}")
        p = max(pad_width, 0)
        total = raw.Sum(_pack(counts), axis=[1], keepdims=False) if counts else \
            raw.ZerosLike(lens)
        short = raw.LogicalAnd(raw.Equal(total, zero), raw.Greater(lens, zero))
        counts.append(raw.Cast(short, DstT=dt))
        wcols.append(raw.AddV2(lens, _rows.scalar(2 * p, dt)))
        pcols.append(raw.Fill(raw.Shape(lens), _rows.scalar(p, dt)))
    return _pack(counts), _pack(wcols), _pack(pcols)


def _flat(m):
    return raw.Reshape(m, h.const_ints([-1], "int64"))


def _gather(params, ids):
    return raw.GatherV2(params, ids, axis=0, batch_dims=0)


def _window_indices(splits, counts, wmat, pmat, nvals):
    """For every string of every n-gram: its index into values + [left pad, right pad],
    and the n-gram it belongs to; also the number of n-grams."""
    seg_splits = _rows.splits_from_lengths(_flat(counts))
    seg = _rows.rowids(seg_splits)                       # the segment of each n-gram
    first = _rows.column_ids(seg_splits, seg)            # its window's first position
    el_splits = _rows.splits_from_lengths(_gather(_flat(wmat), seg))
    gram = _rows.rowids(el_splits)                       # the n-gram of each string
    seg_e = _gather(seg, gram)
    row_e = raw.FloorDiv(seg_e, raw.Shape(counts, out_type=splits.dtype)[1])
    pos = raw.AddV2(_gather(first, gram), _rows.column_ids(el_splits, gram))
    idx = _padded_index(pos, _gather(_flat(pmat), seg_e), _gather(splits, row_e),
                        _gather(_rows.lengths(splits), row_e), nvals)
    return idx, gram, seg_splits[-1]


def _padded_index(pos, pad, start, length, nvals):
    """Position pos of a row padded with `pad` values at each end, as an index into
    values + [left pad, right pad]."""
    right = raw.SelectV2(raw.GreaterEqual(pos, raw.AddV2(pad, length)),
                         raw.AddV2(nvals, _rows.scalar(1, nvals.dtype)),
                         raw.AddV2(start, raw.Sub(pos, pad)))
    return raw.SelectV2(raw.Less(pos, pad), raw.Fill(raw.Shape(pos), nvals), right)


def ngrams_of_rows(values, splits, ws, separator, pads, pad_width, preserve):
    """The n-grams of the rows values[splits[i]:splits[i + 1]]: (n-grams, row splits)."""
    dt = splits.dtype
    lens = _rows.lengths(splits)
    nvals = _rows.dim(values, 0, dt)
    if not ws and not preserve:
        return values[:0], raw.ZerosLike(splits)
    counts, wmat, pmat = _segments(lens, nvals, ws, pad_width, preserve)
    idx, gram, total = _window_indices(splits, counts, wmat, pmat, nvals)
    pads = [p.encode() if isinstance(p, str) else p for p in (pads or ("", ""))]
    table = raw.ConcatV2([values, _kiln.convert_to_tensor(pads, dtype=_STRING)], axis=0)
    out = raw.UnsortedSegmentJoin(_gather(table, idx), gram, total, separator=separator)
    return out, _rows.splits_from_lengths(raw.Sum(counts, axis=[1], keepdims=False))


def _dense(t, ws, separator, pads, pad_width, preserve):
    """A dense tensor's n-grams along its last axis, shaped [..., n-grams per row]."""
    shape = raw.Shape(t, out_type=_rows.INT64)
    lead = shape[:-1]
    nrows = raw.Prod(lead, axis=[0], keepdims=False)
    splits = raw.Mul(_rows.positions(raw.AddV2(nrows, _rows.scalar(1, _rows.INT64)),
                                     _rows.INT64), shape[-1])
    out, out_splits = ngrams_of_rows(_flat(t), splits, ws, separator, pads, pad_width,
                                     preserve)
    return raw.Reshape(out, raw.ConcatV2([lead, _last_dim(lead, nrows, out_splits[-1])],
                                         axis=0))


def _last_dim(lead, nrows, total):
    """The n-grams per row, as TensorFlow's reshape to [..., -1] infers it: with no rows,
    1 // (the product of the non-zero leading dimensions)."""
    one = _rows.scalar(1, _rows.INT64)
    some = raw.Maximum(nrows, one)
    empty = raw.FloorDiv(one, raw.Prod(raw.Maximum(lead, one), axis=[0], keepdims=False))
    n = raw.SelectV2(raw.Greater(nrows, _rows.scalar(0, _rows.INT64)),
                     raw.FloorDiv(total, some), empty)
    return raw.Reshape(n, h.const_ints([1], "int64"))


def _ragged(rt, ws, separator, pads, pad_width, preserve):
    if isinstance(rt.values, RaggedTensor):
        return rt.with_values(_ragged(rt.values, ws, separator, pads, pad_width, preserve))
    if rt.values.ndim != 1:
        raise errors.InvalidArgumentError(
            "tf.strings.ngrams: a RaggedTensor's innermost rows must hold strings (1-D "
            f"values), got values of shape {rt.values.shape}")
    out, splits = ngrams_of_rows(rt.values, rt.row_splits, ws, separator, pads, pad_width,
                                 preserve)
    return RaggedTensor.from_row_splits(out, splits, validate=False)


def ngrams(data, ngram_width, separator=" ", pad_values=None, padding_width=None,
           preserve_short_sequences=False, name=None):
    """The n-grams of the strings along the last axis of `data` (tf.strings.ngrams): each
    window of `ngram_width` adjacent strings (every width of a list, in its order) joined
    with `separator`, after `padding_width` pad values (default ngram_width - 1) are added
    at both ends when `pad_values` (a string or a (left, right) pair) is given. A dense
    input [..., S] gives a dense [..., n-grams], a RaggedTensor a RaggedTensor."""
    pads = pad_pair(pad_values)
    if padding_width is not None and padding_width < 1:
        raise ValueError("padding_width must be greater than 0.")
    if padding_width is not None and pads is None:
        raise ValueError("pad_values must be provided if padding_width is set.")
    pad_width = 0 if pads is None else (-1 if padding_width is None else int(padding_width))
    if isinstance(separator, bytes):
        separator = separator.decode()  # the StringJoin attribute is a str
    args = (separator, pads, pad_width, bool(preserve_short_sequences))
    if isinstance(data, RaggedTensor):
        if data.dtype != _STRING:
            raise TypeError(f"tf.strings.ngrams: data must be strings, got {data.dtype.name}")
        return _ragged(data, widths(ngram_width), *args)
    t = h.tensor(data) if h.is_tensor(data) else _kiln.convert_to_tensor(data, dtype=_STRING)
    if t.dtype != _STRING:
        raise TypeError(f"tf.strings.ngrams: data must be strings, got {t.dtype.name}")
    if t.ndim is None:
        raise ValueError("Rank of data must be known.")
    if t.ndim == 0:
        raise ValueError("Data must have rank>0")
    return _dense(t, widths(ngram_width), *args)
