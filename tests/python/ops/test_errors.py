"""Bad input gives a clear error naming the op, eagerly and while tracing."""
import numpy as np
import pytest

import kiln as tf

F = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
I = tf.constant([[1, 2, 3], [4, 5, 6]])
B = tf.constant([True, False])
IAE = tf.errors.InvalidArgumentError

# (call, exception, message fragment): each runs eagerly and inside a function.
CASES = [
    (lambda: tf.add(F, I), IAE, "AddV2.*float32.*int32"),
    (lambda: tf.divide(F, I), IAE, "RealDiv.*float32.*int32"),
    (lambda: tf.maximum(I, tf.constant([1, 2, 3], tf.int64)), IAE, "Maximum"),
    (lambda: tf.equal(F, I), IAE, "Equal"),
    (lambda: tf.where(B, F, I), IAE, "SelectV2"),
    (lambda: tf.where(I, F, F), IAE, "SelectV2.*bool"),
    (lambda: tf.add(F, tf.ones([3, 2])), IAE, "AddV2"),
    (lambda: tf.logical_and(F, F), IAE, "LogicalAnd"),
    (lambda: tf.sqrt(I), IAE, "Sqrt"),
    (lambda: tf.bitwise.bitwise_and(F, F), IAE, "BitwiseAnd"),
    (lambda: tf.bitwise.invert(B), IAE, "Invert"),
    (lambda: tf.pow(I, -1), IAE, "Pow"),
    (lambda: tf.math.floordiv(I, 0), IAE, "FloorDiv|zero"),
    (lambda: tf.add(I, 1.5), TypeError, "1.5"),
    (lambda: tf.reduce_sum(F, axis=2), IAE, "Sum.*axis"),
    (lambda: tf.reduce_any(F, axis=[]), IAE, "Any"),
    (lambda: tf.reduce_mean(F, axis=[0, -3]), IAE, "Mean"),
    (lambda: tf.argmax(F, axis=5), IAE, "ArgMax"),
    (lambda: tf.cumsum(F, axis=-3), IAE, "Cumsum"),
    (lambda: tf.expand_dims(F, 4), IAE, "ExpandDims"),
    (lambda: tf.squeeze(F, [0]), IAE, "Squeeze"),
    (lambda: tf.transpose(F, [0, 0]), IAE, "Transpose"),
    (lambda: tf.reshape(F, [4, -1]), IAE, "Reshape"),
    (lambda: tf.reshape(F, [-1, -1]), IAE, "Reshape"),
    (lambda: tf.concat([F, I], 0), IAE, "ConcatV2"),
    (lambda: tf.concat([F, tf.ones([2, 2, 1])], 0), IAE, "ConcatV2"),
    (lambda: tf.concat([F, F], 3), IAE, "ConcatV2"),
    (lambda: tf.stack([F, tf.ones([3])]), IAE, "Pack"),
    (lambda: tf.split(F, 4, axis=1), IAE, "SplitV"),
    (lambda: tf.split(F, [1, 1], axis=1), IAE, "SplitV"),
    (lambda: tf.slice(F, [0, 0], [3, 1]), IAE, "Slice"),
    (lambda: tf.gather(F, [0, 5]), IAE, "GatherV2|range"),
    (lambda: tf.gather(F, tf.constant([0.0])), IAE, "GatherV2"),
    (lambda: tf.tile(F, [1, 2, 3]), IAE, "Tile"),
    (lambda: tf.broadcast_to(F, [3, 3]), IAE, "BroadcastTo"),
    (lambda: tf.pad(F, [[1, 1]]), IAE, "Pad"),
    (lambda: tf.pad(F, [[3, 0], [0, 0]], "REFLECT"), IAE, "MirrorPad"),
    (lambda: tf.one_hot(F, 3), IAE, "OneHot"),
    (lambda: tf.matmul(F, F), IAE, "BatchMatMulV2"),
    (lambda: tf.matmul(F, tf.constant([1.0, 2.0, 3.0])), IAE, "BatchMatMulV2.*rank"),
    (lambda: tf.matmul(B, B), IAE, "BatchMatMulV2"),
    (lambda: tf.clip_by_value(F, 0, I), IAE, "ClipByValue"),
    (lambda: tf.add_n([F, tf.ones([3])]), IAE, "AddN"),
    (lambda: tf.add_n([F, I]), IAE, "AddN"),
    (lambda: tf.nn.conv2d(tf.ones([1, 4, 4, 2]), tf.ones([3, 3, 3, 1]), 1, "SAME"), IAE,
     "Conv2D.*channels"),
    (lambda: tf.nn.conv2d(tf.ones([1, 4, 4, 2]), tf.ones([3, 3, 2, 1]), 1, "FULL"), IAE,
     "Conv2D.*padding"),
    (lambda: tf.nn.conv2d(tf.ones([4, 4, 2]), tf.ones([3, 3, 2, 1]), 1, "SAME"), IAE, "Conv2D"),
    (lambda: tf.nn.conv2d(tf.ones([1, 4, 4, 2]), tf.ones([3, 3, 2, 1]), [1, 2, 2], "SAME"),
     IAE, "Conv2D.*strides"),
    (lambda: tf.nn.max_pool2d(tf.ones([1, 4, 4, 2]), 5, 1, "VALID"), IAE, "MaxPool"),
    (lambda: tf.nn.avg_pool2d(tf.ones([1, 4, 4, 2], tf.int32), 2, 1, "VALID"), IAE, "AvgPool"),
    (lambda: tf.nn.softmax(I), IAE, "Softmax"),
    (lambda: tf.nn.softmax(F, axis=2), IAE, "Softmax.*axis"),
    (lambda: tf.nn.bias_add(F, tf.ones([2])), IAE, "BiasAdd"),
    (lambda: tf.nn.gelu(I), IAE, "Gelu"),
    (lambda: tf.nn.moments(I, [0]), IAE, "Moments"),
    (lambda: tf.math.erf(I), IAE, "Erf"),
    (lambda: tf.math.divide_no_nan(I, I), IAE, "DivNoNan"),
    (lambda: tf.zeros([2, -1]), IAE, "Fill"),
    (lambda: tf.fill([2, 2], [1, 2]), IAE, "Fill"),
    (lambda: tf.ones([2], tf.string), IAE, "ones"),
    (lambda: tf.unstack(tf.constant(1.0)), IAE, "Unpack"),
]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_error_eager_and_traced(i):
    fn, exc, match = CASES[i]
    with pytest.raises(exc, match=match):
        fn()
    with pytest.raises(exc, match=match):
        tf.function(fn)()


def test_conversion_errors_are_type_errors():
    with pytest.raises(TypeError, match="None"):
        tf.add(F, None)
    with pytest.raises(TypeError):
        tf.reshape(F, "2,3")
    with pytest.raises(TypeError, match="axis"):
        tf.reduce_sum(F, axis=1.5)
    with pytest.raises(TypeError, match="int32 or int64"):
        tf.reshape(F, tf.constant([3.0, 2.0]))
    with pytest.raises(TypeError, match="Cannot convert"):
        tf.fill([2], 1) + 1.5


def test_where_needs_both_or_neither():
    with pytest.raises(ValueError, match="both"):
        tf.where(B, x=F)


def test_unknown_pad_mode():
    with pytest.raises(ValueError, match="mode"):
        tf.pad(F, [[0, 0], [1, 1]], mode="WRAP")


def test_value_dependent_errors_in_functions_raise_when_run():
    @tf.function
    def f(x, i):
        return tf.gather(x, i)

    np.testing.assert_array_equal(f(F, tf.constant([1])).numpy(), [[4.0, 5.0, 6.0]])
    with pytest.raises(IAE, match="GatherV2|range"):
        f(F, tf.constant([2]))
