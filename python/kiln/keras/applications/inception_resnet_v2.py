"""InceptionResNetV2 (Szegedy et al., "Inception-v4, Inception-ResNet and the Impact of
Residual Connections on Learning", 2016), built with the functional API: Keras' layer names,
shapes and parameter counts (tf.keras.applications.InceptionResNetV2), so Keras' weights load
with ``set_weights`` or from its ImageNet files (weights="imagenet").

The Inception V3 stem, a 35x35 Inception module (mixed_5b), ten Inception-ResNet-A
blocks (block35, residuals scaled by 0.17), a grid reduction (mixed_6a), twenty
Inception-ResNet-B blocks (block17, 0.1), a grid reduction (mixed_7a), ten
Inception-ResNet-C blocks (block8, 0.2; the last linear and unscaled) and a
1x1 convolution to 1536 channels (conv_7b). Each residual branch ends in a
1x1 convolution with a bias back to the block's width; CustomScaleLayer adds
it, scaled, to the block's input."""
from kiln.keras import layers
from kiln.keras.applications import imagenet_utils
from kiln.keras.layers.base import Layer
from kiln.tensor_shape import TensorShape


class CustomScaleLayer(Layer):
    """inputs[0] + inputs[1] * scale (the block's residual connection)."""

    _kiln_static_shapes = True

    def __init__(self, scale, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale

    def call(self, inputs):
        return inputs[0] + inputs[1] * self.scale

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape[0])

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}


def conv2d_bn(x, filters, kernel_size, strides=1, padding="same", activation="relu",
              use_bias=False, name=None):
    """Conv2D, then (without a bias) BatchNormalization(scale=False), then
    the activation; with ``name``, the layers are name, name_bn and name_ac."""
    x = layers.Conv2D(filters, kernel_size, strides=strides, padding=padding,
                      use_bias=use_bias, name=name)(x)
    if not use_bias:
        x = layers.BatchNormalization(axis=3, scale=False,
                                      name=None if name is None else f"{name}_bn")(x)
    if activation is not None:
        x = layers.Activation(activation, name=None if name is None else f"{name}_ac")(x)
    return x


def _chain(x, convs):
    """conv2d_bn one after the other: (filters, kernel[, strides, padding])."""
    for c in convs:
        x = conv2d_bn(x, c[0], c[1], *c[2:])
    return x


# The residual branches of each block type: lists of conv2d_bn chains.
_BRANCHES = {
    "block35": [[(32, 1)], [(32, 1), (32, 3)], [(32, 1), (48, 3), (64, 3)]],
    "block17": [[(192, 1)], [(128, 1), (160, (1, 7)), (192, (7, 1))]],
    "block8": [[(192, 1)], [(192, 1), (224, (1, 3)), (256, (3, 1))]],
}


def inception_resnet_block(x, scale, block_type, block_idx, activation="relu"):
    """One Inception-ResNet block (its layers named block_type_block_idx_...):
    x + scale * (a 1x1 convolution of the concatenated branches), then the
    activation."""
    if block_type not in _BRANCHES:
        raise ValueError('Unknown Inception-ResNet block type. Expects "block35", "block17" '
                         f'or "block8", but got: {block_type}')
    branches = [_chain(x, chain) for chain in _BRANCHES[block_type]]
    name = f"{block_type}_{block_idx}"
    mixed = layers.Concatenate(axis=3, name=f"{name}_mixed")(branches)
    up = conv2d_bn(mixed, x.shape[3], 1, activation=None, use_bias=True, name=f"{name}_conv")
    x = CustomScaleLayer(scale)([x, up])
    if activation is not None:
        x = layers.Activation(activation, name=f"{name}_ac")(x)
    return x


def _stem(img_input):
    x = _chain(img_input, [(32, 3, 2, "valid"), (32, 3, 1, "valid"), (64, 3)])
    x = layers.MaxPooling2D(3, strides=2)(x)
    x = _chain(x, [(80, 1, 1, "valid"), (192, 3, 1, "valid")])
    x = layers.MaxPooling2D(3, strides=2)(x)
    branches = [_chain(x, [(96, 1)]), _chain(x, [(48, 1), (64, 5)]),
                _chain(x, [(64, 1), (96, 3), (96, 3)])]
    pool = layers.AveragePooling2D(3, strides=1, padding="same")(x)
    branches.append(conv2d_bn(pool, 64, 1))
    return layers.Concatenate(axis=3, name="mixed_5b")(branches)


def _features(img_input):
    x = _stem(img_input)
    for i in range(1, 11):
        x = inception_resnet_block(x, 0.17, "block35", i)
    branches = [_chain(x, [(384, 3, 2, "valid")]),
                _chain(x, [(256, 1), (256, 3), (384, 3, 2, "valid")]),
                layers.MaxPooling2D(3, strides=2, padding="valid")(x)]
    x = layers.Concatenate(axis=3, name="mixed_6a")(branches)
    for i in range(1, 21):
        x = inception_resnet_block(x, 0.1, "block17", i)
    branches = [_chain(x, [(256, 1), (384, 3, 2, "valid")]),
                _chain(x, [(256, 1), (288, 3, 2, "valid")]),
                _chain(x, [(256, 1), (288, 3), (320, 3, 2, "valid")]),
                layers.MaxPooling2D(3, strides=2, padding="valid")(x)]
    x = layers.Concatenate(axis=3, name="mixed_7a")(branches)
    for i in range(1, 10):
        x = inception_resnet_block(x, 0.2, "block8", i)
    x = inception_resnet_block(x, 1.0, "block8", 10, activation=None)
    return conv2d_bn(x, 1536, 1, name="conv_7b")


def InceptionResNetV2(include_top=True, weights=None, input_tensor=None, input_shape=None,
                      pooling=None, classes=1000, classifier_activation="softmax",
                      name="inception_resnet_v2"):
    """InceptionResNetV2 (tf.keras.applications.InceptionResNetV2): 55,873,736
    parameters with the top; default input 299x299, at least 75x75. Inputs
    preprocessed by ``inception_resnet_v2.preprocess_input`` ([-1, 1]).
    weights: None, "imagenet" (Keras' file
    inception_resnet_v2_weights_tf_dim_ordering_tf_kernels[_notop].h5, from its
    cache folder) or a weights file."""
    return imagenet_utils.inception_style_model(_features, name, 299, 75, "inception_resnet_v2", include_top,
                                                weights, input_tensor, input_shape, pooling,
                                                classes, classifier_activation)


preprocess_input = imagenet_utils.preprocess_tf_mode
decode_predictions = imagenet_utils.decode_predictions

__all__ = ["InceptionResNetV2", "CustomScaleLayer", "preprocess_input", "decode_predictions"]
