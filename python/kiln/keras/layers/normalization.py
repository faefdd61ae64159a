"""BatchNormalization and LayerNormalization.

At inference BatchNormalization is ``kiln.nn.batch_normalization`` with the
moving statistics, which emits ``x * inv + shift`` with [C] vectors: the
pattern kiln's graph passes fold into a preceding convolution.
LayerNormalization is ``moments`` over its axes and the same formula: under
``jit_compile`` over the last axes, one row kernel (docs/JIT.md).

Under a float16 / bfloat16 compute dtype (mixed precision) both compute in
float32 with their float32 weights (made with ``autocast=False``) and return
the compute dtype, as Keras 3 does.
"""
from kiln import _kiln
from kiln.gradient import stop_gradient
from kiln.keras import initializers
from kiln.keras.layers import _args
from kiln.keras.layers.base import Layer, InputSpec
from kiln.ops import _helpers as h
from kiln.ops import array_ops, math_ops, nn_ops
from kiln.tensor_shape import TensorShape

raw = _kiln.raw
_HALF = ("float16", "bfloat16")
_FLOAT32 = _kiln.as_dtype("float32")


def _upcast(x):
    """x in float32 when it is float16 / bfloat16 (normalizing overflows there)."""
    return raw.Cast(x, DstT=_FLOAT32) if x.dtype.name in _HALF else x


def _cast_all(values, dtype):
    """The weights (None kept) as tensors of ``dtype`` when they are another."""
    return [v if v is None or v.dtype == dtype else raw.Cast(v, DstT=dtype) for v in values]


def _to_compute(layer, y):
    return y if y.dtype == layer._dtype else raw.Cast(y, DstT=layer._dtype)


def _axes_list(name, axis):
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if not axes or any(isinstance(a, bool) or not isinstance(a, int) for a in axes):
        raise TypeError(f"{name}: axis must be an int or a list of ints, got {axis!r}")
    return axes


def _normalized_axes(name, axes, rank):
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise ValueError(f"{name}: invalid axis {a} for input of rank {rank}")
        out.append(a % rank)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: duplicate axes {axes}")
    return sorted(out)


def _check_epsilon(name, epsilon):
    if not isinstance(epsilon, (int, float)) or epsilon <= 0:
        raise ValueError(f"{name}: epsilon must be a positive float, got {epsilon!r}")
    return float(epsilon)


def _param_shape(name, input_shape, axes_arg):
    """(normalized axes, their dims) of a built input shape."""
    shape = TensorShape(input_shape)
    if shape.rank is None:
        raise ValueError(f"{name}: input has undefined rank: {shape}")
    axes = _normalized_axes(name, axes_arg, shape.rank)
    dims = [shape[a] for a in axes]
    if any(d is None for d in dims):
        raise ValueError(f"{name}: axis {axes_arg} of input shape {shape} must be defined")
    return shape, axes, dims


def _affine_config(layer):
    """The initializers, regularizers and constraints of gamma and beta (Keras' keys)."""
    return {"beta_initializer": _args.init_config(layer.beta_initializer),
            "gamma_initializer": _args.init_config(layer.gamma_initializer),
            **_args.extras_config(layer, ("beta_regularizer", "gamma_regularizer",
                                          "beta_constraint", "gamma_constraint"))}


def _check_renorm_clipping(clipping):
    """Keras 3's checks of renorm_clipping ({rmax, rmin, dmax}); None means {}."""
    clipping = clipping or {}
    keys = ["rmax", "rmin", "dmax"]
    if set(clipping) - set(keys):
        raise ValueError("Received invalid keys for `renorm_clipping` argument: "
                         f"{clipping}. Supported values: {keys}.")
    rmax, rmin, dmax = (clipping.get(k) for k in keys)
    if rmax is not None and rmin is not None and rmax < rmin:
        raise ValueError("rmax should be greater than rmin in the `renorm_clipping` argument. "
                         f"Received: rmax={rmax}, rmin={rmin}.")
    if dmax is not None and dmax < 0:
        raise ValueError("dmax should be non-negative in the `renorm_clipping` argument. "
                         f"Received: dmax={dmax}.")
    return clipping


def _sqrt_of(init):
    """An initializer giving sqrt(init(shape, dtype)) (renorm's stddevs)."""
    def sqrt_init(shape, dtype=None):
        return math_ops.sqrt(h.tensor(init(shape, dtype=dtype)))
    return sqrt_init


