"""Model.compile / fit / evaluate / train_on_batch / test_on_batch."""
import re

import numpy as np
import pytest

import kiln as tf
from kiln import keras


def _linear_data(n=100, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    w = np.array([[1.0], [-2.0], [0.5]], np.float32)
    return x, x @ w + 0.3, w


def _linear_model(lr=0.1, **compile_kwargs):
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,))])
    model.compile(optimizer=keras.optimizers.SGD(lr), loss="mse", **compile_kwargs)
    return model


def _classifier(classes=3, features=4, activation="softmax"):
    model = keras.Sequential([keras.Input(shape=(features,)),
                              keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(classes, activation=activation)])
    return model


def _blobs(n=120, classes=3, features=4, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((classes, features)).astype(np.float32) * 4
    y = rng.integers(0, classes, n)
    x = centers[y] + rng.standard_normal((n, features)).astype(np.float32) * 0.5
    return x.astype(np.float32), y.astype(np.int32)


# ---- training works ----

def test_fit_linear_regression_converges():
    x, y, w = _linear_data()
    model = _linear_model(metrics=["mae"])
    history = model.fit(x, y, epochs=30, batch_size=16, verbose=0)
    assert list(history.history) == ["loss", "mae"]
    assert history.epoch == list(range(30))
    losses = history.history["loss"]
    assert len(losses) == 30 and losses[-1] < 1e-4 < losses[0]
    kernel, bias = model.get_weights()
    np.testing.assert_allclose(kernel, w, atol=1e-2)
    np.testing.assert_allclose(bias, [0.3], atol=1e-2)
    assert model.history is history


def test_train_on_batch_is_one_sgd_step():
    x, y, _ = _linear_data(8)
    model = _linear_model(lr=0.1)
    k0, b0 = model.get_weights()
    loss = model.train_on_batch(x, y)
    err = x @ k0 + b0 - y
    np.testing.assert_allclose(loss, np.mean(err ** 2), rtol=1e-5)
    k1, b1 = model.get_weights()
    np.testing.assert_allclose(k1, k0 - 0.1 * 2 * x.T @ err / len(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b1, b0 - 0.1 * 2 * err.mean(0), rtol=1e-5, atol=1e-6)
    # test_on_batch does not train
    before = model.get_weights()
    err1 = x @ k1 + b1 - y
    np.testing.assert_allclose(model.test_on_batch(x, y), np.mean(err1 ** 2), rtol=1e-5)
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_classifier_accuracy_and_evaluate_match_numpy():
    keras.utils.set_random_seed(0)
    x, y = _blobs()
    model = _classifier()
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(x, y, epochs=15, batch_size=16, verbose=0)
    assert list(history.history) == ["loss", "accuracy"]
    assert history.history["accuracy"][-1] > 0.9
    loss, acc = model.evaluate(x, y, verbose=0)
    probs = model.predict(x, verbose=0)
    ref_acc = np.mean(np.argmax(probs, -1) == y)
    ref_loss = np.mean(-np.log(np.clip(probs[np.arange(len(y)), y], 1e-7, 1 - 1e-7)))
    np.testing.assert_allclose(acc, ref_acc, rtol=1e-6)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-4)
    d = model.evaluate(x, y, verbose=0, return_dict=True)
    assert list(d) == ["loss", "accuracy"] and np.isclose(d["accuracy"], ref_acc)
    assert model.metrics_names == ["loss", "accuracy"]


def test_accuracy_string_follows_the_labels():
    x, y = _blobs(40)
    onehot = np.eye(3, dtype=np.float32)[y]
    model = _classifier()
    model.compile(optimizer="sgd", loss="categorical_crossentropy", metrics=["acc"])
    model.fit(x, onehot, epochs=1, verbose=0)
    assert model.metrics[1]._fn is keras.metrics.categorical_accuracy
    binary = _classifier(classes=1, activation="sigmoid")
    binary.compile(optimizer="sgd", loss="binary_crossentropy", metrics=["accuracy"])
    binary.fit(x, (y > 0).astype(np.float32)[:, None], epochs=1, verbose=0)
    assert binary.metrics[1]._fn is keras.metrics.binary_accuracy
    sparse = _classifier()
    sparse.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(),
                   metrics=["accuracy", keras.metrics.SparseCategoricalAccuracy(name="sca")])
    logs = sparse.evaluate(x, y, verbose=0, return_dict=True)
    assert sparse.metrics[1]._fn is keras.metrics.sparse_categorical_accuracy
    assert logs["accuracy"] == logs["sca"]


