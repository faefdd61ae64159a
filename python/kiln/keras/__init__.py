"""Keras-style layers and models (kiln.keras), for inference."""
from kiln.keras import layers, initializers
from kiln.keras.layers import Layer
from kiln.keras.models import Model

__all__ = ["layers", "initializers", "Layer", "Model"]
