"""keras.applications.vgg19's names: VGG19 and its caffe-mode preprocess_input (kiln.keras
.applications.vgg)."""
from kiln.keras.applications.vgg import VGG19, decode_predictions, preprocess_input

__all__ = ["VGG19", "preprocess_input", "decode_predictions"]
