"""MobileNetV3Small/Large (Howard et al., "Searching for MobileNetV3", 2019), built with the
functional API: Keras' layer names, shapes and parameter counts
(tf.keras.applications.MobileNetV3Small, ...), so Keras' weights load with ``set_weights`` or
from its ImageNet files (weights="imagenet").

Each block: 1x1 expansion, depthwise convolution, optional squeeze-and-excite
(gated by a hard sigmoid, relu6(x + 3) / 6), 1x1 projection. The model
rescales its [0, 255] inputs itself (``include_preprocessing``)."""
import warnings

from kiln.keras import layers
from kiln.keras.applications import imagenet_utils
from kiln.keras.engine.training import Model


def _depth(v, divisor=8, min_value=None):
    """v rounded to a multiple of divisor, never below 90% of v."""
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def _bn(x, name):
    return layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name=name)(x)


def relu(x):
    return layers.ReLU()(x)


def hard_sigmoid(x):
    return layers.ReLU(6.0)(x + 3.0) * (1.0 / 6.0)


def hard_swish(x):
    return layers.Activation("hard_swish")(x)


def _se_block(inputs, filters, se_ratio, prefix):
    x = layers.GlobalAveragePooling2D(keepdims=True,
                                      name=prefix + "squeeze_excite_avg_pool")(inputs)
    x = layers.Conv2D(_depth(filters * se_ratio), 1, padding="same",
                      name=prefix + "squeeze_excite_conv")(x)
    x = layers.ReLU(name=prefix + "squeeze_excite_relu")(x)
    x = layers.Conv2D(filters, 1, padding="same", name=prefix + "squeeze_excite_conv_1")(x)
    x = hard_sigmoid(x)
    return layers.Multiply(name=prefix + "squeeze_excite_mul")([inputs, x])


def _inverted_res_block(x, expansion, filters, kernel_size, stride, se_ratio, activation,
                        block_id):
    shortcut, in_filters = x, x.shape[-1]
    prefix = f"expanded_conv_{block_id}_" if block_id else "expanded_conv_"
    if block_id:
        x = layers.Conv2D(_depth(in_filters * expansion), 1, padding="same", use_bias=False,
                          name=prefix + "expand")(x)
        x = activation(_bn(x, prefix + "expand_bn"))
    if stride == 2:
        x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, kernel_size),
                                 name=prefix + "depthwise_pad")(x)
    x = layers.DepthwiseConv2D(kernel_size, strides=stride,
                               padding="same" if stride == 1 else "valid", use_bias=False,
                               name=prefix + "depthwise")(x)
    x = activation(_bn(x, prefix + "depthwise_bn"))
    if se_ratio:
        x = _se_block(x, _depth(in_filters * expansion), se_ratio, prefix)
    x = layers.Conv2D(filters, 1, padding="same", use_bias=False, name=prefix + "project")(x)
    x = _bn(x, prefix + "project_bn")
    if stride == 1 and in_filters == filters:
        x = layers.Add(name=prefix + "add")([shortcut, x])
    return x


# Per block: (expansion, filters, kernel ("k": 5, 3 when minimalistic), stride,
# squeeze-and-excite, activation ("hs": hard_swish, relu when minimalistic)).
_SMALL = [(1, 16, 3, 2, True, "relu"), (72 / 16, 24, 3, 2, False, "relu"),
          (88 / 24, 24, 3, 1, False, "relu"), (4, 40, "k", 2, True, "hs"),
          (6, 40, "k", 1, True, "hs"), (6, 40, "k", 1, True, "hs"), (3, 48, "k", 1, True, "hs"),
          (3, 48, "k", 1, True, "hs"), (6, 96, "k", 2, True, "hs"), (6, 96, "k", 1, True, "hs"),
          (6, 96, "k", 1, True, "hs")]
_LARGE = [(1, 16, 3, 1, False, "relu"), (4, 24, 3, 2, False, "relu"),
          (3, 24, 3, 1, False, "relu"), (3, 40, "k", 2, True, "relu"),
          (3, 40, "k", 1, True, "relu"), (3, 40, "k", 1, True, "relu"),
          (6, 80, 3, 2, False, "hs"), (2.5, 80, 3, 1, False, "hs"), (2.3, 80, 3, 1, False, "hs"),
          (2.3, 80, 3, 1, False, "hs"), (6, 112, 3, 1, True, "hs"), (6, 112, 3, 1, True, "hs"),
          (6, 160, "k", 2, True, "hs"), (6, 160, "k", 1, True, "hs"),
          (6, 160, "k", 1, True, "hs")]


def _stack(x, blocks, alpha, minimalistic):
    kernel, act, se_ratio = (3, relu, None) if minimalistic else (5, hard_swish, 0.25)
    for block_id, (expansion, filters, k, stride, se, a) in enumerate(blocks):
        x = _inverted_res_block(x, expansion, _depth(filters * alpha), kernel if k == "k" else k,
                                stride, se_ratio if se else None, act if a == "hs" else relu,
                                block_id)
    return x, act


def _check_alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or alpha <= 0:
        raise ValueError(f"alpha must be a positive number, got {alpha!r}")


