"""kiln.keras.metrics: stateful metrics (tf.keras.metrics).

A Metric keeps its state in non-trainable variables: ``update_state`` adds a
batch, ``result`` reads the value, ``reset_state`` zeroes it, and calling the
metric does update then result. Updates are kiln ops (variable assign_add), so
they run eagerly and inside a kiln.function such as the compiled train step.

    m = kiln.keras.metrics.SparseCategoricalAccuracy()
    m.update_state([1, 2], [[0.1, 0.9, 0.0], [0.8, 0.1, 0.1]])
    m.result()   # 0.5
"""
import numpy as np

from kiln import _kiln
from kiln.dtypes import cast
from kiln.keras import initializers
from kiln.keras import losses as losses_mod
from kiln.keras.losses import to_tensor, pred_tensor, match_ranks, sparse_labels
from kiln.keras._registry import Registry
from kiln.module import Module
from kiln.ops import array_ops, math_ops
from kiln.scopes import init_scope

__all__ = ["Metric", "Reduce", "Sum", "Mean", "MeanMetricWrapper", "Accuracy",
           "BinaryAccuracy", "CategoricalAccuracy", "SparseCategoricalAccuracy",
           "MeanSquaredError", "MeanAbsoluteError", "CategoricalCrossentropy",
           "SparseCategoricalCrossentropy", "BinaryCrossentropy", "accuracy",
           "binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy",
           "mean_squared_error", "mse", "mean_absolute_error", "mae",
           "categorical_crossentropy", "sparse_categorical_crossentropy",
           "binary_crossentropy", "get", "serialize", "deserialize"]


class Metric(Module):
    """Base class of metrics (tf.keras.metrics.Metric).

    Subclasses create state with ``add_weight`` (or ``add_variable``) in
    __init__ and implement ``update_state(...)`` and ``result()``.
    """

    def __init__(self, name=None, dtype=None):
        super().__init__(name=name or losses_mod._snake(type(self).__name__))
        self._dtype = _kiln.as_dtype(dtype or "float32")
        self._kiln_vars = []

    @property
    def dtype(self):
        return self._dtype.name

    def add_weight(self, name=None, shape=(), aggregation="sum", synchronization=None,
                   initializer="zeros", dtype=None):
        """A non-trainable state variable (created eagerly even while tracing)."""
        shape = tuple(int(d) for d in (shape or ()))
        dtype = _kiln.as_dtype(dtype or self._dtype)
        init = initializers.get(initializer)
        with init_scope():
            value = init(shape, dtype=dtype)
            if isinstance(value, _kiln.Variable):
                value = value.read_value()
            if not isinstance(value, _kiln.Tensor):
                value = _kiln.convert_to_tensor(np.asarray(value, dtype=dtype.name))
            v = _kiln.Variable(value, trainable=False, name=f"{self.name}/{name or 'state'}")
        self._kiln_vars.append(v)
        return v

    def add_variable(self, shape=(), initializer="zeros", dtype=None, aggregation="sum",
                     name=None):
        """Keras 3's name for add_weight."""
        return self.add_weight(name=name, shape=shape, initializer=initializer, dtype=dtype)

    @property
    def variables(self):
        """The state variables, in creation order."""
        out = list(self._kiln_vars)
        seen = {id(v) for v in out}
        for v in super().variables:
            if id(v) not in seen:
                out.append(v)
        return tuple(out)

    weights = variables

    @property
    def trainable_variables(self):
        return ()

    def update_state(self, *args, **kwargs):
        """Accumulates statistics for one batch; implemented by subclasses."""
        raise NotImplementedError(f"{type(self).__name__} must implement update_state()")

    def result(self):
        """The metric's value as a scalar tensor; implemented by subclasses."""
        raise NotImplementedError(f"{type(self).__name__} must implement result()")

    def reset_state(self):
        """Sets every state variable to zero."""
        for v in self.variables:
            v.assign(_kiln.convert_to_tensor(np.zeros(tuple(v.shape), dtype=v.dtype.name)))

    reset_states = reset_state  # the TF 2.x name

    def __call__(self, *args, **kwargs):
        """update_state(*args, **kwargs), then result()."""
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<kiln.keras.metrics.{type(self).__name__} name={self.name!r}>"


