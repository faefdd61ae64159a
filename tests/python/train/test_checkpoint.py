"""kiln.train.Checkpoint: keys, round trips, delayed restore, status checks,
eagerly and with kiln.function train steps (TensorFlow's checkpoint guide)."""
import gc
import os
import weakref

import numpy as np
import pytest

import kiln as tf
from kiln import _restore_hooks

keras = tf.keras


class Net(keras.Model):
    """The checkpoint guide's model."""

    def __init__(self):
        super().__init__()
        self.l1 = keras.layers.Dense(5)

    def call(self, x):
        return self.l1(x)


class Linear(tf.Module):
    def __init__(self, n_in, n_out, name=None):
        super().__init__(name=name)
        self.w = tf.Variable(tf.random.normal([n_in, n_out]), name="w")
        self.b = tf.Variable(tf.zeros([n_out]), name="b")

    def __call__(self, x):
        return tf.matmul(x, self.w) + self.b


class TwoLayers(tf.Module):
    """The tf.Module guide's model."""

    def __init__(self, name=None):
        super().__init__(name=name)
        self.dense_1 = Linear(3, 3)
        self.dense_2 = Linear(3, 2)

    def __call__(self, x):
        return self.dense_2(tf.nn.relu(self.dense_1(x)))


X = tf.constant(np.arange(8, dtype=np.float32).reshape(4, 2) / 8)
Y = tf.constant(np.arange(20, dtype=np.float32).reshape(4, 5) / 20)


def train_step(net, opt, x=X, y=Y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.abs(net(x) - y))
    variables = net.trainable_variables
    opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
    return loss


def keys(path):
    return [k for k, _ in tf.train.list_variables(path)]


def test_save_numbers_prefixes_and_counter(tmp_path):
    v = tf.Variable(3.0)
    ckpt = tf.train.Checkpoint(v=v)
    prefix = str(tmp_path / "ckpt")
    assert ckpt.save(prefix) == prefix + "-1"
    v.assign(4.0)
    assert ckpt.save(prefix) == prefix + "-2"
    assert int(ckpt.save_counter.numpy()) == 2 and ckpt.save_counter.dtype == tf.int64
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "ckpt-1.data-00000-of-00001",
                                            "ckpt-1.index", "ckpt-2.data-00000-of-00001",
                                            "ckpt-2.index"]
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix + "-2"
    assert keys(prefix + "-1") == ["_CHECKPOINTABLE_OBJECT_GRAPH",
                                   "save_counter/.ATTRIBUTES/VARIABLE_VALUE",
                                   "v/.ATTRIBUTES/VARIABLE_VALUE"]
    fresh = tf.train.Checkpoint(v=tf.Variable(0.0))
    fresh.restore(prefix + "-1").assert_consumed()
    assert fresh.v.numpy() == 3.0 and int(fresh.save_counter.numpy()) == 1
    assert fresh.save(prefix) == prefix + "-2"  # the counter goes on from the restored one


def test_write_and_read_have_no_counter(tmp_path):
    v = tf.Variable([1, 2, 3], dtype=tf.int64)
    path = str(tmp_path / "sub" / "w")
    assert tf.train.Checkpoint(v=v).write(path) == path  # parent folders are created
    assert keys(path) == ["_CHECKPOINTABLE_OBJECT_GRAPH", "v/.ATTRIBUTES/VARIABLE_VALUE"]
    assert not os.path.exists(tmp_path / "sub" / "checkpoint")
    target = tf.Variable([0, 0, 0], dtype=tf.int64)
    tf.train.Checkpoint(v=target).read(path).assert_consumed()
    np.testing.assert_array_equal(target.numpy(), [1, 2, 3])


