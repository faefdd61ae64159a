"""Neural-network ops (tf.nn.*): activations, softmax, convolution, pooling and
the composed normalizations, losses and dropout."""
import math as _math

from kiln import _kiln
from kiln import errors
from kiln.ops import _helpers as h
from kiln.ops import math_ops as m
from kiln.ops import random_ops, special

raw = h.raw


# ---- activations ----

def relu(features, name=None):
    """max(x, 0) elementwise; NaN propagates (tf.nn.relu)."""
    return raw.Relu(h.tensor(features))


def relu6(features, name=None):
    """min(max(x, 0), 6) elementwise (tf.nn.relu6)."""
    x = h.tensor(features)
    return raw.Minimum(raw.Relu(x), h.tensor(6, x.dtype))


def leaky_relu(features, alpha=0.2, name=None):
    """x where x > 0, alpha * x elsewhere (tf.nn.leaky_relu)."""
    x = h.tensor(features)
    _float(x, "LeakyRelu")
    return raw.SelectV2(raw.Greater(x, h.zero_of(x.dtype)), x,
                        raw.Mul(x, h.tensor(alpha, x.dtype)))


def elu(features, name=None):
    """x where x > 0, exp(x) - 1 elsewhere (tf.nn.elu)."""
    x = h.tensor(features)
    _float(x, "Elu")
    neg = raw.Minimum(x, h.zero_of(x.dtype))  # exp of large positives is not needed
    return raw.SelectV2(raw.Greater(x, h.zero_of(x.dtype)), x,
                        raw.Sub(raw.Exp(neg), h.one_of(x.dtype)))


def sigmoid(x, name=None):
    """1 / (1 + exp(-x)) elementwise (tf.nn.sigmoid)."""
    return raw.Sigmoid(h.tensor(x))


def tanh(x, name=None):
    """Hyperbolic tangent elementwise (tf.nn.tanh)."""
    return raw.Tanh(h.tensor(x))


def silu(features, beta=1.0, name=None):
    """x * sigmoid(beta * x) (tf.nn.silu / tf.nn.swish)."""
    x = h.tensor(features)
    _float(x, "Silu")
    z = x if beta == 1.0 else raw.Mul(x, h.tensor(beta, x.dtype))
    return raw.Mul(x, raw.Sigmoid(z))


swish = silu


def gelu(features, approximate=False, name=None):
    """Gaussian error linear unit x * P(X <= x), X ~ N(0, 1) (tf.nn.gelu); with
    approximate=True, TensorFlow's tanh approximation."""
    x = h.tensor(features)
    _float(x, "Gelu")
    half = h.tensor(0.5, x.dtype)
    if approximate:
        c = h.tensor(_math.sqrt(2.0 / _math.pi), x.dtype)
        inner = raw.Mul(c, raw.AddV2(x, raw.Mul(h.tensor(0.044715, x.dtype),
                                                raw.Mul(raw.Square(x), x))))
        return raw.Mul(raw.Mul(half, x), raw.AddV2(h.one_of(x.dtype), raw.Tanh(inner)))
    e = special.erf(raw.Mul(x, h.tensor(1.0 / _math.sqrt(2.0), x.dtype)))
    return raw.Mul(raw.Mul(half, x), raw.AddV2(h.one_of(x.dtype), e))


def _float(x, op):
    if not x.dtype.is_floating:
        raise errors.InvalidArgumentError(
            f"{op}: expected a float32 or float64 tensor, got {x.dtype.name}")


# ---- softmax and losses ----

def _on_last_axis(op_name, logits, axis):
    x = h.tensor(logits)
    fn = getattr(raw, op_name)
    if axis is None:
        return fn(x)
    a = h.one_int(axis, "axis", op_name)
    if a == -1:
        return fn(x)
    r = h.static_rank(x, op_name)
    a = h.normalize_axis(a, r, op_name)
    if a == r - 1:
        return fn(x)
    perm = list(range(r))
    perm[a], perm[-1] = perm[-1], perm[a]
    return raw.Transpose(fn(raw.Transpose(x, perm=perm)), perm=perm)


def softmax(logits, axis=None, name=None):
    """exp(x) / sum(exp(x)) along axis (default last), computed stably (tf.nn.softmax)."""
    return _on_last_axis("Softmax", logits, axis)


