"""kiln.config: run_functions_eagerly and the threading switches."""
import numpy as np
import pytest

import kiln as tf


def test_inter_op_parallelism_switches_parallel_branches():
    threading = tf.config.threading
    assert threading.get_inter_op_parallelism_threads() == 0

    @tf.function
    def two_chains(a, b):
        x, y = a, b
        for _ in range(20):
            x = tf.tanh(x) * 1.01
            y = tf.sin(y) + 0.5
        return tf.reduce_sum(x) + tf.reduce_sum(y)

    a = tf.constant(np.linspace(-1, 1, 512 * 512, dtype=np.float32).reshape(512, 512))
    b = tf.constant(np.linspace(0, 2, 512 * 512, dtype=np.float32).reshape(512, 512))
    parallel = two_chains(a, b).numpy()
    try:
        threading.set_inter_op_parallelism_threads(1)
        assert threading.get_inter_op_parallelism_threads() == 1
        assert not tf._kiln._parallel_branches()
        in_order = two_chains(a, b).numpy()
    finally:
        threading.set_inter_op_parallelism_threads(0)
    assert tf._kiln._parallel_branches()
    assert in_order == pytest.approx(parallel, rel=1e-6)


def test_intra_op_threads_are_fixed_once_the_pool_runs():
    threading = tf.config.threading
    tf.reduce_sum(tf.ones([1 << 20]))  # a large kernel starts the pool
    n = threading.get_intra_op_parallelism_threads()
    threading.set_intra_op_parallelism_threads(n)  # unchanged: fine
    with pytest.raises(RuntimeError, match="cannot be modified after initialization"):
        threading.set_intra_op_parallelism_threads(n + 7)
    assert threading.get_intra_op_parallelism_threads() == n


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_thread_counts_are_checked(bad):
    with pytest.raises(ValueError, match="expected an int >= 0"):
        tf.config.threading.set_inter_op_parallelism_threads(bad)
    with pytest.raises(ValueError, match="expected an int >= 0"):
        tf.config.threading.set_intra_op_parallelism_threads(bad)