def _top(x, act, last_point_ch, include_top, pooling, classes, dropout_rate,
         classifier_activation):
    if not include_top:
        return imagenet_utils.classifier_top(x, False, pooling, classes, classifier_activation,
                                             ("avg_pool", "max_pool"))
    x = layers.GlobalAveragePooling2D(keepdims=True)(x)
    x = act(layers.Conv2D(last_point_ch, 1, padding="same", use_bias=True, name="conv_2")(x))
    if dropout_rate > 0:
        x = layers.Dropout(dropout_rate)(x)
    x = layers.Conv2D(classes, 1, padding="same", name="logits")(x)
    x = layers.Flatten()(x)
    return layers.Activation(classifier_activation, name="predictions")(x)


def _weights_path(weights, large, minimalistic, alpha, include_top, size):
    """The file to load: for weights="imagenet", Keras' file for the model
    (alpha 0.75 or 1.0; 1.0 when minimalistic), trained at 224x224."""
    if weights != "imagenet":
        return weights
    if (alpha not in (0.75, 1.0) and not minimalistic) or (minimalistic and alpha != 1.0):
        raise ValueError("If imagenet weights are being loaded, alpha can be one of `0.75`, "
                         "`1.0` for non minimalistic or `1.0` for minimalistic only.")
    if size[0] != size[1] or size[0] != 224:
        warnings.warn("`input_shape` is undefined or non-square, or `rows` is not 224. Weights "
                      "for input shape (224, 224) will be loaded as the default.", stacklevel=4)
    key = f"{'large' if large else 'small'}{'_minimalistic' if minimalistic else ''}" \
          f"_224_{alpha}_float"
    fname = f"weights_mobilenet_v3_{key}{'' if include_top else '_no_top_v2'}.h5"
    return imagenet_utils.weights_path(weights, fname,
                                       f"{imagenet_utils.KERAS_APPLICATIONS}mobilenet_v3/{fname}")


def MobileNetV3(blocks, last_point_ch, input_shape=None, alpha=1.0, minimalistic=False,
                include_top=True, weights=None, input_tensor=None, classes=1000, pooling=None,
                dropout_rate=0.2, classifier_activation="softmax", include_preprocessing=True,
                name=None):
    """A MobileNetV3 functional model for a block list (_SMALL or _LARGE)."""
    imagenet_utils.check_args(weights, classes, pooling, classifier_activation, include_top)
    _check_alpha(alpha)
    # Keras takes any input size here, with the top too (its classifier is 1x1 convolutions).
    img_input = imagenet_utils.image_input(input_tensor, input_shape, 224, 32, False)
    path = _weights_path(weights, blocks is _LARGE, minimalistic, alpha, include_top,
                         img_input.shape[1:3])
    x = img_input
    if include_preprocessing:
        x = layers.Rescaling(scale=1.0 / 127.5, offset=-1.0)(x)
    x = layers.Conv2D(16, 3, strides=2, padding="same", use_bias=False, name="conv")(x)
    first_act = relu if minimalistic else hard_swish
    x = first_act(_bn(x, "conv_bn"))
    x, act = _stack(x, blocks, alpha, minimalistic)
    last_conv_ch = _depth(x.shape[-1] * 6)
    if alpha > 1.0:
        last_point_ch = _depth(last_point_ch * alpha)
    x = layers.Conv2D(last_conv_ch, 1, padding="same", use_bias=False, name="conv_1")(x)
    x = act(_bn(x, "conv_1_bn"))
    x = _top(x, act, last_point_ch, include_top, pooling, classes, dropout_rate,
             classifier_activation)
    return imagenet_utils.load_weights(Model(img_input, x, name=name), path)


def MobileNetV3Small(input_shape=None, alpha=1.0, minimalistic=False, include_top=True,
                     weights=None, input_tensor=None, classes=1000, pooling=None,
                     dropout_rate=0.2, classifier_activation="softmax",
                     include_preprocessing=True, name="MobileNetV3Small"):
    """MobileNetV3Small (tf.keras.applications.MobileNetV3Small): 2,554,968
    parameters at alpha 1.0 with the top. ``minimalistic``: 3x3 kernels,
    ReLU and no squeeze-and-excite. Inputs are pixels in [0, 255]
    (``include_preprocessing`` rescales them to [-1, 1])."""
    return MobileNetV3(_SMALL, 1024, input_shape, alpha, minimalistic, include_top, weights,
                       input_tensor, classes, pooling, dropout_rate, classifier_activation,
                       include_preprocessing, name)


def MobileNetV3Large(input_shape=None, alpha=1.0, minimalistic=False, include_top=True,
                     weights=None, input_tensor=None, classes=1000, pooling=None,
                     dropout_rate=0.2, classifier_activation="softmax",
                     include_preprocessing=True, name="MobileNetV3Large"):
    """MobileNetV3Large (tf.keras.applications.MobileNetV3Large): 5,507,432
    parameters at alpha 1.0 with the top; arguments as MobileNetV3Small."""
    return MobileNetV3(_LARGE, 1280, input_shape, alpha, minimalistic, include_top, weights,
                       input_tensor, classes, pooling, dropout_rate, classifier_activation,
                       include_preprocessing, name)


def preprocess_input(x, data_format=None):
    """The identity: MobileNetV3 models rescale their inputs themselves."""
    return x


decode_predictions = imagenet_utils.decode_predictions

__all__ = ["MobileNetV3Small", "MobileNetV3Large", "preprocess_input", "decode_predictions"]
