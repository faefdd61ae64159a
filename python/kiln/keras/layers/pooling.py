"""Pooling layers: MaxPooling1D/2D, AveragePooling1D/2D and the global poolings."""
from kiln import dtypes
from kiln.keras.layers import _args
from kiln.keras.layers.base import Layer, InputSpec
from kiln.ops import array_ops, math_ops, nn_ops
from kiln.tensor_shape import TensorShape


class _Pooling2D(Layer):
    _kiln_static_shapes = True
    _op = None

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.pool_size = _args.int_tuple(pool_size, 2, "pool_size")
        self.strides = self.pool_size if strides is None else \
            _args.int_tuple(strides, 2, "strides")
        self.padding = _args.padding_mode(padding)
        self.data_format = _args.data_format(data_format)
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        fmt = "NHWC" if self.data_format == "channels_last" else "NCHW"
        return type(self)._op(inputs, list(self.pool_size), list(self.strides),
                              self.padding.upper(), data_format=fmt)

    def compute_output_shape(self, input_shape):
        dims = list(TensorShape(input_shape).with_rank(4))
        hi = 1 if self.data_format == "channels_last" else 2
        for i in range(2):
            n = _args.conv_output_length(dims[hi + i], self.pool_size[i], self.padding,
                                         self.strides[i])
            if n is not None and n <= 0:
                raise ValueError(f"{type(self).__name__} {self.name!r}: the output would be "
                                 f"empty for input shape {TensorShape(input_shape)} and "
                                 f"pool_size={self.pool_size} with padding={self.padding!r}")
            dims[hi + i] = n
        return TensorShape(dims)

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        self.built = True

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format}


class MaxPooling2D(_Pooling2D):
    """Maximum over ``pool_size`` windows moved by ``strides`` (default pool_size)."""
    _op = staticmethod(nn_ops.max_pool2d)


class AveragePooling2D(_Pooling2D):
    """Average over ``pool_size`` windows; with padding='same' the padded
    positions are not counted."""
    _op = staticmethod(nn_ops.avg_pool2d)


class _GlobalPooling2D(Layer):
    _kiln_static_shapes = True
    _reduce = None

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = _args.data_format(data_format)
        self.keepdims = bool(keepdims)
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        axes = [1, 2] if self.data_format == "channels_last" else [2, 3]
        return type(self)._reduce(inputs, axes, keepdims=self.keepdims)

    def compute_output_shape(self, input_shape):
        d = list(TensorShape(input_shape).with_rank(4))
        if self.data_format == "channels_last":
            return TensorShape([d[0], 1, 1, d[3]] if self.keepdims else [d[0], d[3]])
        return TensorShape([d[0], d[1], 1, 1] if self.keepdims else [d[0], d[1]])

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "keepdims": self.keepdims}


class GlobalAveragePooling2D(_GlobalPooling2D):
    """Mean over the spatial axes: [N, H, W, C] -> [N, C] (keepdims: [N, 1, 1, C])."""
    _reduce = staticmethod(math_ops.reduce_mean)


class GlobalMaxPooling2D(_GlobalPooling2D):
    """Maximum over the spatial axes: [N, H, W, C] -> [N, C] (keepdims: [N, 1, 1, C])."""
    _reduce = staticmethod(math_ops.reduce_max)


class _Pooling1D(Layer):
    """A 1-D pooling over [batch, steps, channels] (channels_last), run as the
    2-D pooling of a height-1 image."""

    _kiln_static_shapes = True
    _op = None

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.pool_size = _args.int_tuple(pool_size, 1, "pool_size")
        self.strides = self.pool_size if strides is None else \
            _args.int_tuple(strides, 1, "strides")
        self.padding = _args.padding_mode(padding)
        self.data_format = _args.data_format(data_format)
        self.input_spec = InputSpec(ndim=3)

    def call(self, inputs):
        x = inputs
        if self.data_format == "channels_first":
            x = array_ops.transpose(x, (0, 2, 1))
        y = type(self)._op(array_ops.expand_dims(x, 1), [1, self.pool_size[0]],
                           [1, self.strides[0]], self.padding.upper())
        y = array_ops.squeeze(y, [1])
        return array_ops.transpose(y, (0, 2, 1)) if self.data_format == "channels_first" else y

    def compute_output_shape(self, input_shape):
        dims = list(TensorShape(input_shape).with_rank(3))
        axis = 1 if self.data_format == "channels_last" else 2
        n = _args.conv_output_length(dims[axis], self.pool_size[0], self.padding,
                                     self.strides[0])
        if n is not None and n <= 0:
            raise ValueError(f"{type(self).__name__} {self.name!r}: the output would be empty "
                             f"for input shape {TensorShape(input_shape)} and "
                             f"pool_size={self.pool_size} with padding={self.padding!r}")
        dims[axis] = n
        return TensorShape(dims)

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        self.built = True

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format}


class MaxPooling1D(_Pooling1D):
    """Maximum over ``pool_size`` steps moved by ``strides`` (default pool_size)."""
    _op = staticmethod(nn_ops.max_pool2d)


class AveragePooling1D(_Pooling1D):
    """Average over ``pool_size`` steps; with padding='same' the padded steps
    are not counted."""
    _op = staticmethod(nn_ops.avg_pool2d)


class _GlobalPooling1D(Layer):
    _kiln_static_shapes = True

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = _args.data_format(data_format)
        self.keepdims = bool(keepdims)
        self.input_spec = InputSpec(ndim=3)
        self.supports_masking = True

    @property
    def _steps_axis(self):
        return 1 if self.data_format == "channels_last" else 2

    def compute_mask(self, inputs, mask=None):
        return None  # the steps are pooled away

    def compute_output_shape(self, input_shape):
        d = list(TensorShape(input_shape).with_rank(3))
        if self.keepdims:
            d[self._steps_axis] = 1
            return TensorShape(d)
        del d[self._steps_axis]
        return TensorShape(d)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "keepdims": self.keepdims}


class GlobalAveragePooling1D(_GlobalPooling1D):
    """Mean over the steps: [N, steps, C] -> [N, C]; with a ``mask``
    ([N, steps], true: a real step) the mean of the real steps."""

    def call(self, inputs, mask=None):
        axis = self._steps_axis
        if mask is None:
            return math_ops.reduce_mean(inputs, [axis], keepdims=self.keepdims)
        m = array_ops.expand_dims(dtypes.cast(mask, inputs.dtype),
                                  2 if self.data_format == "channels_last" else 1)
        total = math_ops.reduce_sum(inputs * m, [axis], keepdims=self.keepdims)
        return total / math_ops.reduce_sum(m, [axis], keepdims=self.keepdims)


class GlobalMaxPooling1D(_GlobalPooling1D):
    """Maximum over the steps: [N, steps, C] -> [N, C]."""

    def call(self, inputs):
        return math_ops.reduce_max(inputs, [self._steps_axis], keepdims=self.keepdims)


MaxPool1D, AvgPool1D = MaxPooling1D, AveragePooling1D
GlobalAvgPool1D, GlobalMaxPool1D = GlobalAveragePooling1D, GlobalMaxPooling1D
MaxPool2D, AvgPool2D = MaxPooling2D, AveragePooling2D
GlobalAvgPool2D, GlobalMaxPool2D = GlobalAveragePooling2D, GlobalMaxPooling2D
