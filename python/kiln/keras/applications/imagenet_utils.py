"""What the applications share: their argument checks, their input, the ImageNet
preprocessing modes (caffe, tf, torch) and decode_predictions."""
import os

import numpy as np

from kiln import dtypes
from kiln.keras import activations, layers
from kiln.keras.engine.keras_tensor import KerasTensor
from kiln.ops import _helpers as h
from kiln.ops import array_ops


def input_shape(shape, default_size, min_size, require_flatten):
    """The (H, W, C) input shape: the default, or the given one checked."""
    if shape is None:
        return (default_size, default_size, 3) if require_flatten else (None, None, 3)
    try:
        shape = tuple(shape)
    except TypeError:
        raise ValueError(f"input_shape must be a tuple (height, width, channels), got "
                         f"{shape!r}") from None
    if len(shape) != 3:
        raise ValueError(f"input_shape must be a tuple of three integers (height, width, "
                         f"channels), got input_shape={shape!r}")
    for d in shape:
        if d is not None and (isinstance(d, bool) or not isinstance(d, int) or d <= 0):
            raise ValueError(f"input_shape must contain positive ints or None, got {shape!r}")
    if shape[2] is None:
        raise ValueError(f"The number of input channels must be known, got {shape!r}")
    if any(d is not None and d < min_size for d in shape[:2]):
        raise ValueError(f"Input size must be at least {min_size}x{min_size}; Received: "
                         f"input_shape={shape}")
    if require_flatten and None in shape:
        raise ValueError("If include_top is True, you should specify a static input_shape. "
                         f"Received: input_shape={shape}")
    return shape


def check_args(weights, classes, pooling, classifier_activation):
    """The arguments every application takes, checked (Keras' meanings).
    ``weights``: None or the path of a local weights file ("imagenet" would
    need a download)."""
    if isinstance(weights, str) and weights == "imagenet":
        raise ValueError("weights='imagenet': kiln cannot download pretrained weights; use "
                         "weights=None (random initialization) or the path of a local "
                         "weights file (e.g. saved from Keras with save_weights)")
    if weights is not None and not (isinstance(weights, (str, os.PathLike)) and
                                    os.path.exists(weights)):
        raise ValueError("The `weights` argument should be either `None` (random "
                         "initialization), `imagenet` (pre-training on ImageNet), or the path "
                         f"to the weights file to be loaded. Received weights={weights!r}")
    if isinstance(classes, bool) or not isinstance(classes, int) or classes <= 0:
        raise ValueError(f"classes must be a positive int, got {classes!r}")
    if pooling not in (None, "avg", "max"):
        raise ValueError(f"pooling must be None, 'avg' or 'max', got {pooling!r}")
    if classifier_activation is not None:
        activations.get(classifier_activation)  # unknown names fail here, clearly


def image_input(input_tensor, shape, default_size, min_size, include_top):
    """The model's input: ``input_tensor`` (a Keras tensor) or a new Input."""
    if input_tensor is None:
        return layers.Input(shape=input_shape(shape, default_size, min_size, include_top))
    if not isinstance(input_tensor, KerasTensor):
        raise ValueError("input_tensor must be a Keras tensor (from kiln.keras.Input), "
                         f"got {input_tensor!r}")
    return input_tensor


def classifier_top(x, include_top, pooling, classes, classifier_activation, names=(None, None)):
    """The end most families share: with the top, global average pooling and
    a Dense(classes) "predictions" layer; without, the ``pooling`` asked for.
    ``names``: the average and max pooling layers' names (None: Keras'
    defaults)."""
    avg, mx = names
    if include_top:
        x = layers.GlobalAveragePooling2D(name=avg)(x)
        return layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    if pooling == "avg":
        return layers.GlobalAveragePooling2D(name=avg)(x)
    if pooling == "max":
        return layers.GlobalMaxPooling2D(name=mx)(x)
    return x


def load_weights(model, weights):
    """The model, with the weights of the local file ``weights`` loaded
    (when not None)."""
    if weights is not None:
        model.load_weights(os.fspath(weights))
    return model


def correct_pad(x, kernel_size=3):
    """The ((top, bottom), (left, right)) zero padding before a stride-2
    'valid' convolution that TensorFlow's 'same' would give."""
    k = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
    size = x.shape[1:3]
    adjust = (1, 1) if size[0] is None else (1 - size[0] % 2, 1 - size[1] % 2)
    return ((k[0] // 2 - adjust[0], k[0] // 2), (k[1] // 2 - adjust[1], k[1] // 2))


_CAFFE_MEAN = np.array([103.939, 116.779, 123.68], np.float32)
_TORCH_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
_TORCH_STD = np.array([0.229, 0.224, 0.225], np.float32)


def preprocess(x, mode, data_format=None):
    """ImageNet preprocessing of pixel values in [0, 255] (channels last; a
    NumPy array or a tensor): "caffe" (RGB -> BGR, the ImageNet means
    subtracted), "tf" (scaled to [-1, 1]) or "torch" (scaled to [0, 1], then
    the ImageNet means subtracted and divided by the stds)."""
    if data_format not in (None, "channels_last"):
        raise NotImplementedError("preprocess_input: only channels_last is supported yet")
    if isinstance(x, np.ndarray):
        x = x.astype(np.float32)
        if mode == "caffe":
            return x[..., ::-1] - _CAFFE_MEAN
        if mode == "tf":
            return x / 127.5 - 1.0
        return (x / 255.0 - _TORCH_MEAN) / _TORCH_STD
    t = dtypes.cast(h.tensor(x), "float32")
    if mode == "caffe":
        return array_ops.reverse(t, [-1]) - h.tensor(_CAFFE_MEAN)
    if mode == "tf":
        return t / 127.5 - 1.0
    return (t / 255.0 - h.tensor(_TORCH_MEAN)) / h.tensor(_TORCH_STD)


def decode_predictions(preds, top=5):
    raise NotImplementedError("decode_predictions needs the ImageNet class index, which "
                              "kiln cannot download")
