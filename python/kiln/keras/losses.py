"""kiln.keras.losses: loss classes and functions (tf.keras.losses).

A loss function maps ``(y_true, y_pred)`` to one value per sample (the last
axis is reduced); a ``Loss`` object weights those values by ``sample_weight``
and reduces them to a scalar:

    loss = kiln.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    loss(labels, logits)            # mean over the batch
    loss(labels, logits, sample_weight=w)

Everything is written with kiln ops, so losses run eagerly and inside a
kiln.function, and a GradientTape differentiates through them. The
``from_logits=True`` paths use log_softmax / softplus forms, which stay finite
for large logits; the probability paths clip to [epsilon, 1 - epsilon].
"""
import warnings

import numpy as np

from kiln import _kiln
from kiln import errors
from kiln.distribute import distribute_lib
from kiln.dtypes import cast
from kiln.ops import array_ops, math_ops, nn_ops
from kiln.tensor_shape import TensorShape
from kiln.keras import activations
from kiln.keras._registry import Registry

raw = _kiln.raw

EPSILON = 1e-7  # Keras' backend.epsilon(): the clip margin for probabilities
REDUCTIONS = ("sum_over_batch_size", "sum", "none")

__all__ = ["Loss", "LossFunctionWrapper", "MeanSquaredError", "MeanAbsoluteError",
           "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "BinaryCrossentropy",
           "mean_squared_error", "mse", "MSE", "mean_absolute_error", "mae", "MAE",
           "categorical_crossentropy", "sparse_categorical_crossentropy",
           "binary_crossentropy", "get", "serialize", "deserialize"]


# ---- conversion and shape helpers (shared with kiln.keras.metrics) ----

def to_tensor(x, dtype=None):
    """x as a tensor: variables are read, NumPy float64 becomes float32 (floatx),
    other NumPy/Python values keep their dtype unless ``dtype`` is given."""
    if isinstance(x, _kiln.Variable):
        x = x.read_value()
    if not isinstance(x, _kiln.Tensor):
        a = np.asarray(x)
        if dtype is None and a.dtype == np.float64:
            dtype = "float32"
        if a.dtype == np.bool_ and dtype is None:
            dtype = "float32"
        x = _kiln.convert_to_tensor(a.astype(_kiln.as_dtype(dtype).name) if dtype else a)
    if dtype is not None and x.dtype != _kiln.as_dtype(dtype):
        x = cast(x, dtype)
    return x


def pred_tensor(y_pred):
    """y_pred as a floating tensor (integer predictions become float32)."""
    y_pred = to_tensor(y_pred)
    if not y_pred.dtype.is_floating:
        y_pred = cast(y_pred, "float32")
    return y_pred


def rank(x):
    return TensorShape(x.shape).rank


def last_dim(x):
    shape = TensorShape(x.shape)
    return None if not shape.rank else shape[-1]


def match_ranks(y_true, y_pred):
    """Keras' squeeze-or-expand: when the ranks differ by one and the extra
    last axis has size 1, y_true is reshaped to y_pred's rank, so [B] labels
    against [B, 1] predictions do not broadcast to [B, B]."""
    rt, rp = rank(y_true), rank(y_pred)
    if rt is None or rp is None:
        return y_true
    if rp == rt + 1 and last_dim(y_pred) == 1:
        return array_ops.expand_dims(y_true, -1)
    if rt == rp + 1 and last_dim(y_true) == 1:
        return array_ops.squeeze(y_true, [-1])
    return y_true


def _check_same_shape(y_true, y_pred, what):
    st, sp = TensorShape(y_true.shape), TensorShape(y_pred.shape)
    if not st.is_compatible_with(sp):
        raise ValueError(f"{what}: y_true and y_pred must have the same shape, got "
                         f"y_true.shape={st} and y_pred.shape={sp}")


def _dense_pair(y_true, y_pred):
    y_pred = pred_tensor(y_pred)
    y_true = to_tensor(y_true, y_pred.dtype)
    return match_ranks(y_true, y_pred), y_pred


def _axis_arg(axis):
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an int, got {axis!r}")
    return int(axis)


def _check_smoothing(label_smoothing):
    ls = float(label_smoothing)
    if not 0.0 <= ls <= 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1], got {label_smoothing!r}")
    return ls


# ---- loss functions: one value per sample ----

