"""DenseNet121/169/201 (Huang et al., "Densely Connected Convolutional Networks", 2017), built
with the functional API: Keras' layer names, shapes and parameter counts
(tf.keras.applications.DenseNet121, ...)."""
from kiln.keras import layers
from kiln.keras.applications import imagenet_utils
from kiln.keras.engine.training import Model

_EPS = 1.001e-5


def _bn_relu(x, name):
    x = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_bn")(x)
    return layers.Activation("relu", name=name + "_relu")(x)


def conv_block(x, growth_rate, name):
    """BN-ReLU-1x1 conv (4 x growth) and BN-ReLU-3x3 conv (growth), its
    output concatenated to its input."""
    y = _bn_relu(x, name + "_0")
    y = layers.Conv2D(4 * growth_rate, 1, use_bias=False, name=name + "_1_conv")(y)
    y = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_1_bn")(y)
    y = layers.Activation("relu", name=name + "_1_relu")(y)
    y = layers.Conv2D(growth_rate, 3, padding="same", use_bias=False, name=name + "_2_conv")(y)
    return layers.Concatenate(axis=3, name=name + "_concat")([x, y])


def dense_block(x, blocks, name):
    for i in range(blocks):
        x = conv_block(x, 32, name=f"{name}_block{i + 1}")
    return x


def transition_block(x, reduction, name):
    x = _bn_relu(x, name)
    x = layers.Conv2D(int(x.shape[3] * reduction), 1, use_bias=False, name=name + "_conv")(x)
    return layers.AveragePooling2D(2, strides=2, name=name + "_pool")(x)


_FILES = {(6, 12, 24, 16): "densenet121", (6, 12, 32, 32): "densenet169",
          (6, 12, 48, 32): "densenet201"}


def DenseNet(blocks, model_name, include_top=True, weights=None, input_tensor=None,
             input_shape=None, pooling=None, classes=1000, classifier_activation="softmax"):
    """A DenseNet functional model with ``blocks`` conv blocks per dense block
    (Keras' ImageNet files for 121, 169 and 201 layers)."""
    imagenet_utils.check_args(weights, classes, pooling, classifier_activation, include_top)
    img_input = imagenet_utils.image_input(input_tensor, input_shape, 224, 32, include_top,
                                           weights)
    path = weights
    if tuple(blocks) in _FILES:
        path = imagenet_utils.weights_path(
            weights, *imagenet_utils.kernels_file("densenet", _FILES[tuple(blocks)],
                                                  include_top))
    elif weights == "imagenet":
        path = None  # Keras has no file for other depths: random weights, as there
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)))(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=False, name="conv1_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=_EPS, name="conv1_bn")(x)
    x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)))(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1")(x)
    for i, n in enumerate(blocks):
        x = dense_block(x, n, name=f"conv{i + 2}")
        if i + 1 < len(blocks):
            x = transition_block(x, 0.5, name=f"pool{i + 2}")
    x = layers.BatchNormalization(axis=3, epsilon=_EPS, name="bn")(x)
    x = layers.Activation("relu", name="relu")(x)
    x = imagenet_utils.classifier_top(x, include_top, pooling, classes, classifier_activation,
                                      ("avg_pool", "max_pool"))
    return imagenet_utils.load_weights(Model(img_input, x, name=model_name), path)


def DenseNet121(include_top=True, weights=None, input_tensor=None, input_shape=None,
                pooling=None, classes=1000, classifier_activation="softmax",
                name="densenet121"):
    """DenseNet121 (tf.keras.applications.DenseNet121), random or Keras' ImageNet
    weights (weights="imagenet"): 8,062,504 parameters with the top; inputs preprocessed by
    ``densenet.preprocess_input`` (torch: [0, 1], then ImageNet mean and std)."""
    return DenseNet((6, 12, 24, 16), name, include_top, weights, input_tensor,
                    input_shape, pooling, classes, classifier_activation)


def DenseNet169(include_top=True, weights=None, input_tensor=None, input_shape=None,
                pooling=None, classes=1000, classifier_activation="softmax",
                name="densenet169"):
    """DenseNet169 (tf.keras.applications.DenseNet169): 14,307,880 parameters."""
    return DenseNet((6, 12, 32, 32), name, include_top, weights, input_tensor,
                    input_shape, pooling, classes, classifier_activation)


def DenseNet201(include_top=True, weights=None, input_tensor=None, input_shape=None,
                pooling=None, classes=1000, classifier_activation="softmax",
                name="densenet201"):
    """DenseNet201 (tf.keras.applications.DenseNet201): 20,242,984 parameters."""
    return DenseNet((6, 12, 48, 32), name, include_top, weights, input_tensor,
                    input_shape, pooling, classes, classifier_activation)


def preprocess_input(x, data_format=None):
    """Torch-style preprocessing: [0, 255] to [0, 1], then each channel less
    its ImageNet mean, over its std."""
    return imagenet_utils.preprocess(x, "torch", data_format)


decode_predictions = imagenet_utils.decode_predictions

__all__ = ["DenseNet121", "DenseNet169", "DenseNet201", "preprocess_input",
           "decode_predictions"]