def log_softmax(logits, axis=None, name=None):
    """x - log(sum(exp(x))) along axis (default last) (tf.nn.log_softmax)."""
    return _on_last_axis("LogSoftmax", logits, axis)


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """-sum(labels * log_softmax(logits)) along axis (tf.nn.softmax_cross_entropy_with_logits)."""
    x = h.tensor(logits)
    y = h.tensor(labels, None if h.is_tensor(labels) else x.dtype, "SoftmaxCrossEntropy")
    h.check_same_dtype("SoftmaxCrossEntropy", labels=y, logits=x)
    return raw.Neg(m.reduce_sum(raw.Mul(y, log_softmax(x, axis)), axis))


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """-log_softmax(logits)[labels] per row: labels are class indices
    (tf.nn.sparse_softmax_cross_entropy_with_logits)."""
    x = h.tensor(logits)
    lab = h.tensor(labels)
    if not lab.dtype.is_integer:
        raise errors.InvalidArgumentError(
            f"SparseSoftmaxCrossEntropy: labels must be integers, got {lab.dtype.name}")
    depth = raw.StridedSlice(raw.Shape(x, out_type=_kiln.as_dtype("int32")),
                             *(h.tensor([v], "int32") for v in (-1, 0, 1)),
                             end_mask=1, shrink_axis_mask=1)
    onehot = raw.OneHot(lab, depth, h.one_of(x.dtype), h.zero_of(x.dtype), axis=-1)
    return raw.Neg(m.reduce_sum(raw.Mul(onehot, raw.LogSoftmax(x)), -1))


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Elementwise logistic loss max(x, 0) - x * z + log(1 + exp(-|x|))
    (tf.nn.sigmoid_cross_entropy_with_logits)."""
    if labels is None or logits is None:
        raise ValueError("sigmoid_cross_entropy_with_logits: labels and logits are required")
    x = h.tensor(logits)
    z = h.tensor(labels, None if h.is_tensor(labels) else x.dtype, "SigmoidCrossEntropy")
    h.check_same_dtype("SigmoidCrossEntropy", labels=z, logits=x)
    return raw.AddV2(raw.Sub(raw.Relu(x), raw.Mul(x, z)),
                     raw.Log1p(raw.Exp(raw.Neg(raw.Abs(x)))))


# ---- convolution and pooling ----

def _nchw_list(v):
    # A 4-element NCHW strides/dilations/ksize list reordered to NHWC.
    if isinstance(v, (list, tuple)) and len(v) == 4:
        return [v[0], v[2], v[3], v[1]]
    return v


def _explicit_padding(x, padding, op):
    # TensorFlow's explicit padding: [[0, 0], [top, bottom], [left, right], [0, 0]].
    pads = h.int_list(padding, "padding", op)
    if len(pads) != 8 or pads[0] or pads[1] or pads[6] or pads[7]:
        raise errors.InvalidArgumentError(
            f"{op}: explicit padding must be [[0, 0], [top, bottom], [left, right], [0, 0]] "
            f"(NHWC), got {padding!r}")
    if any(p < 0 for p in pads):
        raise errors.InvalidArgumentError(f"{op}: explicit paddings must be >= 0, got {padding!r}")
    p = h.tensor([[0, 0], pads[2:4], pads[4:6], [0, 0]], "int32")
    return raw.PadV2(x, p, h.zero_of(x.dtype))


def _window_op(op_name, x, filt, strides, padding, dilations, data_format):
    x = h.tensor(x)
    nchw = data_format in ("NCHW", "NCW")
    if data_format not in (None, "NHWC", "NCHW", "NWC", "NCW"):
        raise errors.InvalidArgumentError(
            f"{op_name}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    if nchw:
        x = raw.Transpose(x, perm=[0, 2, 3, 1])
        strides, dilations = _nchw_list(strides), _nchw_list(dilations)
    strides = h.int_list(strides, "strides", op_name)
    dilations = [1] if dilations is None else h.int_list(dilations, "dilations", op_name)
    if not isinstance(padding, str):
        if nchw:
            padding = _nchw_list([list(p) for p in padding])
        x = _explicit_padding(x, padding, op_name)
        padding = "VALID"
    f = h.tensor(filt, None if h.is_tensor(filt) else x.dtype, op_name)
    out = getattr(raw, op_name)(x, f, strides=strides, padding=padding, dilations=dilations)
    return raw.Transpose(out, perm=[0, 3, 1, 2]) if nchw else out


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None,
           name=None):  # noqa: A002
    """2-D convolution of an NHWC input with an HWIO filter (tf.nn.conv2d).
    strides/dilations: an int or a list of 1, 2 or 4 values; padding 'SAME',
    'VALID' or explicit [[0, 0], [t, b], [l, r], [0, 0]]."""
    return _window_op("Conv2D", input, filters, strides, padding, dilations, data_format)


def conv2d_transpose(input, filters, output_shape, strides, padding="SAME",
                     data_format="NHWC", dilations=None, name=None):  # noqa: A002
    """The transpose of conv2d (its gradient with respect to its input;
    tf.nn.conv2d_transpose): input [b, h, w, in_channels], filters [kh, kw,
    out_channels, in_channels], output_shape [b, oh, ow, out_channels] (each
    in NCHW order when data_format is 'NCHW'), padding 'SAME' or 'VALID'."""
    op = "Conv2DBackpropInput"
    x = h.tensor(input)
    if data_format not in (None, "NHWC", "NCHW"):
        raise errors.InvalidArgumentError(
            f"{op}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    nchw = data_format == "NCHW"
    sizes = h.tensor(output_shape, "int32")
    if nchw:
        x = raw.Transpose(x, perm=[0, 2, 3, 1])
        strides, dilations = _nchw_list(strides), _nchw_list(dilations)
        sizes = raw.GatherV2(sizes, h.tensor([0, 2, 3, 1], "int32"), axis=0, batch_dims=0)
    strides = h.int_list(strides, "strides", op)
    dilations = [1] if dilations is None else h.int_list(dilations, "dilations", op)
    f = h.tensor(filters, None if h.is_tensor(filters) else x.dtype, op)
    # (bfloat16 on oneDNN's bf16 kernels, float16 in float32: the op's traits)
    out = raw.Conv2DBackpropInput(sizes, f, x, strides=strides, padding=padding,
                                  dilations=dilations)
    return raw.Transpose(out, perm=[0, 3, 1, 2]) if nchw else out


def depthwise_conv2d(input, filter, strides, padding, data_format=None, dilations=None,
                     name=None):  # noqa: A002
    """Depthwise 2-D convolution: each input channel has its own filters
    [h, w, in_channels, multiplier] (tf.nn.depthwise_conv2d)."""
    return _window_op("DepthwiseConv2dNative", input, filter, strides, padding, dilations,
                      data_format)


def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None,
           name=None):  # noqa: A002
    """1-D convolution of an NWC input with a [w, in, out] filter (tf.nn.conv1d),
    run as a 2-D convolution of height 1."""
    x = h.tensor(input)
    if data_format not in (None, "NWC", "NCW"):
        raise errors.InvalidArgumentError(
            f"Conv2D: data_format must be 'NWC' or 'NCW' for conv1d, got {data_format!r}")
    if data_format == "NCW":
        x = raw.Transpose(x, perm=[0, 2, 1])
    f = h.tensor(filters, None if h.is_tensor(filters) else x.dtype, "Conv2D")
    s = _one_spatial(stride, "stride")
    d = 1 if dilations is None else _one_spatial(dilations, "dilations")
    out = raw.Conv2D(raw.ExpandDims(x, axis=1), raw.ExpandDims(f, axis=0), strides=[1, s],
                     padding=padding, dilations=[1, d])
    out = raw.Squeeze(out, squeeze_dims=[1])
    return raw.Transpose(out, perm=[0, 2, 1]) if data_format == "NCW" else out


def _one_spatial(v, what):
    vals = h.int_list(v, what, "Conv2D")
    if len(vals) == 3:
        vals = [vals[1]]
    if len(vals) != 1:
        raise errors.InvalidArgumentError(f"conv1d: {what} must be an int or 3 values")
    return vals[0]


def bias_add(value, bias, data_format=None, name=None):
    """value + bias along the channel dimension (last for N...C, 1 for NC...) (tf.nn.bias_add)."""
    x = h.tensor(value)
    b = h.tensor(bias, None if h.is_tensor(bias) else x.dtype, "BiasAdd")
    if data_format is not None and data_format.startswith("NC"):
        r = h.static_rank(x, "BiasAdd")
        if r < 2:
            raise errors.InvalidArgumentError(f"BiasAdd: value must have rank >= 2, got {r}")
        h.check_same_dtype("BiasAdd", value=x, bias=b)
        if b.ndim != 1:
            raise errors.InvalidArgumentError(f"BiasAdd: bias must be 1-D, got shape {b.shape}")
        return raw.AddV2(x, raw.Reshape(b, h.tensor([-1] + [1] * (r - 2), "int32")))
    return raw.BiasAdd(x, b)


def _pool(op_name, input, ksize, strides, padding, data_format):
    x = h.tensor(input)
    r = x.ndim
    if r == 3 or (data_format in ("NWC", "NCW")):  # 1-D pooling as height-1 2-D pooling
        if data_format == "NCW":
            x = raw.Transpose(x, perm=[0, 2, 1])
        k = _pool1d_arg(ksize, "ksize", op_name)
        s = _pool1d_arg(strides, "strides", op_name)
        out = getattr(raw, op_name)(raw.ExpandDims(x, axis=1), ksize=[1, k], strides=[1, s],
                                    padding=padding)
        out = raw.Squeeze(out, squeeze_dims=[1])
        return raw.Transpose(out, perm=[0, 2, 1]) if data_format == "NCW" else out
    if data_format not in (None, "NHWC", "NCHW"):
        raise errors.InvalidArgumentError(
            f"{op_name}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    if data_format == "NCHW":
        x = raw.Transpose(x, perm=[0, 2, 3, 1])
        ksize, strides = _nchw_list(ksize), _nchw_list(strides)
    out = getattr(raw, op_name)(x, ksize=h.int_list(ksize, "ksize", op_name),
                                strides=h.int_list(strides, "strides", op_name),
                                padding=padding)
    return raw.Transpose(out, perm=[0, 3, 1, 2]) if data_format == "NCHW" else out


def _pool1d_arg(v, what, op):
    vals = h.int_list(v, what, op)
    if len(vals) == 3:
        vals = [vals[1]]
    if len(vals) != 1:
        raise errors.InvalidArgumentError(f"{op}: 1-D pooling {what} must be an int or 3 values")
    return vals[0]


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """Max pooling over NHWC windows (tf.nn.max_pool2d)."""
    return _pool("MaxPool", input, ksize, strides, padding, data_format)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """Average pooling over NHWC windows; SAME padding is not counted (tf.nn.avg_pool2d)."""
    return _pool("AvgPool", input, ksize, strides, padding, data_format)


def max_pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """Max pooling for 3-D (NWC) or 4-D (NHWC) inputs (tf.nn.max_pool)."""
    return _pool("MaxPool", input, ksize, strides, padding, data_format)


def avg_pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """Average pooling for 3-D (NWC) or 4-D (NHWC) inputs (tf.nn.avg_pool)."""
    return _pool("AvgPool", input, ksize, strides, padding, data_format)


# ---- normalization and dropout ----

def moments(x, axes, shift=None, keepdims=False, name=None):
    """(mean, variance) of x over axes (tf.nn.moments)."""
    x = h.tensor(x)
    _float(x, "Moments")
    axes = h.int_list(axes, "axes", "Moments")
    mean = m.reduce_mean(x, axes, keepdims=True)
    var = m.reduce_mean(raw.SquaredDifference(x, mean), axes, keepdims=True)
    if not keepdims and axes:
        mean = raw.Squeeze(mean, squeeze_dims=axes)
        var = raw.Squeeze(var, squeeze_dims=axes)
    return mean, var


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) * scale / sqrt(variance + epsilon) + offset (tf.nn.batch_normalization);
    offset and scale may be None."""
    x = h.tensor(x)
    _float(x, "BatchNormalization")

    def conv(v, what):
        t = h.tensor(v, None if h.is_tensor(v) else x.dtype, "BatchNormalization")
        h.check_same_dtype("BatchNormalization", x=x, **{what: t})
        return t

    inv = raw.Rsqrt(raw.AddV2(conv(variance, "variance"), h.tensor(variance_epsilon, x.dtype)))
    if scale is not None:
        inv = raw.Mul(inv, conv(scale, "scale"))
    shift = raw.Mul(conv(mean, "mean"), inv)
    shift = raw.Sub(conv(offset, "offset"), shift) if offset is not None else raw.Neg(shift)
    return raw.AddV2(raw.Mul(x, inv), shift)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x**2, axis), epsilon)) (tf.math.l2_normalize)."""
    x = h.tensor(x)
    _float(x, "L2Normalize")
    if axis is None:
        axis = dim
    sq = m.reduce_sum(raw.Square(x), axis, keepdims=True)
    return raw.Mul(x, raw.Rsqrt(raw.Maximum(sq, h.tensor(epsilon, x.dtype))))


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Zeroes each element with probability rate and scales the rest by
    1 / (1 - rate) (tf.nn.dropout)."""
    x = h.tensor(x)
    _float(x, "Dropout")
    if h.is_tensor(rate):
        r = h.tensor(rate, x.dtype, "Dropout")
    else:
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate < 1:
            raise ValueError(f"dropout: rate must be a number in [0, 1), got {rate!r}")
        if rate == 0:
            return raw.Identity(x)
        r = h.tensor(float(rate), x.dtype)
    shape = raw.Shape(x, out_type=_kiln.as_dtype("int32")) if noise_shape is None else noise_shape
    u = random_ops.uniform(shape, dtype=x.dtype, seed=seed)
    keep = raw.GreaterEqual(u, r)
    scaled = raw.Mul(x, raw.RealDiv(h.one_of(x.dtype), raw.Sub(h.one_of(x.dtype), r)))
    return raw.SelectV2(keep, scaled, h.zero_of(x.dtype))


softplus = m.softplus  # tf.nn.softplus is tf.math.softplus

NN = ["relu", "relu6", "leaky_relu", "elu", "sigmoid", "tanh", "silu", "swish", "gelu", "softplus",
      "softmax", "log_softmax", "softmax_cross_entropy_with_logits",
      "sparse_softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits",
      "conv1d", "conv2d", "conv2d_transpose", "depthwise_conv2d", "bias_add", "max_pool2d",
      "avg_pool2d", "max_pool", "avg_pool", "moments", "batch_normalization", "l2_normalize", "dropout"]
__all__ = []
