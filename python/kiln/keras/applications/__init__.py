"""Keras applications (kiln.keras.applications): published architectures with
random initialization, Keras' ImageNet weights (weights="imagenet": read from
Keras' download cache, $KERAS_HOME/models or ~/.keras/models; kiln never
downloads) or weights from a local file."""
from kiln.keras.applications import (convnext, densenet, efficientnet, efficientnet_v2,
                                     imagenet_utils, inception_resnet_v2, inception_v3,
                                     mobilenet, mobilenet_v2, mobilenet_v3, nasnet, resnet,
                                     resnet50, resnet_v2, vgg, vgg16, vgg19, xception)
from kiln.keras.applications.convnext import (ConvNeXtBase, ConvNeXtLarge, ConvNeXtSmall,
                                              ConvNeXtTiny, ConvNeXtXLarge)
from kiln.keras.applications.densenet import DenseNet121, DenseNet169, DenseNet201
from kiln.keras.applications.efficientnet import (EfficientNetB0, EfficientNetB1, EfficientNetB2,
                                                  EfficientNetB3, EfficientNetB4, EfficientNetB5,
                                                  EfficientNetB6, EfficientNetB7)
from kiln.keras.applications.efficientnet_v2 import (EfficientNetV2B0, EfficientNetV2B1,
                                                     EfficientNetV2B2, EfficientNetV2B3,
                                                     EfficientNetV2L, EfficientNetV2M,
                                                     EfficientNetV2S)
from kiln.keras.applications.inception_resnet_v2 import InceptionResNetV2
from kiln.keras.applications.inception_v3 import InceptionV3
from kiln.keras.applications.mobilenet import MobileNet
from kiln.keras.applications.mobilenet_v2 import MobileNetV2
from kiln.keras.applications.mobilenet_v3 import MobileNetV3Large, MobileNetV3Small
from kiln.keras.applications.nasnet import NASNetLarge, NASNetMobile
from kiln.keras.applications.resnet import (ResNet50, ResNet101, ResNet152, ResNet50V2,
                                            ResNet101V2, ResNet152V2)
from kiln.keras.applications.vgg import VGG16, VGG19
from kiln.keras.applications.xception import Xception

__all__ = [
    "convnext", "ConvNeXtTiny", "ConvNeXtSmall", "ConvNeXtBase", "ConvNeXtLarge",
    "ConvNeXtXLarge",
    "densenet", "DenseNet121", "DenseNet169", "DenseNet201",
    "efficientnet", "EfficientNetB0", "EfficientNetB1", "EfficientNetB2", "EfficientNetB3",
    "EfficientNetB4", "EfficientNetB5", "EfficientNetB6", "EfficientNetB7",
    "efficientnet_v2", "EfficientNetV2B0", "EfficientNetV2B1", "EfficientNetV2B2",
    "EfficientNetV2B3", "EfficientNetV2S", "EfficientNetV2M", "EfficientNetV2L",
    "imagenet_utils",
    "inception_resnet_v2", "InceptionResNetV2",
    "inception_v3", "InceptionV3",
    "mobilenet", "MobileNet",
    "mobilenet_v2", "MobileNetV2", "mobilenet_v3", "MobileNetV3Small", "MobileNetV3Large",
    "nasnet", "NASNetMobile", "NASNetLarge",
    "resnet", "resnet50", "resnet_v2", "ResNet50", "ResNet101", "ResNet152", "ResNet50V2",
    "ResNet101V2", "ResNet152V2",
    "vgg", "vgg16", "vgg19", "VGG16", "VGG19",
    "xception", "Xception",
]
