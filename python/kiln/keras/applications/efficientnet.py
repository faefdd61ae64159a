"""EfficientNetB0..B7 (Tan and Le, "EfficientNet: Rethinking Model Scaling for
Convolutional Neural Networks", 2019), built with the functional API: Keras'
layer names, shapes and parameter counts (tf.keras.applications.EfficientNetB0,
...), so Keras' weights load with ``set_weights`` or from its ImageNet files
(weights="imagenet").

The models take pixels in [0, 255]: a Rescaling(1/255) and a Normalization
layer (its mean and variance are weights, as in Keras) come first. Then a 3x3/2
stem, seven stages of MBConv blocks (1x1 expansion, depthwise convolution,
squeeze-and-excitation, 1x1 projection) scaled in width and depth per model,
a 1x1 convolution, pooling and the classifier."""
import collections
import math

from kiln.keras import layers
from kiln.keras.applications import imagenet_utils
from kiln.keras.applications.efficientnet_v2 import conv_init, dense_init, squeeze_excite
from kiln.keras.engine.training import Model

WEIGHTS_URL = "https://storage.googleapis.com/keras-applications/"
IMAGENET_STDDEV_RGB = (0.229, 0.224, 0.225)

BlockArgs = collections.namedtuple(
    "BlockArgs", "kernel_size repeats in_filters out_filters expand_ratio strides se_ratio")

# The B0 stages; the other models scale their widths and depths.
DEFAULT_BLOCKS = (
    BlockArgs(3, 1, 32, 16, 1, 1, 0.25),
    BlockArgs(3, 2, 16, 24, 6, 2, 0.25),
    BlockArgs(5, 2, 24, 40, 6, 2, 0.25),
    BlockArgs(3, 3, 40, 80, 6, 2, 0.25),
    BlockArgs(5, 3, 80, 112, 6, 1, 0.25),
    BlockArgs(5, 4, 112, 192, 6, 2, 0.25),
    BlockArgs(3, 1, 192, 320, 6, 1, 0.25),
)


def round_filters(filters, width_coefficient, divisor=8):
    """Channels scaled by width_coefficient, rounded to a multiple of the
    divisor, never below 90% of the scaled width."""
    filters *= width_coefficient
    new = max(divisor, int(filters + divisor / 2) // divisor * divisor)
    return int(new + divisor if new < 0.9 * filters else new)


def round_repeats(repeats, depth_coefficient):
    return int(math.ceil(depth_coefficient * repeats))


def _conv_bn(x, filters, name, activation):
    x = layers.Conv2D(filters, 1, padding="same", use_bias=False, kernel_initializer=conv_init(),
                      name=name + "_conv")(x)
    x = layers.BatchNormalization(axis=3, name=name + "_bn")(x)
    if activation is not None:
        x = layers.Activation(activation, name=name + "_activation")(x)
    return x


def block(inputs, args, activation="swish", drop_rate=0.0, name=""):
    """An inverted residual (MBConv) block: expansion, depthwise convolution,
    squeeze-and-excitation, projection, and the skip when shapes allow."""
    filters = args.in_filters * args.expand_ratio
    x = inputs
    if args.expand_ratio != 1:
        x = _conv_bn(x, filters, name + "expand", activation)
    if args.strides == 2:
        x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, args.kernel_size),
                                 name=name + "dwconv_pad")(x)
    x = layers.DepthwiseConv2D(args.kernel_size, strides=args.strides,
                               padding="valid" if args.strides == 2 else "same", use_bias=False,
                               depthwise_initializer=conv_init(), name=name + "dwconv")(x)
    x = layers.BatchNormalization(axis=3, name=name + "bn")(x)
    x = layers.Activation(activation, name=name + "activation")(x)
    if 0 < args.se_ratio <= 1:
        x = squeeze_excite(x, filters, args.in_filters, args.se_ratio, activation, name)
    x = _conv_bn(x, args.out_filters, name + "project", None)
    if args.strides == 1 and args.in_filters == args.out_filters:
        if drop_rate > 0:
            x = layers.Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=name + "drop")(x)
        x = layers.add([x, inputs], name=name + "add")
    return x


def _blocks(x, blocks_args, width, depth, activation, drop_connect_rate):
    total = float(sum(round_repeats(a.repeats, depth) for a in blocks_args))
    b = 0
    for i, args in enumerate(blocks_args):
        if args.repeats <= 0:
            raise ValueError("The number of repeats in `EfficientNet` must be > 0. "
                             f"Received: repeats={args.repeats}")
        args = args._replace(in_filters=round_filters(args.in_filters, width),
                             out_filters=round_filters(args.out_filters, width))
        for j in range(round_repeats(args.repeats, depth)):
            if j > 0:
                args = args._replace(strides=1, in_filters=args.out_filters)
            x = block(x, args, activation, drop_connect_rate * b / total,
                      name=f"block{i + 1}{chr(j + 97)}_")
            b += 1
    return x


