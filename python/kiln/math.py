"""tf.math: elementwise math, comparisons, logical ops, reductions and scans."""
from kiln.ops.math_ops import *  # noqa: F401,F403
from kiln.ops.nn_ops import softmax, log_softmax, l2_normalize  # noqa: F401
from kiln.ops.special import erf, erfc  # noqa: F401
from kiln.ops.linalg_ops import matmul  # noqa: F401
from kiln.ops.sort_ops import top_k  # noqa: F401
from kiln.ops.complex_ops import real, imag, conj  # noqa: F401
from kiln.ops.histogram_ops import bincount  # noqa: F401
from kiln.ops import math_ops as _m

# The tf.math-only names, from their one list in math_ops.
globals().update({_name: getattr(_m, _name) for _name in _m.MATH_ONLY})

__all__ = _m.__all__ + _m.MATH_ONLY + ["softmax", "log_softmax", "l2_normalize", "erf", "erfc",
                                            "top_k", "real", "imag", "conj", "bincount"]
