"""Convolution layers: Conv2D, Conv2DTranspose, DepthwiseConv2D, SeparableConv2D, Conv1D and
ZeroPadding2D.

The call is ``conv -> nn.bias_add -> activation``: the pattern kiln's graph
passes fuse (with a following BatchNormalization) into one oneDNN primitive.
"""
from kiln.keras import activations, initializers
from kiln.keras.layers import _args
from kiln.keras.layers._conv_nd import ConvND
from kiln.keras.layers.base import Layer, InputSpec
from kiln.ops import _helpers as h
from kiln.ops import array_ops, nn_ops
from kiln.tensor_shape import TensorShape


_DEPTHWISE_EXTRAS = ("depthwise_regularizer", "bias_regularizer", "activity_regularizer",
                     "depthwise_constraint", "bias_constraint")


class _Conv2DBase(Layer):
    """Shared arguments and shape logic of the 2-D convolutions."""

    _kiln_static_shapes = True

    def __init__(self, kernel_size, strides, padding, data_format, dilation_rate, activation,
                 use_bias, bias_initializer, bias_regularizer, bias_constraint, **kwargs):
        super().__init__(**kwargs)
        who = type(self).__name__
        self.kernel_size = _args.int_tuple(kernel_size, 2, "kernel_size")
        self.strides = _args.int_tuple(strides, 2, "strides")
        self.padding = _args.padding_mode(padding)
        self.data_format = _args.data_format(data_format)
        self.dilation_rate = _args.int_tuple(dilation_rate, 2, "dilation_rate")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{who}: strides > 1 not supported in conjunction with "
                             f"dilation_rate > 1. Received strides={self.strides} and "
                             f"dilation_rate={self.dilation_rate}")
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.bias_initializer = initializers.get(bias_initializer)
        self.bias_regularizer, self.bias_constraint = bias_regularizer, bias_constraint
        self.input_spec = InputSpec(ndim=4)

    @property
    def _channel_axis(self):
        return -1 if self.data_format == "channels_last" else 1

    def _in_channels(self, input_shape):
        shape = TensorShape(input_shape)
        if shape.rank != 4:
            raise ValueError(f"Input 0 of layer \"{self.name}\" is incompatible with the layer: "
                             f"expected ndim=4, found ndim={shape.rank}. Full shape received: "
                             f"{shape}")
        c = shape[self._channel_axis]
        if c is None:
            raise ValueError(f"{type(self).__name__}: the channel dimension of the inputs "
                             f"should be defined. Found None in shape {shape}")
        return c

    def _spatial_out(self, input_shape):
        dims = list(TensorShape(input_shape))
        sp = dims[1:3] if self.data_format == "channels_last" else dims[2:4]
        out = [_args.conv_output_length(sp[i], self.kernel_size[i], self.padding,
                                        self.strides[i], self.dilation_rate[i])
               for i in range(2)]
        if any(o is not None and o <= 0 for o in out):
            raise ValueError(f"{type(self).__name__} {self.name!r}: one of the dimensions in "
                             f"the output is <= 0 (input shape {TensorShape(input_shape)}, "
                             f"kernel_size={self.kernel_size}, padding={self.padding!r}). "
                             "Use a larger input or padding='same'.")
        return dims[0], out

    def _out_shape(self, input_shape, channels):
        batch, (oh, ow) = self._spatial_out(input_shape)
        if self.data_format == "channels_last":
            return TensorShape([batch, oh, ow, channels])
        return TensorShape([batch, channels, oh, ow])

    def _nn_format(self):
        return "NHWC" if self.data_format == "channels_last" else "NCHW"

    def _finish(self, y):
        if self.use_bias:
            y = nn_ops.bias_add(y, self.bias, data_format=self._nn_format())
        if self.activation is not activations.linear:
            y = self.activation(y)
        return y

    def _base_config(self):
        return {**Layer.get_config(self), "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding,
                "data_format": self.data_format, "dilation_rate": self.dilation_rate,
                "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias, "bias_initializer": _args.init_config(self.bias_initializer)}


class Conv2D(ConvND):
    """2-D convolution: kernel [kh, kw, in_channels / groups, filters], bias
    [filters]; output ``activation(conv2d(inputs, kernel) + bias)``.
    padding 'valid' or 'same' (TensorFlow's SAME); groups > 1 convolves each
    group of input channels with its own filters."""

    rank = 2

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         groups, activation, use_bias, kernel_initializer, bias_initializer,
                         kernel_regularizer, bias_regularizer, activity_regularizer,
                         kernel_constraint, bias_constraint, **kwargs)

    def _conv(self, x, kernel):
        return nn_ops.conv2d(x, kernel, list(self.strides), self.padding.upper(),
                             data_format=self._nn_format(), dilations=list(self.dilation_rate))

    def _nn_format(self):
        return "NHWC" if self.data_format == "channels_last" else "NCHW"

    def call(self, inputs):
        if self.groups == 1:
            y = self._conv(inputs, self.kernel)
        else:
            axis = 3 if self.data_format == "channels_last" else 1
            xs = array_ops.split(inputs, self.groups, axis=axis)
            ks = array_ops.split(h.tensor(self.kernel), self.groups, axis=3)
            y = array_ops.concat([self._conv(x, k) for x, k in zip(xs, ks)], axis)
        return self._finish(y, self._nn_format())


