"""tf.data.Options, Dataset.with_options and Dataset.options(), and
tf.data.AUTOTUNE, against TensorFlow 2.21 (values printed by the same code
with `import tensorflow as tf` in .venv-peers)."""
import logging

import pytest

import kiln as tf

D = tf.data.Dataset
Options = tf.data.Options


def properties(cls):
    return sorted(n for n in dir(cls) if isinstance(getattr(cls, n), property))


# TF 2.21: the properties of each options class.
FIELDS = [
    (Options, ["autotune", "dataset_name", "deterministic", "experimental_deterministic",
               "experimental_distribute", "experimental_external_state_policy",
               "experimental_optimization", "experimental_service", "experimental_slack",
               "experimental_symbolic_checkpoint", "experimental_threading",
               "experimental_warm_start", "framework_type", "threading"]),
    (tf.data.experimental.AutotuneOptions, ["autotune_algorithm", "cpu_budget", "enabled",
                                            "initial_parallelism", "min_parallelism",
                                            "ram_budget"]),
    (tf.data.experimental.DistributeOptions, ["auto_shard_policy", "num_devices"]),
    (tf.data.experimental.OptimizationOptions, [
        "apply_default_optimizations", "filter_fusion", "filter_parallelization",
        "inject_prefetch", "map_and_batch_fusion", "map_and_filter_fusion", "map_fusion",
        "map_parallelization", "noop_elimination", "parallel_batch", "seq_interleave_prefetch",
        "shuffle_and_repeat_fusion"]),
    (tf.data.experimental.ServiceOptions, ["pinned"]),
    (tf.data.ThreadingOptions, ["max_intra_op_parallelism", "private_threadpool_size"]),
]


@pytest.mark.parametrize("cls,names", FIELDS, ids=[f[0].__name__ for f in FIELDS])
def test_fields_as_tensorflow(cls, names):
    assert properties(cls) == names
    options = cls()
    defaults = {n: getattr(options, n) for n in names}
    # TF 2.21: every field None but the nested options and auto_shard_policy (AUTO).
    for name, value in defaults.items():
        if name == "auto_shard_policy":
            assert value == tf.data.experimental.AutoShardPolicy.AUTO and value == 0
        elif not isinstance(value, tf.data.options.OptionsBase):
            assert value is None, name


def test_dataset_options_merge():
    ds = D.range(3)
    assert ds.options().deterministic is None and ds.options() == Options()
    first = Options()
    first.deterministic = False
    first.threading.private_threadpool_size = 4
    first.experimental_distribute.auto_shard_policy = \
        tf.data.experimental.AutoShardPolicy.DATA
    d2 = ds.with_options(first)
    # TF 2.21: False 4
    assert d2.options().deterministic is False
    assert d2.options().threading.private_threadpool_size == 4
    second = Options()
    second.experimental_deterministic = True  # the deprecated alias of deterministic
    d3 = d2.map(lambda x: x).with_options(second)
    # TF 2.21: True 4 (the later value wins; the others carry through transformations)
    assert d3.options().deterministic is True
    assert d3.options().experimental_threading.private_threadpool_size == 4
    assert d3.options().experimental_distribute.auto_shard_policy == 2
    assert d3.options() == d3.options()
    zipped = D.zip((d2, D.range(2)))
    assert zipped.options().threading.private_threadpool_size == 4
    assert [int(v) for v in d3] == [0, 1, 2] and int(d3.cardinality()) == 3


def test_changing_an_option_is_logged(caplog):
    a, b = Options(), Options()
    a.deterministic, b.deterministic = False, True
    with caplog.at_level(logging.WARNING, logger="kiln.data"):
        D.range(2).with_options(a).with_options(b)
    # TF 2.21's warning text.
    assert "Changing the value of option deterministic from False to True." in caplog.text


ERRORS = [
    # (name, call, exception, message): TF 2.21's texts.
    ("wrong_type", lambda: setattr(Options(), "deterministic", 1), TypeError,
     r"Property \"deterministic\" must be of type <class 'bool'>, got: 1 \(type: "
     r"<class 'int'>\)"),
    ("unknown_option", lambda: setattr(Options(), "foo", 1), AttributeError,
     "Cannot set the property foo on Options."),
    ("read_only", lambda: setattr(D.range(3).options(), "deterministic", True), ValueError,
     r"Mutating `tf.data.Options\(\)` returned by `tf.data.Dataset.options\(\)` has no "
     r"effect. Use `tf.data.Dataset.with_options\(options\)` to set or update dataset "
     r"options."),
    ("nested_wrong_type", lambda: setattr(Options().autotune, "cpu_budget", "x"), TypeError,
     "Property \"cpu_budget\" must be of type <class 'int'>"),
    ("not_options", lambda: D.range(3).with_options(3), TypeError, "Options"),
]


@pytest.mark.parametrize("name,call,exc,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_as_tensorflow(name, call, exc, message):
    with pytest.raises(exc, match=message):
        call()


def test_autotune():
    # TF 2.21: -1 for both.
    assert tf.data.AUTOTUNE == tf.data.experimental.AUTOTUNE == -1
    ds = D.range(4).map(lambda x: x, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
        tf.data.AUTOTUNE).interleave(lambda x: D.from_tensors(x),
                                     num_parallel_calls=tf.data.AUTOTUNE)
    assert [int(v) for v in ds] == [0, 1, 2, 3]
