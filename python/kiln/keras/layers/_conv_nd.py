"""What Conv1D and Conv3D share (Keras 3's arguments, checks, weights, output shape and
config for an N-d convolution with groups); each defines only its call."""
from kiln.keras import activations, initializers
from kiln.keras.layers import _args
from kiln.keras.layers.base import Layer, InputSpec
from kiln.ops import nn_ops
from kiln.tensor_shape import TensorShape


class ConvND(Layer):
    """An N-d convolution's arguments and weights: kernel
    ``kernel_size + (in_channels / groups, filters)``, bias ``(filters,)``.
    Subclasses set ``rank`` and ``paddings`` and define ``call``."""

    rank = 2
    paddings = ("valid", "same")
    _kiln_static_shapes = True

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        who = type(self).__name__
        self.filters = _args.positive_int(filters, "filters", who)
        self.kernel_size = _args.int_tuple(kernel_size, self.rank, "kernel_size")
        self.strides = _args.int_tuple(strides, self.rank, "strides")
        self.padding = self._padding(padding)
        self.data_format = _args.data_format(data_format)
        self.dilation_rate = _args.int_tuple(dilation_rate, self.rank, "dilation_rate")
        self.groups = _args.positive_int(groups, "groups", who)
        if self.filters % self.groups:
            raise ValueError("The number of filters must be evenly divisible by the number of "
                             f"groups. Received: groups={self.groups}, filters={self.filters}.")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError("`strides > 1` not supported in conjunction with `dilation_rate > "
                             f"1`. Received: strides={self.strides} and "
                             f"dilation_rate={self.dilation_rate}")
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.activity_regularizer = activity_regularizer
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def _padding(self, padding):
        if self.paddings == ("valid", "same"):
            return _args.padding_mode(padding)
        p = padding.lower() if isinstance(padding, str) else padding
        if p not in self.paddings:
            raise ValueError("The `padding` argument must be one of "
                             f"{', '.join(repr(m) for m in self.paddings)}. "
                             f"Received padding={padding!r}")
        return p

    @property
    def _channel_axis(self):
        return -1 if self.data_format == "channels_last" else 1

    def build(self, input_shape):
        shape = TensorShape(input_shape)
        c = shape[self._channel_axis] if shape.rank == self.rank + 2 else None
        if c is None:
            raise ValueError(f"{type(self).__name__}: the channel dimension of the inputs "
                             f"should be defined. Found None in shape {shape}")
        if c % self.groups:
            raise ValueError("The number of input channels must be evenly divisible by the "
                             f"number of groups. Received groups={self.groups}, but the input "
                             f"has {c} channels (full input shape is {shape}).")
        self.compute_output_shape(input_shape)
        self.kernel = self.add_weight("kernel", self.kernel_size + (c // self.groups,
                                                                    self.filters),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = self.add_weight("bias", (self.filters,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis: c})
        self.built = True

    def _finish(self, y, nn_format=None):
        """Bias and activation of a result (channels_last unless `nn_format`)."""
        if self.use_bias:
            y = nn_ops.bias_add(y, self.bias, data_format=nn_format)
        if self.activation is not activations.linear:
            y = self.activation(y)
        return y

    def compute_output_shape(self, input_shape):
        dims = list(TensorShape(input_shape))
        first = 1 if self.data_format == "channels_last" else 2
        pad = "same" if self.padding == "causal" else self.padding
        out = [_args.conv_output_length(dims[first + i], self.kernel_size[i], pad,
                                        self.strides[i], self.dilation_rate[i])
               for i in range(self.rank)]
        if any(o is not None and o <= 0 for o in out):
            raise ValueError(f"{type(self).__name__} {self.name!r}: one of the dimensions in "
                             f"the output is <= 0 (input shape {TensorShape(input_shape)}, "
                             f"kernel_size={self.kernel_size}, padding={self.padding!r}). Use a "
                             "larger input or padding='same'.")
        if self.data_format == "channels_last":
            return TensorShape([dims[0]] + out + [self.filters])
        return TensorShape([dims[0], self.filters] + out)

    def get_config(self):
        return {**Layer.get_config(self), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate, "groups": self.groups,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": _args.init_config(self.kernel_initializer),
                "bias_initializer": _args.init_config(self.bias_initializer),
                **_args.extras_config(self, _args.CONV_EXTRAS)}
