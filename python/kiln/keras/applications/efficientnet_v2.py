"""EfficientNetV2 (Tan and Le, "EfficientNetV2: Smaller Models and Faster
Training", 2021), built with the functional API (weights: random, Keras' ImageNet
files or a weights file).

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

# Stage configurations (paper, table 4 for S; Keras' for the others).
S_BLOCKS = (
    BlockArgs(3, 2, 24, 24, 1, 1, 0.0, True),
    BlockArgs(3, 4, 24, 48, 4, 2, 0.0, True),
    BlockArgs(3, 4, 48, 64, 4, 2, 0.0, True),
    BlockArgs(3, 6, 64, 128, 4, 2, 0.25, False),
    BlockArgs(3, 9, 128, 160, 6, 1, 0.25, False),
    BlockArgs(3, 15, 160, 256, 6, 2, 0.25, False),
)
M_BLOCKS = (
    BlockArgs(3, 3, 24, 24, 1, 1, 0.0, True),
    BlockArgs(3, 5, 24, 48, 4, 2, 0.0, True),
    BlockArgs(3, 5, 48, 80, 4, 2, 0.0, True),
    BlockArgs(3, 7, 80, 160, 4, 2, 0.25, False),
    BlockArgs(3, 14, 160, 176, 6, 1, 0.25, False),
    BlockArgs(3, 18, 176, 304, 6, 2, 0.25, False),
    BlockArgs(3, 5, 304, 512, 6, 1, 0.25, False),
)
L_BLOCKS = (
    BlockArgs(3, 4, 32, 32, 1, 1, 0.0, True),
    BlockArgs(3, 7, 32, 64, 4, 2, 0.0, True),
    BlockArgs(3, 7, 64, 96, 4, 2, 0.0, True),
    BlockArgs(3, 10, 96, 192, 4, 2, 0.25, False),
    BlockArgs(3, 19, 192, 224, 6, 1, 0.25, False),
    BlockArgs(3, 25, 224, 384, 6, 2, 0.25, False),
    BlockArgs(3, 7, 384, 640, 6, 1, 0.25, False),
)
# B0 (B1..B3 scale it in width and depth).
B_BLOCKS = (
    BlockArgs(3, 1, 32, 16, 1, 1, 0.0, True),
    BlockArgs(3, 2, 16, 32, 4, 2, 0.0, True),
    BlockArgs(3, 2, 32, 48, 4, 2, 0.0, True),
    BlockArgs(3, 3, 48, 96, 4, 2, 0.25, False),
    BlockArgs(3, 5, 96, 112, 6, 1, 0.25, False),
    BlockArgs(3, 8, 112, 192, 6, 2, 0.25, False),
)


def conv_init():
    # He-style fan-out initialization of the convolutions.
    return initializers.VarianceScaling(2.0, "fan_out", "truncated_normal")


def dense_init():
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
                      kernel_initializer=conv_init(), name=name + "_conv")(x)
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


def squeeze_excite(x, filters, in_filters, se_ratio, activation, name):
    se_filters = max(1, int(in_filters * se_ratio))
    se = layers.GlobalAveragePooling2D(name=name + "se_squeeze")(x)
    se = layers.Reshape((1, 1, filters), name=name + "se_reshape")(se)
    se = layers.Conv2D(se_filters, 1, padding="same", activation=activation,
                       kernel_initializer=conv_init(), name=name + "se_reduce")(se)
    se = layers.Conv2D(filters, 1, padding="same", activation="sigmoid",
                       kernel_initializer=conv_init(), name=name + "se_expand")(se)
    return layers.multiply([x, se], name=name + "se_excite")


def mbconv_block(inputs, args, activation, bn_momentum, drop_rate, name):
    """MBConv: 1x1 expansion, depthwise conv, squeeze-and-excitation, 1x1 projection."""
    filters = args.in_filters * args.expand_ratio
    x = inputs
    if args.expand_ratio != 1:
        x = _conv_bn(x, filters, 1, 1, name + "expand", activation, bn_momentum)
    x = layers.DepthwiseConv2D(args.kernel_size, strides=args.strides, padding="same",
                               use_bias=False, depthwise_initializer=conv_init(),
                               name=name + "dwconv2")(x)
    x = layers.BatchNormalization(momentum=bn_momentum, name=name + "bn")(x)
    x = layers.Activation(activation, name=name + "activation")(x)
    if 0 < args.se_ratio <= 1:
        x = squeeze_excite(x, filters, args.in_filters, args.se_ratio, activation, name)
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
        x = squeeze_excite(x, filters, args.in_filters, args.se_ratio, activation, name)
    expanded = args.expand_ratio != 1
    x = _conv_bn(x, args.out_filters, 1 if expanded else args.kernel_size,
                 1 if expanded else args.strides, name + "project",
                 None if expanded else activation, bn_momentum)
    return _residual(x, inputs, args, drop_rate, name)


def _preprocessing(x, model_name):
    """[0, 255] pixels as the weights expect them: the B models (named "...-b*"),
    ImageNet's mean and std; the others, [-1, 1)."""
    if model_name.split("-")[-1].startswith("b") and x.shape[-1] == 3:
        x = layers.Rescaling(scale=1.0 / 255)(x)
        return layers.Normalization(mean=[0.485, 0.456, 0.406],
                                    variance=[0.229**2, 0.224**2, 0.225**2], axis=3)(x)
    return layers.Rescaling(scale=1.0 / 128.0, offset=-1)(x)


