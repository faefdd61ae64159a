"""keras.applications.vgg16's names: VGG16 and its caffe-mode preprocess_input (kiln.keras
.applications.vgg)."""
from kiln.keras.applications.vgg import VGG16, decode_predictions, preprocess_input

__all__ = ["VGG16", "preprocess_input", "decode_predictions"]
