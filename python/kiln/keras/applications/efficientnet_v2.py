"""EfficientNetV2 (Tan and Le, "EfficientNetV2: Smaller Models and Faster
Training", 2021), built with the functional API and random weights.

The network: a 3x3/2 stem convolution, stages of Fused-MBConv blocks (an
expanding 3x3 convolution, then a 1x1 projection) and MBConv blocks (1x1
expansion, 3x3 depthwise convolution, squeeze-and-excitation, 1x1
projection), a 1x1 convolution to 1280 channels, global average pooling and
the classifier. Layer names and parameter counts follow Keras'
implementation, so ``summary()`` reads the same (21,612,360 parameters for
EfficientNetV2-S with the top).
"""
import collections
import math

from kiln.keras import initializers, layers
from kiln.keras.applications import imagenet_utils
from kiln.keras.models import Model

BlockArgs = collections.namedtuple(
    "BlockArgs", "kernel_size repeats in_filters out_filters expand_ratio strides se_ratio fused")

# Stage configuration of EfficientNetV2-S (paper, table 4).
S_BLOCKS = (
    BlockArgs(3, 2, 24, 24, 1, 1, 0.0, True),
    BlockArgs(3, 4, 24, 48, 4, 2, 0.0, True),
    BlockArgs(3, 4, 48, 64, 4, 2, 0.0, True),
    BlockArgs(3, 6, 64, 128, 4, 2, 0.25, False),
    BlockArgs(3, 9, 128, 160, 6, 1, 0.25, False),
    BlockArgs(3, 15, 160, 256, 6, 2, 0.25, False),
)


def _conv_init():
    # He-style fan-out initialization of the convolutions.
    return initializers.VarianceScaling(2.0, "fan_out", "truncated_normal")


def _dense_init():
    return initializers.VarianceScaling(1.0 / 3.0, "fan_out", "uniform")


def round_filters(filters, width_coefficient, min_depth=8, depth_divisor=8):
    """Channels scaled by width_coefficient, rounded to a multiple of depth_divisor."""
    scaled = filters * width_coefficient
    floor = min_depth or depth_divisor
    rounded = int(scaled + depth_divisor / 2) // depth_divisor * depth_divisor
    return int(max(floor, rounded))


def round_repeats(repeats, depth_coefficient):
    """Blocks per stage scaled by depth_coefficient, rounded up."""
    return int(math.ceil(depth_coefficient * repeats))


def _conv_bn(x, filters, kernel_size, strides, name, activation, bn_momentum):
    x = layers.Conv2D(filters, kernel_size, strides=strides, padding="same", use_bias=False,
                      kernel_initializer=_conv_init(), name=name + "_conv")(x)
    x = layers.BatchNormalization(momentum=bn_momentum, name=name + "_bn")(x)
    if activation is not None:
        x = layers.Activation(activation, name=name + "_activation")(x)
    return x


def _residual(x, inputs, args, drop_rate, name):
    if args.strides == 1 and args.in_filters == args.out_filters:
        if drop_rate > 0:
            x = layers.Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=name + "drop")(x)
        x = layers.add([x, inputs], name=name + "add")
    return x


def _squeeze_excite(x, filters, in_filters, se_ratio, activation, name):
    se_filters = max(1, int(in_filters * se_ratio))
    se = layers.GlobalAveragePooling2D(name=name + "se_squeeze")(x)
    se = layers.Reshape((1, 1, filters), name=name + "se_reshape")(se)
    se = layers.Conv2D(se_filters, 1, padding="same", activation=activation,
                       kernel_initializer=_conv_init(), name=name + "se_reduce")(se)
    se = layers.Conv2D(filters, 1, padding="same", activation="sigmoid",
                       kernel_initializer=_conv_init(), name=name + "se_expand")(se)
    return layers.multiply([x, se], name=name + "se_excite")


def mbconv_block(inputs, args, activation, bn_momentum, drop_rate, name):
    """MBConv: 1x1 expansion, depthwise conv, squeeze-and-excitation, 1x1 projection."""
    filters = args.in_filters * args.expand_ratio
    x = inputs
    if args.expand_ratio != 1:
        x = _conv_bn(x, filters, 1, 1, name + "expand", activation, bn_momentum)
    x = layers.DepthwiseConv2D(args.kernel_size, strides=args.strides, padding="same",
                               use_bias=False, depthwise_initializer=_conv_init(),
                               name=name + "dwconv2")(x)
    x = layers.BatchNormalization(momentum=bn_momentum, name=name + "bn")(x)
    x = layers.Activation(activation, name=name + "activation")(x)
    if 0 < args.se_ratio <= 1:
        x = _squeeze_excite(x, filters, args.in_filters, args.se_ratio, activation, name)
    x = _conv_bn(x, args.out_filters, 1, 1, name + "project", None, bn_momentum)
    return _residual(x, inputs, args, drop_rate, name)


