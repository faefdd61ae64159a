"""Keras models (kiln.keras.models): functional or subclassed Model, and Sequential."""
import json

from kiln.keras.engine.training import Model
from kiln.keras.engine.sequential import Sequential
from kiln.keras.saving import deserialize_keras_object, load_model, save_model


def model_from_json(json_string, custom_objects=None):
    """The (untrained) model described by ``model.to_json()``."""
    return deserialize_keras_object(json.loads(json_string), custom_objects)


__all__ = ["Model", "Sequential", "load_model", "save_model", "model_from_json"]