def mean_squared_error(y_true, y_pred):
    """mean((y_pred - y_true)**2) over the last axis."""
    y_true, y_pred = _dense_pair(y_true, y_pred)
    return math_ops.reduce_mean(math_ops.squared_difference(y_pred, y_true), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """mean(|y_pred - y_true|) over the last axis."""
    y_true, y_pred = _dense_pair(y_true, y_pred)
    return math_ops.reduce_mean(math_ops.abs(y_pred - y_true), axis=-1)


def _keras_logits(y_pred, from_logits, fn_name):
    """(y_pred, from_logits), or the logits of a softmax/sigmoid output of
    kiln.keras.activations and True, as Keras 3 does (with its warning when
    from_logits was already True)."""
    logits = activations.logits_of(y_pred)
    if logits is None:
        return y_pred, from_logits
    if from_logits:
        warnings.warn(f"`{fn_name}` received `from_logits=True`, but the `output` argument was "
                      "produced by a softmax or sigmoid activation and thus does not represent "
                      "logits. Was this intended?", stacklevel=3)
    return logits, True


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """-sum(y_true * log(p)) over ``axis``, with y_true one-hot (or a
    distribution). p = softmax(y_pred) when from_logits (computed as
    log_softmax), else y_pred normalized to sum 1 and clipped to
    [EPSILON, 1 - EPSILON]. label_smoothing s: y_true * (1 - s) + s / classes."""
    axis = _axis_arg(axis)
    ls = _check_smoothing(label_smoothing)
    y_pred, from_logits = _keras_logits(y_pred, from_logits, "categorical_crossentropy")
    y_pred = pred_tensor(y_pred)
    y_true = to_tensor(y_true, y_pred.dtype)
    _check_same_shape(y_true, y_pred, "categorical_crossentropy")
    if ls:
        n = array_ops.shape(y_pred)[axis]
        y_true = y_true * (1.0 - ls) + ls / cast(n, y_pred.dtype)
    if from_logits:
        return nn_ops.softmax_cross_entropy_with_logits(y_true, y_pred, axis=axis)
    p = y_pred / math_ops.reduce_sum(y_pred, axis=axis, keepdims=True)
    p = math_ops.clip_by_value(p, EPSILON, 1.0 - EPSILON)
    return -math_ops.reduce_sum(y_true * math_ops.log(p), axis=axis)


def _check_labels_eagerly(labels, classes):
    # Out-of-range labels would silently get a zero one-hot row; TensorFlow
    # raises. Checked when the values are at hand (eagerly), not in graphs.
    if classes is None or not _kiln.executing_eagerly():
        return
    v = labels.numpy()
    if v.size and (v.min() < 0 or v.max() >= classes):
        bad = v[(v < 0) | (v >= classes)].ravel()[0]
        raise errors.InvalidArgumentError(
            f"sparse_categorical_crossentropy: received a label value of {bad} which is "
            f"outside the valid range of [0, {classes})")


def sparse_labels(y_true, y_pred, what):
    """Integer class labels shaped like y_pred without its last axis
    ([B] and [B, 1] labels both work with [B, C] predictions)."""
    y_true = to_tensor(y_true)
    if not y_true.dtype.is_integer:
        y_true = cast(y_true, "int64")
    rt, rp = rank(y_true), rank(y_pred)
    if rt is not None and rp is not None:
        if rt == rp and last_dim(y_true) == 1:
            y_true = array_ops.squeeze(y_true, [-1])
        elif rt != rp - 1:
            raise ValueError(f"{what}: y_true must be class indices of shape "
                             f"{TensorShape(y_pred.shape)[:-1]} (or with a last axis of 1) "
                             f"for y_pred of shape {TensorShape(y_pred.shape)}; got "
                             f"y_true.shape={TensorShape(y_true.shape)}")
    return y_true


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1,
                                    ignore_class=None):
    """-log(p[y_true]) per sample, with y_true integer class indices; p as in
    categorical_crossentropy. Only axis=-1 is supported."""
    y_pred, from_logits = _keras_logits(y_pred, from_logits, "sparse_categorical_crossentropy")
    y_pred = pred_tensor(y_pred)
    axis = _axis_arg(axis)
    if axis != -1 and axis != (rank(y_pred) or 0) - 1:
        raise NotImplementedError("sparse_categorical_crossentropy: only axis=-1 is supported")
    if ignore_class is not None:
        raise NotImplementedError("sparse_categorical_crossentropy: ignore_class is not "
                                  "supported yet")
    labels = sparse_labels(y_true, y_pred, "sparse_categorical_crossentropy")
    _check_labels_eagerly(labels, last_dim(y_pred))
    if from_logits:
        return nn_ops.sparse_softmax_cross_entropy_with_logits(labels, y_pred)
    p = y_pred / math_ops.reduce_sum(y_pred, axis=-1, keepdims=True)
    p = math_ops.clip_by_value(p, EPSILON, 1.0 - EPSILON)
    depth = array_ops.shape(y_pred)[-1]
    onehot = array_ops.one_hot(labels, depth, dtype=y_pred.dtype)
    return -math_ops.reduce_sum(onehot * math_ops.log(p), axis=-1)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """mean(-(y log p + (1 - y) log(1 - p))) over ``axis``: p = sigmoid(y_pred)
    when from_logits (computed with softplus forms), else y_pred clipped to
    [EPSILON, 1 - EPSILON]. label_smoothing s: y * (1 - s) + s / 2."""
    axis = _axis_arg(axis)
    ls = _check_smoothing(label_smoothing)
    y_pred, from_logits = _keras_logits(y_pred, from_logits, "binary_crossentropy")
    y_true, y_pred = _dense_pair(y_true, y_pred)
    if ls:
        y_true = y_true * (1.0 - ls) + 0.5 * ls
    if from_logits:
        per = nn_ops.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        p = math_ops.clip_by_value(y_pred, EPSILON, 1.0 - EPSILON)
        per = -(y_true * math_ops.log(p) + (1.0 - y_true) * math_ops.log(1.0 - p))
    return math_ops.reduce_mean(per, axis=axis)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error


