"""Keras applications (kiln.keras.applications): published architectures with
random initialization (no pretrained weights can be downloaded)."""
from kiln.keras.applications import (densenet, efficientnet_v2, imagenet_utils, mobilenet_v2,
                                     resnet, vgg)
from kiln.keras.applications.efficientnet_v2 import EfficientNetV2S
from kiln.keras.applications.resnet import (ResNet50, ResNet101, ResNet152, ResNet50V2,
                                            ResNet101V2, ResNet152V2)
from kiln.keras.applications.mobilenet_v2 import MobileNetV2
from kiln.keras.applications.vgg import VGG16, VGG19
from kiln.keras.applications.densenet import DenseNet121, DenseNet169, DenseNet201

__all__ = ["efficientnet_v2", "resnet", "EfficientNetV2S", "ResNet50", "ResNet101", "ResNet152",
           "ResNet50V2", "ResNet101V2", "ResNet152V2", "mobilenet_v2", "MobileNetV2",
           "vgg", "VGG16", "VGG19", "densenet", "DenseNet121", "DenseNet169", "DenseNet201"]
