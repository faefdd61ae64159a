"""Keras applications (kiln.keras.applications): published architectures with
random initialization (no pretrained weights can be downloaded)."""
from kiln.keras.applications import efficientnet_v2
from kiln.keras.applications.efficientnet_v2 import EfficientNetV2S

__all__ = ["efficientnet_v2", "EfficientNetV2S"]
