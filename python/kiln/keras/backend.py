"""kiln.keras.backend: global Keras state."""
from kiln.keras import dtype_policies as _dtype_policies
from kiln.keras.layers import base as _base


def clear_session():
    """Restarts default layer names (dense, dense_1, ...) from the beginning
    and sets the global dtype policy back to float32, as Keras 3."""
    _base.reset_names()
    _dtype_policies.reset()


def floatx():
    """The default float dtype of layers: 'float32'."""
    return "float32"


def image_data_format():
    """The default data_format of image layers: 'channels_last'."""
    return "channels_last"