def _stages(x, blocks_args, width, depth, activation, bn_momentum, drop_connect_rate,
            min_depth, depth_divisor):
    # Keras divides by the unscaled number of blocks (the rates reach past
    # drop_connect_rate when depth > 1).
    total = float(sum(a.repeats for a in blocks_args))
    b = 0
    for i, args in enumerate(blocks_args):
        if args.repeats <= 0:
            raise ValueError("The number of repeats in `EfficientNetV2` must be > 0. "
                             f"Received: num_repeat={args.repeats}")
        args = args._replace(
            in_filters=round_filters(args.in_filters, width, min_depth, depth_divisor),
            out_filters=round_filters(args.out_filters, width, min_depth, depth_divisor))
        block = fused_mbconv_block if args.fused else mbconv_block
        for j in range(round_repeats(args.repeats, depth)):
            if j > 0:
                args = args._replace(strides=1, in_filters=args.out_filters)
            x = block(x, args, activation, bn_momentum, drop_connect_rate * b / total,
                      name=f"block{i + 1}{chr(j + 97)}_")
            b += 1
    return x


def EfficientNetV2(blocks_args, width_coefficient, depth_coefficient, default_size,
                   dropout_rate=0.2, drop_connect_rate=0.2, depth_divisor=8, min_depth=8,
                   bn_momentum=0.9, activation="swish", model_name="efficientnetv2",
                   include_top=True, weights=None, input_tensor=None, input_shape=None,
                   pooling=None, classes=1000, classifier_activation="softmax",
                   include_preprocessing=True):
    """An EfficientNetV2 functional model for a stage configuration.
    weights="imagenet": Keras' file ``{model_name}.h5`` (``_notop.h5``)."""
    imagenet_utils.check_args(weights, classes, pooling, classifier_activation, include_top)
    img_input = imagenet_utils.image_input(input_tensor, input_shape, default_size, 32,
                                           include_top, weights)
    path = weights
    if weights == "imagenet":
        fname = model_name + (".h5" if include_top else "_notop.h5")
        path = imagenet_utils.weights_path(
            weights, fname, f"{imagenet_utils.KERAS_APPLICATIONS}efficientnet_v2/{fname}")
    x = _preprocessing(img_input, model_name) if include_preprocessing else img_input
    stem = round_filters(blocks_args[0].in_filters, width_coefficient, min_depth, depth_divisor)
    x = _conv_bn(x, stem, 3, 2, "stem", activation, bn_momentum)
    x = _stages(x, blocks_args, width_coefficient, depth_coefficient, activation, bn_momentum,
                drop_connect_rate, min_depth, depth_divisor)
    top = round_filters(1280, width_coefficient, min_depth, depth_divisor)
    x = _conv_bn(x, top, 1, 1, "top", activation, bn_momentum)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate, name="top_dropout")(x)
        x = layers.Dense(classes, activation=classifier_activation,
                         kernel_initializer=dense_init(),
                         bias_initializer=initializers.Constant(0.0), name="predictions")(x)
    else:
        x = imagenet_utils.classifier_top(x, False, pooling, classes, classifier_activation,
                                          ("avg_pool", "max_pool"))
    return imagenet_utils.load_weights(Model(img_input, x, name=model_name), path)