class Reduce(Metric):
    """Sums values (and counts them) across batches: the base of Sum and Mean."""

    _kiln_mean = False

    def __init__(self, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_weight("total")
        if self._kiln_mean:
            self.count = self.add_weight("count")

    def update_state(self, values, sample_weight=None):
        """Adds sum(values * sample_weight) (and the summed weights, for Mean)."""
        values = to_tensor(values, self._dtype)
        if sample_weight is not None:
            sw = to_tensor(sample_weight, self._dtype)
            values, sw = _weights_like(values, sw)
            self.total.assign_add(math_ops.reduce_sum(values * sw))
            if self._kiln_mean:
                self.count.assign_add(math_ops.reduce_sum(sw))
            return
        self.total.assign_add(math_ops.reduce_sum(values))
        if self._kiln_mean:
            self.count.assign_add(cast(array_ops.size(values), self._dtype))

    def result(self):
        if self._kiln_mean:
            return math_ops.divide_no_nan(self.total.read_value(), self.count.read_value())
        return self.total.read_value()


def _weights_like(values, sw):
    """(values, weights) broadcast to one shape: [B, 1] weights squeeze onto
    [B] values; [B] weights expand over the trailing axes of [B, ...] values."""
    rv, rw = losses_mod.rank(values), losses_mod.rank(sw)
    if rv is not None and rw is not None:
        if rw == rv + 1 and losses_mod.last_dim(sw) == 1:
            sw = array_ops.squeeze(sw, [-1])
        elif rv == rw + 1 and losses_mod.last_dim(values) == 1 and rw > 0:
            values = array_ops.squeeze(values, [-1])
        else:
            while 0 < rw < rv:
                sw = array_ops.expand_dims(sw, -1)
                rw += 1
    sw = sw * array_ops.ones_like(values)  # each value counts with its own weight
    return values, sw


class Sum(Reduce):
    """The (weighted) sum of every value seen (tf.keras.metrics.Sum)."""


class Mean(Reduce):
    """The (weighted) mean of every value seen (tf.keras.metrics.Mean)."""

    _kiln_mean = True


class MeanMetricWrapper(Mean):
    """The mean of ``fn(y_true, y_pred, **kwargs)`` over every sample seen."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        if not callable(fn):
            raise TypeError(f"MeanMetricWrapper needs a callable, got {fn!r}")
        super().__init__(name=name or getattr(fn, "__name__", None), dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Adds the per-sample values of fn for one batch."""
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        return super().update_state(values, sample_weight=sample_weight)

    def get_config(self):
        config = super().get_config()
        config.update(self._fn_kwargs)
        return config


# ---- accuracy functions: 1.0 per correct sample, else 0.0 ----

def accuracy(y_true, y_pred):
    """1.0 where y_true == y_pred elementwise (tf.keras.metrics.accuracy)."""
    y_pred = to_tensor(y_pred)
    y_true = match_ranks(to_tensor(y_true, y_pred.dtype), y_pred)
    return cast(math_ops.equal(y_true, y_pred), "float32")


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """The fraction of the last axis where (y_pred > threshold) equals y_true."""
    y_pred = pred_tensor(y_pred)
    y_true = match_ranks(to_tensor(y_true, y_pred.dtype), y_pred)
    hit = math_ops.equal(y_true, cast(math_ops.greater(y_pred, threshold), y_pred.dtype))
    return math_ops.reduce_mean(cast(hit, y_pred.dtype), axis=-1)


def categorical_accuracy(y_true, y_pred):
    """1.0 where argmax(y_pred) == argmax(y_true) over the last axis."""
    y_pred = pred_tensor(y_pred)
    y_true = to_tensor(y_true)
    hit = math_ops.equal(math_ops.argmax(y_true, axis=-1), math_ops.argmax(y_pred, axis=-1))
    return cast(hit, y_pred.dtype)


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where argmax(y_pred) over the last axis equals the integer label."""
    y_pred = pred_tensor(y_pred)
    labels = sparse_labels(y_true, y_pred, "sparse_categorical_accuracy")
    guess = math_ops.argmax(y_pred, axis=-1, output_type=labels.dtype)
    return cast(math_ops.equal(labels, guess), y_pred.dtype)


mean_squared_error = mse = losses_mod.mean_squared_error
mean_absolute_error = mae = losses_mod.mean_absolute_error
categorical_crossentropy = losses_mod.categorical_crossentropy
sparse_categorical_crossentropy = losses_mod.sparse_categorical_crossentropy
binary_crossentropy = losses_mod.binary_crossentropy


# ---- metric classes ----

class Accuracy(MeanMetricWrapper):
    """How often predictions equal labels exactly."""

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name=name, dtype=dtype)


class BinaryAccuracy(MeanMetricWrapper):
    """How often (y_pred > threshold) equals the 0/1 label."""

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=float(threshold))


class CategoricalAccuracy(MeanMetricWrapper):
    """How often argmax(y_pred) equals argmax of the one-hot label."""

    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name=name, dtype=dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often argmax(y_pred) equals the integer label."""

    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)


