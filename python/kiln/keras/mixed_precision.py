"""kiln.keras.mixed_precision (tf.keras.mixed_precision): dtype policies and
loss scaling, Keras 3's names and their TF 2.x spellings.

    kiln.keras.mixed_precision.set_global_policy("mixed_float16")
    model = ...  # layers compute in float16, keep float32 variables
    outputs = kiln.keras.layers.Activation("softmax", dtype="float32")(x)

``model.compile`` wraps the optimizer in a LossScaleOptimizer when the
model's policy is "mixed_float16" (``auto_scale_loss=True``), as Keras does.
"""
from kiln.keras.dtype_policies import (DTypePolicy, Policy, dtype_policy, global_policy,
                                       set_dtype_policy, set_global_policy)
from kiln.keras.optimizers.loss_scale_optimizer import LossScaleOptimizer

__all__ = ["DTypePolicy", "Policy", "LossScaleOptimizer", "dtype_policy", "global_policy",
           "set_dtype_policy", "set_global_policy"]
