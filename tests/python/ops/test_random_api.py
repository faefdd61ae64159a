"""tf.random beyond uniform/normal: stateless ops, seeds from seeds, stateful
truncated_normal / categorical / shuffle, and Generator. Values are kiln's (not
Philox's), so tests check distributions with fixed seeds (deterministic) and bounds."""
import os

import numpy as np
import pytest

import kiln as tf

SEED = [1, 2]
N = 100_000
iae = tf.errors.InvalidArgumentError


def _eager(fn, seed):
    return fn(seed)


def _traced(fn, seed):
    return tf.function(fn)(tf.constant(seed))


RUNNERS = [_eager, _traced]


# ---- stateless: distributions ----

UNIFORM_CASES = [  # dtype, minval, maxval, (lo, hi), mean, std
    ("float32", 0, None, (0, 1), 0.5, 0.2887),
    ("float64", -2.0, 3.0, (-2, 3), 0.5, 1.4434),
    ("float16", 0, None, (0, 1), 0.5, 0.2887),
    ("bfloat16", 1.0, 2.0, (1, 2), 1.5, 0.2887),
]


@pytest.mark.parametrize("run", RUNNERS)
@pytest.mark.parametrize("dtype,lo,hi,bounds,mean,std", UNIFORM_CASES)
def test_stateless_uniform_float(run, dtype, lo, hi, bounds, mean, std):
    x = run(lambda s: tf.random.stateless_uniform([N], s, lo, hi, dtype=dtype), SEED)
    assert x.dtype == dtype and x.shape == [N]
    v = x.numpy().astype("float64")
    assert v.min() >= bounds[0] and v.max() < bounds[1]
    assert abs(v.mean() - mean) < 0.01 * (bounds[1] - bounds[0])
    assert abs(v.std() - std) < 0.01 * (bounds[1] - bounds[0])


@pytest.mark.parametrize("run", RUNNERS)
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_stateless_uniform_int(run, dtype):
    x = run(lambda s: tf.random.stateless_uniform([N], s, -3, 4, dtype=dtype), SEED)
    counts = np.bincount(x.numpy() + 3)
    assert x.dtype == dtype and len(counts) == 7
    assert np.all(np.abs(counts / N - 1 / 7) < 0.01)
    full = run(lambda s: tf.random.stateless_uniform([N], s, None, None, dtype=dtype), SEED)
    info = np.iinfo(dtype)
    v = full.numpy().astype("float64")
    assert v.min() < info.min * 0.99 and v.max() > info.max * 0.99
    assert abs(v.mean()) < 0.01 * info.max


@pytest.mark.parametrize("run", RUNNERS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_stateless_normal_and_truncated(run, dtype):
    x = run(lambda s: tf.random.stateless_normal([N], s, 1.0, 2.0, dtype=dtype), SEED)
    v = x.numpy().astype("float64")
    assert x.dtype == dtype and abs(v.mean() - 1) < 0.03 and abs(v.std() - 2) < 0.03
    t = run(lambda s: tf.random.stateless_truncated_normal([N], s, 1.0, 2.0, dtype), SEED)
    w = t.numpy().astype("float64")
    assert w.min() >= -3 and w.max() <= 5  # within 2 stddev of the mean
    assert abs(w.mean() - 1) < 0.03 and abs(w.std() - 2 * 0.8796) < 0.03


@pytest.mark.parametrize("run", RUNNERS)
def test_stateless_categorical_frequencies(run):
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]])
    logits = np.log(probs + 1e-30).astype("float32")
    x = run(lambda s: tf.random.stateless_categorical(logits, 20000, s), SEED)
    assert x.dtype == "int64" and x.shape == [2, 20000]
    freq = np.stack([np.bincount(r, minlength=3) / 20000 for r in x.numpy()])
    np.testing.assert_allclose(freq, probs, atol=0.015)
    y = run(lambda s: tf.random.stateless_categorical(logits, 3, s, dtype="int32"), SEED)
    assert y.dtype == "int32"


