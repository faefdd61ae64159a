"""InceptionV3 (Szegedy et al., "Rethinking the Inception Architecture for Computer Vision",
2016), built with the functional API: Keras' layer names, shapes and parameter counts
(tf.keras.applications.InceptionV3), so Keras' weights load with ``set_weights``.

A stem of five convolutions and two max pools, then the Inception modules
(their outputs named mixed0 .. mixed10): three 35x35 modules (5x5 and double
3x3 branches), a grid reduction, four 17x17 modules (factorized 7x7
branches), a grid reduction and two 8x8 modules (split 1x3 / 3x1 branches).
Every convolution is Conv2D (no bias), BatchNormalization (no scale), ReLU,
with Keras' default layer names."""
from kiln.keras import layers
from kiln.keras.applications import imagenet_utils


def conv2d_bn(x, filters, num_row, num_col, padding="same", strides=(1, 1), name=None):
    """Conv2D + BatchNormalization(scale=False) + ReLU; with ``name``, the
    layers are name_conv, name_bn and name."""
    x = layers.Conv2D(filters, (num_row, num_col), strides=strides, padding=padding,
                      use_bias=False, name=None if name is None else name + "_conv")(x)
    x = layers.BatchNormalization(axis=3, scale=False,
                                  name=None if name is None else name + "_bn")(x)
    return layers.Activation("relu", name=name)(x)


def _chain(x, convs):
    """conv2d_bn one after the other: (filters, rows, cols[, strides, padding])."""
    for c in convs:
        strides, padding = (c[3], c[4]) if len(c) > 3 else (1, "same")
        x = conv2d_bn(x, c[0], c[1], c[2], padding=padding, strides=(strides, strides))
    return x


def _avg_branch(x, filters):
    x = layers.AveragePooling2D(3, strides=1, padding="same")(x)
    return conv2d_bn(x, filters, 1, 1)


def _module_35(x, pool_filters, name):
    branches = [_chain(x, [(64, 1, 1)]), _chain(x, [(48, 1, 1), (64, 5, 5)]),
                _chain(x, [(64, 1, 1), (96, 3, 3), (96, 3, 3)]), _avg_branch(x, pool_filters)]
    return layers.concatenate(branches, axis=3, name=name)


def _module_17(x, width, name):
    branches = [_chain(x, [(192, 1, 1)]),
                _chain(x, [(width, 1, 1), (width, 1, 7), (192, 7, 1)]),
                _chain(x, [(width, 1, 1), (width, 7, 1), (width, 1, 7), (width, 7, 1),
                           (192, 1, 7)]),
                _avg_branch(x, 192)]
    return layers.concatenate(branches, axis=3, name=name)


def _module_8(x, i):
    b1 = conv2d_bn(x, 320, 1, 1)
    b3 = conv2d_bn(x, 384, 1, 1)
    b3 = layers.concatenate([conv2d_bn(b3, 384, 1, 3), conv2d_bn(b3, 384, 3, 1)], axis=3,
                            name=f"mixed9_{i}")
    b33 = _chain(x, [(448, 1, 1), (384, 3, 3)])
    b33 = layers.concatenate([conv2d_bn(b33, 384, 1, 3), conv2d_bn(b33, 384, 3, 1)], axis=3)
    return layers.concatenate([b1, b3, b33, _avg_branch(x, 192)], axis=3, name=f"mixed{9 + i}")


def _reductions(x, which):
    if which == 3:
        branches = [_chain(x, [(384, 3, 3, 2, "valid")]),
                    _chain(x, [(64, 1, 1), (96, 3, 3), (96, 3, 3, 2, "valid")])]
    else:
        branches = [_chain(x, [(192, 1, 1), (320, 3, 3, 2, "valid")]),
                    _chain(x, [(192, 1, 1), (192, 1, 7), (192, 7, 1), (192, 3, 3, 2, "valid")])]
    branches.append(layers.MaxPooling2D(3, strides=2)(x))
    return layers.concatenate(branches, axis=3, name=f"mixed{which}")


def _features(img_input):
    x = _chain(img_input, [(32, 3, 3, 2, "valid"), (32, 3, 3, 1, "valid"), (64, 3, 3)])
    x = layers.MaxPooling2D(3, strides=2)(x)
    x = _chain(x, [(80, 1, 1, 1, "valid"), (192, 3, 3, 1, "valid")])
    x = layers.MaxPooling2D(3, strides=2)(x)
    for i, pool_filters in enumerate((32, 64, 64)):
        x = _module_35(x, pool_filters, f"mixed{i}")
    x = _reductions(x, 3)
    for i, width in enumerate((128, 160, 160, 192)):
        x = _module_17(x, width, f"mixed{4 + i}")
    x = _reductions(x, 8)
    for i in range(2):
        x = _module_8(x, i)
    return x


def InceptionV3(include_top=True, weights=None, input_tensor=None, input_shape=None,
                pooling=None, classes=1000, classifier_activation="softmax",
                name="inception_v3"):
    """InceptionV3 (tf.keras.applications.InceptionV3): 23,851,784 parameters
    with the top; default input 299x299, at least 75x75. Inputs preprocessed by
    ``inception_v3.preprocess_input`` ([-1, 1]); weights: None, "imagenet"
    (Keras' file, from its cache folder) or the path of a weights file."""
    return imagenet_utils.inception_style_model(_features, name, 299, 75, "inception_v3", include_top,
                                                weights, input_tensor, input_shape, pooling,
                                                classes, classifier_activation)


preprocess_input = imagenet_utils.preprocess_tf_mode
decode_predictions = imagenet_utils.decode_predictions

__all__ = ["InceptionV3", "preprocess_input", "decode_predictions"]
