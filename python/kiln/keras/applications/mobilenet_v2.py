"""MobileNetV2 (Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks", 2018),
built with the functional API: Keras' layer names, shapes and parameter counts
(tf.keras.applications.MobileNetV2), so Keras' weights load with ``set_weights`` or from its
ImageNet files (weights="imagenet")."""
import warnings

from kiln.keras import layers
from kiln.keras.applications import imagenet_utils
from kiln.keras.applications.imagenet_utils import KERAS_APPLICATIONS as KERAS
from kiln.keras.engine.keras_tensor import KerasTensor
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


_SIZES = (96, 128, 160, 192, 224)
_ALPHAS = (0.35, 0.50, 0.75, 1.0, 1.3, 1.4)


def default_size(input_shape, input_tensor, sizes):
    """Keras' default side for these models: the given square size when
    ImageNet weights exist for it, else 224."""
    if input_shape is not None:
        try:
            rows, cols = tuple(input_shape)[:2]
        except (TypeError, ValueError):
            return 224  # input_shape() says what is wrong with it
    elif input_tensor is not None and isinstance(input_tensor, KerasTensor):
        rows, cols = input_tensor.shape[1:3]
    else:
        return 224
    return rows if rows == cols and rows in sizes else 224


def imagenet_rows(rows, cols, sizes):
    """The input size whose ImageNet weights load: ``rows``, or 224 (with
    Keras' warning) for a size without weights or a non-square input."""
    if rows != cols or rows not in sizes:
        warnings.warn("`input_shape` is undefined or non-square, or `rows` is not in "
                      f"{list(sizes)}. Weights for input shape (224, 224) will be loaded as "
                      "the default.", stacklevel=3)
        return 224
    return rows


def MobileNetV2(input_shape=None, alpha=1.0, include_top=True, weights=None, input_tensor=None,
                pooling=None, classes=1000, classifier_activation="softmax", name=None):
    """MobileNetV2 (tf.keras.applications.MobileNetV2): 3,538,984 parameters at
    alpha 1.0 with the top. ``alpha`` scales the widths; inputs preprocessed
    by ``mobilenet_v2.preprocess_input`` ([-1, 1]). weights: None, "imagenet"
    (Keras' file for alpha in 0.35, 0.5, 0.75, 1.0, 1.3, 1.4 and the input
    size: 96, 128, 160, 192 or 224, from Keras' cache folder) or a weights file."""
    imagenet_utils.check_args(weights, classes, pooling, classifier_activation, include_top)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or alpha <= 0:
        raise ValueError(f"alpha must be a positive number, got {alpha!r}")
    size = default_size(input_shape, input_tensor, _SIZES)
    shape = imagenet_utils.input_shape(input_shape, size, 32, include_top, weights)
    rows = shape[0]
    path = weights
    if weights == "imagenet":
        if alpha not in _ALPHAS:
            raise ValueError("If imagenet weights are being loaded, alpha must be one of "
                             "`0.35`, `0.50`, `0.75`, `1.0`, `1.3` or `1.4` only; Received "
                             f"`alpha={alpha}`")
        rows = imagenet_rows(rows, shape[1], _SIZES)
        fname = (f"mobilenet_v2_weights_tf_dim_ordering_tf_kernels_{float(alpha)}_{rows}"
                 f"{'' if include_top else '_no_top'}.h5")
        path = imagenet_utils.weights_path(weights, fname, f"{KERAS}mobilenet_v2/{fname}")
    img_input = imagenet_utils.image_input(input_tensor, shape, 224, 32, include_top)
    x = layers.Conv2D(_make_divisible(32 * alpha, 8), 3, strides=2, padding="same",
                      use_bias=False, name="Conv1")(img_input)
    x = layers.ReLU(6.0, name="Conv1_relu")(_bn(x, "bn_Conv1"))
    for block_id, (filters, stride, expansion) in enumerate(_BLOCKS):
        x = _inverted_res_block(x, expansion, stride, alpha, filters, block_id)
    last = _make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = layers.Conv2D(last, 1, use_bias=False, name="Conv_1")(x)
    x = layers.ReLU(6.0, name="out_relu")(_bn(x, "Conv_1_bn"))
    x = imagenet_utils.classifier_top(x, include_top, pooling, classes, classifier_activation)
    model = Model(img_input, x, name=name or f"mobilenetv2_{alpha:0.2f}_{rows}")
    return imagenet_utils.load_weights(model, path)


preprocess_input = imagenet_utils.preprocess_tf_mode


decode_predictions = imagenet_utils.decode_predictions


__all__ = ["MobileNetV2", "preprocess_input", "decode_predictions"]
