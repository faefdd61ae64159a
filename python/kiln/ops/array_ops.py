"""Shape and data-movement ops, creation ops and `where` (tf.* names)."""
import numpy as np

from kiln import _kiln
from kiln import errors
from kiln.dtypes import cast
from kiln.ops import _helpers as h

raw = h.raw
_float32 = _kiln.as_dtype("float32")


# ---- shape ----

def reshape(tensor, shape, name=None):
    """tensor with a new shape of the same size; one dim may be -1 (tf.reshape).
    shape may mix Python ints and scalar tensors."""
    return raw.Reshape(h.tensor(tensor), h.shape_tensor(shape, "Reshape"))


def expand_dims(input, axis, name=None):  # noqa: A002
    """input with a size-1 dimension inserted at axis (tf.expand_dims)."""
    return raw.ExpandDims(h.tensor(input), axis=h.one_int(axis, "axis", "ExpandDims"))


def squeeze(input, axis=None, name=None):  # noqa: A002
    """input without size-1 dimensions (only those in axis, if given) (tf.squeeze)."""
    axes = [] if axis is None else h.int_list(axis, "axis", "Squeeze")
    x = h.tensor(input)
    if axis is not None and not axes:
        return raw.Identity(x)
    return raw.Squeeze(x, squeeze_dims=axes)


def transpose(a, perm=None, conjugate=False, name=None):
    """a with its dimensions permuted; perm defaults to reversing them (tf.transpose)."""
    x = h.tensor(a)
    if perm is None:
        r = h.static_rank(x, "Transpose")
        perm = list(reversed(range(r)))
    return raw.Transpose(x, perm=h.int_list(perm, "perm", "Transpose"))


def shape(input, out_type="int32", name=None):  # noqa: A002
    """The shape of input as a 1-D int tensor (tf.shape); symbolic dims are
    computed when the function runs."""
    return raw.Shape(h.tensor(input), out_type=_kiln.as_dtype(out_type))


def size(input, out_type="int32", name=None):  # noqa: A002
    """The number of elements of input, a scalar (tf.size)."""
    return raw.Size(h.tensor(input), out_type=_kiln.as_dtype(out_type))


def rank(input, name=None):  # noqa: A002
    """The rank of input, an int32 scalar (tf.rank)."""
    return raw.Rank(h.tensor(input))


def reverse(tensor, axis, name=None):
    """tensor with the order of its elements reversed along each axis in axis (tf.reverse)."""
    x = h.tensor(tensor)
    r = h.static_rank(x, "ReverseV2")
    axes = [h.normalize_axis(a, r, "ReverseV2") for a in h.int_list(axis, "axis", "ReverseV2")]
    if len(set(axes)) != len(axes):
        raise errors.InvalidArgumentError(f"ReverseV2: axis {axis} has duplicates")
    if not axes:
        return raw.Identity(x)
    full = (1 << r) - 1  # every entry is a whole-axis slice; flipped axes have stride -1
    return strided_slice(x, [0] * r, [0] * r, [-1 if i in axes else 1 for i in range(r)],
                         begin_mask=full, end_mask=full)


# ---- joining and splitting ----

def _convert_list(values, op):
    if h.is_tensor(values):
        values = [values]  # a single tensor is a one-element list here
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{op}: values must be a list of tensors, got {values!r}")
    if not values:
        raise errors.InvalidArgumentError(f"{op}: values must not be empty")
    dtype = next((h.tensor(v).dtype for v in values if h.is_tensor(v)), None)
    out = []
    for v in values:
        out.append(h.tensor(v) if h.is_tensor(v) else h.tensor(v, dtype, op))
    return out


def concat(values, axis, name=None):
    """The tensors of values joined along axis (tf.concat)."""
    try:
        ts = _convert_list(values, "ConcatV2")
    except TypeError:  # RaggedTensors?
        out = h.dispatch(concat, values, axis)
        if out is NotImplemented:
            raise
        return out
    axis = h.one_int(axis, "axis", "ConcatV2")
    if len(ts) == 1:
        r = h.static_rank(ts[0], "ConcatV2")
        h.normalize_axis(axis, r, "ConcatV2")
        return raw.Identity(ts[0])
    return raw.ConcatV2(ts, axis=axis)


concat._kiln_kind = "concat"


