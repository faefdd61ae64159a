"""ConvNeXtTiny/Small/Base/Large/XLarge (Liu et al., "A ConvNet for the 2020s", 2022), built
with the functional API: Keras' layer names, shapes and parameter counts
(tf.keras.applications.ConvNeXtTiny, ...), so Keras' weights load with ``set_weights`` or from
its ImageNet files (weights="imagenet").

A 4x4/4 "patchify" stem, four stages of ConvNeXt blocks (7x7 depthwise
convolution, layer norm, an MLP 4x wide with GELU, a learned per-channel scale
(LayerScale), stochastic depth, the residual) with 2x2/2 downsampling between
them, global pooling, layer norm and the classifier. The model normalizes its
[0, 255] inputs itself (``include_preprocessing``)."""
import numpy as np

from kiln.keras import initializers, layers
from kiln.keras.applications import imagenet_utils
from kiln.keras.engine.sequential import Sequential
from kiln.keras.engine.training import Model
from kiln.keras.layers.base import Layer
from kiln.ops import array_ops, nn_ops
from kiln.tensor_shape import TensorShape

MODEL_CONFIGS = {
    "tiny": {"depths": [3, 3, 9, 3], "projection_dims": [96, 192, 384, 768]},
    "small": {"depths": [3, 3, 27, 3], "projection_dims": [96, 192, 384, 768]},
    "base": {"depths": [3, 3, 27, 3], "projection_dims": [128, 256, 512, 1024]},
    "large": {"depths": [3, 3, 27, 3], "projection_dims": [192, 384, 768, 1536]},
    "xlarge": {"depths": [3, 3, 27, 3], "projection_dims": [256, 512, 1024, 2048]},
}


class StochasticDepth(Layer):
    """Drops the whole residual branch of a sample with probability
    ``drop_path_rate`` when training (the kept ones scaled by 1 / keep);
    the identity otherwise."""

    _kiln_static_shapes = True

    def __init__(self, drop_path_rate, **kwargs):
        super().__init__(**kwargs)
        self.drop_path_rate = drop_path_rate

    def call(self, x, training=None):
        if not training or not self.drop_path_rate:
            return x
        dyn = array_ops.shape(x)
        noise = [dyn[0]] + [1] * (len(x.shape) - 1)
        return nn_ops.dropout(x, self.drop_path_rate, noise_shape=noise)

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "drop_path_rate": self.drop_path_rate}


class LayerScale(Layer):
    """x times a learned per-channel scale (``projection_dim`` values, all
    ``init_values`` at first)."""

    _kiln_static_shapes = True

    def __init__(self, init_values, projection_dim, **kwargs):
        super().__init__(**kwargs)
        self.init_values = init_values
        self.projection_dim = projection_dim

    def build(self, input_shape):
        self.gamma = self.add_weight(shape=(self.projection_dim,), trainable=True,
                                     initializer=initializers.Constant(self.init_values))
        self.built = True

    def call(self, x):
        return x * self.gamma

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {**super().get_config(), "init_values": self.init_values,
                "projection_dim": self.projection_dim}


def ConvNeXtBlock(projection_dim, drop_path_rate=0.0, layer_scale_init_value=1e-6, name=None):
    """A function applying one ConvNeXt block (its layers named ``name``_...)."""

    def apply(inputs):
        x = layers.Conv2D(projection_dim, 7, padding="same", groups=projection_dim,
                          name=name + "_depthwise_conv")(inputs)
        x = layers.LayerNormalization(epsilon=1e-6, name=name + "_layernorm")(x)
        x = layers.Dense(4 * projection_dim, name=name + "_pointwise_conv_1")(x)
        x = layers.Activation("gelu", name=name + "_gelu")(x)
        x = layers.Dense(projection_dim, name=name + "_pointwise_conv_2")(x)
        if layer_scale_init_value is not None:
            x = LayerScale(layer_scale_init_value, projection_dim,
                           name=name + "_layer_scale")(x)
        if drop_path_rate:
            layer = StochasticDepth(drop_path_rate, name=name + "_stochastic_depth")
        else:
            layer = layers.Activation("linear", name=name + "_identity")
        return inputs + layer(x)

    return apply


def _prestem(x, name):
    """ImageNet's mean and std, on the [0, 255] scale."""
    return layers.Normalization(mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                variance=[(0.229 * 255) ** 2, (0.224 * 255) ** 2,
                                          (0.225 * 255) ** 2],
                                name=name + "_prestem_normalization")(x)


def _head(x, classes, classifier_activation, name):
    x = layers.GlobalAveragePooling2D(name=name + "_head_gap")(x)
    x = layers.LayerNormalization(epsilon=1e-6, name=name + "_head_layernorm")(x)
    return layers.Dense(classes, activation=classifier_activation, name=name + "_head_dense")(x)