# ---- reduction ----

def _reduction_arg(reduction):
    if reduction == "auto" or reduction is None:
        return "sum_over_batch_size"
    if reduction not in REDUCTIONS:
        raise ValueError(f"Invalid value for argument `reduction`. Expected one of "
                         f"{list(REDUCTIONS)}. Received: reduction={reduction!r}")
    return reduction


def _align_weight(sw, losses):
    """sample_weight shaped to broadcast against the per-sample losses: a last
    axis of 1 is squeezed, missing trailing axes are added."""
    rl, rw = rank(losses), rank(sw)
    if rl is None or rw is None:
        return sw
    if rw == rl + 1 and last_dim(sw) == 1:
        return array_ops.squeeze(sw, [-1])
    while rw < rl and rw > 0:
        sw = array_ops.expand_dims(sw, -1)
        rw += 1
    if rw > rl:
        raise ValueError(f"sample_weight of shape {TensorShape(sw.shape)} does not fit losses "
                         f"of shape {TensorShape(losses.shape)}")
    return sw


def reduce_weighted(losses, sample_weight=None, reduction="sum_over_batch_size"):
    """losses * sample_weight, then summed ('sum'), summed and divided by the
    number of loss values ('sum_over_batch_size', then by the number of
    replicas in sync under a kiln.distribute strategy) or kept ('none')."""
    if sample_weight is not None:
        sw = _align_weight(to_tensor(sample_weight, losses.dtype), losses)
        losses = losses * sw
    if reduction == "none":
        return losses
    total = math_ops.reduce_sum(losses)
    if reduction == "sum":
        return total
    n = array_ops.size(losses)
    # Under a strategy with several replicas each replica's mean is divided by
    # their number, so the gradients summed over the replicas are the global mean's.
    return distribute_lib.scale_loss_for_distribution(
        math_ops.divide_no_nan(total, cast(n, losses.dtype)))


def _widen(x):
    """float16 / bfloat16 tensors as float32; anything else as it is."""
    if isinstance(x, _kiln.Tensor) and x.dtype.name in ("float16", "bfloat16"):
        return cast(x, "float32")
    return x


# ---- Loss classes ----

class Loss:
    """Base class of losses (tf.keras.losses.Loss).

    Subclasses implement ``call(y_true, y_pred)`` returning one value per
    sample; ``__call__(y_true, y_pred, sample_weight=None)`` weights and
    reduces them. reduction: 'sum_over_batch_size' (default; 'auto' means the
    same), 'sum' or 'none'.
    """

    def __init__(self, reduction="sum_over_batch_size", name=None):
        self.reduction = _reduction_arg(reduction)
        self.name = name or _snake(type(self).__name__)

    def __call__(self, y_true, y_pred, sample_weight=None):
        # Keras 3's losses compute in their dtype (float32): a mixed-precision
        # model's float16 / bfloat16 outputs are cast first.
        losses = self.call(_widen(y_true), _widen(y_pred))
        losses = to_tensor(losses)
        if not losses.dtype.is_floating:
            losses = cast(losses, "float32")
        return reduce_weighted(losses, sample_weight, self.reduction)

    def call(self, y_true, y_pred):
        """The per-sample losses; implemented by subclasses."""
        raise NotImplementedError(f"{type(self).__name__} must implement call(y_true, y_pred)")

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<kiln.keras.losses.{type(self).__name__} name={self.name!r}>"