def stack(values, axis=0, name=None):
    """The tensors of values (same shape) stacked along a new axis (tf.stack)."""
    return raw.Pack(_convert_list(values, "Pack"), axis=h.one_int(axis, "axis", "Pack"))


def unstack(value, num=None, axis=0, name=None):
    """The slices of value along axis, as a list (tf.unstack)."""
    n = -1 if num is None else h.one_int(num, "num", "Unpack")
    out = raw.Unpack(h.tensor(value), num=n, axis=h.one_int(axis, "axis", "Unpack"))
    return list(out)


def split(value, num_or_size_splits, axis=0, num=None, name=None):
    """value split along axis into num_or_size_splits equal parts (an int) or
    parts of the given sizes (a list; one may be -1) (tf.split)."""
    x = h.tensor(value)
    axis = h.one_int(axis, "axis", "SplitV")
    if isinstance(num_or_size_splits, int) and not isinstance(num_or_size_splits, bool):
        if num_or_size_splits < 1:
            raise errors.InvalidArgumentError(
                f"SplitV: num_split must be >= 1, got {num_or_size_splits}")
        return list(raw.SplitV(x, size_splits=[], axis=axis, num_split=num_or_size_splits))
    t = num_or_size_splits
    if h.is_tensor(t) and h.tensor(t).ndim == 0:
        return split(x, int(h.one_int(t, "num_or_size_splits", "SplitV")), axis)
    sizes = h.int_list(t, "num_or_size_splits", "SplitV")
    if not sizes:
        raise errors.InvalidArgumentError("SplitV: size_splits must not be empty")
    if num is not None and int(num) != len(sizes):
        raise errors.InvalidArgumentError(
            f"SplitV: num {num} disagrees with size_splits {sizes}")
    return list(raw.SplitV(x, size_splits=sizes, axis=axis, num_split=len(sizes)))


def slice(input_, begin, size, name=None):  # noqa: A001
    """The block of input_ starting at begin with the given size; -1 in size means
    'to the end' (tf.slice)."""
    b = h.shape_tensor(begin, "Slice", "begin")
    s = h.shape_tensor(size, "Slice", "size")
    if b.dtype != s.dtype:
        b = raw.Cast(b, DstT="int64")
        s = raw.Cast(s, DstT="int64")
    return raw.Slice(h.tensor(input_), b, s)


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0,
                  ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0, var=None, name=None):
    """TensorFlow's strided slice with its masks (tf.strided_slice)."""
    b = h.shape_tensor(begin, "StridedSlice", "begin")
    e = h.shape_tensor(end, "StridedSlice", "end")
    s = raw.OnesLike(b) if strides is None else h.shape_tensor(strides, "StridedSlice",
                                                              "strides")
    if not (b.dtype == e.dtype == s.dtype):
        b, e, s = (raw.Cast(t, DstT="int64") for t in (b, e, s))
    return raw.StridedSlice(h.tensor(input_), b, e, s, begin_mask=int(begin_mask),
                            end_mask=int(end_mask), ellipsis_mask=int(ellipsis_mask),
                            new_axis_mask=int(new_axis_mask),
                            shrink_axis_mask=int(shrink_axis_mask))


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """Slices of params at indices along axis (default 0) (tf.gather)."""
    axis = 0 if axis is None else h.one_int(axis, "axis", "GatherV2")
    idx = h.tensor(indices)
    if not idx.dtype.is_integer or idx.dtype.size < 4:
        raise errors.InvalidArgumentError(
            f"GatherV2: indices must be int32 or int64, got {idx.dtype.name}")
    return raw.GatherV2(h.tensor(params), idx, axis=axis,
                        batch_dims=h.one_int(batch_dims, "batch_dims", "GatherV2"))


