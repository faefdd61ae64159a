"""tf.random: uniform and normal random tensors and the global seed."""
from kiln.ops.random_ops import uniform, normal, set_seed  # noqa: F401

__all__ = ["uniform", "normal", "set_seed"]
