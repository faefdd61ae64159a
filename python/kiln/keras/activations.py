"""Activation functions by name (kiln.keras.activations).

Each is written with kiln.nn ops so the graph passes see the usual patterns:
relu is a Relu op, swish/silu is ``x * sigmoid(x)``.
"""
import collections

from kiln import _kiln
from kiln.ops import nn_ops, math_ops
from kiln.ops import _helpers as h

raw = _kiln.raw

# Keras 3 keeps the logits of a softmax or sigmoid output (its backend sets
# `output._keras_logits`) and the cross-entropy losses compute from them:
# stable, and no gradient lost where the probabilities saturate. kiln's
# tensors take no attributes, so the last few outputs are remembered here,
# by identity (a loss follows its model's output at once).
_LOGITS = collections.OrderedDict()  # id(output) -> (output, logits)
_KEEP = 8


def _remember_logits(output, logits):
    _LOGITS[id(output)] = (output, logits)
    _LOGITS.move_to_end(id(output))
    while len(_LOGITS) > _KEEP:
        _LOGITS.popitem(last=False)
    return output


def logits_of(output):
    """The logits `output` was computed from by softmax or sigmoid here, else None."""
    entry = _LOGITS.get(id(output))
    return entry[1] if entry is not None and entry[0] is output else None


def _t(x):
    return h.tensor(x)


def _c(v, like):
    return h.tensor(v, like.dtype)


def relu(x, negative_slope=0.0, max_value=None, threshold=0.0, alpha=None):
    """max(x, 0); with ``negative_slope`` (alias ``alpha``), ``max_value`` and
    ``threshold``: max_value for x >= max_value, x above threshold, 0 at it
    (as Keras), and negative_slope * (x - threshold) below it."""
    x = _t(x)
    if alpha is not None:
        negative_slope = alpha
    if negative_slope == 0 and max_value is None and threshold == 0:
        return nn_ops.relu(x)
    if threshold != 0:
        y = raw.SelectV2(raw.Greater(x, _c(threshold, x)), x, h.zero_of(x.dtype))
    else:
        y = nn_ops.relu(x)
    if max_value is not None:
        y = raw.Minimum(y, _c(max_value, x))
    if negative_slope != 0:
        below = raw.Mul(_c(negative_slope, x), raw.Sub(x, _c(threshold, x)))
        y = raw.SelectV2(raw.Less(x, _c(threshold, x)), below, y)
    return y


def relu6(x):
    """min(max(x, 0), 6)."""
    return nn_ops.relu6(x)


def leaky_relu(x, negative_slope=0.2):
    """x for x > 0, negative_slope * x elsewhere."""
    return nn_ops.leaky_relu(x, alpha=negative_slope)


def elu(x, alpha=1.0):
    """x for x > 0, alpha * (exp(x) - 1) elsewhere."""
    x = _t(x)
    y = nn_ops.elu(x)
    if alpha == 1.0:
        return y
    return raw.SelectV2(raw.Greater(x, h.zero_of(x.dtype)), y, raw.Mul(_c(alpha, x), y))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x):
    """Scaled ELU: scale * elu(x, alpha) with the self-normalizing constants."""
    x = _t(x)
    return raw.Mul(_c(_SELU_SCALE, x), elu(x, _SELU_ALPHA))


def sigmoid(x):
    """1 / (1 + exp(-x)); the cross-entropy losses use ``x`` (logits_of)."""
    x = _t(x)
    return _remember_logits(nn_ops.sigmoid(x), x)


def hard_sigmoid(x):
    """Keras 3's piecewise-linear sigmoid: relu6(x + 3) / 6 (Keras 2 had
    clip(0.2 * x + 0.5, 0, 1))."""
    x = _t(x)
    return raw.RealDiv(nn_ops.relu6(raw.AddV2(x, _c(3.0, x))), _c(6.0, x))


def swish(x):
    """x * sigmoid(x) (also called silu)."""
    return nn_ops.silu(x)


silu = swish


def hard_silu(x):
    """x * relu6(x + 3) / 6, Keras 3's hard SiLU (also called hard_swish)."""
    x = _t(x)
    return raw.Mul(x, hard_sigmoid(x))


hard_swish = hard_silu


def tanh(x):
    """Hyperbolic tangent."""
    return nn_ops.tanh(x)


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along ``axis``; the cross-entropy losses use ``x``
    (logits_of)."""
    x = _t(x)
    if x.ndim is not None and x.ndim < 1:
        raise ValueError("softmax: input must have rank >= 1, got a scalar")
    return _remember_logits(nn_ops.softmax(x, axis=axis), x)


def log_softmax(x, axis=-1):
    """x - log(sum(exp(x))) along ``axis``."""
    return nn_ops.log_softmax(x, axis=axis)


def gelu(x, approximate=False):
    """Gaussian error linear unit; ``approximate`` uses the tanh formula."""
    return nn_ops.gelu(x, approximate=approximate)


def softplus(x):
    """log(1 + exp(x))."""
    return math_ops.softplus(x)


def softsign(x):
    """x / (1 + |x|)."""
    x = _t(x)
    return raw.RealDiv(x, raw.AddV2(raw.Abs(x), h.one_of(x.dtype)))


def mish(x):
    """x * tanh(softplus(x))."""
    x = _t(x)
    return raw.Mul(x, raw.Tanh(math_ops.softplus(x)))


def exponential(x):
    """exp(x)."""
    return raw.Exp(_t(x))


def linear(x):
    """The identity."""
    return x


_ALL = {f.__name__: f for f in (relu, relu6, leaky_relu, elu, selu, sigmoid, hard_sigmoid,
                                swish, tanh, softmax, log_softmax, gelu, softplus, softsign,
                                mish, exponential, linear)}
_ALL["silu"] = silu
_ALL["hard_silu"] = _ALL["hard_swish"] = hard_silu


def serialize(activation):
    """The name of a built-in activation; the callable's __name__ otherwise."""
    for name, f in _ALL.items():
        if f is activation:
            return name
    return getattr(activation, "__name__", repr(activation))


def deserialize(name):
    """The activation function named ``name``."""
    if name not in _ALL:
        raise ValueError(f"Unknown activation function: {name!r} (known: {sorted(_ALL)})")
    return _ALL[name]


def get(identifier):
    """An activation from a name, a callable, or None (linear)."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise TypeError(f"Could not interpret activation function identifier: {identifier!r}")
