"""One realistic program per theme of TensorFlow's guides (our own programs, not the guides'
cells), each run eagerly and as a kiln.function and checked against NumPy: what a user who
moves from the guides to their own code writes next."""
import warnings

import numpy as np
import pytest

import kiln as tf

RNG = np.random.default_rng(42)


def test_autodiff_fit_with_clipped_custom_gradient_and_jacobians():
    """Least squares on y = 3x - 1 with a gradient-clipping custom op; then the model's
    Jacobian and per-example Jacobians against the closed forms."""
    @tf.custom_gradient
    def clip_grad(x):
        return tf.identity(x), lambda dy: tf.clip_by_value(dy, -1.0, 1.0)

    w, b = tf.Variable(0.0), tf.Variable(0.0)
    xs = tf.constant(np.linspace(-1, 1, 16, dtype=np.float32))
    ys = 3.0 * xs - 1.0

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            pred = clip_grad(w * x + b)
            loss = tf.reduce_mean(tf.square(pred - y))
        gw, gb = tape.gradient(loss, tape.watched_variables())
        w.assign_sub(0.5 * gw)
        b.assign_sub(0.5 * gb)
        return loss

    losses = [float(step(xs, ys)) for _ in range(200)]
    assert losses[-1] < 1e-4 < losses[0]
    np.testing.assert_allclose([w.numpy(), b.numpy()], [3.0, -1.0], atol=1e-2)

    x = tf.constant(RNG.standard_normal((4, 3)).astype(np.float32))
    m = tf.constant(RNG.standard_normal((3, 2)).astype(np.float32))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.tanh(x @ m)
    dt = 1 - np.tanh(x.numpy() @ m.numpy()) ** 2  # [4, 2]
    bj = tape.batch_jacobian(y, x).numpy()  # [4, 2, 3]
    np.testing.assert_allclose(bj, dt[:, :, None] * m.numpy().T[None], rtol=1e-5, atol=1e-6)
    full = tape.jacobian(y, x).numpy()  # [4, 2, 4, 3]
    assert full.shape == (4, 2, 4, 3) and abs(full[0, :, 1]).max() == 0.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tf.GradientTape() as t2:
            n = tf.argmax(tf.Variable([1.0, 2.0]))
        assert t2.gradient(n, w) is None
    assert any("floating" in str(c.message) for c in caught)


def test_creation_indexing_knn_classifier():
    """A k-nearest-neighbour classifier on a grid: linspace/eye/norm, top_k, gather,
    segment votes, argsort, scatter updates into a confusion matrix."""
    grid = tf.linspace(-1.0, 1.0, 5)
    pts = tf.reshape(tf.stack(tf.meshgrid(grid, grid), axis=-1), [-1, 2])  # 25 points
    labels = tf.cast(pts[:, 0] > 0, tf.int32) + 2 * tf.cast(pts[:, 1] > 0, tf.int32)
    queries = tf.constant(RNG.uniform(-1, 1, (12, 2)).astype(np.float32))

    def classify(q):
        d = tf.norm(q[:, None, :] - pts[None, :, :], axis=-1)  # [Q, 25]
        _, nn_idx = tf.math.top_k(-d, k=3)
        votes = tf.one_hot(tf.gather(labels, nn_idx), 4)  # [Q, 3, 4]
        pred = tf.argmax(tf.reduce_sum(votes, axis=1), axis=-1, output_type=tf.int32)
        truth = tf.cast(q[:, 0] > 0, tf.int32) + 2 * tf.cast(q[:, 1] > 0, tf.int32)
        cells = tf.stack([truth, pred], axis=1)
        confusion = tf.tensor_scatter_nd_add(tf.zeros([4, 4], tf.int32), cells,
                                             tf.ones([tf.shape(q)[0]], tf.int32))
        hardest = tf.argsort(tf.reduce_min(d, axis=1), direction="DESCENDING")
        return pred, confusion, hardest

    for pred, conf, hardest in (classify(queries), tf.function(classify)(queries)):
        qn, pn, ln = queries.numpy(), pts.numpy(), labels.numpy()
        d = np.linalg.norm(qn[:, None] - pn[None], axis=-1)
        nn = np.argsort(d, axis=1, kind="stable")[:, :3]
        want = np.array([np.bincount(ln[r], minlength=4).argmax() for r in nn])
        np.testing.assert_array_equal(pred.numpy(), want)
        assert conf.numpy().sum() == 12
        np.testing.assert_array_equal(
            hardest.numpy(), np.argsort(-d.min(axis=1), kind="stable"))
    assert np.array_equal(tf.eye(4, dtype=tf.int32).numpy(), np.eye(4, dtype=np.int32))
    # keep the four corners of the confusion matrix only, traced
    corners = tf.function(lambda c: tf.tensor_scatter_nd_update(
        tf.zeros_like(c), [[0, 0], [3, 3]], tf.gather_nd(c, [[0, 0], [3, 3]])))(conf)
    assert corners.numpy()[1:3].sum() == 0


