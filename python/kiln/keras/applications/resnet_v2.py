"""keras.applications.resnet_v2's names: ResNet50V2/101V2/152V2 and their preprocess_input
(TensorFlow's mode, [-1, 1]; kiln.keras.applications.resnet)."""
from kiln.keras.applications.resnet import (ResNet50V2, ResNet101V2, ResNet152V2,
                                            decode_predictions)
from kiln.keras.applications.resnet import preprocess_input_v2 as preprocess_input

__all__ = ["ResNet50V2", "ResNet101V2", "ResNet152V2", "preprocess_input", "decode_predictions"]