def _nd_linear(indices, dims, op):
    """Indices [..., k] into the leading k dims `dims` (static ints) as one linear index
    per row (int64), with a coordinate out of its dim mapped to -1 so the gather or
    scatter that uses it reports the row instead of reading a neighbour."""
    idx = h.tensor(indices)
    if not idx.dtype.is_integer or idx.dtype.size < 4:
        raise errors.InvalidArgumentError(f"{op}: indices must be int32 or int64, got "
                                          f"{idx.dtype.name}")
    if idx.ndim is None or idx.ndim < 1 or idx.shape[-1] is None:
        raise errors.InvalidArgumentError(
            f"{op}: indices need a known rank >= 1 and a known last dimension, got {idx.shape}")
    k = idx.shape[-1]
    if k > len(dims):
        raise errors.InvalidArgumentError(
            f"{op}: indices.shape[-1] = {k} is more than the rank {len(dims)} of the params")
    if not idx.is_symbolic:  # name the bad index eagerly, as TensorFlow does
        v = idx.numpy().reshape(-1, k) if k else np.zeros((0, 0), np.int64)
        bad = np.nonzero(((v < 0) | (v >= np.asarray(dims[:k]))).any(axis=1))[0] if k else []
        if len(bad):
            raise errors.InvalidArgumentError(
                f"{op}: indices[{int(bad[0])}] = {v[bad[0]].tolist()} does not index into "
                f"shape {list(dims)}")
    i64 = raw.Cast(idx, DstT=_kiln.as_dtype("int64")) if idx.dtype.name != "int64" else idx
    strides = [int(np.prod(dims[j + 1:k], dtype=np.int64)) for j in range(k)]
    lin = raw.Sum(raw.Mul(i64, h.const_ints(strides, "int64")), axis=[-1])
    ok = raw.All(raw.LogicalAnd(raw.GreaterEqual(i64, _kiln.convert_to_tensor(0, dtype="int64")),
                                raw.Less(i64, h.const_ints(list(dims[:k]), "int64"))), axis=[-1])
    return raw.SelectV2(ok, lin, _kiln.convert_to_tensor(-1, dtype="int64")), k


def _static_dims(t, op, what):
    if t.ndim is None or any(d is None for d in t.shape):
        raise errors.InvalidArgumentError(f"{op}: {what} needs a known shape, got {t.shape}")
    return [int(d) for d in t.shape]


def gather_nd(params, indices, batch_dims=0, name=None):
    """Slices of params at the multi-indices in the last dim of indices (tf.gather_nd):
    the result has shape indices.shape[:-1] + params.shape[indices.shape[-1]:]."""
    if h.one_int(batch_dims, "batch_dims", "GatherNd") != 0:
        raise errors.InvalidArgumentError("GatherNd: only batch_dims = 0 is supported")
    p = h.tensor(params)
    dims = _static_dims(p, "GatherNd", "params")
    lin, k = _nd_linear(indices, dims, "GatherNd")
    flat = raw.Reshape(p, h.const_ints([int(np.prod(dims[:k], dtype=np.int64))] + dims[k:],
                                       "int64"))
    return raw.GatherV2(flat, lin, axis=0, batch_dims=0)


def scatter_nd(indices, updates, shape, name=None):
    """A zero tensor of `shape` with `updates` added at the multi-indices in the last dim of
    indices (tf.scatter_nd; duplicates add up)."""
    dims = h.int_list(h.tensor(shape).numpy() if h.is_tensor(shape) else shape, "shape",
                      "ScatterNd")
    u = h.tensor(updates)
    lin, k = _nd_linear(indices, dims, "ScatterNd")
    n = _kiln.convert_to_tensor(int(np.prod(dims[:k], dtype=np.int64)), dtype="int64")
    out = raw.UnsortedSegmentSum(u, lin, n) if k else raw.Sum(u, axis=list(range(lin.ndim)))
    return raw.Reshape(out, h.const_ints(dims, "int64"))


def tensor_scatter_nd_add(tensor, indices, updates, name=None):
    """tensor with updates added at the multi-indices (tf.tensor_scatter_nd_add)."""
    t = h.tensor(tensor)
    return raw.AddV2(t, scatter_nd(indices, h.tensor(updates, t.dtype, "TensorScatterAdd"),
                                   _static_dims(t, "TensorScatterAdd", "tensor")))


def tensor_scatter_nd_sub(tensor, indices, updates, name=None):
    """tensor with updates subtracted at the multi-indices (tf.tensor_scatter_nd_sub)."""
    t = h.tensor(tensor)
    return raw.Sub(t, scatter_nd(indices, h.tensor(updates, t.dtype, "TensorScatterSub"),
                                 _static_dims(t, "TensorScatterSub", "tensor")))


