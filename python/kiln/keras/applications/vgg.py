"""VGG16 and VGG19 (Simonyan and Zisserman, "Very Deep Convolutional Networks for Large-Scale
Image Recognition", 2014), built with the functional API: Keras' layer
names, shapes and parameter counts (tf.keras.applications.VGG16, VGG19)."""
from kiln.keras import layers
from kiln.keras.applications import imagenet_utils
from kiln.keras.applications.resnet import decode_predictions, preprocess_input
from kiln.keras.engine.training import Model


def VGG(convs_per_block, model_name, include_top=True, weights=None, input_tensor=None,
        input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
        weights_key="vgg16"):
    """A VGG functional model: five blocks of 3x3 convolutions (64, 128, 256,
    512, 512 filters) each closed by a 2x2 max pooling, then two 4096-unit
    dense layers and the classifier. ImageNet weights: Keras' vgg16 / vgg19
    files (``weights_key``)."""
    imagenet_utils.check_args(weights, classes, pooling, classifier_activation, include_top)
    img_input = imagenet_utils.image_input(input_tensor, input_shape, 224, 32, include_top,
                                           weights)
    path = imagenet_utils.weights_path(
        weights, *imagenet_utils.kernels_file(weights_key, weights_key, include_top))
    x = img_input
    for b, (filters, n) in enumerate(zip((64, 128, 256, 512, 512), convs_per_block), 1):
        for i in range(1, n + 1):
            x = layers.Conv2D(filters, 3, activation="relu", padding="same",
                              name=f"block{b}_conv{i}")(x)
        x = layers.MaxPooling2D(2, strides=2, name=f"block{b}_pool")(x)
    if include_top:
        x = layers.Flatten(name="flatten")(x)
        x = layers.Dense(4096, activation="relu", name="fc1")(x)
        x = layers.Dense(4096, activation="relu", name="fc2")(x)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.classifier_top(x, False, pooling, classes, classifier_activation)
    return imagenet_utils.load_weights(Model(img_input, x, name=model_name), path)


def VGG16(include_top=True, weights=None, input_tensor=None, input_shape=None, pooling=None,
          classes=1000, classifier_activation="softmax", name="vgg16"):
    """VGG16 (tf.keras.applications.VGG16), random or Keras' ImageNet weights: 138,357,544
    parameters with the top; inputs preprocessed by ``vgg.preprocess_input``
    (caffe, as ResNet's)."""
    return VGG((2, 2, 3, 3, 3), name, include_top, weights, input_tensor, input_shape, pooling,
               classes, classifier_activation, "vgg16")


def VGG19(include_top=True, weights=None, input_tensor=None, input_shape=None, pooling=None,
          classes=1000, classifier_activation="softmax", name="vgg19"):
    """VGG19 (tf.keras.applications.VGG19), random or Keras' ImageNet weights: 143,667,240
    parameters with the top."""
    return VGG((2, 2, 4, 4, 4), name, include_top, weights, input_tensor, input_shape, pooling,
               classes, classifier_activation, "vgg19")


__all__ = ["VGG16", "VGG19", "preprocess_input", "decode_predictions"]
