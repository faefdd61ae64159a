"""Keras layers (kiln.keras.layers), with TensorFlow/Keras names, arguments and defaults."""
from kiln.keras.layers.base import Layer, InputSpec
from kiln.keras.layers.input_layer import InputLayer, Input
from kiln.keras.layers.core import (Dense, Activation, Dropout, Flatten, Reshape, Rescaling,
                                    Lambda, Embedding, Masking)
from kiln.keras.layers.convolutional import (Conv2D, DepthwiseConv2D, SeparableConv2D, Conv1D,
                                             Conv2DTranspose, ZeroPadding2D)
from kiln.keras.layers.normalization import (BatchNormalization, LayerNormalization,
                                             GroupNormalization)
from kiln.keras.layers.pooling import (MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D,
                                       GlobalMaxPooling2D, MaxPool2D, AvgPool2D,
                                       GlobalAvgPool2D, GlobalMaxPool2D, MaxPooling1D,
                                       AveragePooling1D, GlobalAveragePooling1D,
                                       GlobalMaxPooling1D, MaxPool1D, AvgPool1D,
                                       GlobalAvgPool1D, GlobalMaxPool1D)
from kiln.keras.layers.activation import ReLU, LeakyReLU, PReLU, ELU, Softmax
from kiln.keras.layers.reshaping import (Permute, RepeatVector, Cropping1D, Cropping2D,
                                         ZeroPadding1D, UpSampling1D, UpSampling2D)
from kiln.keras.layers.noise import (GaussianNoise, GaussianDropout, SpatialDropout1D,
                                     SpatialDropout2D)
from kiln.keras.layers.rnn import (SimpleRNNCell, LSTMCell, GRUCell, StackedRNNCells, RNN,
                                   SimpleRNN, LSTM, GRU)
from kiln.keras.layers.wrappers import Bidirectional, TimeDistributed
from kiln.keras.layers.attention import MultiHeadAttention, Attention
from kiln.keras.layers.preprocessing import (Normalization, Resizing, CenterCrop, RandomFlip,
                                             CategoryEncoding)
from kiln.keras.layers.image_augmentation import RandomRotation
from kiln.keras.layers.convolutional3d import Conv3D, Convolution3D
from kiln.keras.layers.index_lookup import StringLookup, IntegerLookup
from kiln.keras.layers.hashing import Hashing, HashedCrossing
from kiln.keras.layers.text_vectorization import TextVectorization
from kiln.keras.layers.merging import (Add, Subtract, Multiply, Average, Maximum, Minimum,
                                       Concatenate, add, subtract, multiply, average, maximum,
                                       minimum, concatenate)

Convolution2D = Conv2D
SeparableConvolution2D = SeparableConv2D
Convolution1D = Conv1D
Convolution2DTranspose = Conv2DTranspose

__all__ = ["Layer", "InputSpec", "InputLayer", "Input", "Dense", "Activation", "Dropout",
           "Flatten", "Reshape", "Rescaling", "Lambda", "Conv2D", "Convolution2D",
           "DepthwiseConv2D", "ZeroPadding2D", "BatchNormalization", "LayerNormalization",
           "MaxPooling2D",
           "AveragePooling2D", "GlobalAveragePooling2D", "GlobalMaxPooling2D", "MaxPool2D",
           "AvgPool2D", "GlobalAvgPool2D", "GlobalMaxPool2D", "Add", "Subtract", "Multiply",
           "Average", "Maximum", "Minimum", "Concatenate", "add", "subtract", "multiply",
           "average", "maximum", "minimum", "concatenate", "ReLU", "LeakyReLU", "PReLU", "ELU",
           "Softmax", "Permute", "Cropping2D", "UpSampling2D", "GaussianNoise",
           "GaussianDropout", "SpatialDropout2D", "SeparableConv2D", "SeparableConvolution2D",
           "Conv1D", "Convolution1D", "Embedding", "MaxPooling1D", "AveragePooling1D",
           "GlobalAveragePooling1D", "GlobalMaxPooling1D", "MaxPool1D", "AvgPool1D",
           "GlobalAvgPool1D", "GlobalMaxPool1D", "Conv2DTranspose", "Convolution2DTranspose",
           "SimpleRNNCell", "LSTMCell", "GRUCell", "RNN", "SimpleRNN", "LSTM", "GRU",
           "Masking", "Bidirectional", "TimeDistributed", "MultiHeadAttention", "Attention",
           "GroupNormalization", "Normalization", "Resizing", "CenterCrop", "RandomFlip",
           "CategoryEncoding", "RepeatVector", "Cropping1D", "ZeroPadding1D", "UpSampling1D",
           "SpatialDropout1D", "StackedRNNCells", "RandomRotation",
           "Conv3D", "Convolution3D", "StringLookup", "IntegerLookup",
           "TextVectorization", "Hashing", "HashedCrossing"]
