"""Creating and reshaping arrays (tnp.array, zeros, arange, reshape, concatenate, ...):
kiln tensors with NumPy's default dtypes and argument conventions."""
import numpy as np

from kiln import _kiln
from kiln.experimental.numpy import _dtypes as D
from kiln.ops import array_ops, linalg_ops

Tensor, Variable = _kiln.Tensor, _kiln.Variable
raw = _kiln.raw
ndarray = Tensor
newaxis = None
_INT64 = _kiln.as_dtype("int64")


def _dtype_or(dtype, default):
    return default if dtype is None else D.to_kiln(dtype)


def asarray(a, dtype=None):
    """a as a tensor (no copy for a tensor of that dtype); Python data gets NumPy's dtypes."""
    if isinstance(a, Variable):
        a = a.read_value()
    if isinstance(a, Tensor) and dtype is None:
        return a
    return D.cast(a, _dtype_or(dtype, D.literal_dtype(a)))


asanyarray = asarray


def array(object, dtype=None, copy=True, ndmin=0):  # noqa: A002
    """A tensor of `object` (tnp.array); ndmin prepends dimensions of size 1."""
    t = asarray(object, dtype)
    if copy and t is object:
        t = raw.Identity(t)
    missing = ndmin - (t.ndim or 0)
    return array_ops.reshape(t, [1] * missing + list(t.shape)) if missing > 0 else t


def copy(a):
    return array(a, copy=True)


def _shape(shape):
    return [shape] if isinstance(shape, (int, np.integer)) else list(shape)


def zeros(shape, dtype=float):
    return array_ops.zeros(_shape(shape), _dtype_or(dtype, D.default_float()))


def ones(shape, dtype=float):
    return array_ops.ones(_shape(shape), _dtype_or(dtype, D.default_float()))


empty = zeros


def full(shape, fill_value, dtype=None):
    value = asarray(fill_value, dtype)
    return array_ops.broadcast_to(value, _shape(shape))


def zeros_like(a, dtype=None):
    a = asarray(a)
    return array_ops.zeros_like(a, dtype=_dtype_or(dtype, a.dtype))


def ones_like(a, dtype=None):
    a = asarray(a)
    return array_ops.ones_like(a, dtype=_dtype_or(dtype, a.dtype))


empty_like = zeros_like


def full_like(a, fill_value, dtype=None):
    a = asarray(a)
    return array_ops.broadcast_to(D.cast(fill_value, _dtype_or(dtype, a.dtype)), shape(a))


def eye(N, M=None, k=0, dtype=float):  # noqa: N803
    if k != 0:
        raise NotImplementedError("kiln.experimental.numpy.eye: k != 0 is not supported")
    return linalg_ops.eye(N, M, dtype=_dtype_or(dtype, D.default_float()))


def identity(n, dtype=float):
    return eye(n, dtype=dtype)


def arange(start, stop=None, step=1, dtype=None):
    """Evenly spaced values in [start, stop) (tnp.arange); ints give int64."""
    if stop is None:
        start, stop = 0, start
    out = D.result_type(start, stop, step) if dtype is None else D.to_kiln(dtype)
    wide = _INT64 if out.is_integer else _kiln.as_dtype("float64")
    return D.cast(raw.Range(*[D.cast(v, wide) for v in (start, stop, step)]), out)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=float, axis=0):
    """num evenly spaced values from start to stop (tnp.linspace)."""
    wide = _kiln.as_dtype("float64")
    lo, hi = D.cast(start, wide), D.cast(stop, wide)
    n = num if endpoint else num + 1
    values = array_ops.linspace(lo, hi, n, axis=axis)
    if not endpoint:
        values = array_ops.gather(values, list(range(num)), axis=axis)
    step = (hi - lo) / max(n - 1, 1)
    values = D.cast(values, _dtype_or(dtype, D.default_float()) if dtype is not float
                    else D.default_float())
    return (values, step) if retstep else values


# ---- shapes ----

def shape(a):
    return tuple(asarray(a).shape.as_list())


def ndim(a):
    return asarray(a).ndim


def size(a):
    return int(np.prod(shape(a)))


def reshape(a, newshape, order="C"):
    if order != "C":
        raise NotImplementedError("kiln.experimental.numpy.reshape: only order='C'")
    return array_ops.reshape(asarray(a), _shape(newshape))


def ravel(a):
    return array_ops.reshape(asarray(a), [-1])


def transpose(a, axes=None):
    return array_ops.transpose(asarray(a), axes)


def swapaxes(a, axis1, axis2):
    a = asarray(a)
    perm = list(range(a.ndim))
    perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
    return array_ops.transpose(a, perm)


def moveaxis(a, source, destination):
    a = asarray(a)
    perm = list(range(a.ndim))
    src = perm.pop(source % a.ndim)
    perm.insert(destination % a.ndim if destination >= 0 else a.ndim + destination, src)
    return array_ops.transpose(a, perm)


def squeeze(a, axis=None):
    return array_ops.squeeze(asarray(a), axis)


def expand_dims(a, axis):
    return array_ops.expand_dims(asarray(a), axis)


def _promoted(arrays):
    arrays = [asarray(x) for x in arrays]
    dtype = D.result_type(*arrays)
    return [D.cast(x, dtype) for x in arrays]


def concatenate(arys, axis=0):
    if axis is None:
        return array_ops.concat([ravel(x) for x in _promoted(arys)], 0)
    return array_ops.concat(_promoted(arys), axis)


def stack(arrays, axis=0):
    return array_ops.stack(_promoted(arrays), axis)


def atleast_1d(a):
    a = asarray(a)
    return array_ops.reshape(a, [1]) if a.ndim == 0 else a


def atleast_2d(a):
    a = atleast_1d(a)
    return array_ops.expand_dims(a, 0) if a.ndim == 1 else a


def vstack(tup):
    return concatenate([atleast_2d(x) for x in tup], 0)


def hstack(tup):
    arrs = [atleast_1d(x) for x in tup]
    return concatenate(arrs, 0 if arrs[0].ndim == 1 else 1)


def tile(A, reps):  # noqa: N803
    a = asarray(A)
    reps = _shape(reps)
    if len(reps) < a.ndim:
        reps = [1] * (a.ndim - len(reps)) + reps
    a = array_ops.reshape(a, [1] * (len(reps) - a.ndim) + a.shape.as_list())
    return array_ops.tile(a, reps)


def broadcast_to(array, shape):  # noqa: A002
    return array_ops.broadcast_to(asarray(array), _shape(shape))


def flip(m, axis=None):
    m = asarray(m)
    axes = list(range(m.ndim)) if axis is None else _shape(axis)
    return array_ops.reverse(m, axes)


def take(a, indices, axis=None):
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    return array_ops.gather(a, asarray(indices), axis=axis)


def diag(v, k=0):
    """The diagonal of a 2-D array, or a 2-D array with v on its diagonal (k=0 only)."""
    if k != 0:
        raise NotImplementedError("kiln.experimental.numpy.diag: k != 0 is not supported")
    v = asarray(v)
    if v.ndim == 1:
        work = _kiln.as_dtype("int8") if v.dtype.is_bool else v.dtype
        out = linalg_ops.eye(v.shape[0], dtype=work) * array_ops.expand_dims(D.cast(v, work), 0)
        return D.cast(out, v.dtype)
    n = min(v.shape.as_list())
    idx = D.cast(np.stack([np.arange(n), np.arange(n)], axis=1), _INT64)
    return array_ops.gather_nd(v, idx)