def _ema(var, value, momentum):
    """var <- var * momentum + value * (1 - momentum)."""
    if value.dtype != var.dtype:
        value = raw.Cast(value, DstT=var.dtype)
    m = h.tensor(momentum, value.dtype)
    one_m = h.tensor(1.0 - momentum, value.dtype)
    new = raw.AddV2(raw.Mul(h.tensor(var), m), raw.Mul(value, one_m))
    var.assign(new)
    return new


def _broadcastable(values, axes, dims, rank):
    """[dims] weights shaped to broadcast against a rank-`rank` input."""
    if axes == list(range(rank - len(axes), rank)):
        return values  # trailing axes: the weights broadcast as they are
    bshape = [1] * rank
    for a, d in zip(axes, dims):
        bshape[a] = d
    return [None if v is None else array_ops.reshape(h.tensor(v), bshape) for v in values]


class BatchNormalization(Layer):
    """Normalizes the ``axis`` channels: ``gamma * (x - mean) / sqrt(var + epsilon) + beta``.

    Weights, in order: gamma and beta (trainable, when ``scale`` / ``center``),
    moving_mean and moving_variance (non-trainable). At inference (the
    default) mean and var are the moving statistics. With ``training=True``
    they are the batch's, and the moving statistics are updated with
    ``moving = moving * momentum + batch * (1 - momentum)``. A layer with
    ``trainable=False`` always runs in inference mode.

    ``renorm`` (batch renormalization, Keras 3's form) adds moving_stddev,
    renorm_mean and renorm_stddev; training then scales the normalized batch
    by r = stddev / renorm_stddev and shifts it by d = (mean - renorm_mean) /
    renorm_stddev (clipped by ``renorm_clipping``; no gradient through r, d).
    """

    _kiln_static_shapes = True

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm=False, renorm_clipping=None,
                 renorm_momentum=0.99, synchronized=False, **kwargs):
        super().__init__(**kwargs)
        self.renorm = bool(renorm)
        self.renorm_clipping = _check_renorm_clipping(renorm_clipping) if renorm \
            else renorm_clipping
        self.renorm_momentum = renorm_momentum
        self._axes = _axes_list("BatchNormalization", axis)
        self.axis = axis if isinstance(axis, int) else list(axis)
        epsilon = _check_epsilon("BatchNormalization", epsilon)
        if not isinstance(momentum, (int, float)) or not 0 <= momentum <= 1:
            raise ValueError(f"BatchNormalization: momentum must be in [0, 1], got {momentum!r}")
        self.momentum, self.epsilon = float(momentum), float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint
        self.synchronized = synchronized

    def _norm_axes(self, rank):
        return _normalized_axes("BatchNormalization", self._axes, rank)

    def build(self, input_shape):
        shape, axes, dims = _param_shape("BatchNormalization", input_shape, self._axes)
        pshape = tuple(dims)
        self.gamma = self.add_weight("gamma", pshape, initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint,
                                     autocast=False) if self.scale else None
        self.beta = self.add_weight("beta", pshape, initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint,
                                    autocast=False) if self.center else None
        self.moving_mean = self.add_weight("moving_mean", pshape,
                                           initializer=self.moving_mean_initializer,
                                           trainable=False, autocast=False)
        self.moving_variance = self.add_weight("moving_variance", pshape,
                                               initializer=self.moving_variance_initializer,
                                               trainable=False, autocast=False)
        if self.renorm:
            self._build_renorm(pshape)
        self.input_spec = InputSpec(ndim=shape.rank, axes=dict(zip(axes, dims)))
        self.built = True

    def _build_renorm(self, pshape):
        stddev_init = _sqrt_of(self.moving_variance_initializer)
        self.moving_stddev = self.add_weight("moving_stddev", pshape, initializer=stddev_init,
                                             trainable=False, autocast=False)
        self.renorm_mean = self.add_weight("renorm_mean", pshape,
                                           initializer=self.moving_mean_initializer,
                                           trainable=False, autocast=False)
        self.renorm_stddev = self.add_weight("renorm_stddev", pshape, initializer=stddev_init,
                                             trainable=False, autocast=False)

    def _params(self, rank, dtype):
        """(mean, var, beta, gamma) shaped to broadcast against the input."""
        axes = self._norm_axes(rank)
        vals = [self.moving_mean, self.moving_variance, self.beta, self.gamma]
        if self.moving_mean.dtype != dtype:
            vals = _cast_all(vals, dtype)
        if axes == [rank - 1]:
            return vals  # [C] vectors broadcast on the last axis
        return _broadcastable(vals, axes, list(self.moving_mean.shape), rank)

    def call(self, inputs, training=None):
        x = _upcast(h.tensor(inputs))
        rank = h.static_rank(x, "BatchNormalization")
        if training and self.trainable:
            return _to_compute(self, self._train_step(x, rank))
        mean, var, beta, gamma = self._params(rank, x.dtype)
        return _to_compute(self, nn_ops.batch_normalization(x, mean, var, beta, gamma,
                                                            self.epsilon))

    def _train_step(self, x, rank):
        axes = self._norm_axes(rank)
        reduce_axes = [a for a in range(rank) if a not in axes]
        mean, var = nn_ops.moments(x, reduce_axes, keepdims=True)
        _, _, beta, gamma = self._params(rank, x.dtype)
        pshape = list(self.moving_mean.shape)
        if self.renorm:
            gamma, beta = self._renorm_affine(mean, var, gamma, beta)
        y = nn_ops.batch_normalization(x, mean, var, beta, gamma, self.epsilon)
        mean, var = array_ops.reshape(mean, pshape), array_ops.reshape(var, pshape)
        if self.renorm:
            self._update_renorm(mean, var)
        else:
            _ema(self.moving_mean, mean, self.momentum)
            _ema(self.moving_variance, var, self.momentum)
        return y

    def _renorm_affine(self, mean, var, gamma, beta):
        """gamma * r and gamma * d + beta (batch renormalization's r, d; no gradient)."""
        shape = mean.shape.as_list()
        eps = h.tensor(self.epsilon, mean.dtype)
        stddev = math_ops.sqrt(var + eps)
        renorm_mean = array_ops.reshape(self.renorm_mean, shape)
        renorm_stddev = math_ops.maximum(array_ops.reshape(self.renorm_stddev, shape),
                                         math_ops.sqrt(eps))
        r = stddev / renorm_stddev
        d = (mean - renorm_mean) / renorm_stddev
        clip = self.renorm_clipping
        if clip.get("rmin") is not None:
            r = math_ops.maximum(r, h.tensor(clip["rmin"], r.dtype))
        if clip.get("rmax") is not None:
            r = math_ops.minimum(r, h.tensor(clip["rmax"], r.dtype))
        if clip.get("dmax") is not None:
            d = math_ops.clip_by_value(d, -clip["dmax"], clip["dmax"])
        r, d = stop_gradient(r), stop_gradient(d)
        if gamma is not None:
            r, d = r * gamma, d * gamma
        return r, (d + beta if beta is not None else d)

    def _update_renorm(self, mean, var):
        """The renorm and moving statistics' updates (moving_variance from moving_stddev)."""
        eps = h.tensor(self.epsilon, mean.dtype)
        stddev = math_ops.sqrt(var + eps)
        _ema(self.renorm_mean, mean, self.renorm_momentum)
        _ema(self.renorm_stddev, stddev, self.renorm_momentum)
        _ema(self.moving_mean, mean, self.momentum)
        new_stddev = _ema(self.moving_stddev, stddev, self.momentum)
        self.moving_variance.assign(nn_ops.relu(new_stddev * new_stddev - eps))

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
                **_affine_config(self),
                "moving_mean_initializer": _args.init_config(self.moving_mean_initializer),
                "moving_variance_initializer":
                    _args.init_config(self.moving_variance_initializer),
                "synchronized": self.synchronized, "renorm": self.renorm,
                "renorm_clipping": self.renorm_clipping,
                "renorm_momentum": self.renorm_momentum}


