"""Keras-style layers and models (kiln.keras), for inference."""
from kiln.keras import activations, initializers, utils, backend
from kiln.keras import layers
from kiln.keras.layers import Layer, Input, InputLayer
from kiln.keras import models
from kiln.keras.models import Model, Sequential
from kiln.keras import applications

__all__ = ["activations", "initializers", "utils", "backend", "layers", "models",
           "applications", "Layer", "Input", "InputLayer", "Model", "Sequential"]