def test_module_keys_and_restore_into_a_new_module(tmp_path):
    model = TwoLayers(name="the_model")
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "my_checkpoint"))
    assert tf.train.list_variables(path) == [
        ("_CHECKPOINTABLE_OBJECT_GRAPH", []),
        ("model/dense_1/b/.ATTRIBUTES/VARIABLE_VALUE", [3]),
        ("model/dense_1/w/.ATTRIBUTES/VARIABLE_VALUE", [3, 3]),
        ("model/dense_2/b/.ATTRIBUTES/VARIABLE_VALUE", [2]),
        ("model/dense_2/w/.ATTRIBUTES/VARIABLE_VALUE", [3, 2])]
    new = TwoLayers()
    tf.train.Checkpoint(model=new).restore(path).assert_consumed()
    x = tf.constant([[2.0, 2.0, 2.0]])
    np.testing.assert_allclose(new(x).numpy(), model(x).numpy())


def test_dtypes_and_scalars_round_trip(tmp_path):
    values = {"f64": np.array([[1.5, -2.0]]), "i8": np.array([-3, 4], np.int8),
              "u8": np.array([255], np.uint8), "b": np.array([True, False]),
              "i32": np.int32(7), "f32": np.float32(0.25)}
    ckpt = tf.train.Checkpoint(**{k: tf.Variable(v) for k, v in values.items()})
    path = ckpt.write(str(tmp_path / "d"))
    fresh = tf.train.Checkpoint(**{k: tf.Variable(np.zeros_like(v)) for k, v in values.items()})
    fresh.read(path).assert_consumed()
    reader = tf.train.load_checkpoint(path)
    for k, v in values.items():
        got = getattr(fresh, k).numpy()
        assert got.dtype == np.asarray(v).dtype and got.shape == np.shape(v)
        np.testing.assert_array_equal(got, v)
        np.testing.assert_array_equal(reader.get_tensor(f"{k}/.ATTRIBUTES/VARIABLE_VALUE"), v)
    dtypes = reader.get_variable_to_dtype_map()
    assert dtypes["f64/.ATTRIBUTES/VARIABLE_VALUE"] == tf.float64
    assert dtypes["_CHECKPOINTABLE_OBJECT_GRAPH"] == tf.string
    assert reader.get_variable_to_shape_map()["i32/.ATTRIBUTES/VARIABLE_VALUE"] == []
    assert reader.has_tensor("b/.ATTRIBUTES/VARIABLE_VALUE") and not reader.has_tensor("x")
    with pytest.raises(tf.errors.NotFoundError, match="Key x not found"):
        reader.get_tensor("x")
    assert tf.train.load_variable(path, "b/.ATTRIBUTES/VARIABLE_VALUE:0").tolist() == [True,
                                                                                      False]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_round_trip(tmp_path, dtype):
    if not hasattr(tf, dtype):
        pytest.skip(f"this kiln has no {dtype}")
    v = tf.Variable(tf.cast(tf.constant([[1.5, -2.25, 3.0]]), dtype))
    path = tf.train.Checkpoint(v=v).write(str(tmp_path / "h"))
    w = tf.Variable(tf.cast(tf.zeros([1, 3]), dtype))
    tf.train.Checkpoint(v=w).read(path).assert_consumed()
    assert w.dtype == v.dtype
    np.testing.assert_array_equal(w.numpy().astype(np.float32), [[1.5, -2.25, 3.0]])