class LayerNormalization(Layer):
    """Normalizes each example over ``axis`` (default the last):
    ``gamma * (x - mean) / sqrt(var + epsilon) + beta``, with mean and var of
    that example; gamma and beta (when ``scale`` / ``center``) have the
    normalized axes' shape. ``rms_scaling`` (deprecated in Keras) gives
    ``gamma * x / sqrt(var + epsilon)``. Once built, ``axis`` is a sorted list
    (Keras' config)."""

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None, **kwargs):
        self.rms_scaling = bool(kwargs.pop("rms_scaling", False))
        super().__init__(**kwargs)
        self.supports_masking = True
        self._axes = _axes_list("LayerNormalization", axis)
        self.axis = axis if isinstance(axis, int) else list(axis)
        self.epsilon = _check_epsilon("LayerNormalization", epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint

    def build(self, input_shape):
        shape, axes, dims = _param_shape("LayerNormalization", input_shape, self._axes)
        self.axis = sorted(self._axes) if isinstance(self.axis, list) else [self.axis]
        self.gamma = self.add_weight("gamma", tuple(dims), initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint,
                                     autocast=False) if self.scale else None
        self.beta = self.add_weight("beta", tuple(dims), initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint, autocast=False) \
            if self.center and not self.rms_scaling else None
        self.input_spec = InputSpec(ndim=shape.rank, axes=dict(zip(axes, dims)))
        self.built = True

    def call(self, inputs):
        x = _upcast(h.tensor(inputs))
        return _to_compute(self, self._normalize(x))

    def _normalize(self, x):
        rank = h.static_rank(x, "LayerNormalization")
        axes = _normalized_axes("LayerNormalization", self._axes, rank)
        mean, var = nn_ops.moments(x, axes, keepdims=True)
        dims = [x.shape[a] for a in axes]
        beta, gamma = _broadcastable(_cast_all([self.beta, self.gamma], x.dtype), axes, dims,
                                     rank)
        if self.rms_scaling:
            y = x * math_ops.rsqrt(var + h.tensor(self.epsilon, var.dtype))
            return y * gamma if gamma is not None else y
        return nn_ops.batch_normalization(x, mean, var, beta, gamma, self.epsilon)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon,
                "center": self.center, "scale": self.scale, "rms_scaling": self.rms_scaling,
                **_affine_config(self)}