def _scatter_combine(tensor, indices, updates, op, seg, combine):
    """tensor combined (`combine`) with the updates reduced per position (`seg`)."""
    t = h.tensor(tensor)
    dims = _static_dims(t, op, "tensor")
    u = h.tensor(updates, t.dtype, op)
    lin, k = _nd_linear(indices, dims, op)
    flat = raw.Reshape(t, h.const_ints([int(np.prod(dims[:k], dtype=np.int64))] + dims[k:],
                                       "int64"))
    n = _kiln.convert_to_tensor(int(np.prod(dims[:k], dtype=np.int64)), dtype="int64")
    return raw.Reshape(combine(flat, seg(u, lin, n), lin, n), h.const_ints(dims, "int64"))


def tensor_scatter_nd_max(tensor, indices, updates, name=None):
    """tensor with each indexed slice replaced by its max with the updates
    (tf.tensor_scatter_nd_max)."""
    return _scatter_combine(tensor, indices, updates, "TensorScatterMax", raw.UnsortedSegmentMax,
                            lambda t, s, lin, n: raw.Maximum(t, s))


def tensor_scatter_nd_min(tensor, indices, updates, name=None):
    """tensor with each indexed slice replaced by its min with the updates
    (tf.tensor_scatter_nd_min)."""
    return _scatter_combine(tensor, indices, updates, "TensorScatterMin", raw.UnsortedSegmentMin,
                            lambda t, s, lin, n: raw.Minimum(t, s))


def _last_update(t, u, lin, n):
    """t with the positions in lin replaced by u's slices; of duplicates, the last wins."""
    rows = raw.Shape(lin, out_type=_kiln.as_dtype("int64"))
    pos = raw.Reshape(raw.Range(_kiln.convert_to_tensor(0, dtype="int64"),
                                raw.Prod(rows, axis=[0]), _kiln.convert_to_tensor(1, dtype="int64")),
                      rows)
    last = raw.UnsortedSegmentMax(pos, lin, n)  # -int64 max where nothing is written
    hit = raw.GreaterEqual(last, _kiln.convert_to_tensor(0, dtype="int64"))
    flat_u = raw.Reshape(u, raw.ConcatV2([h.const_ints([-1], "int64"),
                                          raw.Shape(t, out_type=_kiln.as_dtype("int64"))[1:]],
                                         axis=0))
    picked = raw.GatherV2(flat_u, raw.Maximum(last, _kiln.convert_to_tensor(0, dtype="int64")),
                          axis=0, batch_dims=0)
    for _ in range((t.ndim or 1) - 1):
        hit = raw.ExpandDims(hit, axis=-1)
    return raw.SelectV2(hit, picked, t)


def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """tensor with the indexed slices replaced by updates (tf.tensor_scatter_nd_update);
    when an index repeats, the last update wins (TensorFlow leaves the order unspecified)."""
    return _scatter_combine(tensor, indices, updates, "TensorScatterUpdate",
                            lambda u, lin, n: u, _last_update)


def meshgrid(*args, **kwargs):
    """N-D coordinate grids from 1-D tensors (tf.meshgrid): indexing 'xy' (default,
    the first two outputs' dims swapped) or 'ij'."""
    indexing = kwargs.pop("indexing", "xy")
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"meshgrid: unexpected keyword arguments {sorted(kwargs)}")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    xs = [raw.Reshape(h.tensor(a), h.const_ints([-1], "int64")) for a in args]
    n = len(xs)
    axis = list(range(n))
    if indexing == "xy" and n >= 2:  # the first two inputs vary along dims 1 and 0
        axis[0], axis[1] = 1, 0
    sizes = [None] * n
    for i, x in enumerate(xs):
        sizes[axis[i]] = raw.Shape(x, out_type=_kiln.as_dtype("int64"))
    full = raw.ConcatV2(sizes, axis=0) if n else h.const_ints([], "int64")
    out = []
    for i, x in enumerate(xs):
        shape = [1] * n
        shape[axis[i]] = -1
        out.append(raw.BroadcastTo(raw.Reshape(x, h.const_ints(shape, "int64")), full))
    return out


def tile(input, multiples, name=None):  # noqa: A002
    """input repeated multiples[i] times along each dim i (tf.tile)."""
    return raw.Tile(h.tensor(input), h.shape_tensor(multiples, "Tile", "multiples"))