def fused_mbconv_block(inputs, args, activation, bn_momentum, drop_rate, name):
    """Fused-MBConv: one full kxk convolution in place of expansion + depthwise."""
    filters = args.in_filters * args.expand_ratio
    x = inputs
    if args.expand_ratio != 1:
        x = _conv_bn(x, filters, args.kernel_size, args.strides, name + "expand", activation,
                     bn_momentum)
    if 0 < args.se_ratio <= 1:
        x = _squeeze_excite(x, filters, args.in_filters, args.se_ratio, activation, name)
    expanded = args.expand_ratio != 1
    x = _conv_bn(x, args.out_filters, 1 if expanded else args.kernel_size,
                 1 if expanded else args.strides, name + "project",
                 None if expanded else activation, bn_momentum)
    return _residual(x, inputs, args, drop_rate, name)


def EfficientNetV2(blocks_args, width_coefficient, depth_coefficient, default_size,
                   dropout_rate=0.2, drop_connect_rate=0.2, depth_divisor=8, min_depth=8,
                   bn_momentum=0.9, activation="swish", model_name="efficientnetv2",
                   include_top=True, weights=None, input_tensor=None, input_shape=None,
                   pooling=None, classes=1000, classifier_activation="softmax",
                   include_preprocessing=True):
    """An EfficientNetV2 functional model for a stage configuration."""
    imagenet_utils.check_args(weights, classes, pooling, classifier_activation)
    img_input = imagenet_utils.image_input(input_tensor, input_shape, default_size, 32,
                                           include_top)

    x = img_input
    if include_preprocessing:
        x = layers.Rescaling(scale=1.0 / 128.0, offset=-1)(x)  # [0, 255] -> [-1, 1)

    stem = round_filters(blocks_args[0].in_filters, width_coefficient, min_depth, depth_divisor)
    x = _conv_bn(x, stem, 3, 2, "stem", activation, bn_momentum)

    total = float(sum(round_repeats(a.repeats, depth_coefficient) for a in blocks_args))
    b = 0
    for i, args in enumerate(blocks_args):
        args = args._replace(
            in_filters=round_filters(args.in_filters, width_coefficient, min_depth,
                                     depth_divisor),
            out_filters=round_filters(args.out_filters, width_coefficient, min_depth,
                                      depth_divisor))
        block = fused_mbconv_block if args.fused else mbconv_block
        for j in range(round_repeats(args.repeats, depth_coefficient)):
            if j > 0:
                args = args._replace(strides=1, in_filters=args.out_filters)
            x = block(x, args, activation, bn_momentum, drop_connect_rate * b / total,
                      name=f"block{i + 1}{chr(j + 97)}_")
            b += 1

    top = round_filters(1280, width_coefficient, min_depth, depth_divisor)
    x = _conv_bn(x, top, 1, 1, "top", activation, bn_momentum)

    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate, name="top_dropout")(x)
        x = layers.Dense(classes, activation=classifier_activation,
                         kernel_initializer=_dense_init(),
                         bias_initializer=initializers.Constant(0.0), name="predictions")(x)
    elif pooling == "avg":
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
    elif pooling == "max":
        x = layers.GlobalMaxPooling2D(name="max_pool")(x)
    return Model(img_input, x, name=model_name)


def EfficientNetV2S(include_top=True, weights=None, input_tensor=None, input_shape=None,
                    pooling=None, classes=1000, classifier_activation="softmax",
                    include_preprocessing=True):
    """EfficientNetV2-S (tf.keras.applications.EfficientNetV2S), randomly initialized.

    Args:
      include_top: end with global pooling, dropout 0.2 and a Dense(classes) layer.
      weights: must be None (no pretrained weights can be downloaded).
      input_tensor: an optional Keras tensor to use as the input.
      input_shape: (height, width, channels); default (384, 384, 3) with the
        top, (None, None, 3) without. Height and width must be >= 32.
      pooling: without the top, None (4-D output), 'avg' or 'max'.
      classes: number of classes of the top layer.
      classifier_activation: activation of the top layer (default 'softmax').
      include_preprocessing: start with Rescaling(1/128, offset=-1), so
        inputs are pixel values in [0, 255].
    """
    return EfficientNetV2(S_BLOCKS, width_coefficient=1.0, depth_coefficient=1.0,
                          default_size=384, model_name="efficientnetv2-s",
                          include_top=include_top, weights=weights, input_tensor=input_tensor,
                          input_shape=input_shape, pooling=pooling, classes=classes,
                          classifier_activation=classifier_activation,
                          include_preprocessing=include_preprocessing)


def preprocess_input(x, data_format=None):
    """The identity: EfficientNetV2 models rescale their inputs themselves."""
    return x


decode_predictions = imagenet_utils.decode_predictions