class GroupNormalization(Layer):
    """Normalizes each example over groups of channels: the ``axis``
    channels split into ``groups`` groups, each normalized over its channels
    and every other non-batch axis; then ``gamma * x + beta`` per channel
    (gamma, beta [channels])."""

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        if isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0:
            raise ValueError(f"Invalid value for argument `groups`. Expected a strictly positive "
                             f"integer. Received: groups={groups!r}")
        if not isinstance(axis, int):
            raise ValueError(f"GroupNormalization: `axis` must be an int. Received: axis={axis!r}")
        self.groups, self.axis = groups, axis
        self.epsilon = _check_epsilon("GroupNormalization", epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint

    def build(self, input_shape):
        shape = TensorShape(input_shape)
        rank = shape.rank
        axis = self.axis % rank
        channels = shape[axis]
        if channels is None:
            raise ValueError(f"Axis {self.axis} of input tensor should have a defined dimension "
                             f"but the layer received an input with shape {shape}.")
        if channels < self.groups:
            raise ValueError(f"Number of groups ({self.groups}) cannot be more than the number "
                             f"of channels ({channels}).")
        if channels % self.groups:
            raise ValueError(f"Number of groups ({self.groups}) must be a multiple of the number "
                             f"of channels ({channels}).")
        self.gamma = self.add_weight("gamma", (channels,), initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint) if self.scale else None
        self.beta = self.add_weight("beta", (channels,), initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint) if self.center else None
        self.input_spec = InputSpec(ndim=rank, axes={axis: channels})
        self.built = True

    def call(self, inputs):
        x = h.tensor(inputs)
        rank = h.static_rank(x, "GroupNormalization")
        axis = self.axis % rank
        channels = x.shape[axis]
        # Channels last, split into [groups, channels / groups].
        perm = [i for i in range(rank) if i != axis] + [axis]
        y = array_ops.transpose(x, perm) if axis != rank - 1 else x
        moved = array_ops.shape(y)
        g = array_ops.reshape(y, array_ops.concat(
            [moved[:-1], [self.groups, channels // self.groups]], 0))
        axes = list(range(1, rank - 1)) + [rank]  # every non-batch axis but the group's
        mean, var = nn_ops.moments(g, axes, keepdims=True)
        g = (g - mean) * math_ops.rsqrt(var + h.tensor(self.epsilon, var.dtype))
        y = array_ops.reshape(g, moved)
        if self.gamma is not None:
            y = y * self.gamma
        if self.beta is not None:
            y = y + self.beta
        if axis != rank - 1:
            inverse = [perm.index(i) for i in range(rank)]
            y = array_ops.transpose(y, inverse)
        return y

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "groups": self.groups, "axis": self.axis,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
                **_affine_config(self)}
