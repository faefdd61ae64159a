"""kiln: eager tensors, graph functions and a TensorFlow-compatible API.

``import kiln as tf`` runs the code of TensorFlow's tf.function guide.
"""
from kiln import _kiln
from kiln._kiln import Tensor, Variable, TensorSpec, DType, as_dtype, constant
from kiln._kiln import convert_to_tensor, executing_eagerly
from kiln import errors, nest
from kiln.tensor_shape import TensorShape
from kiln import _tensor_methods  # noqa: F401  (Python-side Tensor/Variable methods)
from kiln import _variable_hooks  # noqa: F401  (kiln.distribute mirrors new variables)
from kiln.dtypes import *  # noqa: F401,F403
from kiln import dtypes
from kiln.function import function, Function, ConcreteFunction
from kiln.control_flow import cond, while_loop, TensorArray, is_tensor
from kiln.ops import *  # noqa: F401,F403
from kiln.ops import range, print  # noqa: A004
from kiln import math, nn, random, bitwise, linalg, image
from kiln import strings
from kiln import io
from kiln import config
from kiln.device import device
from kiln._warnings import KilnWarning, RetracingWarning, NoReturnWarning
from kiln.scopes import init_scope, name_scope
from kiln.module import Module
from kiln import debugging, keras, autograph
from kiln import data
from kiln.data.composite import RaggedTensorSpec, SparseTensorSpec
from kiln import train
from kiln import distribute
from kiln import saved_model
from kiln import onnx
from kiln import benchmark  # noqa: F401  (kiln.benchmark: the timing harness)
from kiln import profiler  # noqa: F401  (kiln.profiler: traces for Perfetto, the op table)
from kiln.data.py_func import py_function, numpy_function
from kiln.gradient import GradientTape, UnconnectedGradients, stop_gradient, custom_gradient
from kiln import ragged, sparse
from kiln import types
from kiln.ragged import RaggedTensor
from kiln.sparse import SparseTensor
from kiln import experimental
from kiln import summary
from kiln.experimental import type_spec_from_value

__version__ = _kiln.__version__  # the VERSION file, through libkiln
