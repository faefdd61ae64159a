"""What the applications share: their argument checks, their input, Keras'
download cache (weights="imagenet" and the class index are read from it, never
downloaded), the ImageNet preprocessing modes (caffe, tf, torch) and
decode_predictions."""
import json
import os
import tempfile

import numpy as np

from kiln import dtypes
from kiln.keras import activations, layers
from kiln.keras.engine.keras_tensor import KerasTensor
from kiln.keras.engine.training import Model
from kiln.ops import _helpers as h
from kiln.ops import array_ops


def _is_imagenet(weights):
    return isinstance(weights, str) and weights == "imagenet"


def input_shape(shape, default_size, min_size, require_flatten, weights=None):
    """The (H, W, C) input shape: the default, or the given one checked.
    With ImageNet weights and the top, only the default size (Keras')."""
    if shape is not None:
        try:
            shape = tuple(shape)
        except TypeError:
            raise ValueError(f"input_shape must be a tuple (height, width, channels), got "
                             f"{shape!r}") from None
    if _is_imagenet(weights) and require_flatten:
        default = (default_size, default_size, 3)
        if shape is not None and shape != default:
            raise ValueError("When setting `include_top=True` and loading `imagenet` weights, "
                             f"`input_shape` should be {default}.  Received: "
                             f"input_shape={shape}")
        return default
    if shape is None:
        return (default_size, default_size, 3) if require_flatten else (None, None, 3)
    if len(shape) != 3:
        raise ValueError(f"input_shape must be a tuple of three integers (height, width, "
                         f"channels), got input_shape={shape!r}")
    for d in shape:
        if d is not None and (isinstance(d, bool) or not isinstance(d, int) or d <= 0):
            raise ValueError(f"input_shape must contain positive ints or None, got {shape!r}")
    if shape[2] is None:
        raise ValueError(f"The number of input channels must be known, got {shape!r}")
    if _is_imagenet(weights) and shape[2] != 3:
        raise ValueError(f"The input must have 3 channels; Received `input_shape={shape}`")
    if any(d is not None and d < min_size for d in shape[:2]):
        raise ValueError(f"Input size must be at least {min_size}x{min_size}; Received: "
                         f"input_shape={shape}")
    if require_flatten and None in shape:
        raise ValueError("If include_top is True, you should specify a static input_shape. "
                         f"Received: input_shape={shape}")
    return shape


def check_args(weights, classes, pooling, classifier_activation, include_top=True):
    """The arguments every application takes, checked (Keras' meanings and
    messages). ``weights``: None, "imagenet" (Keras' file, looked up in its
    download cache: ``weights_path``) or the path of a local weights file."""
    if not (weights is None or _is_imagenet(weights) or
            (isinstance(weights, (str, os.PathLike)) and os.path.exists(weights))):
        raise ValueError("The `weights` argument should be either `None` (random "
                         "initialization), `imagenet` (pre-training on ImageNet), or the path "
                         f"to the weights file to be loaded. Received weights={weights!r}")
    if isinstance(classes, bool) or not isinstance(classes, int) or classes <= 0:
        raise ValueError(f"classes must be a positive int, got {classes!r}")
    if _is_imagenet(weights) and include_top and classes != 1000:
        raise ValueError("If using `weights='imagenet'` with `include_top=True`, `classes` "
                         f"should be 1000.  Received classes={classes}")
    if pooling not in (None, "avg", "max"):
        raise ValueError(f"pooling must be None, 'avg' or 'max', got {pooling!r}")
    if classifier_activation is not None:
        activations.get(classifier_activation)  # unknown names fail here, clearly
    if include_top:
        validate_activation(classifier_activation, weights)


def validate_activation(classifier_activation, weights):
    """With pretrained weights (any), the top's activation is softmax or None."""
    if weights is None:
        return
    fn = activations.get(classifier_activation)
    if fn is not activations.get("softmax") and fn is not activations.get(None):
        raise ValueError("Only `None` and `softmax` activations are allowed for the "
                         "`classifier_activation` argument when using pretrained weights, "
                         "with `include_top=True`; Received: "
                         f"classifier_activation={classifier_activation}")


def image_input(input_tensor, shape, default_size, min_size, include_top, weights=None):
    """The model's input: ``input_tensor`` (a Keras tensor) or a new Input."""
    if input_tensor is None:
        return layers.Input(shape=input_shape(shape, default_size, min_size, include_top,
                                              weights))
    if not isinstance(input_tensor, KerasTensor):
        raise ValueError("input_tensor must be a Keras tensor (from kiln.keras.Input), "
                         f"got {input_tensor!r}")
    if shape is not None:
        input_shape(shape, default_size, min_size, include_top, weights)
    return input_tensor


# ---- Keras' download cache (kiln reads it, never downloads) ----

KERAS_APPLICATIONS = "https://storage.googleapis.com/tensorflow/keras-applications/"
CLASS_INDEX_URL = ("https://storage.googleapis.com/download.tensorflow.org/data/"
                   "imagenet_class_index.json")


def keras_home():
    """Keras' folder: $KERAS_HOME, else ~/.keras (/tmp/.keras when the home
    folder is not writable), as keras.utils.get_file's cache_dir."""
    if "KERAS_HOME" in os.environ:
        return os.environ["KERAS_HOME"]
    base = os.path.expanduser("~")
    if not os.access(base, os.W_OK):
        base = "/tmp"
    return os.path.join(base, ".keras")


