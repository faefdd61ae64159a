"""kiln.keras.optimizers.RMSprop: gradients scaled by a running RMS (Hinton's lecture 6e)."""
from kiln import ops as K
from kiln.keras import _sparse_rows
from kiln.keras.optimizers.base_optimizer import Optimizer


class RMSprop(Optimizer):
    """RMSprop (tf.keras.optimizers.RMSprop), with Keras 3's epsilon placement.

    With slot ``v`` (zero at first)::

        v = rho * v + (1 - rho) * g**2
        denominator = v + epsilon             (centered: v - a**2 + epsilon,
                                               where a = rho * a + (1 - rho) * g)
        increment = lr * g / sqrt(denominator)
        w = w - increment                     (momentum > 0: mom = momentum * mom
                                               + increment; w = w - mom)

    Args:
      learning_rate: a float, a LearningRateSchedule or a callable (default 0.001).
      rho: the discount of the running average of squared gradients (default 0.9).
      momentum: a float >= 0 (default 0).
      epsilon: added under the square root (default 1e-7).
      centered: whether to divide by the estimated variance instead of the
        uncentered second moment.
      Other arguments: see ``Optimizer``.
    """

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name="rmsprop", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, weight_decay=weight_decay,
                         clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, use_ema=use_ema,
                         ema_momentum=ema_momentum,
                         ema_overwrite_frequency=ema_overwrite_frequency,
                         loss_scale_factor=loss_scale_factor,
                         gradient_accumulation_steps=gradient_accumulation_steps, **kwargs)
        for what, value in (("rho", rho), ("momentum", momentum), ("epsilon", epsilon)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"Argument `{what}` must be a float >= 0. Received: "
                                 f"{what}={value!r}")
        self.rho = float(rho)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.centered = bool(centered)

    def build(self, var_list):
        """Creates the 'velocity' slots, plus 'momentum' (momentum > 0) and
        'average_gradient' (centered) slots."""
        if self.built:
            return
        super().build(var_list)
        self._velocities = self.add_optimizer_variables(var_list, "velocity")
        self._momentums = []
        if self.momentum > 0:
            self._momentums = self.add_optimizer_variables(var_list, "momentum")
        self._average_gradients = []
        if self.centered:
            self._average_gradients = self.add_optimizer_variables(var_list,
                                                                   "average_gradient")

    def update_step(self, gradient, variable, learning_rate):
        lr = K.cast(learning_rate, variable.dtype)
        i = self._get_variable_index(variable)
        rho = self.rho
        velocity = self._velocities[i]
        velocity.assign(velocity * rho + _sparse_rows.square(gradient, variable) * (1 - rho))
        if self.centered:
            average = self._average_gradients[i]
            average.assign(average * rho + gradient * (1 - rho))
            denominator = velocity - K.square(average.value()) + self.epsilon
        else:
            denominator = velocity + self.epsilon
        increment = lr * gradient / K.sqrt(denominator)
        if self.momentum > 0:
            momentum = self._momentums[i]
            momentum.assign(momentum * self.momentum + increment)
            variable.assign_sub(momentum.value())
        else:
            variable.assign_sub(increment)

    def get_config(self):
        config = super().get_config()
        config.update({"rho": self.rho, "momentum": self.momentum,
                       "epsilon": self.epsilon, "centered": self.centered})
        return config