class DepthwiseConv2D(_Conv2DBase):
    """Depthwise 2-D convolution: each input channel is convolved with its own
    ``depth_multiplier`` filters; kernel [kh, kw, in_channels, depth_multiplier]
    (named "kernel" as in Keras 3), bias [in_channels * depth_multiplier]."""

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation,
                         use_bias, bias_initializer, bias_regularizer, bias_constraint,
                         **kwargs)
        self.depth_multiplier = _args.positive_int(depth_multiplier, "depth_multiplier",
                                                   "DepthwiseConv2D")
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.depthwise_regularizer = depthwise_regularizer
        self.depthwise_constraint = depthwise_constraint
        self.activity_regularizer = activity_regularizer

    def build(self, input_shape):
        c = self._in_channels(input_shape)
        self._spatial_out(input_shape)
        # Keras 3 names it "kernel" (the attribute too); depthwise_kernel is kept as an alias.
        self.kernel = self.add_weight(
            "kernel", self.kernel_size + (c, self.depth_multiplier),
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint)
        self.bias = self.add_weight("bias", (c * self.depth_multiplier,),
                                    initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        self.input_spec = InputSpec(ndim=4, axes={self._channel_axis: c})
        self.built = True

    @property
    def depthwise_kernel(self):
        return self.kernel

    def call(self, inputs):
        y = nn_ops.depthwise_conv2d(inputs, self.kernel, list(self.strides),
                                    self.padding.upper(), data_format=self._nn_format(),
                                    dilations=list(self.dilation_rate))
        return self._finish(y)

    def compute_output_shape(self, input_shape):
        return self._out_shape(input_shape,
                               self._in_channels(input_shape) * self.depth_multiplier)

    def get_config(self):
        return {**self._base_config(), "depth_multiplier": self.depth_multiplier,
                "depthwise_initializer": _args.init_config(self.depthwise_initializer),
                **_args.extras_config(self, _DEPTHWISE_EXTRAS)}


class SeparableConv2D(_Conv2DBase):
    """Depthwise then pointwise 2-D convolution: each input channel convolved
    with its own ``depth_multiplier`` filters (depthwise_kernel [kh, kw,
    in_channels, depth_multiplier]), then a 1x1 convolution mixing them
    (pointwise_kernel [1, 1, in_channels * depth_multiplier, filters]), bias
    [filters]."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation,
                         use_bias, bias_initializer, bias_regularizer, bias_constraint,
                         **kwargs)
        self.filters = _args.positive_int(filters, "filters", "SeparableConv2D")
        self.depth_multiplier = _args.positive_int(depth_multiplier, "depth_multiplier",
                                                   "SeparableConv2D")
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.depthwise_regularizer = depthwise_regularizer
        self.pointwise_regularizer = pointwise_regularizer
        self.depthwise_constraint = depthwise_constraint
        self.pointwise_constraint = pointwise_constraint
        self.activity_regularizer = activity_regularizer

    def build(self, input_shape):
        c = self._in_channels(input_shape)
        self._spatial_out(input_shape)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", self.kernel_size + (c, self.depth_multiplier),
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", (1, 1, c * self.depth_multiplier, self.filters),
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint)
        self.bias = self.add_weight("bias", (self.filters,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        self.input_spec = InputSpec(ndim=4, axes={self._channel_axis: c})
        self.built = True

    def call(self, inputs):
        y = nn_ops.depthwise_conv2d(inputs, self.depthwise_kernel, list(self.strides),
                                    self.padding.upper(), data_format=self._nn_format(),
                                    dilations=list(self.dilation_rate))
        y = nn_ops.conv2d(y, self.pointwise_kernel, [1, 1], "VALID",
                          data_format=self._nn_format())
        return self._finish(y)

    def compute_output_shape(self, input_shape):
        return self._out_shape(input_shape, self.filters)

    def get_config(self):
        return {**self._base_config(), "filters": self.filters,
                "depth_multiplier": self.depth_multiplier,
                "depthwise_initializer": _args.init_config(self.depthwise_initializer),
                "pointwise_initializer": _args.init_config(self.pointwise_initializer),
                **_args.extras_config(self, _DEPTHWISE_EXTRAS + ("pointwise_regularizer",
                                                                 "pointwise_constraint"))}


def _deconv_length(length, kernel, padding, output_padding, stride, dilation):
    """The output length of a transposed convolution along one axis (Keras')."""
    if length is None:
        return None
    kernel = kernel + (kernel - 1) * (dilation - 1)
    if output_padding is None:
        return length * stride + (max(kernel - stride, 0) if padding == "valid" else 0)
    pad = kernel // 2 if padding == "same" else 0
    return (length - 1) * stride + kernel - 2 * pad + output_padding


class Conv2DTranspose(_Conv2DBase):
    """Transposed 2-D convolution (the gradient of Conv2D with respect to its
    input): kernel [kh, kw, filters, in_channels], bias [filters]; each
    spatial size becomes about ``strides`` times larger (``output_padding``
    picks among the sizes a stride allows)."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", output_padding=None,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation,
                         use_bias, bias_initializer, bias_regularizer, bias_constraint,
                         **kwargs)
        self.filters = _args.positive_int(filters, "filters", "Conv2DTranspose")
        self.output_padding = None if output_padding is None else \
            _args.int_tuple(output_padding, 2, "output_padding", allow_zero=True)
        if self.output_padding is not None:
            for p, s in zip(self.output_padding, self.strides):
                if p >= s:
                    raise ValueError("Strides must be greater than output padding. Received "
                                     f"strides={self.strides}, "
                                     f"output_padding={self.output_padding}.")
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.kernel_regularizer, self.kernel_constraint = kernel_regularizer, kernel_constraint
        self.activity_regularizer = activity_regularizer

    def _spatial_sizes(self, input_shape):
        dims = list(TensorShape(input_shape))
        sp = dims[1:3] if self.data_format == "channels_last" else dims[2:4]
        pads = self.output_padding or (None, None)
        return [_deconv_length(sp[i], self.kernel_size[i], self.padding, pads[i],
                               self.strides[i], self.dilation_rate[i]) for i in range(2)]

    def build(self, input_shape):
        c = self._in_channels(input_shape)
        self.kernel = self.add_weight("kernel", self.kernel_size + (self.filters, c),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = self.add_weight("bias", (self.filters,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        self.input_spec = InputSpec(ndim=4, axes={self._channel_axis: c})
        self.built = True

    def call(self, inputs):
        shape = array_ops.shape(inputs)
        sp = (1, 2) if self.data_format == "channels_last" else (2, 3)
        static = self._spatial_sizes(inputs.shape)
        pads = self.output_padding or (None, None)
        sizes = [s if s is not None else _deconv_length(shape[a], self.kernel_size[i],
                                                        self.padding, pads[i], self.strides[i],
                                                        self.dilation_rate[i])
                 for i, (a, s) in enumerate(zip(sp, static))]
        if self.data_format == "channels_last":
            out_shape = [shape[0], sizes[0], sizes[1], self.filters]
        else:
            out_shape = [shape[0], self.filters, sizes[0], sizes[1]]
        y = nn_ops.conv2d_transpose(inputs, self.kernel, out_shape, list(self.strides),
                                    self.padding.upper(), data_format=self._nn_format(),
                                    dilations=list(self.dilation_rate))
        return self._finish(y)

    def compute_output_shape(self, input_shape):
        batch = TensorShape(input_shape)[0]
        oh, ow = self._spatial_sizes(input_shape)
        if self.data_format == "channels_last":
            return TensorShape([batch, oh, ow, self.filters])
        return TensorShape([batch, self.filters, oh, ow])

    def get_config(self):
        return {**self._base_config(), "filters": self.filters,
                "output_padding": self.output_padding,
                "kernel_initializer": _args.init_config(self.kernel_initializer),
                **_args.extras_config(self, _args.CONV_EXTRAS)}


class Conv1D(ConvND):
    """1-D convolution over [batch, steps, channels] (channels_last):
    kernel [kernel_size, in_channels / groups, filters], bias [filters].
    padding 'valid', 'same' or 'causal' (zeros before the steps only, so an
    output never sees a later step)."""

    rank = 1
    paddings = ("valid", "same", "causal")

    def call(self, inputs):
        x = inputs
        if self.data_format == "channels_first":
            x = array_ops.transpose(x, (0, 2, 1))
        padding = self.padding.upper()
        if self.padding == "causal":
            left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
            x = array_ops.pad(x, [[0, 0], [left, 0], [0, 0]])
            padding = "VALID"

        def conv(a, k):
            return nn_ops.conv1d(a, k, self.strides[0], padding, dilations=self.dilation_rate[0])

        if self.groups == 1:
            y = conv(x, self.kernel)
        else:
            xs = array_ops.split(x, self.groups, axis=2)
            ks = array_ops.split(h.tensor(self.kernel), self.groups, axis=2)
            y = array_ops.concat([conv(a, k) for a, k in zip(xs, ks)], 2)
        y = self._finish(y)
        if self.data_format == "channels_first":
            y = array_ops.transpose(y, (0, 2, 1))
        return y


def _padding_pairs(padding):
    """ZeroPadding2D's padding as ((top, bottom), (left, right))."""
    if isinstance(padding, int) and not isinstance(padding, bool):
        if padding < 0:
            raise ValueError(f"ZeroPadding2D: padding must be >= 0, got {padding!r}")
        return ((padding, padding), (padding, padding))
    try:
        items = tuple(padding)
    except TypeError:
        items = ()
    if len(items) != 2:
        raise ValueError("`padding` should have two elements. Received: "
                         f"padding={padding!r}")
    pairs = []
    for i, p in enumerate(items):
        pairs.append(_args.int_tuple(p, 2, f"padding[{i}]", allow_zero=True))
    return tuple(pairs)


class ZeroPadding2D(Layer):
    """Pads the rows and columns of a 4-D input with zeros: ``padding`` is an
    int, (sym_h, sym_w) or ((top, bottom), (left, right))."""

    _kiln_static_shapes = True

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.padding = _padding_pairs(padding)
        self.data_format = _args.data_format(data_format)
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        (t, b), (l, r) = self.padding
        if self.data_format == "channels_last":
            pads = [[0, 0], [t, b], [l, r], [0, 0]]
        else:
            pads = [[0, 0], [0, 0], [t, b], [l, r]]
        return array_ops.pad(inputs, pads)

    def compute_output_shape(self, input_shape):
        dims = list(TensorShape(input_shape))
        hi = 1 if self.data_format == "channels_last" else 2
        for i, (a, b) in enumerate(self.padding):
            if dims[hi + i] is not None:
                dims[hi + i] += a + b
        return TensorShape(dims)

    def get_config(self):
        return {**super().get_config(), "padding": self.padding, "data_format": self.data_format}
