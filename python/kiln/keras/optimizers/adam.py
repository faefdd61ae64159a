"""kiln.keras.optimizers.Adam: adaptive moment estimation (Kingma & Ba, 2014)."""
from kiln import ops as K
from kiln.keras import _sparse_rows
from kiln.keras.optimizers.base_optimizer import Optimizer


def _check_beta(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"Argument `{what}` must be a float in [0, 1). Received: "
                         f"{what}={value!r}")
    return float(value)


class Adam(Optimizer):
    """Adam (tf.keras.optimizers.Adam), with Keras 3's epsilon placement.

    With ``t = iterations + 1`` and slots ``m``, ``v`` (zero at first)::

        m = m + (g - m) * (1 - beta_1)
        v = v + (g**2 - v) * (1 - beta_2)
        alpha = lr * sqrt(1 - beta_2**t) / (1 - beta_1**t)
        w = w - alpha * m / (sqrt(v) + epsilon)

    With ``amsgrad=True`` a third slot keeps ``v_hat = max(v_hat, v)``, used in
    place of ``v`` in the last line.

    Args:
      learning_rate: a float, a LearningRateSchedule or a callable (default 0.001).
      beta_1, beta_2: decay rates of the first and second moment estimates.
      epsilon: added to sqrt(v) for numerical stability (default 1e-7).
      amsgrad: whether to use the AMSGrad variant.
      Other arguments: see ``Optimizer``.
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name="adam", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, weight_decay=weight_decay,
                         clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, use_ema=use_ema,
                         ema_momentum=ema_momentum,
                         ema_overwrite_frequency=ema_overwrite_frequency,
                         loss_scale_factor=loss_scale_factor,
                         gradient_accumulation_steps=gradient_accumulation_steps, **kwargs)
        self.beta_1 = _check_beta(beta_1, "beta_1")
        self.beta_2 = _check_beta(beta_2, "beta_2")
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or epsilon < 0:
            raise ValueError(f"Argument `epsilon` must be a float >= 0. Received: "
                             f"epsilon={epsilon!r}")
        self.epsilon = float(epsilon)
        self.amsgrad = bool(amsgrad)

    def build(self, var_list):
        """Creates the 'momentum' and 'velocity' slots (and 'velocity_hat' for
        AMSGrad) of each variable."""
        if self.built:
            return
        super().build(var_list)
        self._momentums, self._velocities = self.add_optimizer_variables(
            var_list, ["momentum", "velocity"])
        self._velocity_hats = []
        if self.amsgrad:
            self._velocity_hats = self.add_optimizer_variables(var_list, "velocity_hat")

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = K.cast(learning_rate, dtype)
        step = K.cast(self.iterations + 1, dtype)
        beta_1_power = K.pow(K.cast(self.beta_1, dtype), step)
        beta_2_power = K.pow(K.cast(self.beta_2, dtype), step)
        i = self._get_variable_index(variable)
        m, v = self._momentums[i], self._velocities[i]
        alpha = lr * K.sqrt(1 - beta_2_power) / (1 - beta_1_power)
        m.assign_add((gradient - m) * (1 - self.beta_1))
        v.assign_add((_sparse_rows.square(gradient, variable) - v) * (1 - self.beta_2))
        v = v.value()
        if self.amsgrad:
            v_hat = self._velocity_hats[i]
            v_hat.assign(K.maximum(v_hat, v))
            v = v_hat.value()
        variable.assign_sub((m * alpha) / (K.sqrt(v) + self.epsilon))

    def get_config(self):
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2,
                       "epsilon": self.epsilon, "amsgrad": self.amsgrad})
        return config
