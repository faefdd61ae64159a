"""Special functions: erf is the Erf op; erfc is composed from kiln's primitive
ops in float64 (no C++ kernel yet)."""
import math as _math

from kiln import errors
from kiln.ops import _helpers as h

raw = h.raw

# erfc(x) is 1 - a Taylor series of erf for |x| < 2 and erfc's continued
# fraction above; both run in float64 (max relative error about 1e-15).
_SPLIT = 2.0
_TAYLOR_TERMS = 32
_CF_TERMS = 40


def _taylor_coefficients():
    # erf(x) = 2/sqrt(pi) * sum_k (-1)^k x^(2k+1) / (k! (2k+1))
    return [(-1) ** k / (_math.factorial(k) * (2 * k + 1)) for k in range(_TAYLOR_TERMS + 1)]


_COEF = _taylor_coefficients()


def _c(v):
    return h.tensor(float(v), "float64")


def _erf_small(x):
    x2 = raw.Square(x)
    acc = _c(_COEF[-1])
    for c in reversed(_COEF[:-1]):
        acc = raw.AddV2(raw.Mul(acc, x2), _c(c))
    return raw.Mul(raw.Mul(x, acc), _c(2.0 / _math.sqrt(_math.pi)))


def _erfc_large(a):
    # erfc(a) = exp(-a^2) / sqrt(pi) / (a + (1/2) / (a + 1 / (a + (3/2) / (a + ...))))
    t = a
    for k in range(_CF_TERMS, 0, -1):
        t = raw.AddV2(a, raw.RealDiv(_c(k / 2.0), t))
    return raw.RealDiv(raw.Mul(raw.Exp(raw.Neg(raw.Square(a))), _c(1.0 / _math.sqrt(_math.pi))),
                       t)


def erf(x, name=None):
    """The error function 2/sqrt(pi) * integral of exp(-t^2) from 0 to x
    (tf.math.erf); floats. The Erf op: float32 within 1 ulp, float64 libm's."""
    return raw.Erf(h.tensor(x))


def erfc(x, name=None):
    """1 - erf(x) (tf.math.erfc); accurate relative values for large x."""
    x = h.tensor(x)
    if not x.dtype.is_floating:
        raise errors.InvalidArgumentError(
            f"Erfc: expected a float32 or float64 tensor, got {x.dtype.name}")
    dt = x.dtype
    xd = x if dt.name == "float64" else raw.Cast(x, DstT="float64")
    a = raw.Abs(xd)
    small = raw.Less(a, _c(_SPLIT))
    lo = raw.Sub(_c(1.0), _erf_small(raw.ClipByValue(xd, _c(-_SPLIT), _c(_SPLIT))))
    tail = _erfc_large(raw.Maximum(a, _c(_SPLIT)))
    hi = raw.SelectV2(raw.Less(xd, _c(0.0)), raw.Sub(_c(2.0), tail), tail)
    out = raw.SelectV2(small, lo, hi)
    return out if dt.name == "float64" else raw.Cast(out, DstT=dt)
