"""tf.nn: activations, softmax and losses, convolution, pooling, normalization
and dropout."""
from kiln.ops.nn_ops import (relu, relu6, leaky_relu, elu, sigmoid, tanh, silu, swish,  # noqa: F401
                             gelu, softplus, softmax, log_softmax, softmax_cross_entropy_with_logits,
                             sparse_softmax_cross_entropy_with_logits,
                             sigmoid_cross_entropy_with_logits, conv1d, conv2d,
                             conv2d_transpose, depthwise_conv2d, bias_add, max_pool2d, avg_pool2d, max_pool,
                             avg_pool, moments, batch_normalization, l2_normalize, dropout)
from kiln.ops.sort_ops import top_k  # noqa: F401
from kiln.ops import nn_ops as _nn

__all__ = list(_nn.NN) + ["top_k"]