def test_images_nn_preprocess_and_classify():
    """An image batch through convert_image_dtype, resize, flip and a small softplus/gelu
    classifier with log_softmax, eager equal to traced, gradients finite."""
    imgs = tf.constant(RNG.integers(0, 256, (2, 8, 8, 3), dtype=np.uint8))
    kernel = tf.Variable(RNG.standard_normal((3, 3, 3, 4)).astype(np.float32) * 0.2)
    dense = tf.Variable(RNG.standard_normal((4, 5)).astype(np.float32) * 0.2)

    def forward(x):
        x = tf.image.convert_image_dtype(x, tf.float32)
        x = tf.image.resize(x, [16, 16])
        x = tf.concat([x, tf.image.flip_left_right(x)], axis=0)
        h = tf.nn.softplus(tf.nn.conv2d(x, kernel, 1, "SAME"))
        h = tf.nn.gelu(tf.reduce_mean(h, axis=[1, 2]))
        return tf.nn.log_softmax(h @ dense)

    eager = forward(imgs)
    traced = tf.function(forward)(imgs)
    np.testing.assert_allclose(eager.numpy(), traced.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.exp(eager.numpy()).sum(-1), 1.0, rtol=1e-5)
    with tf.GradientTape() as tape:
        loss = -tf.reduce_mean(forward(imgs)[:, 0])
    gk, gd = tape.gradient(loss, [kernel, dense])
    assert np.isfinite(gk.numpy()).all() and np.abs(gd.numpy()).sum() > 0


def test_placement_and_conversion_in_a_training_step():
    """A step pinned to the CPU mixing Python lists and floats as TensorFlow allows."""
    v = tf.Variable([0.5, -2.0])

    @tf.function
    def step():
        with tf.device("CPU:0"):
            relu = tf.maximum(0., [1, -1]) * v  # a list beside a float is float32
            return v.assign_add(relu)

    with tf.device("/device:CPU:0"):
        np.testing.assert_array_equal(step().numpy(), [1.0, -2.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="GPU:0"):
        with tf.device("GPU:0"):
            pass


def test_names_of_modules_and_keras_variables():
    """A tf.Module holding a Keras model: printing, variable names and paths."""
    class Wrapper(tf.Module):
        def __init__(self):
            super().__init__(name="wrapper")
            self.model = tf.keras.Sequential([tf.keras.layers.Dense(2, name="hidden"),
                                              tf.keras.layers.Dense(1, name="out")])
            self.model.build((None, 3))

    w = Wrapper()
    assert repr(w).startswith("<") and " object at 0x" in repr(w)
    # Keras 3 (TF 2.21) puts a Sequential's weights under its (unique) name
    s = w.model.name
    assert s.startswith("sequential")
    assert [v.path for v in w.model.weights] == [f"{s}/hidden/kernel", f"{s}/hidden/bias",
                                                 f"{s}/out/kernel", f"{s}/out/bias"]
    assert [v.name for v in w.trainable_variables][:2] == ["kernel", "bias"]
    assert len(w.variables) == 4


def test_strings_ragged_sparse_word_counts():
    """Tokenize lines, count words per line (ragged), build a sparse bag of words over a
    vocabulary, and score the lines with a sparse-dense matmul; eager and traced."""
    lines = tf.constant(["the cat sat", "the dog", "A cat and THE dog ran"])
    vocab = ["the", "cat", "dog", "sat", "ran", "a", "and"]

    def program(text):
        words = tf.strings.split(tf.strings.lower(text))  # ragged [3, None]
        lengths = words.row_lengths()
        ids = tf.ragged.map_flat_values(
            lambda w: tf.argmax(tf.cast(tf.equal(w[:, None], tf.constant(vocab)[None, :]),
                                        tf.int32), axis=1), words)
        rows = tf.cast(ids.value_rowids(), tf.int64)
        bag = tf.sparse.SparseTensor(tf.stack([rows, ids.flat_values], axis=1),
                                     tf.ones_like(ids.flat_values, tf.float32),
                                     [3, len(vocab)])
        weights = tf.constant([[0.0], [1.0], [2.0], [0.5], [0.5], [0.0], [0.0]])
        scores = tf.sparse.sparse_dense_matmul(bag, weights)
        return lengths, scores, tf.strings.reduce_join(words, axis=1, separator="_")

    for lengths, scores, joined in (program(lines), tf.function(program)(lines)):
        assert lengths.numpy().tolist() == [3, 2, 6]
        np.testing.assert_allclose(scores.numpy()[:, 0], [1.5, 2.0, 3.5])
        assert joined.numpy().tolist() == [b"the_cat_sat", b"the_dog", b"a_cat_and_the_dog_ran"]


def test_checkpoint_and_keras_saving_training_round_trip(tmp_path):
    """Train a little, checkpoint with a manager, keep training in a fresh object restored
    from the checkpoint, then save and reload the Keras model and compare predictions."""
    x = RNG.standard_normal((32, 4)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)).astype(np.float32)

    def make():
        model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
        return model

    model = make()
    model.fit(x, y, epochs=3, batch_size=8, verbose=0)
    ckpt = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path / "ckpts"), max_to_keep=2)
    path = manager.save()
    assert tf.train.latest_checkpoint(str(tmp_path / "ckpts")) == path

    fresh = make()
    tf.train.Checkpoint(model=fresh, optimizer=fresh.optimizer).restore(path)
    np.testing.assert_allclose(fresh.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)
    loss_before = fresh.evaluate(x, y, verbose=0)
    fresh.fit(x, y, epochs=3, batch_size=8, verbose=0)
    assert fresh.evaluate(x, y, verbose=0) < loss_before

    fresh.save(str(tmp_path / "m.keras"))
    loaded = tf.keras.models.load_model(str(tmp_path / "m.keras"))
    np.testing.assert_allclose(loaded.predict(x, verbose=0), fresh.predict(x, verbose=0),
                               rtol=1e-6)