def test_guide_training_loop_resumes_exactly(tmp_path):
    """Train, save with a manager, restore into new objects (delayed: the model
    and the optimizer's slots are created after restore) and continue."""
    def make():
        net, opt = Net(), keras.optimizers.Adam(0.1)
        ckpt = tf.train.Checkpoint(step=tf.Variable(1), optimizer=opt, net=net)
        return net, opt, ckpt, tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=3)

    net, opt, ckpt, manager = make()
    assert ckpt.restore(manager.latest_checkpoint) is not None  # None: nothing to restore
    for _ in range(5):
        train_step(net, opt)
        ckpt.step.assign_add(1)
    assert manager.save() == os.path.join(str(tmp_path), "ckpt-1")
    expected = [float(train_step(net, opt)) for _ in range(3)]

    net2, opt2, ckpt2, manager2 = make()
    status = ckpt2.restore(manager2.latest_checkpoint)
    assert not net2.built and int(ckpt2.step.numpy()) == 6
    with pytest.raises(AssertionError, match="not restored"):
        status.assert_consumed()  # the model's variables do not exist yet
    got = [float(train_step(net2, opt2)) for _ in range(3)]
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    status.assert_consumed()  # everything found a home once created
    assert int(opt2.iterations.numpy()) == 8
    saved = keys(manager.latest_checkpoint)  # Keras 3's graph: slots in the optimizer's lists
    assert "net/l1/_kernel/.ATTRIBUTES/VARIABLE_VALUE" in saved
    assert "optimizer/_variables/2/.ATTRIBUTES/VARIABLE_VALUE" in saved


def test_traced_train_step_checkpoint_and_delayed_restore_inside_a_trace(tmp_path):
    net, opt = Net(), keras.optimizers.Adam(0.1)
    step = tf.function(lambda: train_step(net, opt))
    for _ in range(3):
        step()
    path = tf.train.Checkpoint(net=net, opt=opt).save(str(tmp_path / "ckpt"))
    expected = [float(step()) for _ in range(2)]

    net2, opt2 = Net(), keras.optimizers.Adam(0.1)
    status = tf.train.Checkpoint(net=net2, opt=opt2).restore(path)
    step2 = tf.function(lambda: train_step(net2, opt2))  # builds net2 and the slots while tracing
    np.testing.assert_allclose([float(step2()) for _ in range(2)], expected, rtol=1e-6)
    status.assert_consumed()


def test_restore_reaches_a_function_traced_before(tmp_path):
    v = tf.Variable([1.0, 2.0])
    read = tf.function(lambda: v * 10.0)
    path = tf.train.Checkpoint(v=v).write(str(tmp_path / "c"))
    v.assign([5.0, 6.0])
    np.testing.assert_allclose(read().numpy(), [50.0, 60.0])
    tf.train.Checkpoint(v=v).read(path)
    np.testing.assert_allclose(read().numpy(), [10.0, 20.0])


def test_save_or_restore_inside_a_function_is_a_clear_error(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    path = ckpt.write(str(tmp_path / "c"))
    for call in (lambda: ckpt.save(str(tmp_path / "x")), lambda: ckpt.restore(path)):
        fn = tf.function(lambda call=call: call() or tf.constant(0))
        with pytest.raises(tf.errors.UnimplementedError, match="eagerly"):
            fn()


def test_guide_partial_restore_and_delayed_attribute(tmp_path):
    net, opt = Net(), keras.optimizers.Adam(0.1)
    train_step(net, opt)
    path = tf.train.Checkpoint(net=net, optimizer=opt).save(str(tmp_path / "ckpt"))
    to_restore = tf.Variable(tf.zeros([5]))
    fake_layer = tf.train.Checkpoint(bias=to_restore)
    status = tf.train.Checkpoint(net=tf.train.Checkpoint(l1=fake_layer)).restore(path)
    np.testing.assert_array_equal(to_restore.numpy(), net.l1.bias.numpy())
    status.assert_existing_objects_matched()
    status.assert_nontrivial_match()
    with pytest.raises(AssertionError, match="Unresolved object in checkpoint"):
        status.assert_consumed()
    delayed = tf.Variable(tf.zeros([2, 5]))
    fake_layer.kernel = delayed  # restored on assignment
    np.testing.assert_array_equal(delayed.numpy(), net.l1.kernel.numpy())
    assert status.expect_partial() is status


def test_attribute_assigned_later_on_a_module(tmp_path):
    model = TwoLayers()
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "c"))
    holder = tf.Module()
    status = tf.train.Checkpoint(model=holder).read(path)
    holder.dense_2 = None  # not something the checkpoint can fill: still waiting
    holder.dense_2 = Linear(3, 2)  # a module (with its variables) assigned after restore
    np.testing.assert_array_equal(holder.dense_2.w.numpy(), model.dense_2.w.numpy())
    with pytest.raises(AssertionError):
        status.assert_consumed()  # dense_1 is still missing
    holder.dense_1 = Linear(3, 3)
    status.assert_consumed()


