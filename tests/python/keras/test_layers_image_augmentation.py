"""RandomRotation against a NumPy reference of TensorFlow's ImageProjectiveTransformV3 with
Keras 3's rotation matrix (every fill mode and interpolation), identity when not training,
randomness, config and errors."""
import math

import numpy as np
import pytest

import kiln as tf
from keras_helpers import assert_layer, randn

layers = tf.keras.layers


def _map(c, n, mode):
    """TensorFlow's MapCoordinate for one coordinate."""
    if mode == "constant":
        return c
    if mode != "nearest" and n > 1:
        if mode == "reflect":
            if c < 0:
                c = 2 * n * int(-c / (2 * n)) + c
                c = c + 2 * n if c < -n else -c - 1
            elif c > n - 1:
                c -= 2 * n * int(c / (2 * n))
                c = 2 * n - c - 1 if c >= n else c
        elif c < 0:
            c += n * (int(-c / (n - 1)) + 1)
        elif c > n - 1:
            c -= n * int(c / (n - 1))
    elif n <= 1 and mode != "nearest":
        c = 0.0
    return min(max(c, 0.0), n - 1.0)


def np_rotate(img, angle, mode, interp, fill=0.0):
    """One [H, W, C] image rotated by angle (radians) about its center, as TF does."""
    hh, ww, _ = img.shape
    cx, cy = 0.5 * (ww - 1), 0.5 * (hh - 1)
    cos, sin = math.cos(angle), math.sin(angle)
    a2, b2 = cx - cx * cos + cy * sin, cy - cx * sin - cy * cos

    def read(y, x):
        return img[y, x] if 0 <= y < hh and 0 <= x < ww else np.full(img.shape[2], fill)

    out = np.zeros_like(img, dtype=np.float64)
    for oy in range(hh):
        for ox in range(ww):
            x = _map(cos * ox - sin * oy + a2, ww, mode)
            y = _map(sin * ox + cos * oy + b2, hh, mode)
            if interp == "nearest":
                out[oy, ox] = read(int(math.floor(y + 0.5)), int(math.floor(x + 0.5)))
                continue
            y0, x0 = math.floor(y), math.floor(x)
            top = (x0 + 1 - x) * read(y0, x0) + (x - x0) * read(y0, x0 + 1)
            bottom = (x0 + 1 - x) * read(y0 + 1, x0) + (x - x0) * read(y0 + 1, x0 + 1)
            out[oy, ox] = (y0 + 1 - y) * top + (y - y0) * bottom
    return out


@pytest.mark.parametrize("mode", ["reflect", "wrap", "constant", "nearest"])
@pytest.mark.parametrize("interp", ["bilinear", "nearest"])
def test_fixed_rotation_matches_numpy(mode, interp):
    x = randn(2, 6, 7, 2)
    layer = layers.RandomRotation((0.1, 0.1), fill_mode=mode, interpolation=interp,
                                  fill_value=0.5)
    want = np.stack([np_rotate(im, 0.2 * math.pi, mode, interp, 0.5) for im in x])
    assert_layer(layer, x, want, rtol=1e-4, atol=1e-4, training=True)


def test_identity_unless_training_unbatched_and_channels_first():
    x = randn(2, 5, 6, 3)
    layer = layers.RandomRotation(0.3, seed=1)
    np.testing.assert_array_equal(layer(tf.constant(x), training=False).numpy(), x)
    ints = layer(tf.constant(np.arange(6, dtype=np.int32).reshape(1, 2, 3, 1)),
                 training=False)
    assert ints.dtype.name == "float32"  # cast to the layer's dtype, as Keras
    quarter = layers.RandomRotation((0.25, 0.25), fill_mode="constant")
    want = np_rotate(x[0], 0.5 * math.pi, "constant", "bilinear")
    np.testing.assert_allclose(quarter(tf.constant(x[0])).numpy(), want, atol=1e-4)
    cf = layers.RandomRotation((0.25, 0.25), fill_mode="constant",
                               data_format="channels_first")
    got = cf(tf.constant(x.transpose(0, 3, 1, 2))).numpy().transpose(0, 2, 3, 1)
    np.testing.assert_allclose(got[0], want, atol=1e-4)


def test_random_angles_differ_per_image_and_stay_in_range():
    x = np.broadcast_to(randn(1, 9, 9, 1), (8, 9, 9, 1)).copy()
    out = layers.RandomRotation(0.5, fill_mode="constant", seed=3)(tf.constant(x)).numpy()
    assert len({round(float(o.sum()), 3) for o in out}) > 1
    # Each output is one of the rotations by an angle in [-pi, pi].
    assert np.isfinite(out).all()


def test_config_and_errors():
    layer = layers.RandomRotation(0.2, fill_mode="wrap", seed=4)
    cfg = layer.get_config()
    assert cfg["factor"] == (-0.2, 0.2) and cfg["fill_mode"] == "wrap" and cfg["seed"] == 4
    assert layers.RandomRotation.from_config(cfg).factor == (-0.2, 0.2)
    assert layers.RandomRotation((0.3, -0.1)).factor == (-0.1, 0.3)
    with pytest.raises(ValueError, match="`factor` argument"):
        layers.RandomRotation(1.5)
    with pytest.raises(NotImplementedError, match="fill_mode"):
        layers.RandomRotation(0.1, fill_mode="mirror")
    with pytest.raises(NotImplementedError, match="interpolation"):
        layers.RandomRotation(0.1, interpolation="bicubic")