def broadcast_to(input, shape, name=None):  # noqa: A002
    """input broadcast to shape (tf.broadcast_to)."""
    return raw.BroadcastTo(h.tensor(input), h.shape_tensor(shape, "BroadcastTo"))


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """tensor padded by paddings ([rank, 2]: before/after per dim) (tf.pad).
    mode: 'CONSTANT', or 'REFLECT'/'SYMMETRIC' with constant paddings."""
    x = h.tensor(tensor)
    mode = str(mode).upper()
    if mode == "CONSTANT":
        p = _paddings_tensor(paddings)
        cv = h.tensor(constant_values, None if h.is_tensor(constant_values) else x.dtype, "PadV2")
        return raw.PadV2(x, p, cv)
    if mode not in ("REFLECT", "SYMMETRIC"):
        raise ValueError(f"pad: mode must be 'CONSTANT', 'REFLECT' or 'SYMMETRIC', got {mode!r}")
    return _mirror_pad(x, paddings, mode == "REFLECT")


def _paddings_tensor(paddings):
    if h.is_tensor(paddings):
        return h.shape_tensor(paddings, "PadV2", "paddings")
    rows = [list(r) if isinstance(r, (list, tuple)) else r for r in paddings]
    if not rows:  # a scalar input: paddings of shape [0, 2]
        return h.int_array(np.zeros((0, 2)))
    if any(h.is_tensor(v) for r in rows if isinstance(r, list) for v in r):
        return raw.Pack([h.pack_ints(r, "PadV2", "paddings") for r in rows], axis=0)
    return h.int_array(rows)


def _mirror_pad(x, paddings, reflect):
    op = "MirrorPad"
    rank = h.static_rank(x, op)
    pads = h.int_list(paddings, "paddings", op)
    if len(pads) != 2 * rank:
        raise errors.InvalidArgumentError(
            f"{op}: paddings must have shape [{rank}, 2] for an input of rank {rank}")
    for axis in range(rank):
        before, after = pads[2 * axis], pads[2 * axis + 1]
        n = x.shape[axis]  # None while tracing with an unknown dim: not checked
        limit = None if n is None else (n - 1 if reflect else n)
        if before < 0 or after < 0 or (n is not None and (before > limit or after > limit)):
            raise errors.InvalidArgumentError(
                f"{op}: paddings ({before}, {after}) for dimension {axis} must be in "
                f"[0, {limit}] for size {n} in {'REFLECT' if reflect else 'SYMMETRIC'} mode")
        parts = []
        if before:
            start = before if reflect else before - 1
            parts.append(_axis_slice(x, axis, rank, start, start - before, -1))
        parts.append(x)
        if after:
            start = -2 if reflect else -1
            parts.append(_axis_slice(x, axis, rank, start, start - after, -1))
        if len(parts) > 1:
            x = raw.ConcatV2(parts, axis=axis)
    return x


def _axis_slice(x, axis, rank, begin, end, stride):
    # x[..., begin:end:stride, ...] along one axis; end == -1 means "through index 0".
    b, e, s = [0] * rank, [0] * rank, [1] * rank
    b[axis], s[axis] = begin, stride
    mask = ((1 << rank) - 1) & ~(1 << axis)
    end_mask = mask
    if end == -1 and stride < 0:
        end_mask |= 1 << axis
    else:
        e[axis] = end
    return strided_slice(x, b, e, s, begin_mask=mask, end_mask=end_mask)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """A one-hot encoding of indices with depth classes (tf.one_hot); out-of-range
    indices give rows of off_value."""
    idx = h.tensor(indices)
    if dtype is None:
        for v in (on_value, off_value):
            if v is not None:
                dtype = h.tensor(v).dtype
                break
        else:
            dtype = _float32
    dtype = _kiln.as_dtype(dtype)
    on = h.one_of(dtype, "OneHot") if on_value is None else h.tensor(
        on_value, None if h.is_tensor(on_value) else dtype, "OneHot")
    off = h.zero_of(dtype) if off_value is None else h.tensor(
        off_value, None if h.is_tensor(off_value) else dtype, "OneHot")
    for what, v in (("on_value", on), ("off_value", off)):
        if v.dtype != dtype:
            raise TypeError(f"OneHot: {what} is {v.dtype.name} but dtype is {dtype.name}")
    d = h.tensor(depth, None if h.is_tensor(depth) else "int32", "OneHot")
    return raw.OneHot(idx, d, on, off, axis=-1 if axis is None else h.one_int(axis, "axis",
                                                                             "OneHot"))


