"""tf.nn.compute_average_loss and tf.nn.scale_regularization_loss, against
the values TensorFlow 2.21 gives (printed by the same calls with
`import tensorflow as tf` in .venv-peers), eagerly and inside a function,
outside any strategy (one replica) and inside one (its replica count)."""
import numpy as np
import pytest

import kiln as tf

cal = tf.nn.compute_average_loss

# (name, call, TF 2.21's value, its dtype).
CASES = [
    ("mean", lambda: cal([1., 2., 3., 4.]), 2.5, "float32"),
    ("global_batch", lambda: cal([1., 2., 3., 4.], global_batch_size=8), 1.25, "float32"),
    ("weights", lambda: cal([1., 2., 3., 4.], sample_weight=[1., 0., 2., 0.5]), 2.25, "float32"),
    ("scalar_weight", lambda: cal([1., 2., 3., 4.], sample_weight=2.0, global_batch_size=2),
     10.0, "float32"),
    ("weights_column", lambda: cal([[1., 2.], [3., 4.]], sample_weight=[[0.5], [2.0]]),
     7.75, "float32"),
    ("weights_expanded", lambda: cal([[1., 2.], [3., 4.]], sample_weight=[0.5, 2.0]),
     7.75, "float32"),
    ("loss_column", lambda: cal([[1.], [3.]], sample_weight=[0.5, 2.0]), 3.25, "float32"),
    ("weights_squeezed", lambda: cal([1., 2.], sample_weight=[[0.5], [2.0]]), 2.25, "float32"),
    ("float64_weighted_in_float32",
     lambda: cal(tf.constant([1., 2.], tf.float64), sample_weight=[0.3, 0.7]),
     0.8499999940395355, "float64"),
    ("float16", lambda: cal(tf.constant([1., 2.], tf.float16), sample_weight=[0.3, 0.7]),
     0.85, "float16"),
    ("zero_batch", lambda: cal([1., 2.], global_batch_size=0), 0.0, "float32"),
    ("int64_batch", lambda: cal([1., 2.], global_batch_size=tf.constant(4, tf.int64)),
     0.75, "float32"),
    ("empty", lambda: cal(tf.zeros([0])), 0.0, "float32"),
    ("int_loss", lambda: cal([1, 2, 3]), 2.0, "float64"),
    ("int_loss_weighted", lambda: cal([1, 2, 3], sample_weight=[0.5, 0.5, 0.5]),
     0.6666666666666666, "float64"),
    ("regularization", lambda: tf.nn.scale_regularization_loss(3.0), 3.0, "float32"),
    ("regularization_sum", lambda: tf.nn.scale_regularization_loss([1., 2.]), 3.0, "float32"),
    ("regularization_int", lambda: tf.nn.scale_regularization_loss([1, 2]), 3.0, "float64"),
]


@pytest.mark.parametrize("name,call,want,dtype", CASES, ids=[c[0] for c in CASES])
def test_values_as_tensorflow(name, call, want, dtype):
    got = call()
    assert got.dtype.name == dtype and got.shape.rank == 0
    assert float(got.numpy()) == pytest.approx(want, rel=1e-3 if dtype == "float16" else 1e-7)
    traced = tf.function(call)()
    assert traced.dtype.name == dtype
    assert float(traced.numpy()) == pytest.approx(want, rel=1e-3 if dtype == "float16" else 1e-7)


def test_in_a_function_with_tensor_arguments():
    @tf.function
    def f(x, w):
        return cal(x, sample_weight=w), tf.nn.scale_regularization_loss(x)
    loss, reg = f(tf.constant([1., 2., 3.]), tf.constant([1., 1., 0.]))
    assert (float(loss), float(reg)) == (1.0, 6.0)  # TF 2.21: 1.0, 6.0
    # The batch size is read at run time: shape [None] traces once for every size.
    g = tf.function(lambda x: cal(x), input_signature=[tf.TensorSpec([None], tf.float32)])
    assert float(g(tf.constant([2., 4.]))) == 3.0 and float(g(tf.constant([3.]))) == 3.0

    @tf.function
    def h(n):
        return cal([1., 2.], global_batch_size=n)
    with pytest.raises(tf.errors.InvalidArgumentError, match="non-negative"):
        h(tf.constant(-1))


def test_under_a_strategy():
    # TF 2.21, MirroredStrategy over 2 CPUs, in strategy.run: 0.75, 1.0, 1.5, 0.6667.
    strategy = tf.distribute.Strategy(rank=0, size=2)  # 2 replicas, one of them here
    got = strategy.run(lambda: (cal([1., 2.]), cal([1., 2.], global_batch_size=3),
                                tf.nn.scale_regularization_loss([1., 2.]),
                                cal([1., 2., 3.], sample_weight=[1., 0., 1.])))
    np.testing.assert_allclose([float(v) for v in got], [0.75, 1.0, 1.5, 0.6666667], rtol=1e-6)
    with tf.distribute.MirroredStrategy().scope():
        # TF 2.21: with global_batch_size given, the cross-replica context is fine.
        assert float(cal([1., 2.], global_batch_size=4)) == 0.75


ERRORS = [
    # (name, call, exception, message): TF 2.21's texts.
    ("rank0", lambda: cal(3.0), ValueError,
     r"Invalid value passed for `per_example_loss`. Expected a tensor with at least rank 1. "
     r"Received per_example_loss=3.0 with rank 0"),
    ("float_batch", lambda: cal([1., 2.], global_batch_size=2.0), TypeError,
     r"global_batch_size must be an integer..  Expected \"x\" to be integer type.  Found: "
     r"tensor of dtype <dtype: 'float32'>"),
    ("negative_batch", lambda: cal([1., 2.], global_batch_size=-1),
     tf.errors.InvalidArgumentError, "global_batch_size must be non-negative."),
    ("vector_batch", lambda: cal([1., 2.], global_batch_size=[1, 2]), ValueError,
     r"global_batch_size must be scalar..  Expected scalar shape, saw shape: \(2,\)."),
    ("weights_mismatch", lambda: cal([1., 2., 3.], sample_weight=[1., 2.]),
     tf.errors.InvalidArgumentError, r"\[3\] vs. \[2\]"),
]


@pytest.mark.parametrize("name,call,exc,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_as_tensorflow(name, call, exc, message):
    with pytest.raises(exc, match=message):
        call()


@pytest.mark.parametrize("name,fn", [
    ("compute_average_loss", lambda: cal([1., 2.])),
    ("scale_regularization_loss", lambda: tf.nn.scale_regularization_loss(1.)),
])
def test_cross_replica_context(name, fn):
    # TF 2.21's error inside strategy.scope() (a cross-replica context).
    with tf.distribute.MirroredStrategy().scope():
        with pytest.raises(RuntimeError, match=f"You are calling `{name}` in cross replica "
                                               "context, while it was expected to be called "
                                               "in replica context."):
            fn()
