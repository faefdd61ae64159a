"""Conv3D (Keras 3's arguments, weights, defaults and errors).

A first version: kiln has no 3-D convolution kernel, so the convolution is a sum over the
kernel's depth taps of 2-D convolutions (each tap convolves the depth slices it meets, folded
into the batch), with TensorFlow's SAME padding applied along the depth by hand.
"""
from kiln.keras.layers import _args
from kiln.keras.layers._conv_nd import ConvND
from kiln.ops import _helpers as h
from kiln.ops import array_ops, nn_ops


def _same_pads(n, k, s, d):
    """TensorFlow's SAME padding (before, after) along one axis of n steps."""
    eff = (k - 1) * d + 1
    out = (n + s - 1) // s
    total = max((out - 1) * s + eff - n, 0)
    return total // 2, total - total // 2


class Conv3D(ConvND):
    """3-D convolution over [batch, depth, height, width, channels]
    (channels_last): kernel [kd, kh, kw, in_channels / groups, filters], bias
    [filters]; output ``activation(conv3d(inputs, kernel) + bias)``. Computed
    as a sum of 2-D convolutions over the depth taps (see the module)."""

    rank = 3

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format=None, dilation_rate=(1, 1, 1), groups=1, activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         groups, activation, use_bias, kernel_initializer, bias_initializer,
                         kernel_regularizer, bias_regularizer, activity_regularizer,
                         kernel_constraint, bias_constraint, **kwargs)

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
        y = self._finish(y)
        if self.data_format == "channels_first":
            y = array_ops.transpose(y, [0, 4, 1, 2, 3])
        return y


Convolution3D = Conv3D

__all__ = ["Conv3D", "Convolution3D"]
