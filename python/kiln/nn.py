"""tf.nn: activations, softmax and losses, convolution, pooling, normalization
and dropout; and the loss scaling of custom training loops under a
distribution strategy (compute_average_loss, scale_regularization_loss)."""
from kiln.ops.nn_ops import (relu, relu6, leaky_relu, elu, sigmoid, tanh, silu, swish,  # noqa: F401
                             gelu, softplus, softmax, log_softmax, softmax_cross_entropy_with_logits,
                             sparse_softmax_cross_entropy_with_logits,
                             sigmoid_cross_entropy_with_logits, conv1d, conv2d,
                             conv2d_transpose, depthwise_conv2d, bias_add, max_pool2d, avg_pool2d, max_pool,
                             avg_pool, moments, batch_normalization, l2_normalize, dropout)
from kiln.ops.sort_ops import top_k  # noqa: F401
from kiln.ops import nn_ops as _nn
from kiln import _kiln, errors
from kiln.debugging import Assert
from kiln.distribute import distribute_lib
from kiln.dtypes import cast
from kiln.ops import array_ops, math_ops

__all__ = list(_nn.NN) + ["top_k", "compute_average_loss", "scale_regularization_loss"]


def _replicas(who):
    if distribute_lib.has_strategy() and distribute_lib.in_cross_replica_context():
        raise RuntimeError(f"You are calling `{who}` in cross replica context, while it was "
                           "expected to be called in replica context.")
    return distribute_lib.get_strategy().num_replicas_in_sync


def _scale_by_weight(loss, weight):
    """loss * weight in float32, weight's last dimension squeezed or added to
    match loss's rank (tf.keras's rule)."""
    loss, weight = cast(loss, "float32"), cast(weight, "float32")
    lr, wr = loss.shape.rank, weight.shape.rank
    if lr is not None and wr is not None and wr != 0:
        if wr - lr == 1:
            weight = array_ops.squeeze(weight, [-1])
        elif lr - wr == 1:
            weight = array_ops.expand_dims(weight, -1)
    return math_ops.multiply(loss, weight)


def _check_batch_size(n):
    if n.shape.rank is not None and n.shape.rank != 0:
        raise ValueError("global_batch_size must be scalar..  Expected scalar shape, saw "
                         f"shape: {n.shape}.")
    if not n.dtype.is_integer:
        raise TypeError('global_batch_size must be an integer..  Expected "x" to be integer '
                        f"type.  Found: tensor of dtype {n.dtype}")
    message = "global_batch_size must be non-negative."
    if n.is_symbolic:
        Assert(math_ops.greater_equal(n, cast(0, n.dtype)), [message])
    elif int(n.numpy()) < 0:
        raise errors.InvalidArgumentError(message + ".  ")


def _float_for(dtype):
    """The float dtype tf.math.truediv computes integers of dtype in."""
    return "float32" if dtype.size <= 2 else "float64"


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """The sum of per_example_loss (times sample_weight) divided by
    global_batch_size (default: the first dimension of the loss times the
    current strategy's num_replicas_in_sync); 0 when that is 0."""
    loss = _kiln.convert_to_tensor(per_example_loss)
    dtype = loss.dtype
    if loss.shape.rank == 0:
        raise ValueError("Invalid value passed for `per_example_loss`. Expected a tensor with "
                         f"at least rank 1. Received per_example_loss={loss.numpy()} with "
                         "rank 0")
    if sample_weight is not None:
        loss = cast(_scale_by_weight(loss, _kiln.convert_to_tensor(sample_weight)), dtype)
    if global_batch_size is None:
        replicas = _replicas("compute_average_loss")
        global_batch_size = array_ops.shape(loss)[0] * replicas
    n = _kiln.convert_to_tensor(global_batch_size)
    _check_batch_size(n)
    total = math_ops.reduce_sum(loss)
    n = cast(n, dtype)
    if dtype.is_integer:
        total, n = cast(total, _float_for(dtype)), cast(n, _float_for(dtype))
    return math_ops.divide_no_nan(total, n)


def scale_regularization_loss(regularization_loss):
    """The sum of regularization_loss divided by the current strategy's
    num_replicas_in_sync (1 outside any strategy)."""
    replicas = _replicas("scale_regularization_loss")
    total = math_ops.reduce_sum(regularization_loss)
    return math_ops.truediv(total, cast(replicas, total.dtype))