def _downsampling(projection_dims, name):
    """The stem and the three downsampling blocks, Sequential models as Keras'."""
    stem = Sequential([layers.Conv2D(projection_dims[0], 4, strides=4, name=name + "_stem_conv"),
                       layers.LayerNormalization(epsilon=1e-6, name=name + "_stem_layernorm")],
                      name=name + "_stem")
    blocks = [stem]
    for i in range(3):
        blocks.append(Sequential(
            [layers.LayerNormalization(epsilon=1e-6, name=f"{name}_downsampling_layernorm_{i}"),
             layers.Conv2D(projection_dims[i + 1], 2, strides=2,
                           name=f"{name}_downsampling_conv_{i}")],
            name=f"{name}_downsampling_block_{i}"))
    return blocks


def _weights_path(weights, weights_name, depths, projection_dims, name, include_top):
    if weights != "imagenet":
        return weights
    expected = MODEL_CONFIGS[weights_name.split("convnext_")[-1]]
    if list(depths) != expected["depths"] or \
            list(projection_dims) != expected["projection_dims"]:
        raise ValueError(
            f"Architecture configuration does not match {weights_name} variant. When using "
            "pre-trained weights, the model architecture must match the pre-trained "
            f"configuration exactly. Expected depths: {expected['depths']}, got: {depths}. "
            f"Expected projection_dims: {expected['projection_dims']}, got: "
            f"{projection_dims}.")
    if weights_name not in name:
        raise ValueError(
            f'Model name "{name}" does not match weights variant "{weights_name}". When '
            "using imagenet weights, model name must contain the weights variant (e.g., "
            f'"convnext_{weights_name.split("convnext_")[-1]}").')
    fname = name + (".h5" if include_top else "_notop.h5")
    return imagenet_utils.weights_path(
        weights, fname, f"{imagenet_utils.KERAS_APPLICATIONS}convnext/{fname}")


def ConvNeXt(depths, projection_dims, drop_path_rate=0.0, layer_scale_init_value=1e-6,
             default_size=224, name="convnext", include_preprocessing=True, include_top=True,
             weights=None, input_tensor=None, input_shape=None, pooling=None, classes=1000,
             classifier_activation="softmax", weights_name=None):
    """A ConvNeXt functional model: ``depths`` blocks per stage, of
    ``projection_dims`` channels. weights="imagenet": Keras' file
    ``{name}.h5`` (``_notop.h5``) for the ``weights_name`` variant."""
    imagenet_utils.check_args(weights, classes, pooling, classifier_activation, include_top)
    img_input = imagenet_utils.image_input(input_tensor, input_shape, default_size, 32,
                                           include_top, weights)
    path = _weights_path(weights, weights_name, depths, projection_dims, name, include_top)
    x = img_input
    if include_preprocessing and img_input.shape[-1] == 3:
        x = _prestem(x, name)
    rates = [float(r) for r in np.linspace(0.0, drop_path_rate, sum(depths))]
    cur = 0
    for i, down in enumerate(_downsampling(projection_dims, name)):
        x = down(x)
        for j in range(depths[i]):
            x = ConvNeXtBlock(projection_dims[i], rates[cur + j], layer_scale_init_value,
                              name=f"{name}_stage_{i}_block_{j}")(x)
        cur += depths[i]
    if include_top:
        x = _head(x, classes, classifier_activation, name)
    else:
        x = imagenet_utils.classifier_top(x, False, pooling, classes, classifier_activation)
        x = layers.LayerNormalization(epsilon=1e-6)(x)
    return imagenet_utils.load_weights(Model(img_input, x, name=name), path)


def _variant(size, params):
    config = MODEL_CONFIGS[size]

    def build(include_top=True, include_preprocessing=True, weights=None, input_tensor=None,
              input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
              name=f"convnext_{size}"):
        return ConvNeXt(config["depths"], config["projection_dims"], 0.0, 1e-6, 224, name,
                        include_preprocessing, include_top, weights, input_tensor, input_shape,
                        pooling, classes, classifier_activation, f"convnext_{size}")

    title = "ConvNeXt" + ("XLarge" if size == "xlarge" else size.capitalize())
    build.__name__ = build.__qualname__ = title
    build.__doc__ = (
        f"{title} (tf.keras.applications.{title}): {params} parameters with the top; "
        f"depths {config['depths']}, widths {config['projection_dims']}. Inputs are pixels in "
        "[0, 255] (``include_preprocessing`` normalizes them by ImageNet's mean and std); "
        f"weights: None, \"imagenet\" (Keras' file convnext_{size}.h5 or _notop.h5, from its "
        "cache folder) or a weights file.")
    return build


ConvNeXtTiny = _variant("tiny", "28,589,128")
ConvNeXtSmall = _variant("small", "50,223,688")
ConvNeXtBase = _variant("base", "88,591,464")
ConvNeXtLarge = _variant("large", "197,767,336")
ConvNeXtXLarge = _variant("xlarge", "350,196,968")


def preprocess_input(x, data_format=None):
    """The identity: ConvNeXt models normalize their inputs themselves."""
    return x


decode_predictions = imagenet_utils.decode_predictions

__all__ = ["ConvNeXtTiny", "ConvNeXtSmall", "ConvNeXtBase", "ConvNeXtLarge", "ConvNeXtXLarge",
           "LayerScale", "StochasticDepth", "preprocess_input", "decode_predictions"]
