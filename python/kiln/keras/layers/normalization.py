"""BatchNormalization.

At inference the layer is ``kiln.nn.batch_normalization`` with the moving
statistics, which emits ``x * inv + shift`` with [C] vectors: the pattern
kiln's graph passes fold into a preceding convolution.
"""
from kiln import _kiln
from kiln.keras import initializers
from kiln.keras.layers.base import Layer, InputSpec
from kiln.ops import _helpers as h
from kiln.ops import array_ops, nn_ops
from kiln.tensor_shape import TensorShape

raw = _kiln.raw


class BatchNormalization(Layer):
    """Normalizes the ``axis`` channels: ``gamma * (x - mean) / sqrt(var + epsilon) + beta``.

    Weights, in order: gamma and beta (trainable, when ``scale`` / ``center``),
    moving_mean and moving_variance (non-trainable). At inference (the
    default) mean and var are the moving statistics. With ``training=True``
    they are the batch's, and the moving statistics are updated with
    ``moving = moving * momentum + batch * (1 - momentum)``. A layer with
    ``trainable=False`` always runs in inference mode.
    """

    _kiln_static_shapes = True

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, synchronized=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, (list, tuple)):
            axes = list(axis)
        else:
            axes = [axis]
        if not axes or any(isinstance(a, bool) or not isinstance(a, int) for a in axes):
            raise TypeError(f"BatchNormalization: axis must be an int or a list of ints, "
                            f"got {axis!r}")
        self.axis = axis if isinstance(axis, int) else list(axis)
        self._axes = axes
        if not isinstance(epsilon, (int, float)) or epsilon <= 0:
            raise ValueError(f"BatchNormalization: epsilon must be a positive float, "
                             f"got {epsilon!r}")
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
        out = []
        for a in self._axes:
            if not -rank <= a < rank:
                raise ValueError(f"BatchNormalization: invalid axis {a} for input of rank {rank}")
            out.append(a % rank)
        if len(set(out)) != len(out):
            raise ValueError(f"BatchNormalization: duplicate axes {self._axes}")
        return sorted(out)

    def build(self, input_shape):
        shape = TensorShape(input_shape)
        if shape.rank is None:
            raise ValueError(f"BatchNormalization: input has undefined rank: {shape}")
        axes = self._norm_axes(shape.rank)
        dims = [shape[a] for a in axes]
        if any(d is None for d in dims):
            raise ValueError(f"BatchNormalization: axis {self.axis} of input shape {shape} "
                             "must be defined")
        pshape = tuple(dims)
        self.gamma = self.add_weight("gamma", pshape, initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint) if self.scale else None
        self.beta = self.add_weight("beta", pshape, initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint) if self.center else None
        self.moving_mean = self.add_weight("moving_mean", pshape,
                                           initializer=self.moving_mean_initializer,
                                           trainable=False)
        self.moving_variance = self.add_weight("moving_variance", pshape,
                                               initializer=self.moving_variance_initializer,
                                               trainable=False)
        self.input_spec = InputSpec(ndim=shape.rank, axes=dict(zip(axes, dims)))
        self.built = True

    def _params(self, rank):
        """(mean, var, beta, gamma) shaped to broadcast against the input."""
        axes = self._norm_axes(rank)
        vals = [self.moving_mean, self.moving_variance, self.beta, self.gamma]
        if axes == [rank - 1]:
            return vals  # [C] vectors broadcast on the last axis
        bshape = [1] * rank
        for a, d in zip(axes, self.moving_mean.shape):
            bshape[a] = d
        return [None if v is None else array_ops.reshape(h.tensor(v), bshape) for v in vals]

    def call(self, inputs, training=None):
        x = h.tensor(inputs)
        rank = h.static_rank(x, "BatchNormalization")
        if training and self.trainable:
            return self._train_step(x, rank)
        mean, var, beta, gamma = self._params(rank)
        return nn_ops.batch_normalization(x, mean, var, beta, gamma, self.epsilon)

    def _train_step(self, x, rank):
        axes = self._norm_axes(rank)
        reduce_axes = [a for a in range(rank) if a not in axes]
        mean, var = nn_ops.moments(x, reduce_axes, keepdims=True)
        _, _, beta, gamma = self._params(rank)
        y = nn_ops.batch_normalization(x, mean, var, beta, gamma, self.epsilon)
        pshape = list(self.moving_mean.shape)
        m = h.tensor(self.momentum, x.dtype)
        one_m = h.tensor(1.0 - self.momentum, x.dtype)
        for moving, batch in ((self.moving_mean, mean), (self.moving_variance, var)):
            batch = array_ops.reshape(batch, pshape)
            moving.assign(raw.AddV2(raw.Mul(h.tensor(moving), m), raw.Mul(batch, one_m)))
        return y

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale}