@pytest.mark.parametrize("run", RUNNERS)
def test_stateless_shuffle_is_a_permutation(run):
    x = run(lambda s: tf.random.experimental.stateless_shuffle(
        tf.reshape(tf.range(2000), [1000, 2]), s), SEED).numpy()
    assert sorted(x[:, 0].tolist()) == list(range(0, 2000, 2))
    np.testing.assert_array_equal(x[:, 1], x[:, 0] + 1)
    assert not np.array_equal(x[:, 0], np.arange(0, 2000, 2))


def test_stateless_binomial():
    x = tf.random.stateless_binomial([N], SEED, counts=10.0, probs=0.3).numpy()
    assert x.dtype == "int32" and x.min() >= 0 and x.max() <= 10
    assert abs(x.mean() - 3) < 0.03 and abs(x.var() - 2.1) < 0.05
    y = tf.random.stateless_binomial([3], SEED, [0.0, 5.0, 7.0], [0.5, 1.0, 0.0], "float32")
    np.testing.assert_array_equal(y.numpy(), [0, 5, 0])


# ---- stateless: determinism ----

STATELESS = [
    lambda s: tf.random.stateless_uniform([50], s),
    lambda s: tf.random.stateless_uniform([50], s, 0, 1000, dtype="int64"),
    lambda s: tf.random.stateless_normal([50], s, dtype="float64"),
    lambda s: tf.random.stateless_truncated_normal([50], s),
    lambda s: tf.random.stateless_categorical([[0.0] * 10], 50, s),
    lambda s: tf.random.experimental.stateless_shuffle(tf.range(50), s),
]


@pytest.mark.parametrize("fn", STATELESS)
def test_same_seed_same_values_eager_and_traced(fn):
    a, b = fn(SEED).numpy(), fn(SEED).numpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(_traced(fn, SEED).numpy(), a)
    for other in ([1, 3], [2, 2], [0, 0]):
        assert not np.array_equal(fn(other).numpy(), a)
    np.testing.assert_array_equal(fn(tf.constant(SEED, tf.int64)).numpy(), a)


def test_fold_in_and_split():
    f = tf.random.fold_in(SEED, 7)
    assert f.dtype == "int32" and f.numpy()[1] == 7
    assert tf.random.fold_in(tf.constant(SEED, tf.int64), 7).dtype == "int64"
    assert not np.array_equal(tf.random.fold_in(SEED, 8).numpy(), f.numpy())
    s = tf.random.split(SEED, 3)
    assert s.shape == [3, 2] and s.dtype == "int32"
    assert tf.random.split(SEED, 0).shape == [0, 2]
    assert tf.random.split(SEED).shape == [2, 2]
    np.testing.assert_array_equal(_traced(lambda t: tf.random.split(t, 3), SEED), s)
    assert not np.array_equal(tf.random.split([2, 1], 3).numpy(), s.numpy())
    assert tf.random.experimental.stateless_split is tf.random.split
    assert tf.random.experimental.stateless_fold_in is tf.random.fold_in


def test_image_stateless_ops_still_repeat():
    img = tf.reshape(tf.range(24, dtype=tf.float32), [2, 3, 4])
    a = tf.image.stateless_random_crop(img, [1, 2, 4], SEED).numpy()
    np.testing.assert_array_equal(tf.image.stateless_random_crop(img, [1, 2, 4], SEED), a)


# ---- errors (TensorFlow 2.21's texts) ----

