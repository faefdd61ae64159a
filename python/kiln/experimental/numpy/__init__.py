"""kiln.experimental.numpy (tf.experimental.numpy): NumPy's API over kiln tensors.

``import kiln.experimental.numpy as tnp``: `tnp.ndarray` is kiln.Tensor; functions take
tensors, NumPy arrays and Python values, give NumPy's dtypes (Python ints int64, floats
float64) and promote operands with NumPy's rules; kiln's ops compute. Works eagerly, inside
kiln.function and under GradientTape. `experimental_enable_numpy_behavior()` also gives
kiln.Tensor's operators NumPy's promotion and adds NumPy's methods (`.T`, `.reshape`, ...)."""
import math as _pymath

from kiln.experimental.numpy import random
from kiln.experimental.numpy import _behavior
from kiln.experimental.numpy._dtypes import (  # noqa: F401
    bool_, int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, float32,
    float64, complex64, complex128, int_, float_, complex_, object_, str_, iinfo, finfo,
    issubdtype, result_type, default_float as _default_float)
from kiln.experimental.numpy._arrays import (  # noqa: F401
    ndarray, newaxis, asarray, asanyarray, array, copy, zeros, ones, empty, full, zeros_like,
    ones_like, empty_like, full_like, eye, identity, arange, linspace, shape, ndim, size,
    reshape, ravel, transpose, swapaxes, moveaxis, squeeze, expand_dims, concatenate, stack,
    atleast_1d, atleast_2d, vstack, hstack, tile, broadcast_to, flip, take, diag)
from kiln.experimental.numpy._math import (  # noqa: F401
    add, subtract, multiply, divide, true_divide, floor_divide, mod, remainder, power,
    maximum, minimum, equal, not_equal, less, less_equal, greater, greater_equal, logical_and,
    logical_or, logical_xor, logical_not, exp, log, log1p, expm1, log2, log10, sqrt, sin, cos,
    tan, tanh, floor, ceil, abs, absolute, negative, square, sign, isnan, isfinite, isinf,
    around, round, round_, clip, where, sum, prod, cumsum, mean, var, std, amax, amin, max,
    min, argmax, argmin, any, all, dot, matmul, outer, isclose, allclose)

pi, e, inf, nan = _pymath.pi, _pymath.e, _pymath.inf, _pymath.nan


def experimental_enable_numpy_behavior(prefer_float32=False, dtype_conversion_mode="legacy"):
    """Turns on NumPy behavior for kiln tensors: NumPy's type promotion in Tensor and
    Variable operators, NumPy's methods on Tensor (`T`, `reshape`, `ravel`, `transpose`,
    `flatten`, `astype`, `clip`, `tolist`, `max`, `min`, `mean`, `size`, `data`) and
    integer-array indexing. prefer_float32 makes Python floats float32."""
    if dtype_conversion_mode not in ("legacy", "off"):
        raise ValueError(f"kiln supports dtype_conversion_mode 'legacy' only, got "
                         f"{dtype_conversion_mode!r}")
    _behavior.enable(prefer_float32)
