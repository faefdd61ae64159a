"""NASNetMobile and NASNetLarge (Zoph et al., "Learning Transferable Architectures for Scalable
Image Recognition", 2018), built with the functional API: Keras' layer names, weight paths,
shapes and parameter counts (tf.keras.applications.NASNetMobile, NASNetLarge), so Keras'
weights load with ``set_weights`` or from its ImageNet files (weights="imagenet").

A 3x3/2 stem convolution, two reduction cells, then three stacks of
``num_blocks`` normal cells with a reduction cell between them. Each cell
combines the previous two cells' outputs (``p``, adjusted to the current
shape) through separable convolution and pooling branches; the weights sit
under Keras' name scopes (normal_A_block_0/block_1/...)."""
from kiln.keras import layers
from kiln.keras.applications import imagenet_utils
from kiln.keras.engine.training import Model
from kiln.keras.layers._path_scope import layer_scope

_BASE = f"{imagenet_utils.KERAS_APPLICATIONS}nasnet/"
# default size -> (cache file name, URL) with and without the top.
_FILES = {
    224: (("nasnet_mobile.h5", _BASE + "NASNet-mobile.h5"),
          ("nasnet_mobile_no_top.h5", _BASE + "NASNet-mobile-no-top.h5")),
    331: (("nasnet_large.h5", _BASE + "NASNet-large.h5"),
          ("nasnet_large_no_top.h5", _BASE + "NASNet-large-no-top.h5")),
}


class _NameScope:
    """A name scope for weight paths (Keras' backend.name_scope): layers
    built inside it keep their weights under ``name/``."""

    def __init__(self, name):
        self.name = name
        self._kiln_scope_path = None

    def __enter__(self):
        self._scope = layer_scope(self)
        return self._scope.__enter__()

    def __exit__(self, *exc):
        return self._scope.__exit__(*exc)


def _bn(x, name):
    return layers.BatchNormalization(axis=-1, momentum=0.9997, epsilon=1e-3, name=name)(x)


def _conv1x1(x, filters, name):
    return layers.Conv2D(filters, 1, padding="same", use_bias=False, name=name,
                         kernel_initializer="he_normal")(x)


def _separable_conv_block(ip, filters, kernel_size=3, strides=1, block_id=None):
    """ReLU, separable convolution (strided: after Keras' zero padding), BN,
    ReLU, separable convolution, BN."""
    with _NameScope(f"separable_conv_block_{block_id}"):
        x = layers.Activation("relu")(ip)
        if strides == 2:
            x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, kernel_size),
                                     name=f"separable_conv_1_pad_{block_id}")(x)
        x = layers.SeparableConv2D(filters, kernel_size, strides=strides,
                                   name=f"separable_conv_1_{block_id}",
                                   padding="valid" if strides == 2 else "same",
                                   use_bias=False)(x)
        x = _bn(x, f"separable_conv_1_bn_{block_id}")
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(filters, kernel_size, name=f"separable_conv_2_{block_id}",
                                   padding="same", use_bias=False)(x)
        return _bn(x, f"separable_conv_2_bn_{block_id}")


