"""tf.random: stateful draws (op seeds and the global seed), stateless draws
(seed = (a, b); kiln's hash, not TensorFlow's Philox values), Generator, and
tf.random.experimental."""
import sys
import types

from kiln.ops.random_ops import (uniform, normal, truncated_normal, categorical,  # noqa: F401
                                 shuffle, set_seed)
from kiln.ops.stateless_random import (Algorithm, stateless_uniform,  # noqa: F401
                                       stateless_normal, stateless_truncated_normal,
                                       stateless_categorical, stateless_binomial,
                                       fold_in, split)
from kiln.ops import stateless_random as _sr
from kiln.ops.random_generator import (Generator, create_rng_state,  # noqa: F401
                                       get_global_generator, set_global_generator)

# tf.random.experimental, as TensorFlow 2.21 names it.
experimental = types.ModuleType(__name__ + ".experimental",
                                "tf.random.experimental: Generator and stateless seeds.")
for _name, _value in [("Algorithm", Algorithm), ("Generator", Generator),
                      ("create_rng_state", create_rng_state),
                      ("get_global_generator", get_global_generator),
                      ("set_global_generator", set_global_generator),
                      ("stateless_fold_in", fold_in), ("stateless_split", split),
                      ("stateless_shuffle", _sr.stateless_shuffle)]:
    setattr(experimental, _name, _value)
sys.modules[experimental.__name__] = experimental

__all__ = ["uniform", "normal", "truncated_normal", "categorical", "shuffle", "set_seed",
           "Algorithm", "stateless_uniform", "stateless_normal", "stateless_truncated_normal",
           "stateless_categorical", "stateless_binomial", "fold_in", "split", "Generator",
           "create_rng_state", "get_global_generator", "set_global_generator",
           "experimental"]
