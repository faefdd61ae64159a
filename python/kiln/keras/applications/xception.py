"""Xception (Chollet, "Xception: Deep Learning with Depthwise Separable Convolutions", 2017),
built with the functional API: Keras' layer names, shapes and parameter counts
(tf.keras.applications.Xception), so Keras' weights load with ``set_weights``.

Entry flow (two 3x3 convolutions, three downsampling blocks of separable
convolutions with 1x1/2 convolution shortcuts), middle flow (eight residual
blocks of three separable convolutions at 728 channels), exit flow."""
from kiln.keras import layers
from kiln.keras.applications import imagenet_utils


def _sep_bn(x, filters, name):
    x = layers.SeparableConv2D(filters, 3, padding="same", use_bias=False, name=name)(x)
    return layers.BatchNormalization(axis=-1, name=name + "_bn")(x)


def _relu(x, name):
    return layers.Activation("relu", name=name)(x)


def _shortcut(x, filters):
    # Unnamed, as in Keras (conv2d, batch_normalization, ... by default names).
    r = layers.Conv2D(filters, 1, strides=2, padding="same", use_bias=False)(x)
    return layers.BatchNormalization(axis=-1)(r)


def _down_block(x, filters, block, first_relu=True):
    """Two separable convolutions, a 3x3/2 max pool, plus the 1x1/2 shortcut."""
    residual = _shortcut(x, filters[1])
    p = f"block{block}_"
    if first_relu:
        x = _relu(x, p + "sepconv1_act")
    x = _sep_bn(x, filters[0], p + "sepconv1")
    x = _sep_bn(_relu(x, p + "sepconv2_act"), filters[1], p + "sepconv2")
    x = layers.MaxPooling2D(3, strides=2, padding="same", name=p + "pool")(x)
    return layers.add([x, residual])


def _middle_block(x, block):
    residual = x
    for i in (1, 2, 3):
        x = _sep_bn(_relu(x, f"block{block}_sepconv{i}_act"), 728, f"block{block}_sepconv{i}")
    return layers.add([x, residual])


def _flows(img_input):
    x = layers.Conv2D(32, 3, strides=2, use_bias=False, name="block1_conv1")(img_input)
    x = layers.BatchNormalization(axis=-1, name="block1_conv1_bn")(x)
    x = _relu(x, "block1_conv1_act")
    x = layers.Conv2D(64, 3, use_bias=False, name="block1_conv2")(x)
    x = layers.BatchNormalization(axis=-1, name="block1_conv2_bn")(x)
    x = _relu(x, "block1_conv2_act")
    x = _down_block(x, (128, 128), 2, first_relu=False)
    x = _down_block(x, (256, 256), 3)
    x = _down_block(x, (728, 728), 4)
    for i in range(8):
        x = _middle_block(x, i + 5)
    x = _down_block(x, (728, 1024), 13)
    x = _relu(_sep_bn(x, 1536, "block14_sepconv1"), "block14_sepconv1_act")
    return _relu(_sep_bn(x, 2048, "block14_sepconv2"), "block14_sepconv2_act")


def Xception(include_top=True, weights=None, input_tensor=None, input_shape=None,
             pooling=None, classes=1000, classifier_activation="softmax", name="xception"):
    """Xception (tf.keras.applications.Xception): 22,910,480 parameters with the
    top; default input 299x299, at least 71x71. Inputs preprocessed by
    ``xception.preprocess_input`` ([-1, 1]); weights: None, "imagenet" (Keras'
    file, from its cache folder) or the path of a weights file."""
    return imagenet_utils.inception_style_model(_flows, name, 299, 71, "xception", include_top,
                                                weights, input_tensor, input_shape, pooling,
                                                classes, classifier_activation)


preprocess_input = imagenet_utils.preprocess_tf_mode
decode_predictions = imagenet_utils.decode_predictions

__all__ = ["Xception", "preprocess_input", "decode_predictions"]
