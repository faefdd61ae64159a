"""kiln.keras.backend: global Keras state."""
from kiln.keras.layers import base as _base


def clear_session():
    """Restarts default layer names (dense, dense_1, ...) from the beginning."""
    _base.reset_names()


def floatx():
    """The default float dtype of layers: 'float32'."""
    return "float32"


def image_data_format():
    """The default data_format of image layers: 'channels_last'."""
    return "channels_last"
