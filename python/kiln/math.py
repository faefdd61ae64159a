"""tf.math: elementwise math, comparisons, logical ops, reductions and scans."""
from kiln.ops.math_ops import *  # noqa: F401,F403
from kiln.ops.math_ops import (is_nan, is_finite, is_inf, reciprocal, softplus,  # noqa: F401
                               log_sigmoid, count_nonzero, divide_no_nan, reduce_variance,
                               reduce_std, reduce_logsumexp)
from kiln.ops.nn_ops import softmax, log_softmax, l2_normalize  # noqa: F401
from kiln.ops.special import erf, erfc  # noqa: F401
from kiln.ops.linalg_ops import matmul  # noqa: F401
from kiln.ops import math_ops as _m

__all__ = _m.__all__ + _m.MATH_ONLY + ["softmax", "log_softmax", "l2_normalize", "erf", "erfc"]
