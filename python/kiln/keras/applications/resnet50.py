"""keras.applications.resnet50's names: ResNet50 and its caffe-mode preprocess_input
(kiln.keras.applications.resnet)."""
from kiln.keras.applications.resnet import ResNet50, decode_predictions, preprocess_input

__all__ = ["ResNet50", "preprocess_input", "decode_predictions"]
