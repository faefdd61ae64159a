"""tf.experimental: extension types (`ExtensionType`, `BatchableExtensionType` and their
Specs), type-based dispatch for kiln's APIs, and `kiln.experimental.numpy`."""
from kiln.experimental import extension_type
from kiln.experimental.extension_type import ExtensionType, BatchableExtensionType
from kiln.experimental.extension_type import ExtensionTypeMetaclass  # noqa: F401
from kiln.experimental._spec import ExtensionTypeSpec, BatchableExtensionTypeSpec
from kiln.experimental._spec import type_spec_from_value  # noqa: F401
from kiln.experimental.dispatch import (dispatch_for_api, dispatch_for_unary_elementwise_apis,
                                        dispatch_for_binary_elementwise_apis,
                                        unregister_dispatch_for)
from kiln.experimental import numpy  # tf.experimental.numpy as an attribute, as TensorFlow

__all__ = ["ExtensionType", "BatchableExtensionType", "ExtensionTypeSpec",
           "BatchableExtensionTypeSpec", "dispatch_for_api", "dispatch_for_unary_elementwise_apis",
           "dispatch_for_binary_elementwise_apis", "unregister_dispatch_for", "extension_type", "numpy"]
