"""kiln.keras.optimizers.Optimizer: the base class of every optimizer (Keras 3's API).

An optimizer owns an ``iterations`` counter (int64) and, for a float learning
rate, a ``learning_rate`` variable, both created with the optimizer. Slot
variables (momentums, velocities, ...) are created by ``build(var_list)``,
which the first ``apply_gradients`` calls: inside a kiln.function that is the
first trace, so calling the same function later with a *new* optimizer creates
variables in a later trace and raises the singleton-variable ValueError, as
``tf.function`` does (the guide's "multiple optimizers" example).

Every update is written with kiln ops, so it runs eagerly or is recorded into
the graph of the kiln.function that calls it (one graph per train step).
"""
import re
import warnings

import numpy as np

from kiln import _kiln, _restore_hooks
from kiln.distribute import distribute_lib
from kiln import ops as K
from kiln.gradient import GradientTape
from kiln.keras import initializers
from kiln.keras.variables import Variable as KerasVariable
from kiln.keras.optimizers import schedules as schedules_mod
from kiln.scopes import init_scope


def _snake(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _var_name(v):
    """A Keras variable's path; a plain variable's name without TensorFlow's ':0'."""
    if isinstance(v, KerasVariable):
        return v.path
    name = v.name
    return name[:-2] if name.endswith(":0") else name


def _check_number(value, what, allow_none=True, positive=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"Argument `{what}` must be a float. Received: {what}={value!r}")
    value = float(value)
    if value < 0 or (positive and value == 0):
        raise ValueError(f"Argument `{what}` must be {'> 0' if positive else '>= 0'}. "
                         f"Received: {what}={value}")
    return value


def _shapes_compatible(a, b):
    a, b = a.as_list() if hasattr(a, "as_list") else list(a), list(b)
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def clip_by_norm(values, clip_norm):
    """values * clip_norm / max(||values||_2, clip_norm): scales the tensor down
    when its L2 norm exceeds clip_norm (a zero tensor stays zero)."""
    l2sum = K.reduce_sum(K.square(values))
    safe = K.where(l2sum > 0, l2sum, K.ones_like(l2sum))
    l2norm = K.where(l2sum > 0, K.sqrt(safe), l2sum)
    return values * clip_norm / K.maximum(l2norm, clip_norm)


def global_norm(values):
    """sqrt(sum of the squares of every element of every tensor in values)."""
    return K.sqrt(K.add_n([K.reduce_sum(K.square(v)) for v in values]))


def clip_by_global_norm(values, clip_norm):
    """Every tensor scaled by clip_norm / max(global_norm(values), clip_norm), so
    their joint L2 norm is at most clip_norm. A NaN/Inf norm gives NaN values."""
    norm = global_norm(values)
    # clip_norm * min(1/norm, 1/clip_norm); "+ (norm - norm)" keeps NaN/Inf visible.
    scale = clip_norm * K.minimum(1.0 / norm, 1.0 / clip_norm) + (norm - norm)
    return [v * scale for v in values]


class Optimizer:
    """The base class of kiln.keras optimizers (tf.keras.optimizers.Optimizer).

    Args:
      learning_rate: a float, a ``LearningRateSchedule`` (called with
        ``iterations``) or a callable taking no argument.
      weight_decay: if set, each step first does ``w -= w * weight_decay * lr``
        (decoupled weight decay) for variables not excluded with
        ``exclude_from_weight_decay``.
      clipnorm: clips each gradient to this L2 norm.
      clipvalue: clips each gradient elementwise to [-clipvalue, clipvalue].
      global_clipnorm: clips all gradients together to this joint L2 norm.
      name: the optimizer's name.

    Subclasses implement ``build(var_list)`` (create slots with
    ``add_variable_from_reference``, after calling ``super().build``) and
    ``update_step(gradient, variable, learning_rate)``.
    """

    def __init__(self, learning_rate, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        if kwargs.pop("decay", None) is not None:
            warnings.warn("Argument `decay` is no longer supported and will be ignored.",
                          stacklevel=3)
        if kwargs:
            raise ValueError(f"Argument(s) not recognized: {kwargs}")
        if use_ema or gradient_accumulation_steps:
            raise NotImplementedError(
                "kiln optimizers do not support use_ema or gradient_accumulation_steps yet")
        self.name = name if name is not None else _snake(type(self).__name__)
        self.weight_decay = _check_number(weight_decay, "weight_decay")
        self.clipnorm = _check_number(clipnorm, "clipnorm")
        self.clipvalue = _check_number(clipvalue, "clipvalue")
        self.global_clipnorm = _check_number(global_clipnorm, "global_clipnorm")
        if sum(c is not None for c in (self.clipnorm, self.clipvalue,
                                       self.global_clipnorm)) > 1:
            raise ValueError("Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can "
                             f"be set. Received: clipnorm={clipnorm}, clipvalue={clipvalue}, "
                             f"global_clipnorm={global_clipnorm}")
        self.use_ema = False
        self.ema_momentum = ema_momentum
        self.ema_overwrite_frequency = ema_overwrite_frequency
        self.loss_scale_factor = _check_number(loss_scale_factor, "loss_scale_factor",
                                               positive=True)
        self.gradient_accumulation_steps = None
        self.built = False
        self._variables = []
        self._trainable_variables = []
        self._var_index = {}
        self._exclude_ids = set()
        self._exclude_names = []
        with init_scope():
            self._iterations = KerasVariable(
                _kiln.convert_to_tensor(np.int64(0)), "iteration", f"{self.name}/iteration",
                trainable=False)
        self._variables.append(self._iterations)
        self._learning_rate = self._make_learning_rate(learning_rate)

    def _make_learning_rate(self, learning_rate):
        if isinstance(learning_rate, schedules_mod.LearningRateSchedule):
            return learning_rate
        if isinstance(learning_rate, (_kiln.Tensor, _kiln.Variable)) and \
                not learning_rate.shape.as_list():
            learning_rate = float(learning_rate.numpy())
        if callable(learning_rate):
            return learning_rate
        if isinstance(learning_rate, bool) or not isinstance(
                learning_rate, (int, float, np.integer, np.floating)):
            raise ValueError(
                "Argument `learning_rate` should be float, or an instance of "
                "LearningRateSchedule, or a callable (that takes in the current iteration "
                f"value and returns the corresponding learning rate value). Received "
                f"instead: learning_rate={learning_rate!r}")
        with init_scope():
            v = KerasVariable(_kiln.convert_to_tensor(np.float32(learning_rate)),
                              "learning_rate", f"{self.name}/learning_rate", trainable=False)
        self._variables.append(v)
        return v

    # ---- state ----

    @property
    def iterations(self):
        """The number of steps applied so far: an int64 kiln.Variable."""
        return self._iterations

    @property
    def variables(self):
        """The optimizer's variables: iterations, the learning-rate variable (if
        any), then the slot variables in creation order."""
        return list(self._variables)

    @property
    def learning_rate(self):
        """The current learning rate: the learning-rate variable, or the value
        of the schedule at ``iterations`` (a tensor)."""
        return self._current_learning_rate()

    @learning_rate.setter
    def learning_rate(self, value):
        if isinstance(value, schedules_mod.LearningRateSchedule) or (
                callable(value) and not isinstance(value, (_kiln.Tensor, _kiln.Variable))):
            self._learning_rate = value
            return
        if not isinstance(self._learning_rate, _kiln.Variable):
            raise TypeError(
                "This optimizer was created with a `LearningRateSchedule` object as its "
                "`learning_rate` constructor argument, hence its learning rate is not "
                "settable. If you need the learning rate to be settable, you should "
                "instantiate the optimizer with a float `learning_rate` argument.")
        self._learning_rate.assign(K.cast(value, self._learning_rate.dtype))

    def _current_learning_rate(self):
        lr = self._learning_rate
        if isinstance(lr, schedules_mod.LearningRateSchedule):
            return lr(self._iterations)
        if callable(lr):
            return lr()
        return lr

    # ---- variables ----

    def add_variable(self, shape, initializer="zeros", dtype=None, aggregation="none",
                     name=None):
        """A new non-trainable variable of this optimizer, created eagerly
        (outside any function being traced) and listed in ``variables``."""
        dtype = _kiln.as_dtype(dtype if dtype is not None else "float32")
        shape = tuple(int(d) for d in (shape.as_list() if hasattr(shape, "as_list") else shape))
        init = initializers.get(initializer)
        with init_scope():
            value = init(shape, dtype=dtype)
            if not isinstance(value, _kiln.Tensor):
                value = _kiln.convert_to_tensor(np.asarray(value, dtype=dtype.name))
            v = KerasVariable(value, name or "variable", f"{self.name}/{name or 'variable'}",
                              trainable=False)
        self._variables.append(v)
        return v

    def add_variable_from_reference(self, reference_variable, name=None, initializer="zeros"):
        """A slot variable with the shape and dtype of ``reference_variable``,
        named ``<reference>_<name>``."""
        shape = reference_variable.shape.as_list()
        if any(d is None for d in shape):
            raise ValueError(f"add_variable_from_reference: variable "
                             f"{reference_variable.name} has an unknown shape {shape}")
        base = _var_name(reference_variable).replace("/", "_")
        v = self.add_variable(shape, initializer, reference_variable.dtype,
                              name=f"{base}_{name}" if name else base)
        v._kiln_slot = (reference_variable._id, name)  # kiln.train saves slots by variable
        if _restore_hooks.PENDING:  # a kiln.train restore waits for this slot
            _restore_hooks.notify(self, v._kiln_slot, v)
        return v

    def add_optimizer_variables(self, trainable_variables, name, initializer="zeros"):
        """One slot per variable of ``trainable_variables`` for each name: a list,
        or a tuple of lists when ``name`` is a list or tuple of names."""
        names = [name] if isinstance(name, str) else list(name)
        out = tuple([] for _ in names)
        for v in trainable_variables:  # interleaved per variable, as Keras 3
            for slots, n in zip(out, names):
                slots.append(self.add_variable_from_reference(v, n, initializer))
        return out[0] if isinstance(name, str) else out

    def build(self, var_list):
        """Records the variables this optimizer updates (subclasses then create
        their slots). Called by the first apply_gradients."""
        var_list = list(var_list)
        for i, v in enumerate(var_list):
            _check_variable(v, i)
        self._trainable_variables = var_list
        # Keyed by the variable's id (a variable passed to a kiln.function is
        # another Python object for the same variable inside the trace).
        self._var_index = {v._id: i for i, v in enumerate(var_list)}
        self.built = True

    def _build_or_undo(self, var_list):
        # A build that fails (e.g. creating slots in a later trace of a
        # kiln.function) leaves the optimizer unbuilt, usable elsewhere.
        count = len(self._variables)
        try:
            self.build(var_list)
        except BaseException:
            del self._variables[count:]
            self.built = False
            raise
        self.built = True

    def _get_variable_index(self, variable):
        return self._var_index[variable._id]

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Variables (or name patterns, searched with ``re.search``) that weight
        decay leaves alone. Must be called before the optimizer is built."""
        if self.built:
            raise ValueError("`exclude_from_weight_decay()` can only be configured before "
                             "the optimizer is built.")
        self._exclude_ids |= {v._id for v in (var_list or [])}
        self._exclude_names += list(var_names or [])

    def _use_weight_decay(self, variable):
        if variable._id in self._exclude_ids:
            return False
        return not any(re.search(p, variable.name) for p in self._exclude_names)

    # ---- applying gradients ----

    def apply_gradients(self, grads_and_vars, skip_gradients_aggregation=False, **kwargs):
        """Applies one update for each (gradient, variable) pair, skipping pairs
        whose gradient is None, and increments ``iterations``. Returns
        ``iterations``.

        Under a kiln.distribute strategy with several replicas the gradients
        are first summed over the replicas, unless ``skip_gradients_aggregation``
        (or ``experimental_aggregate_gradients=False``) says they already are."""
        aggregate = not skip_gradients_aggregation and \
            kwargs.pop("experimental_aggregate_gradients", True)
        if kwargs:
            raise TypeError(f"apply_gradients got unexpected arguments {sorted(kwargs)}")
        pairs = list(grads_and_vars)
        if not pairs:
            return self._iterations
        for i, p in enumerate(pairs):
            if not isinstance(p, (tuple, list)) or len(p) != 2:
                raise TypeError(f"apply_gradients expects (gradient, variable) pairs, got "
                                f"{p!r} at position {i}")
        grads, variables = zip(*pairs)
        self._apply(list(grads), list(variables), aggregate)
        return self._iterations

    def apply(self, grads, trainable_variables=None):
        """Applies ``grads`` to ``trainable_variables`` (default: the variables
        the optimizer was built with); under a kiln.distribute strategy with
        several replicas, the gradients summed over the replicas."""
        self._apply(grads, trainable_variables, True)

    def _apply(self, grads, trainable_variables, aggregate):
        grads, trainable_variables = self._gradients_to_apply(grads, trainable_variables)
        if not grads:
            return
        if self.loss_scale_factor is not None:  # scale_loss multiplied the loss
            grads = [g / K.cast(self.loss_scale_factor, g.dtype) for g in grads]
        if aggregate:
            grads = distribute_lib.aggregate_gradients(grads, trainable_variables)
        grads = self._clip_gradients(grads)
        self._apply_weight_decay(trainable_variables)
        learning_rate = self._current_learning_rate()
        for g, v in zip(grads, trainable_variables):
            self.update_step(g, v, learning_rate)
        for v in trainable_variables:
            built_with = self._trainable_variables[self._get_variable_index(v)]
            constraint = getattr(v, "_kiln_constraint", None) or \
                getattr(built_with, "_kiln_constraint", None)
            if callable(constraint):
                v.assign(constraint(v.value()))
        self._iterations.assign_add(_kiln.convert_to_tensor(np.int64(1)))

    def _gradients_to_apply(self, grads, trainable_variables):
        """What every ``_apply`` starts with: the variables (default: those the
        optimizer was built with) checked against the gradients, the optimizer
        built on them, the pairs whose gradient is None dropped (with a warning),
        and the gradients as tensors of their variable's dtype. Returns
        ``(grads, variables)``, two empty lists when there is nothing to apply."""
        grads = list(grads)
        if trainable_variables is None:
            if not self.built:
                raise ValueError("When passing `grads` without `variables`, the optimizer "
                                 "must already be built on a list of variables. Call "
                                 "`optimizer.build(trainable_variables)` first.")
            trainable_variables = self._trainable_variables
        trainable_variables = list(trainable_variables)
        if len(grads) != len(trainable_variables):
            raise ValueError(f"apply: got {len(grads)} gradients for "
                             f"{len(trainable_variables)} variables")
        if not grads:
            return [], []
        for i, v in enumerate(trainable_variables):
            _check_variable(v, i)
        if not self.built:
            self._build_or_undo(trainable_variables)
        for v in trainable_variables:
            if v._id not in self._var_index:
                raise ValueError(
                    f"Unknown variable: {v.name}. This optimizer can only be called for the "
                    "variables it was originally built with. When working with a new set of "
                    "variables, you should recreate a new optimizer instance.")
        grads, trainable_variables = self._filter_empty_gradients(grads, trainable_variables)
        return ([_gradient_tensor(g, v) for g, v in zip(grads, trainable_variables)],
                trainable_variables)

    def _filter_empty_gradients(self, grads, variables):
        kept = [(g, v) for g, v in zip(grads, variables) if g is not None]
        if not kept:
            raise ValueError("No gradients provided for any variable.")
        if len(kept) < len(grads):
            missing = [v.name for g, v in zip(grads, variables) if g is None]
            warnings.warn(f"Gradients do not exist for variables {missing} when minimizing "
                          "the loss. If using `model.compile()`, did you forget to provide a "
                          "`loss` argument?", stacklevel=4)
        return [g for g, _ in kept], [v for _, v in kept]

    def _clip_gradients(self, grads):
        if self.clipnorm:
            return [clip_by_norm(g, self.clipnorm) for g in grads]
        if self.global_clipnorm:
            return clip_by_global_norm(grads, self.global_clipnorm)
        if self.clipvalue:
            return [K.clip_by_value(g, -self.clipvalue, self.clipvalue) for g in grads]
        return grads

    def _apply_weight_decay(self, variables):
        if not self.weight_decay:
            return
        lr = self._current_learning_rate()
        for v in variables:
            if self._use_weight_decay(v):
                v.assign_sub(v.value() * (K.cast(lr, v.dtype) * self.weight_decay))

    def update_step(self, gradient, variable, learning_rate):
        """One update of ``variable`` by ``gradient`` (both of its dtype)."""
        raise NotImplementedError(f"{type(self).__name__} must implement update_step()")

    # ---- gradients from a loss ----

    def scale_loss(self, loss):
        """``loss * loss_scale_factor`` when one is set, else ``loss`` (the
        gradients are divided by it again when applied)."""
        if self.loss_scale_factor is not None:
            return loss * K.cast(self.loss_scale_factor, loss.dtype)
        return loss

    def compute_gradients(self, loss, var_list, tape=None):
        """[(gradient, variable)] of ``loss`` (a tensor recorded by ``tape``, or a
        callable taking no argument) with respect to ``var_list`` (a list or a
        callable returning one)."""
        if not callable(loss) and tape is None:
            raise ValueError("`tape` is required when a `Tensor` loss is passed. "
                             f"Received: loss={loss}, tape={tape}.")
        if tape is None:
            tape = GradientTape()
        if callable(loss):
            with tape:
                if not callable(var_list):
                    tape.watch(var_list)
                loss = loss()
        if callable(var_list):
            var_list = var_list()
        var_list = list(var_list)
        grads = tape.gradient(loss, var_list)
        return list(zip(grads, var_list))

    def minimize(self, loss, var_list, tape=None):
        """Computes the gradients of ``loss`` for ``var_list`` and applies them
        (``compute_gradients`` + ``apply_gradients``). Returns ``iterations``."""
        return self.apply_gradients(self.compute_gradients(loss, var_list, tape))

    # ---- config ----

    def get_config(self):
        """The constructor arguments as a dict (a schedule is serialized)."""
        lr = self._learning_rate
        if isinstance(lr, schedules_mod.LearningRateSchedule):
            lr = schedules_mod.serialize(lr)
        elif isinstance(lr, _kiln.Variable):
            lr = float(lr.numpy())
        return {
            "name": self.name, "learning_rate": lr, "weight_decay": self.weight_decay,
            "clipnorm": self.clipnorm, "global_clipnorm": self.global_clipnorm,
            "clipvalue": self.clipvalue, "use_ema": self.use_ema,
            "ema_momentum": self.ema_momentum,
            "ema_overwrite_frequency": self.ema_overwrite_frequency,
            "loss_scale_factor": self.loss_scale_factor,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
        }

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """The optimizer described by ``get_config()``'s dict."""
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = schedules_mod.deserialize(config["learning_rate"])
        return cls(**config)

    def __repr__(self):
        return f"<kiln.keras.optimizers.{type(self).__name__} name={self.name!r}>"


def _check_variable(v, i):
    if not isinstance(v, _kiln.Variable):
        raise TypeError(f"Optimizers update kiln.Variables in place; element {i} of the "
                        f"variable list is a {type(v).__name__}: {v!r}")


def _gradient_tensor(g, v):
    """g as a tensor of v's dtype, checked against v's shape."""
    if not isinstance(g, _kiln.Tensor):
        g = _kiln.convert_to_tensor(g.value() if isinstance(g, _kiln.Variable)
                                    else np.asarray(g))
    if not _shapes_compatible(g.shape, v.shape.as_list()):
        raise ValueError(f"The gradient for variable {v.name} has shape {g.shape}, which "
                         f"does not match the variable's shape {v.shape}")
    if g.dtype != v.dtype:
        g = K.cast(g, v.dtype)
    return g