# ---- creation ----

def fill(dims, value, name=None):
    """A tensor of shape dims filled with value (tf.fill)."""
    return raw.Fill(h.shape_tensor(dims, "Fill", "dims"), h.tensor(value))


def zeros(shape, dtype="float32", name=None):
    """A tensor of zeros (tf.zeros)."""
    return raw.Fill(h.shape_tensor(shape, "Fill"), h.zero_of(dtype))


def ones(shape, dtype="float32", name=None):
    """A tensor of ones (tf.ones)."""
    return raw.Fill(h.shape_tensor(shape, "Fill"), h.one_of(dtype))


def zeros_like(input, dtype=None, name=None):  # noqa: A002
    """Zeros with the shape (and, unless dtype is given, dtype) of input (tf.zeros_like)."""
    x = h.tensor(input)
    if dtype is None or _kiln.as_dtype(dtype) == x.dtype:
        return raw.ZerosLike(x)
    return raw.Fill(raw.Shape(x, out_type=_kiln.as_dtype("int32")), h.zero_of(dtype))


def ones_like(input, dtype=None, name=None):  # noqa: A002
    """Ones with the shape (and, unless dtype is given, dtype) of input (tf.ones_like)."""
    x = h.tensor(input)
    if dtype is None or _kiln.as_dtype(dtype) == x.dtype:
        return raw.OnesLike(x)
    return raw.Fill(raw.Shape(x, out_type=_kiln.as_dtype("int32")), h.one_of(dtype))


def identity(input, name=None):  # noqa: A002
    """A tensor with the same value as input (a Variable's current value) (tf.identity)."""
    return raw.Identity(h.tensor(input))


def where(condition, x=None, y=None, name=None):
    """where(c, x, y): x where c is true, else y, with broadcasting (tf.where).
    where(c): the [N, rank] int64 coordinates of the true (non-zero) elements, in
    row-major order (the Where op; N is unknown in a traced graph)."""
    if x is None and y is None:
        return raw.Where(h.tensor(condition))
    if x is None or y is None:
        raise ValueError("where: x and y must both be given, or neither")
    c = h.tensor(condition)
    if not c.dtype.is_bool:
        raise errors.InvalidArgumentError(f"SelectV2: condition must be bool, got {c.dtype.name}")
    xt, yt = h.pair(x, y, "SelectV2")
    return raw.SelectV2(c, xt, yt)


def boolean_mask(tensor, mask, axis=None, name=None):
    """The elements (or slices) of tensor where the bool mask is true, flattened
    over the masked dims starting at axis (default 0) (tf.boolean_mask). The mask
    needs a known rank; traced, the result's masked dimension is unknown."""
    x = h.tensor(tensor)
    m = h.tensor(mask)
    if not m.dtype.is_bool:
        raise TypeError(f"boolean_mask: mask must be bool, got {m.dtype.name}")
    k = m.ndim
    if k is None:
        raise errors.InvalidArgumentError("boolean_mask: the mask needs a known rank")
    if k == 0:
        raise errors.InvalidArgumentError("boolean_mask: mask cannot be a scalar")
    r = h.static_rank(x, "boolean_mask")
    a = 0 if axis is None else h.normalize_axis(h.one_int(axis, "axis", "boolean_mask"), r,
                                                 "boolean_mask")
    dims = list(x.shape.as_list())
    mdims = list(m.shape.as_list())
    if a + k > r or not all(d is None or e is None or d == e
                            for d, e in zip(dims[a:a + k], mdims)):
        raise errors.InvalidArgumentError(
            f"boolean_mask: mask of shape {mdims} does not match dimensions {a} to "
            f"{a + k - 1} of tensor of shape {dims}")
    shape = raw.Shape(x, out_type=_kiln.as_dtype("int64"))
    flat_shape = raw.ConcatV2([shape[:a], h.const_ints([-1], "int64"), shape[a + k:]], axis=0)
    flat = raw.Reshape(x, flat_shape)
    idx = raw.Squeeze(raw.Where(raw.Reshape(m, h.const_ints([-1], "int64"))), squeeze_dims=[1])
    return raw.GatherV2(flat, idx, axis=a, batch_dims=0)


