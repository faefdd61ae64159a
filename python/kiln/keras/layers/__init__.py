"""Keras layers (kiln.keras.layers)."""
from kiln.keras.layers.base import Layer

__all__ = ["Layer"]
