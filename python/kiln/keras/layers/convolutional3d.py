"""Conv3D (Keras 3's arguments, weights, defaults and errors).

A first version: kiln has no 3-D convolution kernel, so the convolution is a sum over the
kernel's depth taps of 2-D convolutions (each tap convolves the depth slices it meets, folded
into the batch), with TensorFlow's SAME padding applied along the depth by hand.
"""
from kiln.keras import activations, initializers
from kiln.keras.layers import _args
from kiln.keras.layers.base import Layer, InputSpec
from kiln.ops import _helpers as h
from kiln.ops import array_ops, nn_ops
from kiln.tensor_shape import TensorShape


def _same_pads(n, k, s, d):
    """TensorFlow's SAME padding (before, after) along one axis of n steps."""
    eff = (k - 1) * d + 1
    out = (n + s - 1) // s
    total = max((out - 1) * s + eff - n, 0)
    return total // 2, total - total // 2


class Conv3D(Layer):
    """3-D convolution over [batch, depth, height, width, channels]
    (channels_last): kernel [kd, kh, kw, in_channels / groups, filters], bias
    [filters]; output ``activation(conv3d(inputs, kernel) + bias)``. Computed
    as a sum of 2-D convolutions over the depth taps (see the module)."""

    _kiln_static_shapes = True

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format=None, dilation_rate=(1, 1, 1), groups=1, activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        self.filters = _args.positive_int(filters, "filters", "Conv3D")
        self.kernel_size = _args.int_tuple(kernel_size, 3, "kernel_size")
        self.strides = _args.int_tuple(strides, 3, "strides")
        self.padding = _args.padding_mode(padding)
        self.data_format = _args.data_format(data_format)
        self.dilation_rate = _args.int_tuple(dilation_rate, 3, "dilation_rate")
        self.groups = _args.positive_int(groups, "groups", "Conv3D")
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
        self.input_spec = InputSpec(ndim=5)

    @property
    def _channel_axis(self):
        return -1 if self.data_format == "channels_last" else 1

    def build(self, input_shape):
        shape = TensorShape(input_shape)
        c = shape[self._channel_axis] if shape.rank == 5 else None
        if c is None:
            raise ValueError("Conv3D: the channel dimension of the inputs should be defined. "
                             f"Found None in shape {shape}")
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
        self.input_spec = InputSpec(ndim=5, axes={self._channel_axis: c})
        self.built = True

    def _conv_depth(self, x, kernel):
        """conv3d of channels_last x [B, D, H, W, C] with kernel [kd, kh, kw, C, F]."""
        (kd, _, _), (sd, sh, sw), (dd, dh, dw) = self.kernel_size, self.strides, \
            self.dilation_rate
        depth = x.shape[1]
        if self.padding == "same":
            x = array_ops.pad(x, [[0, 0], list(_same_pads(depth, kd, sd, dd)), [0, 0], [0, 0],
                                  [0, 0]])
        out_d = _args.conv_output_length(depth, kd, self.padding, sd, dd)
        hh, ww, c = x.shape[2], x.shape[3], x.shape[4]
        total = None
        for tap in range(kd):
            start = tap * dd
            sl = x[:, start:start + (out_d - 1) * sd + 1:sd]  # the slices this tap meets
            y = nn_ops.conv2d(array_ops.reshape(sl, [-1, hh, ww, c]), kernel[tap], [sh, sw],
                              self.padding.upper(), dilations=[dh, dw])
            total = y if total is None else total + y
        return array_ops.reshape(total, [-1, out_d] + list(total.shape[1:]))

    def call(self, inputs):
        x = h.tensor(inputs)
        if self.data_format == "channels_first":
            x = array_ops.transpose(x, [0, 2, 3, 4, 1])
        if None in x.shape[1:]:
            raise ValueError("Conv3D needs the depth, height, width and channels of its inputs "
                             f"defined. Received: inputs.shape={inputs.shape}")
        if self.groups == 1:
            y = self._conv_depth(x, self.kernel)
        else:
            xs = array_ops.split(x, self.groups, axis=4)
            ks = array_ops.split(h.tensor(self.kernel), self.groups, axis=4)
            y = array_ops.concat([self._conv_depth(a, k) for a, k in zip(xs, ks)], 4)
        if self.use_bias:
            y = nn_ops.bias_add(y, self.bias)
        if self.activation is not activations.linear:
            y = self.activation(y)
        if self.data_format == "channels_first":
            y = array_ops.transpose(y, [0, 4, 1, 2, 3])
        return y

    def compute_output_shape(self, input_shape):
        dims = list(TensorShape(input_shape))
        sp = dims[1:4] if self.data_format == "channels_last" else dims[2:5]
        out = [_args.conv_output_length(sp[i], self.kernel_size[i], self.padding,
                                        self.strides[i], self.dilation_rate[i])
               for i in range(3)]
        if any(o is not None and o <= 0 for o in out):
            raise ValueError(f"Conv3D {self.name!r}: one of the dimensions in the output is <= 0 "
                             f"(input shape {TensorShape(input_shape)}, kernel_size="
                             f"{self.kernel_size}, padding={self.padding!r}). Use a larger input "
                             "or padding='same'.")
        if self.data_format == "channels_last":
            return TensorShape([dims[0]] + out + [self.filters])
        return TensorShape([dims[0], self.filters] + out)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate, "groups": self.groups,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": _args.init_config(self.kernel_initializer),
                "bias_initializer": _args.init_config(self.bias_initializer),
                **_args.extras_config(self, _args.CONV_EXTRAS)}


Convolution3D = Conv3D

__all__ = ["Conv3D", "Convolution3D"]