def cache_dir(cache_subdir="models"):
    """Where keras.utils.get_file keeps ``cache_subdir``'s downloads: under
    keras_home(), or /tmp/.keras when that folder exists but is not writable."""
    base = os.path.expanduser(keras_home())
    if os.path.exists(base) and not os.access(base, os.W_OK):
        base = os.path.join("/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir(),
                            ".keras")
    return os.path.join(base, cache_subdir)


def cached_file(fname, origin, what, alternative=""):
    """The path of ``fname`` in Keras' download cache, or a ValueError naming
    the file, the folder searched and the URL Keras would fetch it from."""
    folder = cache_dir("models")
    path = os.path.join(folder, fname)
    if os.path.isfile(path):
        return path
    raise ValueError(f"{what}: the file {fname} is not in Keras' cache folder {folder} "
                     "($KERAS_HOME/models, else ~/.keras/models), and kiln does not download "
                     f"files. Keras would download it from {origin}; it can be placed there by "
                     f"hand, as {path}{alternative}.")


def kernels_file(folder, prefix, include_top):
    """(file name, URL) of the weights files most families share the naming
    of: ``{prefix}_weights_tf_dim_ordering_tf_kernels[_notop].h5``."""
    fname = f"{prefix}_weights_tf_dim_ordering_tf_kernels{'' if include_top else '_notop'}.h5"
    return fname, f"{KERAS_APPLICATIONS}{folder}/{fname}"


def weights_path(weights, fname, origin):
    """The file to load: ``fname`` from Keras' cache for weights="imagenet",
    else ``weights`` itself (None or a local path)."""
    if _is_imagenet(weights):
        return cached_file(fname, origin, "weights='imagenet'",
                           " (or saved anywhere, its path then passed as weights=)")
    return weights


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
    (when not None: a path, as weights_path gives)."""
    if weights is not None:
        model.load_weights(os.fspath(weights))
    return model


def inception_style_model(features, name, size, min_size, kernels, include_top, weights,
                          input_tensor, input_shape, pooling, classes, classifier_activation):
    """The model of the families built alike (Xception, InceptionV3,
    InceptionResNetV2): the checked input, ``features`` of it, an "avg_pool"
    top, and Keras' weights file ``kernels`` (folder and prefix) when
    weights="imagenet"."""
    check_args(weights, classes, pooling, classifier_activation, include_top)
    img_input = image_input(input_tensor, input_shape, size, min_size, include_top, weights)
    path = weights_path(weights, *kernels_file(kernels, kernels, include_top))
    x = classifier_top(features(img_input), include_top, pooling, classes,
                       classifier_activation, ("avg_pool" if include_top else None, None))
    return load_weights(Model(img_input, x, name=name), path)


def preprocess_tf_mode(x, data_format=None):
    """Pixel values in [0, 255] scaled to [-1, 1] (TensorFlow's mode)."""
    return preprocess(x, "tf", data_format)


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


def preprocess_input(x, data_format=None, mode="caffe"):
    """keras.applications.imagenet_utils.preprocess_input: ``preprocess`` in
    ``mode`` ("caffe", "tf" or "torch")."""
    if mode not in ("caffe", "tf", "torch"):
        raise ValueError("Expected mode to be one of `caffe`, `tf` or `torch`. Received: "
                         f"mode={mode}")
    return preprocess(x, mode, data_format)


_CLASS_INDEX = {}  # path -> (mtime, the parsed class index)


def _class_index():
    path = cached_file("imagenet_class_index.json", CLASS_INDEX_URL,
                       "decode_predictions needs ImageNet's class index")
    stamp = os.stat(path).st_mtime_ns
    cached = _CLASS_INDEX.get(path)
    if cached is None or cached[0] != stamp:
        with open(path, encoding="utf-8") as f:
            index = json.load(f)
        if not isinstance(index, dict):
            raise ValueError(f"{path}: not an ImageNet class index (a JSON object mapping "
                             '"0".."999" to [class_id, class_name])')
        cached = _CLASS_INDEX[path] = (stamp, index)
    return cached[1]


def decode_predictions(preds, top=5):
    """The ``top`` classes of each row of ImageNet predictions (a NumPy array
    or a tensor of shape (samples, 1000)): one list per sample of
    (class_id, class_name, score) tuples, the highest score first. The class
    names come from Keras' imagenet_class_index.json in its cache folder
    (models/ under KERAS_HOME or ~/.keras), which kiln does not download."""
    shape = tuple(preds.shape)
    if len(shape) != 2 or shape[1] != 1000:
        raise ValueError("`decode_predictions` expects a batch of predictions (i.e. a 2D array "
                         f"of shape (samples, 1000)). Received array with shape: {shape}")
    index = _class_index()
    preds = preds.numpy() if hasattr(preds, "numpy") else np.asarray(preds)
    results = []
    for pred in preds:
        best = pred.argsort()[-top:][::-1]
        row = [tuple(index[str(i)]) + (pred[i],) for i in best]
        row.sort(key=lambda r: r[2], reverse=True)
        results.append(row)
    return results