newaxis = None


def get_static_value(tensor, partial=False):
    """tensor's value as a NumPy array when known now (eager tensors, Python
    values), else None (symbolic tensors) (tf.get_static_value)."""
    if isinstance(tensor, h.Variable):
        return None
    if isinstance(tensor, h.Tensor):
        return None if tensor.is_symbolic else np.asarray(tensor.numpy())
    try:
        return np.asarray(h.tensor(tensor).numpy())
    except (TypeError, ValueError):
        return None


def linspace(start, stop, num, name=None, axis=0):
    """num evenly spaced values from start to stop, both included (tf.linspace). start and
    stop are scalars or tensors of one shape (broadcast); the values run along a new
    axis at `axis`. num is an int >= 0 or an int scalar tensor (known when the function runs).
    Integer start and stop give float64 values (float32 for int8/uint8), as TensorFlow's
    true division of integers does."""
    x0 = h.tensor(start)
    if not (x0.dtype.is_floating or x0.dtype.is_integer):
        raise TypeError(f"LinSpace: start must be a float or an integer, got {x0.dtype.name}")
    x1 = h.tensor(stop, dtype=x0.dtype, op="LinSpace")
    if x0.dtype.is_integer:
        wide = _kiln.as_dtype("float64" if x0.dtype.size >= 4 else "float32")
        x0, x1 = raw.Cast(x0, DstT=wide), raw.Cast(x1, DstT=wide)
    if isinstance(num, bool) or (not hasattr(num, "__index__") and not h.is_tensor(num)):
        raise TypeError(f"LinSpace: num must be an int, got {num!r}")
    if not h.is_tensor(num) and int(num) < 0:
        raise errors.InvalidArgumentError(f"LinSpace: num must be >= 0, got {int(num)}")
    n = h.tensor(num) if h.is_tensor(num) else _kiln.convert_to_tensor(int(num), dtype="int32")
    if not n.dtype.is_integer:
        raise TypeError(f"LinSpace: num must be an int, got a {n.dtype.name} tensor")
    n = cast(n, "int32")
    one = _kiln.convert_to_tensor(1, dtype="int32")
    steps = raw.Cast(raw.Maximum(raw.Sub(n, one), one), DstT=x0.dtype)
    a, b = raw.AddV2(x0, raw.ZerosLike(x1)), raw.AddV2(x1, raw.ZerosLike(x0))  # broadcast
    delta = raw.RealDiv(raw.Sub(b, a), steps)
    idx = raw.Range(_kiln.convert_to_tensor(0, dtype="int32"), n, one)
    # [*shape, num]: a + i * delta, with the last value exactly stop (num > 1).
    i = raw.Cast(idx, DstT=x0.dtype)
    vals = raw.AddV2(raw.ExpandDims(a, axis=-1), raw.Mul(raw.ExpandDims(delta, axis=-1), i))
    last = raw.LogicalAnd(raw.Equal(idx, raw.Sub(n, one)), raw.Greater(n, one))  # num 1: start
    out = raw.SelectV2(last, raw.ExpandDims(b, axis=-1), vals)
    r = out.ndim
    ax = h.one_int(axis, "axis", "LinSpace")
    if r is None or not -r <= ax < r:
        raise errors.InvalidArgumentError(
            f"LinSpace: axis {ax} is out of range for a result of rank {r}")
    ax %= r
    if ax != r - 1:
        perm = list(range(r - 1))
        perm.insert(ax, r - 1)
        out = raw.Transpose(out, perm=perm)
    return out


__all__ = [
    "linspace", "gather_nd", "scatter_nd", "tensor_scatter_nd_add", "tensor_scatter_nd_sub",
    "tensor_scatter_nd_update", "tensor_scatter_nd_max", "tensor_scatter_nd_min", "meshgrid",
    "reshape", "expand_dims", "squeeze", "transpose", "shape", "size", "rank", "concat", "stack",
    "unstack", "split", "slice", "strided_slice", "gather", "tile", "broadcast_to", "pad",
    "one_hot", "fill", "zeros", "ones", "zeros_like", "ones_like", "identity", "where",
    "get_static_value", "boolean_mask", "newaxis", "reverse",
]