def test_keras_sequential_restored_when_built(tmp_path):
    model = keras.Sequential([keras.layers.Dense(3), keras.layers.Dense(1)])
    model.build((None, 2))
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "c"))
    assert "model/_functional/_operations/2/_kernel/.ATTRIBUTES/VARIABLE_VALUE" in keys(path)
    fresh = keras.Sequential([keras.layers.Dense(3), keras.layers.Dense(1)])
    status = tf.train.Checkpoint(model=fresh).read(path)
    x = tf.constant([[1.0, -1.0]])
    np.testing.assert_allclose(tf.function(fresh)(x).numpy(), model(x).numpy(), rtol=1e-6)
    status.assert_consumed()


def test_list_and_dict_tracking(tmp_path):
    save = tf.train.Checkpoint()
    save.listed = [tf.Variable(1.0)]
    save.listed.append(tf.Variable(2.0))
    save.mapped = {"one": save.listed[0]}
    save.mapped["two"] = save.listed[1]
    path = save.save(str(tmp_path / "list_example"))
    restore = tf.train.Checkpoint()
    v2 = tf.Variable(0.0)
    restore.mapped = {"two": v2}
    restore.restore(path)
    assert v2.numpy() == 2.0
    restore.listed = []
    assert repr(restore.listed) == "ListWrapper([])"
    v1 = tf.Variable(0.0)
    restore.listed.append(v1)  # restored on append
    assert v1.numpy() == 1.0


def test_root_checkpoint_puts_the_root_children_at_the_top(tmp_path):
    module = TwoLayers()
    path = tf.train.Checkpoint(module, extra=tf.Variable(2)).write(str(tmp_path / "c"))
    assert keys(path) == ["_CHECKPOINTABLE_OBJECT_GRAPH",
                          "dense_1/b/.ATTRIBUTES/VARIABLE_VALUE",
                          "dense_1/w/.ATTRIBUTES/VARIABLE_VALUE",
                          "dense_2/b/.ATTRIBUTES/VARIABLE_VALUE",
                          "dense_2/w/.ATTRIBUTES/VARIABLE_VALUE",
                          "extra/.ATTRIBUTES/VARIABLE_VALUE"]
    other = TwoLayers()
    tf.train.Checkpoint(other, extra=tf.Variable(0)).read(path).assert_consumed()
    np.testing.assert_array_equal(other.dense_1.w.numpy(), module.dense_1.w.numpy())


def test_restore_none_and_status_checks():
    status = tf.train.Checkpoint(v=tf.Variable(1.0)).restore(None)
    for check in (status.assert_consumed, status.assert_existing_objects_matched,
                  status.assert_nontrivial_match):
        with pytest.raises(AssertionError, match="No checkpoint specified"):
            check()
    assert status.expect_partial() is status


def test_existing_objects_not_in_the_checkpoint(tmp_path):
    path = tf.train.Checkpoint(a=tf.Variable(1.0)).write(str(tmp_path / "c"))
    status = tf.train.Checkpoint(a=tf.Variable(0.0), b=tf.Variable(0.0)).read(path)
    with pytest.raises(AssertionError, match="not bound to checkpointed values"):
        status.assert_existing_objects_matched()
    status = tf.train.Checkpoint(c=tf.Variable(0.0)).read(path)
    with pytest.raises(AssertionError, match="Nothing except the root"):
        status.assert_nontrivial_match()


