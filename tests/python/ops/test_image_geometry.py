"""tf.image's geometry: flips, transpose, rot90, central_crop, crop_to_bounding_box,
pad_to_bounding_box and resize_with_crop_or_pad on 3-D and 4-D images, eagerly, traced
(offsets, k and fractions as tensors; None dims) and compiled, against NumPy, with
gradients and TensorFlow's error texts."""
import numpy as np
import pytest

import kiln as tf
from ops_harness import run_both

I = tf.image
X3 = np.arange(4 * 5 * 2, dtype=np.float32).reshape(4, 5, 2)
X4 = np.arange(2 * 4 * 5 * 2).reshape(2, 4, 5, 2).astype(np.uint8)


def np_crop(x, oh, ow, th, tw):
    return x[..., oh:oh + th, ow:ow + tw, :]


def np_pad(x, oh, ow, th, tw):
    hw = x.shape[-3:-1]
    pads = [(0, 0)] * (x.ndim - 3) + [(oh, th - oh - hw[0]), (ow, tw - ow - hw[1]), (0, 0)]
    return np.pad(x, pads)


def np_crop_or_pad(x, th, tw):
    hgt, wid = x.shape[-3:-1]
    ch, cw = max((hgt - th) // 2, 0), max((wid - tw) // 2, 0)
    c = np_crop(x, ch, cw, min(th, hgt), min(tw, wid))
    return np_pad(c, max((th - hgt) // 2, 0), max((tw - wid) // 2, 0), th, tw)


def check(fn, x, want):
    for got in run_both(fn, x):
        assert got.dtype == tf.as_dtype(x.dtype.name)
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("x", [X3, X4], ids=["3d", "4d"])
def test_flips_transpose_rot90(x):
    hw = (x.ndim - 3, x.ndim - 2)
    check(I.flip_left_right, x, np.flip(x, hw[1]))
    check(I.flip_up_down, x, np.flip(x, hw[0]))
    check(I.transpose, x, np.swapaxes(x, *hw))
    for k in (-1, 0, 1, 2, 3, 6):
        check(lambda t, k=k: I.rot90(t, k), x, np.rot90(x, k, axes=hw))


@pytest.mark.parametrize("x", [X3, X4], ids=["3d", "4d"])
def test_crop_pad_and_crop_or_pad(x):
    check(lambda t: I.crop_to_bounding_box(t, 1, 2, 3, 2), x, np_crop(x, 1, 2, 3, 2))
    check(lambda t: I.pad_to_bounding_box(t, 1, 2, 7, 9), x, np_pad(x, 1, 2, 7, 9))
    for th, tw in ((3, 4), (8, 9), (3, 9), (8, 2), (4, 5), (1, 1)):
        check(lambda t, th=th, tw=tw: I.resize_with_crop_or_pad(t, th, tw), x,
              np_crop_or_pad(x, th, tw))


def test_central_crop_matches_tensorflow_sizes():
    # TensorFlow 2.21: start = int((size - size * fraction) / 2), size - 2 * start kept.
    x = np.arange(5 * 7, dtype=np.float32).reshape(5, 7, 1)
    for frac, (h0, w0) in ((0.5, (1, 1)), (0.1, (2, 3)), (0.77, (0, 0)), (0.3, (1, 2))):
        want = x[h0:5 - h0, w0:7 - w0]
        check(lambda t, f=frac: I.central_crop(t, f), x, want)
        check(lambda t, f=frac: I.central_crop(t, f), x[None], want[None])
    traced = tf.function(lambda t, f: I.central_crop(t, f))
    np.testing.assert_array_equal(traced(tf.constant(x), tf.constant(0.3)).numpy(), x[1:4, 2:5])
    assert I.central_crop(x, 1.0).shape == (5, 7, 1)


def test_tensor_offsets_k_and_none_dims_trace_and_compile():
    x = tf.constant(X3)
    crop = tf.function(lambda t, o, s: I.crop_to_bounding_box(t, o, o, s, s))
    np.testing.assert_array_equal(crop(x, tf.constant(1), tf.constant(2)).numpy(),
                                  np_crop(X3, 1, 1, 2, 2))
    pad = tf.function(lambda t, o: I.pad_to_bounding_box(t, o, o, 8, 9))
    np.testing.assert_array_equal(pad(x, tf.constant(2)).numpy(), np_pad(X3, 2, 2, 8, 9))
    sq = np.arange(2 * 3 * 3, dtype=np.float32).reshape(2, 3, 3, 1)
    rot = tf.function(lambda t, k: I.rot90(t, k))
    for k in range(4):
        np.testing.assert_array_equal(rot(tf.constant(sq), tf.constant(k)).numpy(),
                                      np.rot90(sq, k, axes=(1, 2)))
    fns = [lambda t: I.resize_with_crop_or_pad(t, 3, 9), lambda t: I.central_crop(t, 0.5),
           lambda t: I.pad_to_bounding_box(t, 1, 0, 6, 6), I.flip_left_right,
           lambda t: I.rot90(t, 1)]
    for fn in fns:
        want = fn(x).numpy()
        for jit in (False, True):
            f = tf.function(fn, input_signature=[tf.TensorSpec([None, None, 2])],
                            jit_compile=jit)
            np.testing.assert_array_equal(f(x).numpy(), want)


def test_gradients_route_back_to_the_kept_pixels():
    x0 = X3 + 1  # no zeros: a 0 of the output is padding
    x = tf.constant(x0)
    w = np.arange(3 * 8 * 2, dtype=np.float32).reshape(3, 8, 2)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = I.resize_with_crop_or_pad(I.rot90(I.flip_up_down(x), 1), 3, 8)
        s = tf.reduce_sum(y * tf.constant(w))
    g = tape.gradient(s, x).numpy()
    # Each kept input pixel gets the weight of the output it moved to; cropped ones get 0.
    moved = np_crop_or_pad(np.rot90(np.flip(x0, 0), 1, axes=(0, 1)), 3, 8)
    src = {v: i for i, v in np.ndenumerate(x0)}
    want = np.zeros_like(x0)
    for idx, v in np.ndenumerate(moved):
        if v:
            want[src[v]] += w[idx]
    np.testing.assert_array_equal(g, want)


def test_errors_match_tensorflow():
    x = tf.constant(X3)
    cases = [
        (lambda: I.crop_to_bounding_box(x, -1, 0, 2, 2), "offset_height must be >= 0."),
        (lambda: I.crop_to_bounding_box(x, 3, 0, 2, 2), r"height must be >= target \+ offset."),
        (lambda: I.crop_to_bounding_box(x, 0, 4, 2, 2), r"width must be >= target \+ offset."),
        (lambda: I.crop_to_bounding_box(x, 0, 0, 0, 2), "target_height must be > 0."),
        (lambda: I.pad_to_bounding_box(x, 0, -1, 6, 6), "offset_width must be >= 0"),
        (lambda: I.pad_to_bounding_box(x, 0, 0, 3, 6), "height must be <= target - offset"),
        (lambda: I.pad_to_bounding_box(x, 0, 2, 6, 6), "width must be <= target - offset"),
        (lambda: I.resize_with_crop_or_pad(x, 3, 0), "target_width must be > 0."),
        (lambda: I.central_crop(x, 0.0), r"central_fraction must be within \(0, 1\]"),
        (lambda: I.central_crop(x, 1.5), r"central_fraction must be within \(0, 1\]"),
        (lambda: I.flip_left_right(X3[:, :, 0]),
         r"'image' \(shape \(4, 5\)\) must be at least three-dimensional."),
        (lambda: I.rot90(X3[None, None]), "must have either 3 or 4 dimensions"),
        (lambda: I.crop_to_bounding_box(X3[:, :, 0], 0, 0, 1, 1),
         r"'image' \(shape \(4, 5\)\) must have either 3 or 4 dimensions."),
        (lambda: I.transpose(np.zeros((0, 2, 3))), "inner 3 dims of 'image.shape' must be > 0"),
        (lambda: I.rot90(x, [1, 2]), r"Shape \(2,\) must have rank 0"),
    ]
    for fn, msg in cases:
        with pytest.raises(ValueError, match=msg):
            fn()
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Summarized data: b'height must be >= target \\+ offset.'"):
        I.crop_to_bounding_box(x, tf.constant(3), 0, 2, 2)
    with pytest.raises(TypeError, match="Cannot convert 1.5"):
        I.rot90(x, 1.5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="k must be a constant"):
        tf.function(lambda t, k: I.rot90(t, k))(x, tf.constant(1))
