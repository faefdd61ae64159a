"""tnp.experimental_enable_numpy_behavior: NumPy's type promotion in the operators of
kiln.Tensor and kiln.Variable (`int32 tensor + 1.5` is float64), NumPy's methods on tensors
(`.T`, `.reshape`, `.astype`, `.ravel`, `.clip`, ...) and integer-array indexing.

The C++ operators stay; while enabled, Python wrappers promote the operands (only when their
dtypes differ or a Python / NumPy value is involved) and call them. `disable()` (kiln's own,
for tests) puts everything back."""
import numbers

import numpy as np

from kiln import _kiln, dtypes
from kiln.experimental.numpy import _dtypes as D
from kiln.experimental.numpy import _arrays as A
from kiln.experimental.numpy import _math as M
from kiln.ops import array_ops

Tensor, Variable = _kiln.Tensor, _kiln.Variable
_INT64 = _kiln.as_dtype("int64")
_OPERATORS = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
              "xor"]
_NAMES = [f"__{n}__" for n in _OPERATORS] + [f"__r{n}__" for n in _OPERATORS] + \
    ["__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__lshift__", "__rshift__"]
_SAVED = {}  # (class, name) -> what the class had (None: nothing)


def _numeric(x):
    if isinstance(x, (Tensor, Variable, np.ndarray, np.generic, numbers.Number)):
        return True
    return isinstance(x, (list, tuple)) and all(_numeric(v) for v in x)


def _promoting(original):
    def op(self, other):
        if type(other) is type(self) and other.dtype == self.dtype or not _numeric(other):
            return original(self, other)
        dtype = D.result_type(self, other)
        return original(D.cast(self, dtype), D.cast(other, dtype))
    op.__name__ = getattr(original, "__name__", "op")
    return op


def _reshape(self, *shape, order="C"):
    return A.reshape(self, shape[0] if len(shape) == 1 else shape, order)


def _transpose(self, *axes):
    return A.transpose(self, (axes[0] if len(axes) == 1 else axes) or None)


def _size(self):
    return array_ops.size(self, out_type="int64")


_METHODS = {
    "T": property(lambda self: array_ops.transpose(self)),
    "size": property(_size),
    "data": property(lambda self: self),
    "reshape": _reshape, "transpose": _transpose,
    "ravel": lambda self: A.ravel(self), "flatten": lambda self: A.ravel(self),
    "astype": lambda self, dtype: dtypes.cast(self, D.to_kiln(dtype)),
    "clip": lambda self, a_min=None, a_max=None: M.clip(self, a_min, a_max),
    "tolist": lambda self: self.numpy().tolist(),
    "max": lambda self, axis=None, keepdims=False: M.amax(self, axis, keepdims),
    "min": lambda self, axis=None, keepdims=False: M.amin(self, axis, keepdims),
    "mean": lambda self, axis=None, keepdims=False: M.mean(self, axis, keepdims=keepdims),
    "__round__": lambda self, ndigits=None: M.around(self, ndigits or 0),
}


def _getitem(original):
    def getitem(self, key):
        try:
            return original(self, key)
        except TypeError:
            out = _advanced_index(self, key)
            if out is None:
                raise
            return out
    return getitem


def _index_array(k):
    """k as a 1-D (or N-D integer) int64 index tensor when it is an index array (a list or
    tuple of ints or bools, a NumPy array, an integer or 1-D bool tensor), else None."""
    if isinstance(k, (Tensor, Variable)):
        if k.dtype.is_bool and k.ndim == 1:
            return array_ops.reshape(array_ops.where(k), [-1])
        return D.cast(k, _INT64) if k.dtype.is_integer and k.ndim >= 1 else None
    if not isinstance(k, (list, tuple, np.ndarray)) or any(
            isinstance(v, (Tensor, Variable)) for v in np.ravel(np.asarray(k, dtype=object))):
        return None
    arr = np.asarray(k)
    if arr.dtype == np.bool_ and arr.ndim == 1:
        arr = np.nonzero(arr)[0]
    return D.cast(arr.astype(np.int64), _INT64) if arr.dtype.kind in "iu" else None


def _advanced_index(x, key):
    """NumPy's integer- and boolean-array indexing for the common forms: leading ints, then
    one index array among full slices (`x[:, [0, 2]]`, `x[:, (True, False, True)]`: a gather
    along that axis) or index arrays for every remaining axis (`x[1, (0, 0, 1), [0, 1, 1]]`:
    a gather_nd); None for other keys."""
    key = key if isinstance(key, tuple) else (key,)
    lead = 0
    while lead < len(key) and isinstance(key[lead], (int, np.integer)) and \
            not isinstance(key[lead], bool):
        lead += 1
    if 0 < lead < len(key):
        return _advanced_index(x[key[:lead]], key[lead:])
    idx = [_index_array(k) for k in key]
    arrays = [i for i, a in enumerate(idx) if a is not None]
    if not arrays:
        return None
    full = [isinstance(k, slice) and k == slice(None) for k in key]
    if len(arrays) == 1 and all(full[i] for i in range(len(key)) if i != arrays[0]):
        return array_ops.gather(x, idx[arrays[0]], axis=arrays[0])
    if len(arrays) == len(key):
        shape = np.broadcast_shapes(*[tuple(t.shape.as_list()) for t in idx])
        idx = [array_ops.broadcast_to(t, list(shape)) for t in idx]
        return array_ops.gather_nd(x, array_ops.stack(idx, axis=-1))
    return None


def _set(cls, name, value):
    if (cls, name) not in _SAVED:
        _SAVED[(cls, name)] = cls.__dict__.get(name)
    setattr(cls, name, value)


def enable(prefer_float32=False):
    """Turns NumPy behavior on (idempotent; prefer_float32 is updated each call)."""
    D.set_prefer_float32(prefer_float32)
    if _SAVED:
        return
    for cls in (Tensor, Variable):
        for name in _NAMES:
            original = cls.__dict__.get(name)
            if original is not None:
                _set(cls, name, _promoting(original))
    for name, method in _METHODS.items():
        _set(Tensor, name, method)
    _set(Tensor, "__getitem__", _getitem(Tensor.__dict__["__getitem__"]))


def disable():
    """Restores kiln's own operators and methods (kiln only; tests use it)."""
    for (cls, name), original in _SAVED.items():
        if original is None:
            delattr(cls, name)
        else:
            setattr(cls, name, original)
    _SAVED.clear()
    D.set_prefer_float32(False)


def enabled():
    return bool(_SAVED)
