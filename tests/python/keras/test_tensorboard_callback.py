"""keras.callbacks.TensorBoard: the runs and tags Keras 3's callback writes (log_dir/train,
log_dir/validation; epoch_*, batch_*, evaluation_*_vs_iterations, weight histograms and
images), read back with kiln's event reader. tests/peers/check_summaries.py checks the
same kind of log with TensorBoard's own reader."""
import glob
import os

import numpy as np
import pytest

import kiln as tf
from kiln.summary.experimental import summary_iterator


def _tags(run_dir):
    out = {}
    for f in glob.glob(os.path.join(run_dir, "events.out.tfevents.*")):
        for e in summary_iterator(f):
            for v in e.get("summary", []):
                out.setdefault(v["tag"], []).append((e["step"], v))
    return out


def _model():
    m = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(3, activation="relu"),
                             tf.keras.layers.Dense(1)])
    m.compile("sgd", "mse", metrics=["mae"])
    return m


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 4)).astype(np.float32)
    return x, x.sum(axis=1, keepdims=True)


def test_epoch_metrics_in_train_and_validation_runs(tmp_path):
    x, y = _data()
    cb = tf.keras.callbacks.TensorBoard(str(tmp_path), histogram_freq=1, write_images=True)
    hist = _model().fit(x, y, epochs=2, batch_size=8, validation_split=0.25, callbacks=[cb],
                        verbose=0)
    assert sorted(os.listdir(tmp_path)) == ["train", "validation"]
    train, val = _tags(str(tmp_path / "train")), _tags(str(tmp_path / "validation"))
    # write_graph: the model's JSON config for the graph plugin's conceptual graph.
    (step, keras), = train["keras"]
    assert step == 0 and keras["metadata"]["plugin_name"] == "graph_keras_model"
    assert b'"class_name": "Sequential"' in keras["tensor"].numpy()
    for tag in ("epoch_loss", "epoch_mae", "epoch_learning_rate"):
        assert [s for s, _ in train[tag]] == [0, 1], tag
    np.testing.assert_allclose([float(v["tensor"].numpy()) for _, v in train["epoch_loss"]],
                               hist.history["loss"], rtol=1e-6)
    np.testing.assert_allclose([float(v["tensor"].numpy()) for _, v in val["epoch_loss"]],
                               hist.history["val_loss"], rtol=1e-6)
    assert [s for s, _ in val["evaluation_loss_vs_iterations"]] == [3, 6]  # optimizer steps
    kernels = [t for t in train if t.endswith("kernel/histogram")]
    assert len(kernels) == 2 and train[kernels[0]][0][1]["metadata"]["plugin_name"] == "histograms"
    images = [t for t in train if t.endswith("/image")]
    # The last bias (shape [1]) squeezes to a scalar: no image, as in Keras.
    assert len(images) == 3 and all(train[t][0][1]["metadata"]["plugin_name"] == "images"
                                    for t in images)


def test_batch_level_summaries_every_n_batches(tmp_path):
    x, y = _data()
    cb = tf.keras.callbacks.TensorBoard(str(tmp_path), update_freq=2)
    _model().fit(x, y, epochs=1, batch_size=8, callbacks=[cb], verbose=0)
    train = _tags(str(tmp_path / "train"))
    assert [s for s, _ in train["batch_loss"]] == [2, 4]
    assert "epoch_loss" in train and not os.path.exists(tmp_path / "validation")


def test_no_graph_without_write_graph_or_for_subclassed_models(tmp_path):
    x, y = _data()

    class Sub(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.d = tf.keras.layers.Dense(1)

        def call(self, x):
            return self.d(x)

    for name, model, write_graph in (("a", _model(), False), ("b", Sub(), True)):
        model.compile("sgd", "mse")
        cb = tf.keras.callbacks.TensorBoard(str(tmp_path / name), write_graph=write_graph)
        model.fit(x, y, epochs=1, batch_size=16, callbacks=[cb], verbose=0)
        assert "keras" not in _tags(str(tmp_path / name / "train"))


def test_profile_batch_writes_a_profile_and_the_graphs(tmp_path):
    x, y = _data()
    cb = tf.keras.callbacks.TensorBoard(str(tmp_path), profile_batch=(2, 3))
    _model().fit(x, y, epochs=1, batch_size=8, callbacks=[cb], verbose=0)
    traces = glob.glob(str(tmp_path / "train" / "plugins" / "profile" / "*" / "*.trace.json.gz"))
    assert len(traces) == 1
    events = [e for f in glob.glob(str(tmp_path / "train" / "events*"))
              for e in summary_iterator(f) if "graph_def" in e]
    assert [e["step"] for e in events] == [3] and b"MatMul" in events[0]["graph_def"]


def test_bad_arguments():
    with pytest.raises(ValueError, match="update_freq"):
        tf.keras.callbacks.TensorBoard(update_freq=0)
    for bad in (-1, (3, 2), "a,b", (1, 2, 3), 1.5):
        with pytest.raises(ValueError, match="profile_batch must be"):
            tf.keras.callbacks.TensorBoard(profile_batch=bad)
    assert tf.keras.callbacks.TensorBoard(profile_batch="2,4")._stop_batch == 4