def _adjust_block(p, ip, filters, block_id=None):
    """The previous cell's output ``p`` brought to ``ip``'s grid (a factorized
    reduction: two 1x1/2 paths, one shifted by a pixel) or to ``filters``
    channels (a 1x1 projection)."""
    with _NameScope("adjust_block"):
        if p is None:
            return ip
        if p.shape[-2] != ip.shape[-2]:
            with _NameScope(f"adjust_reduction_block_{block_id}"):
                p = layers.Activation("relu", name=f"adjust_relu_1_{block_id}")(p)
                p1 = layers.AveragePooling2D(1, strides=2, padding="valid",
                                             name=f"adjust_avg_pool_1_{block_id}")(p)
                p1 = _conv1x1(p1, filters // 2, f"adjust_conv_1_{block_id}")
                p2 = layers.ZeroPadding2D(padding=((0, 1), (0, 1)))(p)
                p2 = layers.Cropping2D(cropping=((1, 0), (1, 0)))(p2)
                p2 = layers.AveragePooling2D(1, strides=2, padding="valid",
                                             name=f"adjust_avg_pool_2_{block_id}")(p2)
                p2 = _conv1x1(p2, filters // 2, f"adjust_conv_2_{block_id}")
                p = layers.concatenate([p1, p2], axis=-1)
                return _bn(p, f"adjust_bn_{block_id}")
        if p.shape[-1] != filters:
            with _NameScope(f"adjust_projection_block_{block_id}"):
                p = layers.Activation("relu")(p)
                p = _conv1x1(p, filters, f"adjust_conv_projection_{block_id}")
                return _bn(p, f"adjust_bn_{block_id}")
        return p


def _cell_input(ip, filters, kind, block_id):
    h = layers.Activation("relu")(ip)
    h = _conv1x1(h, filters, f"{kind}_conv_1_{block_id}")
    return _bn(h, f"{kind}_bn_1_{block_id}")


def _avg3(x, strides, padding, name):
    return layers.AveragePooling2D(3, strides=strides, padding=padding, name=name)(x)


def _normal_a_cell(ip, p, filters, block_id=None):
    """A normal cell: five branch pairs added, concatenated with ``p``.
    Returns (output, ip)."""
    with _NameScope(f"normal_A_block_{block_id}"):
        p = _adjust_block(p, ip, filters, block_id)
        h = _cell_input(ip, filters, "normal", block_id)
        with _NameScope("block_1"):
            x1 = layers.add([_separable_conv_block(h, filters, 5,
                                                   block_id=f"normal_left1_{block_id}"),
                             _separable_conv_block(p, filters,
                                                   block_id=f"normal_right1_{block_id}")],
                            name=f"normal_add_1_{block_id}")
        with _NameScope("block_2"):
            x2 = layers.add([_separable_conv_block(p, filters, 5,
                                                   block_id=f"normal_left2_{block_id}"),
                             _separable_conv_block(p, filters, 3,
                                                   block_id=f"normal_right2_{block_id}")],
                            name=f"normal_add_2_{block_id}")
        with _NameScope("block_3"):
            x3 = _avg3(h, 1, "same", f"normal_left3_{block_id}")
            x3 = layers.add([x3, p], name=f"normal_add_3_{block_id}")
        with _NameScope("block_4"):
            x4_1 = _avg3(p, 1, "same", f"normal_left4_{block_id}")
            x4_2 = _avg3(p, 1, "same", f"normal_right4_{block_id}")
            x4 = layers.add([x4_1, x4_2], name=f"normal_add_4_{block_id}")
        with _NameScope("block_5"):
            x5 = _separable_conv_block(h, filters, block_id=f"normal_left5_{block_id}")
            x5 = layers.add([x5, h], name=f"normal_add_5_{block_id}")
        x = layers.concatenate([p, x1, x2, x3, x4, x5], axis=-1,
                               name=f"normal_concat_{block_id}")
    return x, ip


def _reduction_a_cell(ip, p, filters, block_id=None):
    """A reduction cell (stride 2): four branch pairs, concatenated.
    Returns (output, ip)."""
    with _NameScope(f"reduction_A_block_{block_id}"):
        p = _adjust_block(p, ip, filters, block_id)
        h = _cell_input(ip, filters, "reduction", block_id)
        h3 = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(h, 3),
                                  name=f"reduction_pad_1_{block_id}")(h)
        with _NameScope("block_1"):
            x1_1 = _separable_conv_block(h, filters, 5, strides=2,
                                         block_id=f"reduction_left1_{block_id}")
            x1_2 = _separable_conv_block(p, filters, 7, strides=2,
                                         block_id=f"reduction_right1_{block_id}")
            x1 = layers.add([x1_1, x1_2], name=f"reduction_add_1_{block_id}")
        with _NameScope("block_2"):
            x2_1 = layers.MaxPooling2D(3, strides=2, padding="valid",
                                       name=f"reduction_left2_{block_id}")(h3)
            x2_2 = _separable_conv_block(p, filters, 7, strides=2,
                                         block_id=f"reduction_right2_{block_id}")
            x2 = layers.add([x2_1, x2_2], name=f"reduction_add_2_{block_id}")
        with _NameScope("block_3"):
            x3_1 = _avg3(h3, 2, "valid", f"reduction_left3_{block_id}")
            x3_2 = _separable_conv_block(p, filters, 5, strides=2,
                                         block_id=f"reduction_right3_{block_id}")
            x3 = layers.add([x3_1, x3_2], name=f"reduction_add3_{block_id}")
        with _NameScope("block_4"):
            x4 = _avg3(x1, 1, "same", f"reduction_left4_{block_id}")
            x4 = layers.add([x2, x4])
        with _NameScope("block_5"):
            x5_1 = _separable_conv_block(x1, filters, 3, block_id=f"reduction_left4_{block_id}")
            x5_2 = layers.MaxPooling2D(3, strides=2, padding="valid",
                                       name=f"reduction_right5_{block_id}")(h3)
            x5 = layers.add([x5_1, x5_2], name=f"reduction_add4_{block_id}")
        x = layers.concatenate([x2, x3, x4, x5], axis=-1, name=f"reduction_concat_{block_id}")
        return x, ip


def _cells(x, filters, num_blocks, skip_reduction, fm):
    p = None
    x, p = _reduction_a_cell(x, p, filters // (fm ** 2), block_id="stem_1")
    x, p = _reduction_a_cell(x, p, filters // fm, block_id="stem_2")
    for stack in range(3):
        if stack:
            x, p0 = _reduction_a_cell(x, p, filters * fm ** stack,
                                      block_id=f"reduce_{stack * num_blocks}")
            p = p if skip_reduction else p0
        for i in range(num_blocks):
            x, p = _normal_a_cell(x, p, filters * fm ** stack,
                                  block_id=f"{stack * num_blocks + i + min(stack, 1)}")
    return x


def NASNet(input_shape=None, penultimate_filters=4032, num_blocks=6, stem_block_filters=96,
           skip_reduction=True, filter_multiplier=2, include_top=True, weights=None,
           input_tensor=None, pooling=None, classes=1000, default_size=None,
           classifier_activation="softmax", name="NASNet"):
    """A NASNet-A functional model: ``num_blocks`` normal cells per stack,
    ``penultimate_filters`` channels per cell branch at the end (a multiple of
    24 * filter_multiplier ** 2). ImageNet weights exist for the mobile (224)
    and large (331) default sizes only."""
    imagenet_utils.check_args(weights, classes, pooling, classifier_activation, include_top)
    if isinstance(input_shape, tuple) and None in input_shape and weights == "imagenet":
        raise ValueError("When specifying the input shape of a NASNet and loading `ImageNet` "
                         "weights, the input_shape argument must be static (no None entries). "
                         f"Got: `input_shape={input_shape}`.")
    default_size = 331 if default_size is None else default_size
    shape = imagenet_utils.input_shape(input_shape, default_size, 32, include_top, weights)
    path = weights
    if weights == "imagenet":
        if default_size not in _FILES:
            raise ValueError("ImageNet weights can only be loaded with NASNetLarge or "
                             "NASNetMobile")
        path = imagenet_utils.weights_path(weights, *_FILES[default_size][0 if include_top
                                                                          else 1])
    img_input = imagenet_utils.image_input(input_tensor, shape, default_size, 32, include_top)
    fm = filter_multiplier
    if penultimate_filters % (24 * fm ** 2) != 0:
        raise ValueError("For NASNet-A models, the `penultimate_filters` must be a multiple of "
                         f"24 * (`filter_multiplier` ** 2). Current value: "
                         f"{penultimate_filters}")
    x = layers.Conv2D(stem_block_filters, 3, strides=2, padding="valid", use_bias=False,
                      name="stem_conv1", kernel_initializer="he_normal")(img_input)
    x = _bn(x, "stem_bn1")
    x = _cells(x, penultimate_filters // 24, num_blocks, skip_reduction, fm)
    x = layers.Activation("relu")(x)
    x = imagenet_utils.classifier_top(x, include_top, pooling, classes, classifier_activation)
    return imagenet_utils.load_weights(Model(img_input, x, name=name), path)


def NASNetMobile(input_shape=None, include_top=True, weights=None, input_tensor=None,
                 pooling=None, classes=1000, classifier_activation="softmax",
                 name="nasnet_mobile"):
    """NASNetMobile (tf.keras.applications.NASNetMobile): 5,326,716 parameters
    with the top; input 224x224 by default (without the top too), at least
    32x32. Inputs preprocessed by ``nasnet.preprocess_input`` ([-1, 1]).
    weights: None, "imagenet" (Keras' nasnet_mobile.h5 or
    nasnet_mobile_no_top.h5, from its cache folder) or a weights file."""
    if not include_top and input_shape is None:
        input_shape = (224, 224, 3)
    return NASNet(input_shape, 1056, 4, 32, False, 2, include_top, weights, input_tensor,
                  pooling, classes, 224, classifier_activation, name)


def NASNetLarge(input_shape=None, include_top=True, weights=None, input_tensor=None,
                pooling=None, classes=1000, classifier_activation="softmax",
                name="nasnet_large"):
    """NASNetLarge (tf.keras.applications.NASNetLarge): 88,949,818 parameters
    with the top; input 331x331 by default, at least 32x32. Inputs
    preprocessed by ``nasnet.preprocess_input`` ([-1, 1]). weights: None,
    "imagenet" (Keras' nasnet_large.h5 or nasnet_large_no_top.h5, from its
    cache folder) or a weights file."""
    return NASNet(input_shape, 4032, 6, 96, True, 2, include_top, weights, input_tensor,
                  pooling, classes, 331, classifier_activation, name)


preprocess_input = imagenet_utils.preprocess_tf_mode


decode_predictions = imagenet_utils.decode_predictions

__all__ = ["NASNetMobile", "NASNetLarge", "preprocess_input", "decode_predictions"]