def test_sample_weight_in_fit_and_evaluate():
    x, y, _ = _linear_data(40)
    model = _linear_model(weighted_metrics=["mse"])
    sw = np.where(np.arange(40) % 2 == 0, 1.0, 0.0).astype(np.float32)
    k, b = model.get_weights()
    per = ((x @ k + b - y) ** 2)[:, 0]
    d = model.evaluate(x, y, sample_weight=sw, batch_size=40, verbose=0, return_dict=True)
    np.testing.assert_allclose(d["loss"], (per * sw).sum() / 40, rtol=1e-5)
    np.testing.assert_allclose(d["mse"], (per * sw).sum() / sw.sum(), rtol=1e-5)
    # samples with weight 0 do not move the weights
    model2 = _linear_model()
    model2.set_weights([k, b])
    model2.fit(x, y, sample_weight=np.zeros(40, np.float32), epochs=2, verbose=0)
    np.testing.assert_allclose(model2.get_weights()[0], k)


def test_callable_regularizer_adds_to_the_loss():
    x, y, _ = _linear_data(16)
    reg = lambda w: 0.1 * tf.reduce_sum(tf.square(w))  # noqa: E731
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,), kernel_regularizer=reg)])
    model.compile(optimizer="sgd", loss="mse")
    k, b = model.get_weights()
    expected = np.mean((x @ k + b - y) ** 2) + 0.1 * np.sum(k ** 2)
    np.testing.assert_allclose(model.evaluate(x, y, batch_size=16, verbose=0), expected,
                               rtol=1e-5)


# ---- one compiled function, bounded tracing ----

def test_train_step_is_one_function_and_partial_batch_traces_once_more():
    x, y, _ = _linear_data(100)  # 3 full batches of 32 and one of 4
    model = _linear_model()
    model.fit(x, y, epochs=3, batch_size=32, verbose=0)
    fn = model.train_function
    assert isinstance(fn, tf.Function)
    assert fn.experimental_get_tracing_count() == 2
    model.fit(x, y, epochs=2, batch_size=32, verbose=0)
    model.fit(x, y, epochs=1, batch_size=10, verbose=0)  # relaxed trace serves any size
    assert model.train_function is fn and fn.experimental_get_tracing_count() == 2
    model.evaluate(x, y, batch_size=32, verbose=0)
    model.evaluate(x, y, batch_size=7, verbose=0)
    assert model.test_function.experimental_get_tracing_count() <= 2


def test_trained_model_can_be_freed():
    import gc
    import weakref
    x, y, _ = _linear_data(8)
    model = _linear_model()
    model.fit(x, y, verbose=0)
    model.evaluate(x, y, verbose=0)
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None  # the step functions hold the model weakly


