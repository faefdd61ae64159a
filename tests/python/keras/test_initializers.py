"""kiln.keras.initializers: distributions, seeds, names and errors."""
import numpy as np
import pytest

import kiln as tf

init = tf.keras.initializers


def _np(t):
    return np.asarray(t)


def test_glorot_he_lecun_scales():
    shape = (3, 3, 64, 128)  # fan_in 576, fan_out 1152
    fan_in, fan_out = 576, 1152
    gu = _np(init.GlorotUniform()(shape))
    assert gu.shape == shape and gu.dtype == np.float32
    lim = np.sqrt(6 / (fan_in + fan_out))
    assert np.abs(gu).max() <= lim and np.abs(gu).max() > 0.95 * lim
    np.testing.assert_allclose(gu.std(), lim / np.sqrt(3), rtol=0.03)
    hn = _np(init.HeNormal()(shape))
    np.testing.assert_allclose(hn.std(), np.sqrt(2 / fan_in), rtol=0.03)
    assert np.abs(hn).max() <= 2 * np.sqrt(2 / fan_in) / 0.87962566103423978 + 1e-6
    hu = _np(init.HeUniform()(shape))
    assert np.abs(hu).max() <= np.sqrt(6 / fan_in)
    ln = _np(init.LecunNormal()(shape))
    np.testing.assert_allclose(ln.std(), np.sqrt(1 / fan_in), rtol=0.03)


def test_variance_scaling_modes_and_distributions():
    shape = (200, 300)
    for mode, n in (("fan_in", 200), ("fan_out", 300), ("fan_avg", 250)):
        for dist in ("truncated_normal", "untruncated_normal", "uniform"):
            v = _np(init.VarianceScaling(2.0, mode, dist)(shape))
            np.testing.assert_allclose(v.std(), np.sqrt(2.0 / n), rtol=0.04)
    t = _np(init.VarianceScaling(1.0, "fan_in", "truncated_normal")(shape))
    assert np.abs(t).max() <= 2 * np.sqrt(1 / 200) / 0.87962566103423978 + 1e-6


def test_seeded_initializers_repeat_and_unseeded_follow_set_seed():
    a = _np(init.HeNormal(seed=3)((5, 4)))
    same = init.HeNormal(seed=3)
    np.testing.assert_array_equal(a, _np(same((5, 4))))
    np.testing.assert_array_equal(a, _np(same((5, 4))))  # same values on every call
    assert not np.array_equal(a, _np(init.HeNormal(seed=4)((5, 4))))
    u = init.GlorotUniform()
    first, second = _np(u((8, 8))), _np(u((8, 8)))
    assert not np.array_equal(first, second)
    tf.keras.utils.set_random_seed(7)
    x1 = [_np(init.get(n)((6, 6))) for n in ("he_normal", "glorot_uniform", "random_normal")]
    tf.keras.utils.set_random_seed(7)
    x2 = [_np(init.get(n)((6, 6))) for n in ("he_normal", "glorot_uniform", "random_normal")]
    for p, q in zip(x1, x2):
        np.testing.assert_array_equal(p, q)


def test_simple_initializers_and_dtypes():
    np.testing.assert_array_equal(_np(init.Zeros()((2, 3))), np.zeros((2, 3)))
    np.testing.assert_array_equal(_np(init.Ones()((2,), dtype="float64")), np.ones(2))
    assert _np(init.Ones()((2,), dtype="float64")).dtype == np.float64
    np.testing.assert_array_equal(_np(init.Constant(2.5)((2, 2))), np.full((2, 2), 2.5))
    np.testing.assert_array_equal(_np(init.Identity(2.0)((3, 3))), 2 * np.eye(3))
    q = _np(init.Orthogonal(seed=1)((6, 4)))
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-5)
    r = _np(init.RandomUniform(-1, 1, seed=2)((1000,)))
    assert r.min() >= -1 and r.max() < 1
    tn = _np(init.TruncatedNormal(1.0, 0.5, seed=2)((1000,)))
    assert tn.min() >= 0 and tn.max() <= 2


def test_get_by_name_dict_and_errors():
    assert isinstance(init.get("he_normal"), init.HeNormal)
    assert isinstance(init.get("GlorotUniform"), init.GlorotUniform)
    vs = init.get({"class_name": "VarianceScaling",
                   "config": {"scale": 2.0, "mode": "fan_out", "distribution": "uniform"}})
    assert (vs.scale, vs.mode, vs.distribution) == (2.0, "fan_out", "uniform")
    assert init.deserialize(init.serialize(vs)).get_config() == vs.get_config()
    assert init.get(None) is None
    with pytest.raises(ValueError, match="Unknown initializer"):
        init.get("nope")
    with pytest.raises(ValueError, match="Could not interpret"):
        init.get(3)
    with pytest.raises(ValueError, match="mode"):
        init.VarianceScaling(mode="fan")
    with pytest.raises(ValueError, match="distribution"):
        init.VarianceScaling(distribution="cauchy")
    with pytest.raises(ValueError, match="scale"):
        init.VarianceScaling(scale=0)
    with pytest.raises(ValueError, match="seed"):
        init.HeNormal(seed=-1)
    with pytest.raises(ValueError, match="floating"):
        init.HeNormal()((2, 2), dtype="int32")
    with pytest.raises(ValueError, match="2-D"):
        init.Identity()((2, 2, 2))


def test_layer_initializer_arguments():
    d = tf.keras.layers.Dense(3, kernel_initializer=init.Constant(0.5),
                              bias_initializer=lambda shape, dtype=None: np.arange(3.0))
    d.build((None, 2))
    k, b = d.get_weights()
    np.testing.assert_array_equal(k, np.full((2, 3), 0.5))
    np.testing.assert_array_equal(b, [0, 1, 2])


def test_set_random_seed_also_seeds_numpy_and_checks_its_argument():
    tf.keras.utils.set_random_seed(11)
    a = np.random.random(3)
    tf.keras.utils.set_random_seed(11)
    np.testing.assert_array_equal(a, np.random.random(3))
    with pytest.raises(TypeError, match="int"):
        tf.keras.utils.set_random_seed(1.5)
    with pytest.raises(ValueError, match="non-negative"):
        tf.keras.utils.set_random_seed(-1)
