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


# -- tf.config.optimizer's experimental options (TensorFlow 2.21's dict semantics) --

@pytest.fixture
def grappler():
    opt = tf.config.optimizer
    saved = dict(opt._options)
    opt._options.clear()
    yield opt
    opt._options.clear()
    opt._options.update(saved)


def test_experimental_options_default(grappler):
    assert grappler.get_experimental_options() == {
        "disable_model_pruning": False, "disable_meta_optimizer": False}
    assert grappler._disabled_passes() == set()


def test_experimental_options_merge_and_report_in_tensorflows_order(grappler):
    # The values TensorFlow 2.21 prints for the same calls.
    grappler.set_experimental_options(
        {"constant_folding": False, "min_graph_nodes": 5, "disable_meta_optimizer": True})
    assert list(grappler.get_experimental_options().items()) == [
        ("constant_folding", False), ("disable_model_pruning", False),
        ("disable_meta_optimizer", True), ("min_graph_nodes", 5)]
    grappler.set_experimental_options({"layout_optimizer": True})
    assert list(grappler.get_experimental_options()) == [
        "layout_optimizer", "constant_folding", "disable_model_pruning",
        "disable_meta_optimizer", "min_graph_nodes"]
    # Unknown keys are kept and not reported; truthy values are "on"; None unsets.
    grappler.set_experimental_options({"bogus": True, "constant_folding": "yes"})
    assert grappler.get_experimental_options()["constant_folding"] is True
    assert "bogus" not in grappler.get_experimental_options()
    grappler.set_experimental_options({"constant_folding": None, "min_graph_nodes": 0})
    assert grappler.get_experimental_options() == {
        "layout_optimizer": True, "disable_model_pruning": False, "disable_meta_optimizer": True}


@pytest.mark.parametrize("options, passes", [
    ({"constant_folding": False}, {"fold_constants"}),
    ({"arithmetic_optimization": False}, {"cse", "simplify"}),
    ({"remapping": False, "function_optimization": False},
     {"fuse", "fuse_conv", "fold_pad", "conv_float_filters", "matmul_float_weights",
      "fuse_attention", "fuse_rnn", "inline"}),
    ({"disable_model_pruning": True}, {"prune"}),
    ({"constant_folding": True, "layout_optimizer": False, "loop_optimization": False}, set()),
    ({"disable_meta_optimizer": True},
     {"inline", "prune", "fold_constants", "cse", "simplify", "fuse_conv", "fuse", "fold_pad",
      "conv_float_filters", "matmul_float_weights", "fuse_attention", "fuse_rnn"}),
])
def test_experimental_options_name_kilns_passes(grappler, options, passes):
    grappler.set_experimental_options(options)
    assert grappler._disabled_passes() == passes


def test_experimental_options_leave_functions_working(grappler):
    grappler.set_experimental_options({"constant_folding": False, "remapping": False})

    @tf.function
    def f(x):
        return x * 2.0 + tf.constant(1.0) * 3.0

    assert f(tf.constant([1.0, 2.0])).numpy().tolist() == [5.0, 7.0]


def _passes_run(fn, *args):
    fn(*args)
    report = str(fn.get_concrete_function(*args).optimize_report)
    return {line.split(":")[0].strip() for line in report.splitlines()[1:] if ":" in line}


def test_experimental_options_turn_kilns_passes_off(grappler):
    def body(x):
        return x * 2.0 + tf.constant(1.0) * 3.0

    x = tf.constant([1.0, 2.0])
    assert {"fold_constants", "cse", "fuse"} <= _passes_run(tf.function(body), x)
    grappler.set_experimental_options({"constant_folding": False, "remapping": False})
    off = tf.function(body)
    ran = _passes_run(off, x)
    assert "fold_constants" not in ran and "fuse" not in ran and "fuse_conv" not in ran
    assert "cse" in ran
    assert off(x).numpy().tolist() == [5.0, 7.0]
    grappler.set_experimental_options({"disable_meta_optimizer": True})
    assert _passes_run(tf.function(body), x) <= {"schedule_collectives"}