def test_run_eagerly_matches_compiled():
    x, y, _ = _linear_data(50)
    eager = _linear_model(run_eagerly=True)
    compiled = _linear_model()
    compiled.set_weights(eager.get_weights())
    h1 = eager.fit(x, y, epochs=3, batch_size=16, shuffle=False, verbose=0)
    h2 = compiled.fit(x, y, epochs=3, batch_size=16, shuffle=False, verbose=0)
    assert not isinstance(eager.train_function, tf.Function)
    np.testing.assert_allclose(h1.history["loss"], h2.history["loss"], rtol=1e-5)
    for a, b in zip(eager.get_weights(), compiled.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ---- data forms ----

def test_validation_split_and_validation_data():
    x, y, _ = _linear_data(100)
    model = _linear_model(metrics=["mae"])
    h = model.fit(x, y, epochs=2, batch_size=32, validation_split=0.2, verbose=0)
    assert list(h.history) == ["loss", "mae", "val_loss", "val_mae"]
    # the validation part is the last 20 samples, before shuffling
    np.testing.assert_allclose(h.history["val_loss"][-1],
                               model.evaluate(x[80:], y[80:], verbose=0)[0], rtol=1e-5)
    h2 = model.fit(x[:80], y[:80], epochs=2, validation_data=(x[80:], y[80:]),
                   validation_freq=2, verbose=0)
    assert len(h2.history["val_loss"]) == 1 and len(h2.history["loss"]) == 2


def test_fit_on_tensors_and_dataset():
    x, y, w = _linear_data(64)
    model = _linear_model()
    model.fit(tf.constant(x), tf.constant(y), epochs=2, verbose=0)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    h = model.fit(ds, epochs=25, verbose=0, validation_data=ds)
    assert h.history["loss"][-1] < 1e-3 and "val_loss" in h.history
    np.testing.assert_allclose(model.get_weights()[0], w, atol=0.05)
    assert np.isclose(model.evaluate(ds, verbose=0), h.history["val_loss"][-1], rtol=1e-5)


def test_dataset_steps_per_epoch_and_unbuilt_model():
    x, y, _ = _linear_data(64)
    batches = []

    class Count(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            batches.append(batch)

    model = keras.Sequential([keras.layers.Dense(1)])  # built by fit on the first batch
    model.compile(optimizer="sgd", loss="mse")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16).repeat()
    model.fit(ds, epochs=2, steps_per_epoch=3, verbose=0, callbacks=[Count()])
    assert batches == [0, 1, 2, 0, 1, 2]
    assert [w.shape for w in model.get_weights()] == [(3, 1), (1,)]
    with pytest.raises(ValueError, match="infinite"):
        model.fit(ds, epochs=1, verbose=0)
    net = keras.Sequential([keras.layers.Dense(2)])
    net.compile(optimizer="sgd", loss="mse")
    assert np.isfinite(net.train_on_batch(x[:4], np.zeros((4, 2), np.float32)))


def test_multi_output_losses_and_weights():
    inp = keras.Input(shape=(3,))
    a = keras.layers.Dense(1, name="a")(inp)
    b = keras.layers.Dense(2, name="b")(inp)
    model = keras.Model(inp, [a, b])
    model.compile(optimizer="sgd", loss=["mse", "mae"], loss_weights=[2.0, 0.5])
    rng = np.random.default_rng(0)
    x = rng.standard_normal((10, 3)).astype(np.float32)
    ya, yb = rng.standard_normal((10, 1)).astype(np.float32), rng.standard_normal(
        (10, 2)).astype(np.float32)
    pa, pb = model.predict(x, verbose=0)
    d = model.evaluate(x, [ya, yb], batch_size=10, verbose=0, return_dict=True)
    la, lb = np.mean((pa - ya) ** 2), np.mean(np.abs(pb - yb))
    np.testing.assert_allclose(d["a_loss"], la, rtol=1e-5)
    np.testing.assert_allclose(d["b_loss"], lb, rtol=1e-5)
    np.testing.assert_allclose(d["loss"], 2 * la + 0.5 * lb, rtol=1e-5)
    h = model.fit(x, {"a": ya, "b": yb}, epochs=2, verbose=0)
    assert list(h.history) == ["loss", "a_loss", "b_loss"]


def test_subclassed_model_and_custom_train_step():
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.d = keras.layers.Dense(1)
            self.steps = 0

        def call(self, x):
            return self.d(x)

        def train_step(self, data):
            self.steps += 1  # Python side effect: once per trace
            return super().train_step(data)

    x, y, w = _linear_data(64)
    net = Net()
    net.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    h = net.fit(x, y, epochs=30, batch_size=16, verbose=0)
    assert h.history["loss"][-1] < 1e-4
    np.testing.assert_allclose(net.d.kernel.numpy(), w, atol=1e-2)
    assert net.steps == 1  # traced once: every batch has 16 samples


def test_callbacks_see_logs_and_can_stop_training():
    seen = []

    class Stop(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append((epoch, dict(logs)))
            if epoch == 1:
                self.model.stop_training = True

    x, y, _ = _linear_data(32)
    model = _linear_model()
    h = model.fit(x, y, epochs=10, verbose=0, callbacks=[Stop()])
    assert [e for e, _ in seen] == [0, 1] and len(h.history["loss"]) == 2
    assert seen[1][1]["loss"] == h.history["loss"][1]


# ---- output ----

def test_progress_lines(capsys):
    x, y, _ = _linear_data(100)
    model = _linear_model(metrics=["mae"])
    model.fit(x, y, epochs=2, batch_size=32, validation_split=0.2, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2"
    num = r"\d+\.\d{4}(e[-+]\d+)?"
    pat = (rf"3/3 - \d+s - loss: {num} - mae: {num} - val_loss: {num} - val_mae: {num} - "
           r"\d+ms/epoch - \d+(us|ms)/step")
    assert re.fullmatch(pat, lines[1]), lines[1]
    model.fit(x, y, epochs=1, verbose=1)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Epoch 1/1"
    assert re.fullmatch(rf"4/4 \[=+\] - \d+s \d+(us|ms)/step - loss: {num} - mae: {num}",
                        out[1]), out[1]
    model.evaluate(x, y, verbose=1)
    assert re.fullmatch(rf"4/4 \[=+\] - \d+s \d+(us|ms)/step - loss: {num} - mae: {num}\n",
                        capsys.readouterr().out)
    model.fit(x, y, epochs=1, verbose=0)
    model.evaluate(x, y, verbose=0)
    assert capsys.readouterr().out == ""


# ---- errors ----

def test_fit_before_compile_raises_runtime_error():
    model = _classifier()
    x, y = _blobs(8)
    for call in (lambda: model.fit(x, y), lambda: model.evaluate(x, y),
                 lambda: model.train_on_batch(x, y), lambda: model.test_on_batch(x, y)):
        with pytest.raises(RuntimeError, match="You must compile your model"):
            call()


def test_compile_errors():
    model = _classifier()
    with pytest.raises(ValueError, match="Could not interpret loss"):
        model.compile(optimizer="sgd", loss="not_a_loss")
    with pytest.raises(ValueError, match="Could not interpret metric"):
        model.compile(optimizer="sgd", loss="mse", metrics=["not_a_metric"])
    with pytest.raises(ValueError):
        model.compile(optimizer="not_an_optimizer", loss="mse")
    with pytest.raises(TypeError, match="metrics must be a list"):
        model.compile(optimizer="sgd", loss="mse", metrics="accuracy")
    with pytest.raises(TypeError, match="unexpected keyword"):
        model.compile(optimizer="sgd", loss="mse", bogus=1)
    model.compile(optimizer="sgd")
    x, y = _blobs(8)
    with pytest.raises(ValueError, match="No loss to compute"):
        model.fit(x, y, verbose=0)


def test_data_errors():
    x, y, _ = _linear_data(10)
    model = _linear_model()
    with pytest.raises(ValueError, match="same number of samples"):
        model.fit(x, y[:5], verbose=0)
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        model.fit(x, y, batch_size=0, verbose=0)
    with pytest.raises(ValueError, match="0 samples"):
        model.fit(x[:0], y[:0], verbose=0)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(4)
    with pytest.raises(ValueError, match="`y` argument is not supported"):
        model.fit(ds, y, verbose=0)
    with pytest.raises(ValueError, match="validation_split is only supported"):
        model.fit(ds, validation_split=0.5, verbose=0)
    with pytest.raises(ValueError, match="validation_split"):
        model.fit(x, y, validation_split=1.5, verbose=0)
    with pytest.raises(ValueError, match="validation_data must be"):
        model.fit(x, y, validation_data=x, verbose=0)
    with pytest.raises(ValueError, match="needs targets"):
        model.fit(x, verbose=0)


# ---- class_weight ----

def _fit_history(x, y, seed=5, **fit_kwargs):
    keras.utils.set_random_seed(seed)
    model = _classifier()
    model.compile(optimizer=keras.optimizers.SGD(0.05),
                  loss="sparse_categorical_crossentropy" if y.ndim == 1
                  else "categorical_crossentropy")
    return model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0,
                     **fit_kwargs).history["loss"]


def test_class_weight_is_the_matching_sample_weight():
    x, y = _blobs()
    cw = {0: 1.0, 1: 3.0, 2: 0.5}
    want = _fit_history(x, y, sample_weight=np.array([cw[int(c)] for c in y], np.float32))
    got = _fit_history(x, y, class_weight=cw)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert got != _fit_history(x, y)  # the weights do change training
    # One-hot targets: the class is the argmax.
    onehot = np.eye(3, dtype=np.float32)[y]
    np.testing.assert_allclose(_fit_history(x, onehot, class_weight=cw), want, rtol=1e-5)
    # With sample_weight too, the two multiply.
    sw = np.linspace(0.5, 1.5, len(y)).astype(np.float32)
    both = _fit_history(x, y, class_weight=cw, sample_weight=sw)
    product = _fit_history(x, y, sample_weight=sw * np.array([cw[int(c)] for c in y]))
    np.testing.assert_allclose(both, product, rtol=1e-5)


def test_class_weight_errors():
    x, y = _blobs(n=32)
    model = _classifier()
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="keys from 0 to one less than the number of classes"):
        model.fit(x, y, class_weight={1: 1.0, 2: 1.0}, verbose=0)
    with pytest.raises(ValueError, match="keys from 0 to one less"):
        model.fit(x, y, class_weight={"a": 1.0}, verbose=0)
    with pytest.raises(ValueError, match="class_weight must be a dict"):
        model.fit(x, y, class_weight=[1.0, 2.0, 3.0], verbose=0)
    with pytest.raises(tf.errors.InvalidArgumentError):  # class 2 has no weight
        model.fit(x, y, class_weight={0: 1.0, 1: 1.0}, verbose=0)
    with pytest.raises(ValueError, match="3\\+ dimensional targets"):
        model.fit(x, np.zeros((32, 2, 3), np.float32), class_weight={0: 1.0}, verbose=0)
