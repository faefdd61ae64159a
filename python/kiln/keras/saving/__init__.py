"""kiln.keras.saving: saving and loading models, and custom objects by name.

    model.save("model.keras")
    model = kiln.keras.saving.load_model("model.keras")

    @kiln.keras.saving.register_keras_serializable(package="MyLayers")
    class MyLayer(kiln.keras.layers.Layer): ...

Files are Keras 3's formats (.keras zip, .weights.h5 HDF5); legacy .h5 files and kiln's
earlier zip files are read too (docs/PYTHON.md, "Checkpoints and Keras saving").
"""
from kiln.keras.saving import trackable  # noqa: F401  (Keras objects in checkpoints)
from kiln.keras.saving.object_registration import (
    CustomObjectScope, custom_object_scope, get_custom_objects, get_registered_name,
    get_registered_object, register_keras_serializable)
from kiln.keras.saving.serialization import (deserialize_keras_object,
                                             serialize_keras_object)
from kiln.keras.saving.saving_lib import load_model, load_weights, save_model, save_weights

__all__ = ["CustomObjectScope", "custom_object_scope", "get_custom_objects",
           "get_registered_name", "get_registered_object", "register_keras_serializable",
           "deserialize_keras_object", "serialize_keras_object", "load_model", "load_weights",
           "save_model", "save_weights"]
