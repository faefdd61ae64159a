"""kiln's ops under TensorFlow's names. Each wrapper converts its arguments and
calls ops of the C++ table (kiln._kiln.raw.<TypeName>), so it runs eagerly or is
recorded while a function is traced. The families live in *_ops.py; the
namespaces kiln.math, kiln.nn, kiln.random, kiln.bitwise and kiln.linalg
re-export them."""
from kiln.dtypes import cast
from kiln.ops.core import is_tensor, range, print  # noqa: A004
from kiln.ops.math_ops import *  # noqa: F401,F403
from kiln.ops.array_ops import *  # noqa: F401,F403
from kiln.ops.linalg_ops import einsum, matmul, eye, norm
from kiln.ops.sort_ops import sort, argsort
from kiln.ops.complex_ops import complex  # noqa: A004
from kiln.ops.histogram_ops import histogram_fixed_width, histogram_fixed_width_bins
from kiln.ops import math_ops as _math_ops
from kiln.ops import array_ops as _array_ops

__all__ = (["cast", "is_tensor", "range", "print", "einsum", "matmul", "eye", "norm", "sort", "argsort", "complex",
            "histogram_fixed_width", "histogram_fixed_width_bins"] + _math_ops.__all__ +
           _array_ops.__all__)