class MeanSquaredError(MeanMetricWrapper):
    """The mean of mean_squared_error over every sample seen."""

    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, name=name, dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    """The mean of mean_absolute_error over every sample seen."""

    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, name=name, dtype=dtype)


class CategoricalCrossentropy(MeanMetricWrapper):
    """The mean categorical crossentropy over every sample seen."""

    def __init__(self, name="categorical_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0.0, axis=-1):
        super().__init__(categorical_crossentropy, name=name, dtype=dtype,
                         from_logits=bool(from_logits), label_smoothing=label_smoothing,
                         axis=axis)


class SparseCategoricalCrossentropy(MeanMetricWrapper):
    """The mean sparse categorical crossentropy over every sample seen."""

    def __init__(self, name="sparse_categorical_crossentropy", dtype=None, from_logits=False,
                 axis=-1):
        super().__init__(sparse_categorical_crossentropy, name=name, dtype=dtype,
                         from_logits=bool(from_logits), axis=axis)


class BinaryCrossentropy(MeanMetricWrapper):
    """The mean binary crossentropy over every sample seen."""

    def __init__(self, name="binary_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0.0):
        super().__init__(binary_crossentropy, name=name, dtype=dtype,
                         from_logits=bool(from_logits), label_smoothing=label_smoothing)


# ---- lookup ----

_REGISTRY = Registry("metric", Metric, (
    Sum, Mean, Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy,
    MeanSquaredError, MeanAbsoluteError, CategoricalCrossentropy,
    SparseCategoricalCrossentropy, BinaryCrossentropy), {
    **losses_mod._REGISTRY.functions,  # every loss function is a metric too
    "accuracy": accuracy, "acc": accuracy,
    "binary_accuracy": binary_accuracy, "categorical_accuracy": categorical_accuracy,
    "sparse_categorical_accuracy": sparse_categorical_accuracy,
})


def serialize(metric):
    """A config dict for a Metric, or the name of a metric function."""
    return _REGISTRY.serialize(metric)


def deserialize(config, custom_objects=None):
    """The metric named by ``config``: a function for a function name, an
    instance for a class name or a {'class_name', 'config'} dict."""
    return _REGISTRY.deserialize(config, custom_objects, "metric")


def get(identifier):
    """A metric from a name ('accuracy', 'mse', 'SparseCategoricalAccuracy',
    ...), a config dict, a Metric or a callable. Raises ValueError otherwise."""
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()  # a class: its default instance
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret metric identifier: {identifier!r}")