def test_mismatched_shapes_and_dtypes(tmp_path):
    path = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).write(str(tmp_path / "c"))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"shape \(2,\).*shape \(3,\)"):
        tf.train.Checkpoint(v=tf.Variable([0.0, 0.0, 0.0])).read(path)
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype float32.*int32"):
        tf.train.Checkpoint(v=tf.Variable([0, 0])).read(path)


def test_constructor_checks():
    with pytest.raises(ValueError, match="trackable"):
        tf.train.Checkpoint(x=3)
    with pytest.raises(ValueError, match="root to be a trackable"):
        tf.train.Checkpoint("not trackable")


def test_missing_checkpoint_is_not_found(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    with pytest.raises(tf.errors.NotFoundError, match="checkpoint suffix"):
        ckpt.restore(str(tmp_path / "nothing"))
    with pytest.raises(tf.errors.NotFoundError):
        tf.train.list_variables(str(tmp_path / "nothing"))
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
        tf.train.list_variables(str(tmp_path))


def test_dataset_iterator_is_accepted_with_a_warning(tmp_path):
    it = iter(tf.data.Dataset.range(3))
    ckpt = tf.train.Checkpoint(it=it, v=tf.Variable(1))
    with pytest.warns(UserWarning, match="dataset iterators"):
        ckpt.write(str(tmp_path / "c"))


def test_keras_optimizer_holds_its_variables_and_slots(tmp_path):
    v = tf.Variable([1.0, 2.0])
    opt = keras.optimizers.SGD(0.1, momentum=0.9)
    opt.apply_gradients([(tf.constant([1.0, 1.0]), v)])
    # A Keras 3 optimizer holds its variables and slots (TF 2.21 writes these keys)
    only_opt = keys(tf.train.Checkpoint(opt=opt).write(str(tmp_path / "a")))
    assert only_opt[1:] == [f"opt/{k}/.ATTRIBUTES/VARIABLE_VALUE" for k in (
        "_iterations", "_learning_rate", "_trainable_variables/0", "_variables/2")]
    both = keys(tf.train.Checkpoint(opt=opt, v=v).write(str(tmp_path / "b")))
    assert "v/.ATTRIBUTES/VARIABLE_VALUE" in both
    assert "opt/_variables/2/.ATTRIBUTES/VARIABLE_VALUE" in both


def test_waiting_restores_keep_nothing_alive(tmp_path):
    model = keras.Sequential([keras.layers.Dense(2)])
    model.build((None, 3))
    path = tf.train.Checkpoint(m=model).write(str(tmp_path / "c"))
    fresh = keras.Sequential([keras.layers.Dense(2)])
    tf.train.Checkpoint(m=fresh).read(path)  # the status is dropped; the layer still waits
    refs = [weakref.ref(fresh), weakref.ref(fresh.layers[0])]
    assert any(entry[0]() is fresh.layers[0] for entry in _restore_hooks.PENDING.values())
    del fresh
    gc.collect()
    assert [r() for r in refs] == [None, None]
    assert not any(entry[0]() is None for entry in _restore_hooks.PENDING.values())


def test_waiting_layers_in_a_plain_list_are_not_kept_alive(tmp_path):
    holder = tf.Module()
    holder.blocks = [keras.layers.Dense(2), keras.layers.Dense(2)]
    for block in holder.blocks:
        block.build((None, 2))
    path = tf.train.Checkpoint(h=holder).write(str(tmp_path / "c"))
    fresh = tf.Module()
    fresh.blocks = [keras.layers.Dense(2), keras.layers.Dense(2)]
    tf.train.Checkpoint(h=fresh).read(path)
    fresh.blocks[1].build((None, 2))
    np.testing.assert_array_equal(fresh.blocks[1].kernel.numpy(), holder.blocks[1].kernel.numpy())
    ref = weakref.ref(fresh.blocks[0])  # still waiting to be built
    del fresh
    gc.collect()
    assert ref() is None
