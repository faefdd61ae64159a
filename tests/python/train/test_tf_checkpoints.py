"""Checkpoints TensorFlow 2.21 wrote (tests/fixtures/tf_written/checkpoints, made
by its make_fixtures.py) load in kiln."""
import os

import numpy as np
import pytest

import kiln as tf

HERE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tf_written",
                    "checkpoints")
DTYPES = os.path.join(HERE, "dtypes", "ckpt")
VALUES = np.load(os.path.join(HERE, "dtypes", "values.npz"), allow_pickle=True)


def key(name):
    return f"model/{name}/.ATTRIBUTES/VARIABLE_VALUE"


def test_list_variables_of_a_tf_checkpoint():
    listed = dict(tf.train.list_variables(DTYPES))
    assert listed[key("f32")] == [2, 3]
    assert listed[key("empty")] == [0, 4]
    assert listed[key("i64")] == []
    assert listed[key("nested/w")] == [2]
    assert "_CHECKPOINTABLE_OBJECT_GRAPH" in listed


@pytest.mark.parametrize("name", sorted(VALUES.files))
def test_values_of_every_dtype(name):
    got = tf.train.load_checkpoint(DTYPES).get_tensor(key(name))
    want = VALUES[name]
    if name == "bf16":
        assert got.dtype.name == "bfloat16"
        got = got.astype(np.float32)
    else:
        assert got.dtype == want.dtype, name
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_dtype_map_uses_kiln_dtypes_where_kiln_has_them():
    dtypes = tf.train.load_checkpoint(DTYPES).get_variable_to_dtype_map()
    assert dtypes[key("f32")] == tf.float32
    assert dtypes[key("s")] == tf.string
    assert dtypes[key("bf16")] == tf.bfloat16


def test_restore_into_kiln_module_by_object_graph():
    m = tf.Module()
    m.f32 = tf.Variable(np.zeros((2, 3), np.float32))
    m.s = tf.Variable(np.array([b"", b"", b""], object))
    m.i64 = tf.Variable(np.int64(0))
    m.nested = tf.Module()
    m.nested.w = tf.Variable(np.zeros(2, np.float32))
    status = tf.train.Checkpoint(model=m).read(DTYPES)
    status.assert_existing_objects_matched()
    with pytest.raises(AssertionError):
        status.assert_consumed()  # the checkpoint holds more than this module has
    np.testing.assert_array_equal(m.f32.numpy(), VALUES["f32"])
    np.testing.assert_array_equal(m.s.numpy(), VALUES["s"])
    assert int(m.i64.numpy()) == 2 ** 40 + 3
    np.testing.assert_array_equal(m.nested.w.numpy(), [1.0, 1.0])


def test_delayed_restore_of_a_tf_checkpoint():
    m = tf.Module()
    tf.train.Checkpoint(model=m).read(DTYPES).expect_partial()
    m.f64 = tf.Variable(np.zeros(2))  # created after the read: restored on creation
    np.testing.assert_array_equal(m.f64.numpy(), [1.5, -2.25])


def test_a_shape_mismatch_is_a_clear_error():
    m = tf.Module()
    m.f32 = tf.Variable(np.zeros((3, 2), np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"shape \(2, 3\)"):
        tf.train.Checkpoint(model=m).read(DTYPES)


def test_checkpoint_manager_directory_written_by_tf():
    directory = os.path.join(HERE, "manager")
    assert tf.train.latest_checkpoint(directory) == os.path.join(directory, "ckpt-2")
    v = tf.Variable(0.0)
    tf.train.Checkpoint(v=v).restore(tf.train.latest_checkpoint(directory)).assert_consumed()
    assert float(v.numpy()) == 2.0
    state = tf.train.get_checkpoint_state(directory)
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == ["ckpt-1", "ckpt-2"]


def test_keras_model_and_optimizer_values():
    # Keras 3 saves its own object graph (_functional, _operations, optimizer
    # _variables); the values are read by key.
    path = os.path.join(HERE, "dense_adam", "ckpt")
    values = np.load(os.path.join(HERE, "dense_adam", "values.npz"))
    reader = tf.train.load_checkpoint(path)
    for i in range(4):
        got = reader.get_tensor(f"optimizer/_trainable_variables/{i}/.ATTRIBUTES/VARIABLE_VALUE")
        np.testing.assert_array_equal(got, values[f"w{i}"])
    assert reader.get_tensor("optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE") == 1


def test_partitioned_variables_read_whole():
    prefix = os.path.join(HERE, "partitioned", "ckpt")
    assert dict(tf.train.list_variables(prefix)) == {"emb": [200, 3], "plain": [2], "w": [5, 6]}
    r = tf.train.load_checkpoint(prefix)
    np.testing.assert_array_equal(r.get_tensor("emb"),
                                  np.arange(600, dtype=np.float32).reshape(200, 3))
    np.testing.assert_array_equal(r.get_tensor("w"),
                                  np.arange(30, dtype=np.float32).reshape(5, 6) * 0.5)
