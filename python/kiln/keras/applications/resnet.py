"""ResNet50/101/152 and ResNet50V2/101V2/152V2 (He et al., "Deep Residual Learning for Image
Recognition", 2015, and "Identity Mappings in Deep Residual Networks", 2016), built with the
functional API: layer for layer Keras' names, shapes and parameter counts
(tf.keras.applications.ResNet50, ...), so Keras' weights load with ``set_weights`` or from
its ImageNet files (weights="imagenet")."""
from kiln.keras import layers
from kiln.keras.applications import imagenet_utils
from kiln.keras.engine.training import Model

_EPS = 1.001e-5


def _bn(x, name):
    return layers.BatchNormalization(axis=3, epsilon=_EPS, name=name)(x)


def block_v1(x, filters, kernel_size=3, stride=1, conv_shortcut=True, name=None):
    """A bottleneck block (1x1, kxk, 1x1 convolutions, 4x filters out), the
    shortcut a 1x1 convolution when the shape changes."""
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(x)
        shortcut = _bn(shortcut, name + "_0_bn")
    else:
        shortcut = x
    x = layers.Conv2D(filters, 1, strides=stride, name=name + "_1_conv")(x)
    x = layers.Activation("relu", name=name + "_1_relu")(_bn(x, name + "_1_bn"))
    x = layers.Conv2D(filters, kernel_size, padding="same", name=name + "_2_conv")(x)
    x = layers.Activation("relu", name=name + "_2_relu")(_bn(x, name + "_2_bn"))
    x = _bn(layers.Conv2D(4 * filters, 1, name=name + "_3_conv")(x), name + "_3_bn")
    x = layers.Add(name=name + "_add")([shortcut, x])
    return layers.Activation("relu", name=name + "_out")(x)


def stack_v1(x, filters, blocks, stride1=2, name=None):
    x = block_v1(x, filters, stride=stride1, name=name + "_block1")
    for i in range(2, blocks + 1):
        x = block_v1(x, filters, conv_shortcut=False, name=name + f"_block{i}")
    return x


def block_v2(x, filters, kernel_size=3, stride=1, conv_shortcut=False, name=None):
    """A pre-activation bottleneck block (batch norm and ReLU before each
    convolution; the stride on the 3x3 convolution)."""
    preact = layers.Activation("relu", name=name + "_preact_relu")(_bn(x, name + "_preact_bn"))
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(preact)
    else:
        shortcut = layers.MaxPooling2D(1, strides=stride)(x) if stride > 1 else x
    x = layers.Conv2D(filters, 1, strides=1, use_bias=False, name=name + "_1_conv")(preact)
    x = layers.Activation("relu", name=name + "_1_relu")(_bn(x, name + "_1_bn"))
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name=name + "_2_pad")(x)
    x = layers.Conv2D(filters, kernel_size, strides=stride, use_bias=False,
                      name=name + "_2_conv")(x)
    x = layers.Activation("relu", name=name + "_2_relu")(_bn(x, name + "_2_bn"))
    x = layers.Conv2D(4 * filters, 1, name=name + "_3_conv")(x)
    return layers.Add(name=name + "_out")([shortcut, x])


def stack_v2(x, filters, blocks, stride1=2, name=None):
    x = block_v2(x, filters, conv_shortcut=True, name=name + "_block1")
    for i in range(2, blocks):
        x = block_v2(x, filters, name=name + f"_block{i}")
    return block_v2(x, filters, stride=stride1, name=name + f"_block{blocks}")


def ResNet(stack_fn, preact, use_bias, model_name="resnet", include_top=True, weights=None,
           input_tensor=None, input_shape=None, pooling=None, classes=1000,
           classifier_activation="softmax", weights_name=None):
    """A ResNet functional model around the stages ``stack_fn`` builds;
    ``weights_name`` (resnet50, ..., resnet152v2) names Keras' ImageNet file."""
    imagenet_utils.check_args(weights, classes, pooling, classifier_activation, include_top)
    img_input = imagenet_utils.image_input(input_tensor, input_shape, 224, 32, include_top,
                                           weights)
    path = weights
    if weights_name is not None:
        path = imagenet_utils.weights_path(
            weights, *imagenet_utils.kernels_file("resnet", weights_name, include_top))
    elif weights == "imagenet":
        path = None  # Keras has no file for another stack: random weights, as there
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=use_bias, name="conv1_conv")(x)
    if not preact:
        x = layers.Activation("relu", name="conv1_relu")(_bn(x, "conv1_bn"))
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = stack_fn(x)
    if preact:
        x = layers.Activation("relu", name="post_relu")(_bn(x, "post_bn"))
    x = imagenet_utils.classifier_top(x, include_top, pooling, classes, classifier_activation,
                                      ("avg_pool", "max_pool"))
    return imagenet_utils.load_weights(Model(img_input, x, name=model_name), path)


_DEPTHS = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3)}


def _v1(depth):
    d = _DEPTHS[depth]

    def stack_fn(x):
        x = stack_v1(x, 64, d[0], stride1=1, name="conv2")
        x = stack_v1(x, 128, d[1], name="conv3")
        x = stack_v1(x, 256, d[2], name="conv4")
        return stack_v1(x, 512, d[3], name="conv5")
    return stack_fn


def _v2(depth):
    d = _DEPTHS[depth]

    def stack_fn(x):
        x = stack_v2(x, 64, d[0], name="conv2")
        x = stack_v2(x, 128, d[1], name="conv3")
        x = stack_v2(x, 256, d[2], name="conv4")
        return stack_v2(x, 512, d[3], stride1=1, name="conv5")
    return stack_fn


def _variant(depth, v2, doc):
    key = f"resnet{depth}{'v2' if v2 else ''}"

    def build(include_top=True, weights=None, input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation="softmax", name=key):
        return ResNet(_v2(depth) if v2 else _v1(depth), v2, True, name, include_top, weights,
                      input_tensor, input_shape, pooling, classes, classifier_activation, key)

    title = f"ResNet{depth}{'V2' if v2 else ''}"
    build.__name__ = build.__qualname__ = title
    fname = imagenet_utils.kernels_file("resnet", key, True)[0]
    build.__doc__ = (f"{title} (tf.keras.applications.{title}): {doc} weights: None, "
                     f"\"imagenet\" (Keras' file {fname} or its _notop variant, from Keras' "
                     "cache folder) or a weights file.")
    return build


ResNet50 = _variant(50, False, "25,636,712 parameters with the top; input 224x224 by default, "
                    "preprocessed by ``resnet.preprocess_input`` (caffe: BGR, ImageNet means "
                    "subtracted);")
ResNet101 = _variant(101, False, "44,707,176 parameters with the top;")
ResNet152 = _variant(152, False, "60,419,944 parameters with the top;")
ResNet50V2 = _variant(50, True, "25,613,800 parameters with the top; inputs preprocessed by "
                      "``resnet_v2.preprocess_input`` (scaled to [-1, 1]);")
ResNet101V2 = _variant(101, True, "44,675,560 parameters with the top;")
ResNet152V2 = _variant(152, True, "60,380,648 parameters with the top;")


def preprocess_input(x, data_format=None):
    """Caffe-style preprocessing (ResNet V1): RGB -> BGR, then the ImageNet
    channel means subtracted; pixel values in [0, 255] in, NumPy or tensors."""
    return imagenet_utils.preprocess(x, "caffe", data_format)


preprocess_input_v2 = imagenet_utils.preprocess_tf_mode


decode_predictions = imagenet_utils.decode_predictions