def _snake(name):
    out = []
    for i, c in enumerate(name):
        if c.isupper() and i and (not name[i - 1].isupper() or
                                  (i + 1 < len(name) and name[i + 1].islower())):
            out.append("_")
        out.append(c.lower())
    return "".join(out)


class LossFunctionWrapper(Loss):
    """A Loss computing ``fn(y_true, y_pred, **kwargs)`` per sample."""

    def __init__(self, fn, reduction="sum_over_batch_size", name=None, **kwargs):
        if not callable(fn):
            raise TypeError(f"LossFunctionWrapper needs a callable, got {fn!r}")
        super().__init__(reduction=reduction, name=name or getattr(fn, "__name__", None))
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        config = super().get_config()
        config.update(self._fn_kwargs)
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)  # subclasses fix fn in __init__


class MeanSquaredError(LossFunctionWrapper):
    """mean((y_pred - y_true)**2) (tf.keras.losses.MeanSquaredError)."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error"):
        super().__init__(mean_squared_error, reduction=reduction, name=name)


class MeanAbsoluteError(LossFunctionWrapper):
    """mean(|y_pred - y_true|) (tf.keras.losses.MeanAbsoluteError)."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_error"):
        super().__init__(mean_absolute_error, reduction=reduction, name=name)


class CategoricalCrossentropy(LossFunctionWrapper):
    """Crossentropy of one-hot labels (see categorical_crossentropy)."""

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="categorical_crossentropy"):
        super().__init__(categorical_crossentropy, reduction=reduction, name=name,
                         from_logits=bool(from_logits),
                         label_smoothing=_check_smoothing(label_smoothing),
                         axis=_axis_arg(axis))


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    """Crossentropy of integer class labels (see sparse_categorical_crossentropy)."""

    def __init__(self, from_logits=False, ignore_class=None,
                 reduction="sum_over_batch_size", name="sparse_categorical_crossentropy"):
        if ignore_class is not None:
            raise NotImplementedError("SparseCategoricalCrossentropy: ignore_class is not "
                                      "supported yet")
        super().__init__(sparse_categorical_crossentropy, reduction=reduction, name=name,
                         from_logits=bool(from_logits))


class BinaryCrossentropy(LossFunctionWrapper):
    """Crossentropy of 0/1 labels (see binary_crossentropy)."""

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="binary_crossentropy"):
        super().__init__(binary_crossentropy, reduction=reduction, name=name,
                         from_logits=bool(from_logits),
                         label_smoothing=_check_smoothing(label_smoothing),
                         axis=_axis_arg(axis))


# ---- lookup ----

_REGISTRY = Registry("loss", Loss, (
    MeanSquaredError, MeanAbsoluteError, CategoricalCrossentropy, SparseCategoricalCrossentropy,
    BinaryCrossentropy), {
    "mean_squared_error": mean_squared_error, "mse": mean_squared_error,
    "MSE": mean_squared_error,
    "mean_absolute_error": mean_absolute_error, "mae": mean_absolute_error,
    "MAE": mean_absolute_error,
    "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "binary_crossentropy": binary_crossentropy,
})


def serialize(loss):
    """A config dict for a Loss, or the name of a loss function."""
    return _REGISTRY.serialize(loss)


def deserialize(config, custom_objects=None):
    """The loss named by ``config``: a function for a function name, an
    instance for a class name or a {'class_name', 'config'} dict."""
    return _REGISTRY.deserialize(config, custom_objects, "loss function")


def get(identifier):
    """A loss from a name ('mse', 'categorical_crossentropy',
    'SparseCategoricalCrossentropy', ...), a config dict, a Loss or a callable;
    None stays None. Raises ValueError for anything else."""
    if identifier is None:
        return None
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()  # a class: its default instance
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret loss function identifier: {identifier!r}")