ERRORS = [
    (lambda: tf.random.stateless_uniform([2], [1, 2, 3]), iae, r"seed must have shape \[2\], not \[3\]"),
    (lambda: tf.random.stateless_uniform([2], 1), iae, r"seed must have shape \[2\], not \[\]"),
    (lambda: tf.random.stateless_uniform([2], [1.0, 2.0]), iae, "seed must be int32 or int64"),
    (lambda: tf.random.stateless_uniform([2], SEED, 0, None, "int32"), ValueError,
     "must be both None or not None"),
    (lambda: tf.random.stateless_uniform([2], SEED, 3, 3, "int32"), iae,
     "Need minval < maxval, got 3 >= 3"),
    (lambda: tf.random.stateless_uniform([2], SEED, dtype="bool"), ValueError,
     "Argument `dtype` got invalid value"),
    (lambda: tf.random.stateless_normal([2], SEED, dtype="int32"), TypeError,
     "Cannot convert 0.0 to EagerTensor of dtype int32"),
    (lambda: tf.random.truncated_normal([2], dtype="int32"), TypeError, "Cannot convert"),
    (lambda: tf.random.categorical([0.5, 0.5], 5), iae, r"logits should be a matrix, got shape \[2\]"),
    (lambda: tf.random.categorical([[0.5]], -1), iae, "num_samples should be non-negative"),
    (lambda: tf.random.categorical(tf.zeros([2, 0]), 3), iae, "num_classes should be positive"),
    (lambda: tf.random.categorical([[0.5]], 5, dtype="float32"), ValueError,
     r"Accepted dtypes are \(tf.int32, tf.int64\)"),
    (lambda: tf.random.fold_in([1, 2, 3], 3), iae, "seed must have shape"),
    (lambda: tf.random.fold_in(SEED, 2, alg="bogus"), ValueError,
     "Argument `alg` got unsupported value bogus"),
    (lambda: tf.random.create_rng_state(1, "bogus"), ValueError, "unsupported value"),
    (lambda: tf.random.Generator.from_state([1, 2], alg="philox"), ValueError,
     r"Shapes \(2,\) and \[3\] are incompatible"),
    (lambda: tf.random.Generator.from_seed(1).uniform([2], dtype="int32"), ValueError,
     "minval and maxval must be both `None` or both non-`None`"),
    (lambda: tf.random.Generator.from_seed(1).uniform_full_int([2], "float32"), ValueError,
     "Argument `dtype`"),
]


@pytest.mark.parametrize("fn,error,text", ERRORS)
def test_errors(fn, error, text):
    with pytest.raises(error, match=text):
        fn()


# ---- stateful ops ----

def test_truncated_normal_categorical_shuffle_stateful():
    t = tf.random.truncated_normal([N], mean=1.0, stddev=0.5, seed=3).numpy()
    assert t.min() >= 0 and t.max() <= 2 and abs(t.mean() - 1) < 0.01
    c = tf.random.categorical(np.log([[0.25, 0.75]]), 20000, seed=3)
    assert c.dtype == "int64" and c.shape == [1, 20000]
    assert abs(c.numpy().mean() - 0.75) < 0.015
    s = tf.random.shuffle(tf.range(100), seed=3).numpy()
    assert sorted(s.tolist()) == list(range(100))
    assert tf.random.shuffle(3.0).numpy() == 3.0


def test_stateful_ops_follow_set_seed_and_draw_again():
    tf.random.set_seed(11)
    a1 = tf.random.shuffle(tf.range(20), seed=1).numpy()
    a2 = tf.random.shuffle(tf.range(20), seed=1).numpy()
    assert not np.array_equal(a1, a2)
    tf.random.set_seed(11)
    np.testing.assert_array_equal(tf.random.shuffle(tf.range(20), seed=1).numpy(), a1)
    f = tf.function(lambda: tf.random.truncated_normal([4]))
    assert not np.array_equal(f().numpy(), f().numpy())


# ---- Generator ----

def test_create_rng_state():
    cases = [(1, "philox", [1, 0, 0]), (1, 2, [1, 0]), (2 ** 70, 1, [0, 64, 0]),
             ([1, 2, 3, 4], 1, [1, 2, 3]), ([5], "philox", [0, 0, 5]), (-1, 2, [-1, -1])]
    for seed, alg, want in cases:
        s = tf.random.create_rng_state(seed, alg)
        assert s.dtype == "int64" and s.numpy().tolist() == want


