"""MobileNetV2 (Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks", 2018),
built with the functional API and random weights: Keras' layer names, shapes and parameter
counts (tf.keras.applications.MobileNetV2), so Keras' weights load with ``set_weights``."""
from kiln.keras import layers
from kiln.keras.applications import imagenet_utils
from kiln.keras.engine.training import Model


def _make_divisible(v, divisor, min_value=None):
    """v rounded to a multiple of divisor, never below 90% of v."""
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def _bn(x, name):
    return layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name=name)(x)


def _inverted_res_block(inputs, expansion, stride, alpha, filters, block_id):
    in_channels = inputs.shape[-1]
    pointwise_filters = _make_divisible(int(filters * alpha), 8)
    x = inputs
    prefix = f"block_{block_id}_"
    if block_id:
        x = layers.Conv2D(expansion * in_channels, 1, padding="same", use_bias=False,
                          name=prefix + "expand")(x)
        x = layers.ReLU(6.0, name=prefix + "expand_relu")(_bn(x, prefix + "expand_BN"))
    else:
        prefix = "expanded_conv_"
    if stride == 2:
        x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, 3), name=prefix + "pad")(x)
    x = layers.DepthwiseConv2D(3, strides=stride, use_bias=False,
                               padding="same" if stride == 1 else "valid",
                               name=prefix + "depthwise")(x)
    x = layers.ReLU(6.0, name=prefix + "depthwise_relu")(_bn(x, prefix + "depthwise_BN"))
    x = layers.Conv2D(pointwise_filters, 1, padding="same", use_bias=False,
                      name=prefix + "project")(x)
    x = _bn(x, prefix + "project_BN")
    if in_channels == pointwise_filters and stride == 1:
        return layers.Add(name=prefix + "add")([inputs, x])
    return x


# (filters, stride, expansion) per block, in order.
_BLOCKS = [(16, 1, 1), (24, 2, 6), (24, 1, 6), (32, 2, 6), (32, 1, 6), (32, 1, 6), (64, 2, 6),
           (64, 1, 6), (64, 1, 6), (64, 1, 6), (96, 1, 6), (96, 1, 6), (96, 1, 6), (160, 2, 6),
           (160, 1, 6), (160, 1, 6), (320, 1, 6)]


def MobileNetV2(input_shape=None, alpha=1.0, include_top=True, weights=None, input_tensor=None,
                pooling=None, classes=1000, classifier_activation="softmax"):
    """MobileNetV2 (tf.keras.applications.MobileNetV2), randomly initialized:
    3,538,984 parameters at alpha 1.0 with the top. ``alpha`` scales the
    widths; inputs preprocessed by ``mobilenet_v2.preprocess_input`` ([-1, 1])."""
    imagenet_utils.check_args(weights, classes, pooling, classifier_activation)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or alpha <= 0:
        raise ValueError(f"alpha must be a positive number, got {alpha!r}")
    img_input = imagenet_utils.image_input(input_tensor, input_shape, 224, 32, include_top)
    rows = img_input.shape[1] if img_input.shape[1] is not None else 224
    x = layers.Conv2D(_make_divisible(32 * alpha, 8), 3, strides=2, padding="same",
                      use_bias=False, name="Conv1")(img_input)
    x = layers.ReLU(6.0, name="Conv1_relu")(_bn(x, "bn_Conv1"))
    for block_id, (filters, stride, expansion) in enumerate(_BLOCKS):
        x = _inverted_res_block(x, expansion, stride, alpha, filters, block_id)
    last = _make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = layers.Conv2D(last, 1, use_bias=False, name="Conv_1")(x)
    x = layers.ReLU(6.0, name="out_relu")(_bn(x, "Conv_1_bn"))
    x = imagenet_utils.classifier_top(x, include_top, pooling, classes, classifier_activation)
    model = Model(img_input, x, name=f"mobilenetv2_{alpha:0.2f}_{rows}")
    return imagenet_utils.load_weights(model, weights)


def preprocess_input(x, data_format=None):
    """Pixel values in [0, 255] scaled to [-1, 1] (TensorFlow's mode)."""
    return imagenet_utils.preprocess(x, "tf", data_format)


decode_predictions = imagenet_utils.decode_predictions


__all__ = ["MobileNetV2", "preprocess_input", "decode_predictions"]
