"""kiln.keras.utils: seeding and small helpers."""
import random as _py_random

import numpy as np

from kiln.ops import random_ops
from kiln.keras.saving.object_registration import (  # noqa: F401  (Keras' aliases)
    CustomObjectScope, custom_object_scope, get_custom_objects, get_registered_name,
    get_registered_object, register_keras_serializable)


def set_random_seed(seed):
    """Seeds Python's, NumPy's and kiln's random generators
    (tf.keras.utils.set_random_seed): model construction and random ops repeat."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"set_random_seed: seed must be an int, got {seed!r}")
    if seed < 0:
        raise ValueError(f"set_random_seed: seed must be non-negative, got {seed}")
    _py_random.seed(int(seed))
    np.random.seed(int(seed) % (2 ** 32))
    random_ops.set_seed(int(seed))


def count_params(weights):
    """The number of elements in a list of weights."""
    return int(sum(int(np.prod(w.shape.as_list() if hasattr(w.shape, "as_list") else w.shape))
                   for w in weights))
