"""Complex numbers: tf.complex, tf.math.real / imag / conj (abs is in math_ops)."""
from kiln.ops import _helpers as h

raw = h.raw


def complex(real, imag, name=None):  # noqa: A001
    """real + imag * 1j elementwise (tf.complex): float32 parts give complex64, float64
    parts complex128; the parts broadcast."""
    re, im = h.pair(real, imag, "Complex")
    return raw.Complex(re, im)


def real(input, name=None):  # noqa: A002
    """The real part of a complex tensor; a real tensor is returned as it is (tf.math.real)."""
    t = h.tensor(input)
    return raw.Real(t) if t.dtype.is_complex else t


def imag(input, name=None):  # noqa: A002
    """The imaginary part of a complex tensor; zeros for a real one (tf.math.imag)."""
    t = h.tensor(input)
    return raw.Imag(t) if t.dtype.is_complex else raw.ZerosLike(t)


def conj(x, name=None):
    """The complex conjugate; a real tensor is returned as it is (tf.math.conj)."""
    t = h.tensor(x)
    return raw.Conj(t) if t.dtype.is_complex else t


__all__ = ["complex"]
MATH_ONLY = ["real", "imag", "conj"]
