"""Keras models and optimizers in tf.train.Checkpoint: the object graph of
TensorFlow 2.21's Keras 3 (``_functional/_operations``, ``_kernel``, the
optimizer's ``_variables`` and slot lists) read from TF-written fixtures
(tests/fixtures/tf_written/checkpoints/keras_*, dense_adam) and written by
kiln; checkpoints kiln wrote before in tf.keras 2's naming
(tests/fixtures/kiln_written/keras2_style) still restore."""
import importlib.util
import os

import numpy as np
import pytest

import kiln as tf
from kiln import errors
from kiln.keras.saving import keras_paths

keras = tf.keras
L = keras.layers
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")
TF_DIR = os.path.join(FIXTURES, "tf_written", "checkpoints")
OLD_DIR = os.path.join(FIXTURES, "kiln_written")
VALUE = ".ATTRIBUTES/VARIABLE_VALUE"


def _old_makers():
    path = os.path.join(OLD_DIR, "make_fixtures.py")
    spec = importlib.util.spec_from_file_location("kiln_written_fixtures", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


OLD = _old_makers()


# ---- the models of the TF fixtures (make_fixtures.py), in kiln ----

class Subclassed(keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = L.Dense(3, activation="relu")
        self.norm = L.BatchNormalization()
        self.head = L.Dense(2)

    def call(self, x, training=False):
        return self.head(self.norm(self.hidden(x), training=training))


def dense_adam(with_input=True):
    first = [keras.Input((4,))] if with_input else []
    model = keras.Sequential(first + [L.Dense(3, activation="relu"), L.Dense(2)])
    return model, keras.optimizers.Adam(0.01)


def keras_conv_bn_sgd(with_input=True):
    i = keras.Input((5, 5, 2))
    h = L.BatchNormalization()(L.Conv2D(2, 3)(i))
    return keras.Model(i, L.Dense(2)(L.Flatten()(h))), keras.optimizers.SGD(0.1, momentum=0.9)


def keras_lstm_rmsprop(with_input=True):
    first = [keras.Input((6,), dtype="int32")] if with_input else []
    model = keras.Sequential(first + [L.Embedding(10, 4), L.LSTM(3), L.Dense(2)])
    return model, keras.optimizers.RMSprop(0.01, momentum=0.5, centered=True)


def keras_subclassed_adamw(with_input=True):
    return Subclassed(), keras.optimizers.AdamW(0.01, weight_decay=0.01, amsgrad=True)


TF_MODELS = {f.__name__: f for f in (dense_adam, keras_conv_bn_sgd, keras_lstm_rmsprop,
                                     keras_subclassed_adamw)}


def tf_prefix(name):
    return os.path.join(TF_DIR, name, "ckpt")


def tf_values(name):
    return np.load(os.path.join(TF_DIR, name, "values.npz"))


def keys(prefix):
    return {k for k, _ in tf.train.list_variables(prefix)} - {"_CHECKPOINTABLE_OBJECT_GRAPH"}


def opt_state(opt):
    """The optimizer's variables in Keras' order (iterations, learning rate, slots)."""
    return [v.numpy() for v in keras_paths.optimizer_variables(opt)]


def saved_opt_state(prefix):
    """The optimizer's values in a Keras 3 checkpoint, by their ``_variables`` index."""
    reader = tf.train.load_checkpoint(prefix)
    out, i = [], 0
    names = keys(prefix)
    while True:
        key = f"optimizer/_variables/{i}/{VALUE}"
        if i == 0:
            key = f"optimizer/_iterations/{VALUE}"
        elif i == 1 and f"optimizer/_learning_rate/{VALUE}" in names:
            key = f"optimizer/_learning_rate/{VALUE}"
        if key not in names:
            return out
        out.append(reader.get_tensor(key))
        i += 1


def built(make, x):
    model, opt = make()
    model(x)
    opt.build(model.trainable_variables)
    return model, opt


def assert_close(got, want, tol=1e-5):
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# ---- TF -> kiln ----

@pytest.mark.parametrize("name", sorted(TF_MODELS))
def test_tf_keras_checkpoint_restores_a_built_model(name):
    v = tf_values(name)
    model, opt = built(TF_MODELS[name], v["x"])
    status = tf.train.Checkpoint(model=model, optimizer=opt).read(tf_prefix(name))
    status.assert_existing_objects_matched().assert_consumed()
    assert_close(model(v["x"]).numpy(), v["out"])
    want = saved_opt_state(tf_prefix(name))
    assert int(opt.iterations.numpy()) == 1 and len(want) == len(opt.variables) > 2
    for got, saved in zip(opt_state(opt), want):
        np.testing.assert_array_equal(got, saved)
    if "opt_0" in v.files:
        for i, got in enumerate(opt_state(opt)):
            np.testing.assert_array_equal(got, v[f"opt_{i}"])


@pytest.mark.parametrize("name", ["keras_conv_bn_sgd", "keras_subclassed_adamw"])
def test_tf_keras_checkpoint_then_the_same_next_step(name):
    # (keras_lstm_rmsprop is left out: TF's RMSprop squares the Embedding's
    # sparse gradient per occurrence of an index, kiln squares the sum.)
    v = tf_values(name)
    model, opt = built(TF_MODELS[name], v["x"])
    tf.train.Checkpoint(model=model, optimizer=opt).read(tf_prefix(name)).assert_consumed()
    model.compile(opt, "mse")
    model.train_on_batch(v["x"], v["y"])
    assert_close(model(v["x"]).numpy(), v["out2"], 1e-4)


@pytest.mark.parametrize("name", sorted(TF_MODELS))
def test_tf_keras_checkpoint_delayed_restore(name):
    """Restored before the model and the optimizer's slots exist: values are
    assigned when they are created."""
    v = tf_values(name)
    model, opt = TF_MODELS[name](with_input=False)
    status = tf.train.Checkpoint(model=model, optimizer=opt).read(tf_prefix(name))
    status.assert_existing_objects_matched()
    assert int(opt.iterations.numpy()) == 1
    assert_close(model(v["x"]).numpy(), v["out"])
    with pytest.raises(AssertionError, match="not created yet|not restored"):
        status.assert_consumed()  # the slots wait for the optimizer's build
    opt.build(model.trainable_variables)
    status.assert_consumed()
    for got, saved in zip(opt_state(opt), saved_opt_state(tf_prefix(name))):
        np.testing.assert_array_equal(got, saved)


def test_tf_keras_checkpoint_into_a_model_trained_later():
    v = tf_values("keras_subclassed_adamw")
    model, opt = keras_subclassed_adamw()
    status = tf.train.Checkpoint(model=model, optimizer=opt).read(
        tf_prefix("keras_subclassed_adamw"))
    model.compile(opt, "mse")
    model.train_on_batch(v["x"], v["y"])  # builds the model, then the slots
    status.assert_consumed()
    assert_close(model(v["x"]).numpy(), v["out2"], 1e-4)


# ---- kiln -> the same graph ----

@pytest.mark.parametrize("name", sorted(TF_MODELS))
def test_kiln_writes_the_keys_and_values_tf_wrote(name, tmp_path):
    v = tf_values(name)
    model, opt = built(TF_MODELS[name], v["x"])
    tf.train.Checkpoint(model=model, optimizer=opt).read(tf_prefix(name)).assert_consumed()
    path = tf.train.Checkpoint(model=model, optimizer=opt).write(str(tmp_path / "k"))
    assert keys(path) == keys(tf_prefix(name))
    mine, theirs = tf.train.load_checkpoint(path), tf.train.load_checkpoint(tf_prefix(name))
    for key in keys(path):
        np.testing.assert_array_equal(mine.get_tensor(key), theirs.get_tensor(key))


def test_keys_of_a_sequential_and_its_optimizer(tmp_path):
    model, opt = built(dense_adam, np.ones((2, 4), np.float32))
    path = tf.train.Checkpoint(model=model, optimizer=opt).write(str(tmp_path / "c"))
    names = keys(path)
    assert f"optimizer/_trainable_variables/0/{VALUE}" in names  # the first path, as TF
    assert f"optimizer/_variables/9/{VALUE}" in names  # 2 + 4 variables x 2 slots
    assert {f"optimizer/_iterations/{VALUE}", f"optimizer/_learning_rate/{VALUE}"} <= names
    alone = keys(tf.train.Checkpoint(model=model).write(str(tmp_path / "m")))
    assert f"model/_functional/_operations/1/_kernel/{VALUE}" in alone
    assert f"model/_functional/_operations/2/bias/{VALUE}" in alone
    assert f"model/optimizer/_iterations/{VALUE}" not in alone  # not compiled


def test_a_compiled_model_holds_its_optimizer(tmp_path):
    model, opt = dense_adam()
    model.compile(opt, "mse")
    model.train_on_batch(np.ones((2, 4), np.float32), np.zeros((2, 2), np.float32))
    names = keys(tf.train.Checkpoint(model=model).write(str(tmp_path / "c")))
    assert f"model/optimizer/_iterations/{VALUE}" in names
    assert f"model/optimizer/_variables/2/{VALUE}" in names


# ---- kiln round trips ----

class WithList(keras.Model):
    """Layers in a list (TF's Keras 3 does not track them; kiln does)."""

    def __init__(self):
        super().__init__()
        self.blocks = [L.Dense(4, activation="tanh"), L.Dense(4)]
        self.out = L.Dense(1)

    def call(self, x):
        for block in self.blocks:
            x = block(x)
        return self.out(x)


def _lstm_model():
    return keras.Sequential([L.Embedding(12, 3), L.LSTM(4, return_sequences=True),
                             L.GRU(2), L.Dense(1)])


ROUND_TRIPS = {
    "sequential_lstm_adam_amsgrad": (_lstm_model, lambda: keras.optimizers.Adam(amsgrad=True),
                                     lambda r: r.randint(0, 12, (4, 5)).astype(np.int32)),
    "subclassed_list_sgd_schedule": (
        WithList, lambda: keras.optimizers.SGD(
            keras.optimizers.schedules.ExponentialDecay(0.1, 5, 0.5), momentum=0.8,
            nesterov=True),
        lambda r: r.randn(4, 3).astype(np.float32)),
    "conv_bn_rmsprop": (lambda: keras_conv_bn_sgd()[0],
                        lambda: keras.optimizers.RMSprop(0.01, momentum=0.3),
                        lambda r: r.randn(4, 5, 5, 2).astype(np.float32)),
}


def _train(model, opt, x, y, steps):
    model.compile(opt, "mse")
    for _ in range(steps):
        model.train_on_batch(x, y)


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
def test_kiln_round_trip_resumes_training(name, tmp_path):
    make_model, make_opt, make_x = ROUND_TRIPS[name]
    r = np.random.RandomState(0)
    x = make_x(r)
    model, opt = make_model(), make_opt()
    y = r.randn(len(x), model(x).shape[-1]).astype(np.float32)
    _train(model, opt, x, y, 2)
    path = tf.train.Checkpoint(model=model, optimizer=opt).write(str(tmp_path / "c"))
    _train(model, opt, x, y, 1)

    fresh, fresh_opt = make_model(), make_opt()
    status = tf.train.Checkpoint(model=fresh, optimizer=fresh_opt).read(path)
    _train(fresh, fresh_opt, x, y, 1)
    status.assert_consumed()
    assert int(fresh_opt.iterations.numpy()) == 3
    assert_close(fresh(x).numpy(), model(x).numpy(), 1e-5)


def test_schedule_optimizer_writes_no_learning_rate(tmp_path):
    make_model, make_opt, make_x = ROUND_TRIPS["subclassed_list_sgd_schedule"]
    model, opt = make_model(), make_opt()
    x = make_x(np.random.RandomState(1))
    _train(model, opt, x, np.zeros((4, 1), np.float32), 1)
    names = keys(tf.train.Checkpoint(model=model, optimizer=opt).write(str(tmp_path / "c")))
    assert not any("_learning_rate" in k for k in names)
    assert f"model/out/_kernel/{VALUE}" in names  # the blocks' first path: the optimizer's
    assert f"optimizer/_trainable_variables/3/{VALUE}" in names


# ---- checkpoints kiln wrote before (tf.keras 2 naming) ----

OLD_NAMES = ["func_sgd", "seq_adam", "sub_rmsprop"]


def old(name):
    folder = os.path.join(OLD_DIR, "keras2_style", name)
    return os.path.join(folder, "ckpt"), np.load(os.path.join(folder, "values.npz"))


def test_old_fixtures_use_the_old_names():
    names = keys(old("seq_adam")[0])
    assert f"model/layer_with_weights-0/kernel/{VALUE}" in names
    assert any(".OPTIMIZER_SLOT" in k for k in names)


@pytest.mark.parametrize("build_first", [True, False])
@pytest.mark.parametrize("name", OLD_NAMES)
def test_old_kiln_keras_checkpoints_still_restore(name, build_first):
    prefix, v = old(name)
    model, opt, _, _ = getattr(OLD, name)()
    if build_first:
        model(v["x"])
        opt.build(model.trainable_variables)
    status = tf.train.Checkpoint(model=model, optimizer=opt).read(prefix)
    status.assert_existing_objects_matched()
    assert_close(model(v["x"]).numpy(), v["out"])
    opt.build(model.trainable_variables)
    status.assert_consumed()
    for i, var in enumerate(_old_order(opt)):  # kiln's order then
        np.testing.assert_array_equal(var.numpy(), v[f"opt_{i}"])


def _old_order(opt):
    """The optimizer's variables as kiln listed them then: slots by name, not
    interleaved per variable (Keras 3's order, kiln's now)."""
    plain = [v for v in opt.variables if getattr(v, "_kiln_slot", None) is None]
    slots = [v for v in opt.variables if getattr(v, "_kiln_slot", None) is not None]
    names = list(dict.fromkeys(v._kiln_slot[1] for v in slots))
    return plain + sorted(slots, key=lambda v: names.index(v._kiln_slot[1]))


def test_old_kiln_keras_checkpoint_resaved_in_the_new_names(tmp_path):
    prefix, v = old("seq_adam")
    model, opt, _, _ = OLD.seq_adam()
    tf.train.Checkpoint(model=model, optimizer=opt).read(prefix)
    opt.build(model.trainable_variables)
    path = tf.train.Checkpoint(model=model, optimizer=opt).write(str(tmp_path / "c"))
    assert not any("layer_with_weights" in k or "OPTIMIZER_SLOT" in k for k in keys(path))
    assert f"optimizer/_variables/9/{VALUE}" in keys(path)
    again, again_opt, _, _ = OLD.seq_adam()
    tf.train.Checkpoint(model=again, optimizer=again_opt).read(path)
    assert_close(again(v["x"]).numpy(), v["out"])


# ---- errors ----

def test_shape_mismatch_names_the_key_and_shapes():
    model = keras.Sequential([keras.Input((4,)), L.Dense(5, activation="relu"), L.Dense(2)])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Cannot restore optimizer/_trainable_variables/0/.*shape "
                             r"\(4, 3\) into a variable of shape \(4, 5\)"):
        tf.train.Checkpoint(model=model).read(tf_prefix("dense_adam"))


def test_an_extra_layer_is_reported_unmatched():
    model = keras.Sequential([keras.Input((4,)), L.Dense(3, activation="relu"), L.Dense(2),
                              L.Dense(2)])
    status = tf.train.Checkpoint(model=model).read(tf_prefix("dense_adam"))
    with pytest.raises(AssertionError, match=r"model/_functional/_operations/3/_kernel"):
        status.assert_existing_objects_matched()


# ---- an optimizer attached by compile after the read ----

def _dense_model():
    i = keras.Input((3,))
    return keras.Model(i, L.Dense(2, name="d")(i))


def test_compile_after_read_restores_the_optimizer(tmp_path):
    # TF: iterations is 3 right after compile, and the next step matches
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    y = np.ones((4, 2), np.float32)
    model = _dense_model()
    model.compile(keras.optimizers.Adam(0.1), "mse")
    model.fit(x, y, epochs=3, verbose=0)
    prefix = tf.train.Checkpoint(model=model).write(str(tmp_path / "c"))
    fresh = _dense_model()
    tf.train.Checkpoint(model=fresh).read(prefix)
    fresh.compile(keras.optimizers.Adam(0.1), "mse")
    assert int(fresh.optimizer.iterations.numpy()) == 3
    fresh.fit(x, y, epochs=1, verbose=0)
    model.fit(x, y, epochs=1, verbose=0)
    for a, b in zip(fresh.optimizer.variables, model.optimizer.variables):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    np.testing.assert_allclose(fresh.get_weights()[0], model.get_weights()[0], rtol=1e-6)