def EfficientNet(width_coefficient, depth_coefficient, default_size, dropout_rate=0.2,
                 drop_connect_rate=0.2, activation="swish", blocks_args=DEFAULT_BLOCKS,
                 name="efficientnet", include_top=True, weights=None, input_tensor=None,
                 input_shape=None, pooling=None, classes=1000, classifier_activation="softmax"):
    """An EfficientNet functional model for width and depth coefficients.
    weights="imagenet": Keras' file ``{name}.h5`` (``{name}_notop.h5``)."""
    imagenet_utils.check_args(weights, classes, pooling, classifier_activation, include_top)
    img_input = imagenet_utils.image_input(input_tensor, input_shape, default_size, 32,
                                           include_top, weights)
    path = weights
    if weights == "imagenet":
        fname = name + (".h5" if include_top else "_notop.h5")
        path = imagenet_utils.weights_path(weights, fname, WEIGHTS_URL + fname)
    x = layers.Rescaling(1.0 / 255.0)(img_input)
    x = layers.Normalization(axis=3)(x)
    if weights == "imagenet":
        # Keras' ImageNet Normalization holds the stds squared as its variance;
        # as Keras, a second division by the std undoes it.
        x = layers.Rescaling([1.0 / math.sqrt(s) for s in IMAGENET_STDDEV_RGB])(x)
    x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, 3), name="stem_conv_pad")(x)
    x = layers.Conv2D(round_filters(32, width_coefficient), 3, strides=2, padding="valid",
                      use_bias=False, kernel_initializer=conv_init(), name="stem_conv")(x)
    x = layers.BatchNormalization(axis=3, name="stem_bn")(x)
    x = layers.Activation(activation, name="stem_activation")(x)
    x = _blocks(x, blocks_args, width_coefficient, depth_coefficient, activation,
                drop_connect_rate)
    x = _conv_bn(x, round_filters(1280, width_coefficient), "top", activation)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate, name="top_dropout")(x)
        x = layers.Dense(classes, activation=classifier_activation,
                         kernel_initializer=dense_init(), name="predictions")(x)
    else:
        x = imagenet_utils.classifier_top(x, False, pooling, classes, classifier_activation,
                                          ("avg_pool", "max_pool"))
    return imagenet_utils.load_weights(Model(img_input, x, name=name), path)


# name: (width, depth, default size, dropout rate); parameters with the top.
_MODELS = {
    "b0": (1.0, 1.0, 224, 0.2),  # 5,330,571
    "b1": (1.0, 1.1, 240, 0.2),  # 7,856,239
    "b2": (1.1, 1.2, 260, 0.3),  # 9,177,569
    "b3": (1.2, 1.4, 300, 0.3),  # 12,320,535
    "b4": (1.4, 1.8, 380, 0.4),  # 19,466,823
    "b5": (1.6, 2.2, 456, 0.4),  # 30,562,527
    "b6": (1.8, 2.6, 528, 0.5),  # 43,265,143
    "b7": (2.0, 3.1, 600, 0.5),  # 66,658,687
}


def _variant(key):
    width, depth, size, dropout = _MODELS[key]

    def build(include_top=True, weights=None, input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation="softmax",
              name=f"efficientnet{key}"):
        return EfficientNet(width, depth, size, dropout, name=name, include_top=include_top,
                            weights=weights, input_tensor=input_tensor,
                            input_shape=input_shape, pooling=pooling, classes=classes,
                            classifier_activation=classifier_activation)

    build.__name__ = build.__qualname__ = f"EfficientNet{key.upper()}"
    build.__doc__ = (
        f"EfficientNet{key.upper()} (tf.keras.applications.EfficientNet{key.upper()}): width "
        f"x{width}, depth x{depth}, default input {size}x{size}. Inputs are pixels in "
        "[0, 255] (the model rescales and normalizes them); weights: None, \"imagenet\" (Keras' "
        "file, from its cache folder) or a weights file.")
    return build


EfficientNetB0 = _variant("b0")
EfficientNetB1 = _variant("b1")
EfficientNetB2 = _variant("b2")
EfficientNetB3 = _variant("b3")
EfficientNetB4 = _variant("b4")
EfficientNetB5 = _variant("b5")
EfficientNetB6 = _variant("b6")
EfficientNetB7 = _variant("b7")


def preprocess_input(x, data_format=None):
    """The identity: EfficientNet models rescale their inputs themselves."""
    return x


decode_predictions = imagenet_utils.decode_predictions

__all__ = ["EfficientNetB0", "EfficientNetB1", "EfficientNetB2", "EfficientNetB3",
           "EfficientNetB4", "EfficientNetB5", "EfficientNetB6", "EfficientNetB7",
           "preprocess_input", "decode_predictions"]