# key: (stages, width, depth, default size); parameters with the top.
_MODELS = {
    "b0": (B_BLOCKS, 1.0, 1.0, 224),  # 7,200,312
    "b1": (B_BLOCKS, 1.0, 1.1, 240),  # 8,212,124
    "b2": (B_BLOCKS, 1.1, 1.2, 260),  # 10,178,374
    "b3": (B_BLOCKS, 1.2, 1.4, 300),  # 14,467,622
    "s": (S_BLOCKS, 1.0, 1.0, 384),  # 21,612,360
    "m": (M_BLOCKS, 1.0, 1.0, 480),  # 54,431,388
    "l": (L_BLOCKS, 1.0, 1.0, 480),  # 119,027,848
}

_DOC = """EfficientNetV2-{u} (tf.keras.applications.EfficientNetV2{u}), randomly
    initialized or from a local weights file.

    Args:
      include_top: end with global pooling, dropout 0.2 and a Dense(classes) layer.
      weights: None, "imagenet" (Keras' file {n}.h5 or {n}_notop.h5, read
        from Keras' cache folder, never downloaded) or a weights file.
      input_tensor: an optional Keras tensor to use as the input.
      input_shape: (height, width, channels); default ({s}, {s}, 3) with the
        top, (None, None, 3) without. Height and width must be >= 32.
      pooling: without the top, None (4-D output), 'avg' or 'max'.
      classes: number of classes of the top layer.
      classifier_activation: activation of the top layer (default 'softmax').
      include_preprocessing: inputs are pixel values in [0, 255], rescaled
        by the model: {pre}.
      name: the model's name.
    """


def _variant(key):
    blocks, width, depth, size = _MODELS[key]
    pre = ("Rescaling(1/255) and Normalization by ImageNet's mean and variance"
           if key.startswith("b") else "Rescaling(1/128, offset=-1)")

    def build(include_top=True, weights=None, input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation="softmax",
              include_preprocessing=True, name=f"efficientnetv2-{key}"):
        return EfficientNetV2(blocks, width_coefficient=width, depth_coefficient=depth,
                              default_size=size, model_name=name, include_top=include_top,
                              weights=weights, input_tensor=input_tensor,
                              input_shape=input_shape, pooling=pooling, classes=classes,
                              classifier_activation=classifier_activation,
                              include_preprocessing=include_preprocessing)

    build.__name__ = build.__qualname__ = f"EfficientNetV2{key.upper()}"
    build.__doc__ = _DOC.format(u=key.upper(), s=size, pre=pre, n=f"efficientnetv2-{key}")
    return build


EfficientNetV2B0 = _variant("b0")
EfficientNetV2B1 = _variant("b1")
EfficientNetV2B2 = _variant("b2")
EfficientNetV2B3 = _variant("b3")
EfficientNetV2S = _variant("s")
EfficientNetV2M = _variant("m")
EfficientNetV2L = _variant("l")


def preprocess_input(x, data_format=None):
    """The identity: EfficientNetV2 models rescale their inputs themselves."""
    return x


decode_predictions = imagenet_utils.decode_predictions

__all__ = ["EfficientNetV2B0", "EfficientNetV2B1", "EfficientNetV2B2", "EfficientNetV2B3",
           "EfficientNetV2S", "EfficientNetV2M", "EfficientNetV2L", "preprocess_input",
           "decode_predictions"]
