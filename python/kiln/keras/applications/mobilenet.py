"""MobileNet (Howard et al., "MobileNets: Efficient Convolutional Neural Networks for Mobile
Vision Applications", 2017), built with the functional API: Keras' layer names, shapes and
parameter counts (tf.keras.applications.MobileNet), so Keras' weights load with
``set_weights`` or from its ImageNet files (weights="imagenet").

A 3x3/2 convolution, then thirteen depthwise separable blocks (3x3 depthwise
convolution, batch norm, ReLU6, 1x1 pointwise convolution, batch norm, ReLU6;
four of them downsample with a stride of 2). ``alpha`` scales every width,
``depth_multiplier`` the depthwise convolutions' outputs. The top is global
average pooling, dropout and a 1x1 convolution as the classifier."""
from kiln.keras import layers
from kiln.keras.applications import imagenet_utils
from kiln.keras.applications.mobilenet_v2 import default_size, imagenet_rows
from kiln.keras.engine.training import Model

_SIZES = (128, 160, 192, 224)
_ALPHA_TEXT = {1.0: "1_0", 0.75: "7_5", 0.5: "5_0", 0.25: "2_5"}

# (pointwise filters, stride) of the depthwise separable blocks 1..13.
_BLOCKS = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1),
           (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1)]


def _conv_block(x, filters, alpha, strides):
    x = layers.Conv2D(int(filters * alpha), 3, padding="same", use_bias=False, strides=strides,
                      name="conv1")(x)
    x = layers.BatchNormalization(axis=-1, name="conv1_bn")(x)
    return layers.ReLU(6.0, name="conv1_relu")(x)


def _depthwise_conv_block(x, filters, alpha, depth_multiplier, strides, block_id):
    """Depthwise 3x3 (zero padding (0, 1) and 'valid' when strided), BN,
    ReLU6, then pointwise 1x1 to ``filters * alpha`` channels, BN, ReLU6."""
    if strides != 1:
        x = layers.ZeroPadding2D(((0, 1), (0, 1)), name=f"conv_pad_{block_id}")(x)
    x = layers.DepthwiseConv2D(3, padding="same" if strides == 1 else "valid",
                               depth_multiplier=depth_multiplier, strides=strides,
                               use_bias=False, name=f"conv_dw_{block_id}")(x)
    x = layers.BatchNormalization(axis=-1, name=f"conv_dw_{block_id}_bn")(x)
    x = layers.ReLU(6.0, name=f"conv_dw_{block_id}_relu")(x)
    x = layers.Conv2D(int(filters * alpha), 1, padding="same", use_bias=False, strides=1,
                      name=f"conv_pw_{block_id}")(x)
    x = layers.BatchNormalization(axis=-1, name=f"conv_pw_{block_id}_bn")(x)
    return layers.ReLU(6.0, name=f"conv_pw_{block_id}_relu")(x)


def _default_size(input_shape):
    return default_size(input_shape, None, _SIZES)


def _weights_path(weights, alpha, depth_multiplier, rows, cols, include_top):
    """(path to load, the size named in the model's name)."""
    if weights != "imagenet":
        return weights, rows
    if depth_multiplier != 1:
        raise ValueError("If imagenet weights are being loaded, depth multiplier must be 1.  "
                         f"Received depth_multiplier={depth_multiplier}")
    if alpha not in _ALPHA_TEXT:
        raise ValueError("If imagenet weights are being loaded, alpha can be one of`0.25`, "
                         f"`0.50`, `0.75` or `1.0` only.  Received alpha={alpha}")
    rows = imagenet_rows(rows, cols, _SIZES)
    fname = f"mobilenet_{_ALPHA_TEXT[alpha]}_{rows}_tf{'' if include_top else '_no_top'}.h5"
    url = f"{imagenet_utils.KERAS_APPLICATIONS}mobilenet/{fname}"
    return imagenet_utils.weights_path(weights, fname, url), rows


def MobileNet(input_shape=None, alpha=1.0, depth_multiplier=1, dropout=1e-3, include_top=True,
              weights=None, input_tensor=None, pooling=None, classes=1000,
              classifier_activation="softmax", name=None):
    """MobileNet (tf.keras.applications.MobileNet): 4,253,864 parameters at
    alpha 1.0 with the top; default input 224x224, at least 32x32. ``alpha``
    scales the widths, ``depth_multiplier`` the depthwise outputs, ``dropout``
    is the top's rate. Inputs preprocessed by ``mobilenet.preprocess_input``
    ([-1, 1]). weights: None, "imagenet" (Keras' file for alpha 0.25, 0.5,
    0.75 or 1.0 and the input size, 128, 160, 192 or 224, from Keras' cache
    folder) or a weights file. The model is named mobilenet_{alpha}_{rows}."""
    imagenet_utils.check_args(weights, classes, pooling, classifier_activation, include_top)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or alpha <= 0:
        raise ValueError(f"alpha must be a positive number, got {alpha!r}")
    if isinstance(depth_multiplier, bool) or not isinstance(depth_multiplier, int) or \
            depth_multiplier <= 0:
        raise ValueError(f"depth_multiplier must be a positive int, got {depth_multiplier!r}")
    shape = imagenet_utils.input_shape(input_shape, _default_size(input_shape), 32, include_top,
                                       weights)
    path, rows = _weights_path(weights, alpha, depth_multiplier, shape[0], shape[1],
                               include_top)
    img_input = imagenet_utils.image_input(input_tensor, shape, 224, 32, include_top)
    x = _conv_block(img_input, 32, alpha, 2)
    for block_id, (filters, strides) in enumerate(_BLOCKS, 1):
        x = _depthwise_conv_block(x, filters, alpha, depth_multiplier, strides, block_id)
    if include_top:
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = layers.Dropout(dropout, name="dropout")(x)
        x = layers.Conv2D(classes, 1, padding="same", name="conv_preds")(x)
        x = layers.Reshape((classes,), name="reshape_2")(x)
        x = layers.Activation(classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.classifier_top(x, False, pooling, classes, classifier_activation)
    model = Model(img_input, x, name=name or f"mobilenet_{alpha:0.2f}_{rows}")
    return imagenet_utils.load_weights(model, path)


preprocess_input = imagenet_utils.preprocess_tf_mode


decode_predictions = imagenet_utils.decode_predictions

__all__ = ["MobileNet", "preprocess_input", "decode_predictions"]
