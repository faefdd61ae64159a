"""Keras-style layers, models, losses, metrics and training (kiln.keras)."""
from kiln.keras import activations, initializers, utils, backend
from kiln.keras import constraints, regularizers
from kiln.keras import layers
from kiln.keras.layers import Layer, Input, InputLayer
from kiln.keras import saving
from kiln.keras import models
from kiln.keras.models import Model, Sequential
from kiln.keras import applications
from kiln.keras import optimizers
from kiln.keras import losses, metrics, callbacks
from kiln.keras.variables import Variable
from kiln.keras import dtype_policies, mixed_precision
from kiln.keras.dtype_policies import DTypePolicy, FloatDTypePolicy

__all__ = ["activations", "initializers", "utils", "backend", "layers", "models",
           "applications", "Layer", "Input", "InputLayer", "Model", "Sequential"]
__all__ += ["optimizers", "constraints", "regularizers"]
__all__ += ["losses", "metrics", "callbacks", "Variable", "saving"]
__all__ += ["dtype_policies", "mixed_precision", "DTypePolicy", "FloatDTypePolicy"]
