"""kiln.keras.optimizers.LossScaleOptimizer (also keras.mixed_precision's):
dynamic loss scaling for float16 training, as Keras 3 does it.

The loss is multiplied by ``dynamic_scale`` (``scale_loss``) so that small
float16 gradients do not underflow; ``apply_gradients`` divides the gradients
by it again and checks them: when one is NaN or infinite the step is skipped
(nothing changes but the scale, halved); otherwise the inner optimizer applies
them, and after ``dynamic_growth_steps`` such steps in a row the scale doubles.

The TF 2.x names the mixed-precision guide's custom loop uses are here too:
``get_scaled_loss(loss)`` (= scale_loss), ``get_unscaled_gradients(grads)``
(divides them: the next ``apply_gradients`` then does not divide again),
``loss_scale``, ``dynamic`` and ``dynamic_counter``.

The scale and step counter are created with the optimizer (not by build, as
Keras does) so that a kiln.function tracing ``scale_loss`` before the first
step reads the variable, not the initial value; ``variables`` lists them once
the optimizer is built, as Keras.
"""
import numpy as np

from kiln import _kiln
from kiln import ops as K
from kiln.control_flow import cond
from kiln.distribute import distribute_lib
from kiln.keras.optimizers.base_optimizer import Optimizer
from kiln.ops import math_ops
from kiln.keras.variables import Variable as KerasVariable
from kiln.scopes import init_scope

# Base arguments Keras 3 still accepts (at their defaults) when reading old configs.
_BASE_DEFAULTS = {"weight_decay": None, "clipnorm": None, "global_clipnorm": None,
                  "clipvalue": None, "use_ema": False, "ema_momentum": 0.99,
                  "ema_overwrite_frequency": None, "loss_scale_factor": None,
                  "gradient_accumulation_steps": None}


def _check_kwargs(kwargs):
    if not kwargs.pop("dynamic", True):
        raise ValueError("LossScaleOptimizer no longer supports `dynamic=False`. Instead, "
                         "simply set `loss_scale_factor` directly on the `inner_optimizer`.")
    for name, default in _BASE_DEFAULTS.items():
        if name in kwargs and kwargs.pop(name) != default:
            raise ValueError(f"LossScaleOptimizer does not support `{name}`. Instead, set "
                             f"`{name}` on the `inner_optimizer`.")
    if kwargs:
        raise ValueError("LossScaleOptimizer does not support arguments: "
                         f"`{'`, `'.join(kwargs.keys())}`.")