def test_generator_state_advances_as_tensorflow():
    g = tf.random.Generator.from_seed(1)
    assert g.algorithm == 1 and g.state.numpy().tolist() == [1, 0, 0]
    assert isinstance(g.state, tf.Variable) and int(g.key) == 0
    a = g.normal([2]).numpy()
    assert g.state.numpy().tolist() == [513, 0, 0]  # 256 per value, as TensorFlow
    b = g.normal([2]).numpy()
    assert not np.array_equal(a, b)
    g.uniform([5])
    assert g.state.numpy()[0] == 513 + 512 + 1280
    g.reset_from_seed(1)
    np.testing.assert_array_equal(g.normal([2]).numpy(), a)
    g.skip(2)
    np.testing.assert_array_equal(g.state.numpy(), [1025, 0, 0])
    t = tf.random.Generator.from_seed(1, alg="threefry")
    assert t.algorithm == 2 and t.state.shape == [2]
    c = tf.random.Generator(copy_from=g)
    np.testing.assert_array_equal(c.normal([3]).numpy(), g.normal([3]).numpy())


def test_generator_distributions():
    g = tf.random.Generator.from_seed(7)
    u = g.uniform([N], -1.0, 1.0).numpy()
    assert u.min() >= -1 and u.max() < 1 and abs(u.mean()) < 0.01
    i = g.uniform([N], 0, 10, dtype="int64").numpy()
    assert i.dtype == "int64" and set(np.unique(i)) == set(range(10))
    n = g.normal([N], 3.0, 0.5, dtype="float64").numpy()
    assert abs(n.mean() - 3) < 0.01 and abs(n.std() - 0.5) < 0.01
    t = g.truncated_normal([N]).numpy()
    assert np.abs(t).max() <= 2 and abs(t.std() - 0.8796) < 0.01
    assert g.uniform_full_int([3], "int32").dtype == "int32"
    assert g.uniform_full_int([3]).dtype == "int64"
    b = g.binomial([N], counts=4.0, probs=0.5).numpy()
    assert abs(b.mean() - 2) < 0.02


def test_generator_seeds_and_split():
    g = tf.random.Generator.from_seed(3)
    seeds = g.make_seeds(4)
    assert seeds.shape == [2, 4] and seeds.dtype == "int64"
    s = tf.random.stateless_uniform([3], seeds[:, 0])
    assert s.shape == [3]
    parts = g.split(2)
    assert len(parts) == 2 and parts[0].state.numpy()[:2].tolist() == [0, 0]
    assert not np.array_equal(parts[0].normal([4]).numpy(), parts[1].normal([4]).numpy())


def test_generator_in_function_advances_each_call():
    g = tf.random.Generator.from_seed(5)
    f = tf.function(lambda: g.normal([2]))
    a, b = f().numpy(), f().numpy()
    assert not np.array_equal(a, b) and g.state.numpy()[0] == 5 + 2 * 512
    shaped = tf.function(lambda n: g.uniform(tf.stack([n])))
    assert shaped(tf.constant(3)).shape == [3] and g.state.numpy()[0] == 5 + 2 * 512 + 3 * 256
    g.reset_from_seed(5)
    np.testing.assert_array_equal(g.normal([2]).numpy(), a)


def test_generator_checkpoint_round_trip(tmp_path):
    g = tf.random.Generator.from_seed(9)
    g.normal([3])
    path = tf.train.Checkpoint(gen=g).save(os.path.join(tmp_path, "ck"))
    want = g.normal([3]).numpy()
    other = tf.random.Generator.from_seed(0)
    tf.train.Checkpoint(gen=other).restore(path)
    np.testing.assert_array_equal(other.normal([3]).numpy(), want)


def test_global_generator_and_aliases():
    g = tf.random.Generator.from_seed(2)
    old = tf.random.get_global_generator()
    try:
        tf.random.set_global_generator(g)
        assert tf.random.experimental.get_global_generator() is g
    finally:
        tf.random.set_global_generator(old)
    assert tf.random.Algorithm.PHILOX.value == 1 and tf.random.Algorithm.AUTO_SELECT.value == 3
    assert tf.random.experimental.Generator is tf.random.Generator
    assert tf.random.experimental.Algorithm is tf.random.Algorithm
    a = tf.random.Generator.from_non_deterministic_state().normal([4]).numpy()
    assert a.shape == (4,)
