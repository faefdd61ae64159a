"""Keras models (kiln.keras.models): functional or subclassed Model, and Sequential."""
from kiln.keras.engine.training import Model
from kiln.keras.engine.sequential import Sequential

__all__ = ["Model", "Sequential"]