class LossScaleOptimizer(Optimizer):
    """An optimizer that dynamically scales the loss to prevent underflow
    (tf.keras.mixed_precision.LossScaleOptimizer).

    Args:
      inner_optimizer: the optimizer that applies the unscaled gradients.
      initial_scale: the first loss scale (default 2 ** 15).
      dynamic_growth_steps: finite steps in a row after which the scale doubles.
      name: default "loss_scale_optimizer".
    """

    _kiln_deserialize = None  # optimizers.deserialize, set by kiln.keras.optimizers

    def __init__(self, inner_optimizer, initial_scale=2.0 ** 15, dynamic_growth_steps=2000,
                 name=None, **kwargs):
        _check_kwargs(kwargs)
        if not isinstance(inner_optimizer, Optimizer):
            raise TypeError("LossScaleOptimizer: inner_optimizer must be a kiln.keras "
                            f"optimizer, got {inner_optimizer!r}")
        super().__init__(learning_rate=0.0, name=name)
        self.inner_optimizer = inner_optimizer
        self.initial_scale = initial_scale
        self.dynamic_growth_steps = dynamic_growth_steps
        self.inner_optimizer.loss_scale_factor = None  # not scaled twice
        self._kiln_unscaled = False  # get_unscaled_gradients ran since the last apply
        with init_scope():
            self.step_counter = KerasVariable(_kiln.convert_to_tensor(np.int64(0)),
                                              "step_counter", f"{self.name}/step_counter",
                                              trainable=False)
            self.dynamic_scale = KerasVariable(
                _kiln.convert_to_tensor(np.float32(initial_scale)), "dynamic_scale",
                f"{self.name}/dynamic_scale", trainable=False)

    def build(self, var_list):
        if self.built:
            return
        self._variables += [self.step_counter, self.dynamic_scale]
        if not self.inner_optimizer.built:
            self.inner_optimizer.build(var_list)
        super().build(var_list)

    @property
    def variables(self):
        return list(self._variables) + list(self.inner_optimizer.variables)

    @property
    def learning_rate(self):
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        self.inner_optimizer.learning_rate = value

    @property
    def iterations(self):
        return self.inner_optimizer.iterations

    # ---- scaling ----

    def scale_loss(self, loss):
        """``loss * dynamic_scale`` (Keras 3's name)."""
        return loss * K.cast(self.dynamic_scale, loss.dtype)

    def get_scaled_loss(self, loss):
        """``loss * loss_scale``; for a callable loss, a callable (TF 2.x's name)."""
        if callable(loss):
            return lambda: self.scale_loss(loss())
        return self.scale_loss(loss)

    def get_unscaled_gradients(self, grads):
        """The gradients divided by ``loss_scale`` (None stays None); the next
        apply_gradients applies them as they are (TF 2.x's name)."""
        self._kiln_unscaled = True
        return [None if g is None else g * K.cast(1.0 / self.dynamic_scale, g.dtype)
                for g in grads]

    @property
    def loss_scale(self):
        """The current loss scale (a float32 tensor)."""
        return self.dynamic_scale.read_value()

    @property
    def dynamic(self):
        return True

    @property
    def dynamic_counter(self):
        """Finite steps since the scale last changed (an int64 variable)."""
        return self.step_counter

    # ---- applying ----

    def _apply(self, grads, trainable_variables, aggregate):
        unscaled, self._kiln_unscaled = self._kiln_unscaled, False
        grads, trainable_variables = self._gradients_to_apply(grads, trainable_variables)
        if not grads:
            return
        if aggregate:
            grads = distribute_lib.aggregate_gradients(grads, trainable_variables)
        if not unscaled:
            grads = [g / K.cast(self.dynamic_scale, g.dtype) for g in grads]
        finite = self.check_finite(grads)

        def on_finite():
            self.inner_optimizer._apply(grads, trainable_variables, False)
            self._grow()
            return _kiln.convert_to_tensor(np.int32(0))

        def on_non_finite():
            self.step_counter.assign(_kiln.convert_to_tensor(np.int64(0)))
            self.dynamic_scale.assign(self.dynamic_scale * 0.5)
            return _kiln.convert_to_tensor(np.int32(0))

        if _kiln.executing_eagerly():
            (on_finite if bool(finite.numpy()) else on_non_finite)()
        else:
            cond(finite, on_finite, on_non_finite)

    def _grow(self):
        """Doubles the scale after dynamic_growth_steps finite steps in a row."""
        grow = K.equal(self.step_counter, np.int64(self.dynamic_growth_steps - 1))
        self.dynamic_scale.assign(K.where(grow, self.dynamic_scale * 2.0,
                                          self.dynamic_scale.read_value()))
        self.step_counter.assign(K.where(grow, K.zeros_like(self.step_counter),
                                         self.step_counter + np.int64(1)))

    def check_finite(self, grads):
        """A bool scalar: every gradient is free of NaN and infinity."""
        flags = [K.reduce_all(math_ops.is_finite(g)) for g in grads if g is not None]
        return K.reduce_all(K.stack(flags))

    def finalize_variable_values(self, var_list):
        finalize = getattr(self.inner_optimizer, "finalize_variable_values", None)
        if finalize is not None:
            finalize(var_list)

    # ---- config ----

    def get_config(self):
        inner = self.inner_optimizer
        return {"name": self.name,
                "inner_optimizer": {"module": "keras.optimizers",
                                    "class_name": type(inner).__name__,
                                    "config": inner.get_config(), "registered_name": None},
                "initial_scale": self.initial_scale,
                "dynamic_growth_steps": self.dynamic_growth_steps}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        inner = config.pop("inner_optimizer")
        if isinstance(inner, dict):
            inner = cls._kiln_deserialize(inner, custom_objects)
        return cls(inner, **config)
