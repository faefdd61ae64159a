"""Image codecs against files TensorFlow 2.21 wrote and its decodings of them
(tests/fixtures/tf_written/images, made by make_fixtures.py there); round trips; hostile bytes."""
import os

import numpy as np
import pytest

import kiln as tf

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "..", "fixtures", "tf_written", "images")
EXPECTED = np.load(os.path.join(FIX, "expected.npz"))


def read(name):
    with open(os.path.join(FIX, name), "rb") as f:
        return f.read()


def options(key):
    name, opt = key.split("|")
    k, v = opt.split("=")
    return name, {k: (v == "True") if v in ("True", "False") else int(v)}


@pytest.mark.parametrize("key", sorted(EXPECTED.files))
def test_decodes_as_tensorflow(key):
    name, kw = options(key)
    decode = tf.io.decode_png if name.endswith(".png") else tf.io.decode_jpeg
    got = decode(read(name), **kw).numpy()
    np.testing.assert_array_equal(got, EXPECTED[key])


@pytest.mark.parametrize("key", [k for k in sorted(EXPECTED.files) if "channels" in k])
def test_decode_image_and_in_functions(key):
    name, kw = options(key)
    want = EXPECTED[key]
    np.testing.assert_array_equal(tf.io.decode_image(read(name), **kw).numpy(), want)
    fn = tf.function(lambda b: tf.io.decode_image(b, **kw))
    out = fn(tf.constant(read(name)))
    np.testing.assert_array_equal(out.numpy(), want)
    assert out.shape == want.shape


def test_png_round_trips_exactly():
    rng = np.random.default_rng(0)
    for c in (1, 2, 3, 4):
        img = rng.integers(0, 256, (6, 9, c)).astype(np.uint8)
        for level in (-1, 0, 9):
            data = tf.io.encode_png(img, compression=level)
            assert data.dtype == tf.string and data.shape == ()
            np.testing.assert_array_equal(tf.io.decode_png(data).numpy(), img)


def test_png_channel_conversions():
    rgba = tf.io.decode_png(read("rgba.png")).numpy()
    np.testing.assert_array_equal(tf.io.decode_png(read("rgba.png"), channels=3).numpy(),
                                  rgba[..., :3])
    gray = tf.io.decode_png(read("gray.png")).numpy()
    np.testing.assert_array_equal(tf.io.decode_png(read("gray.png"), channels=4).numpy(),
                                  np.concatenate([gray] * 3 + [np.full_like(gray, 255)], -1))


def test_jpeg_round_trip_and_options():
    img = np.tile(np.arange(0, 256, 8, dtype=np.uint8)[None, :, None], (16, 1, 3))
    data = tf.io.encode_jpeg(img, quality=100, chroma_downsampling=False)
    assert tf.io.is_jpeg(data).numpy() and not tf.io.is_jpeg(tf.io.encode_png(img)).numpy()
    assert np.abs(tf.io.decode_jpeg(data).numpy().astype(int) - img).max() <= 4
    gray = tf.io.encode_jpeg(img[..., :1], format="grayscale")
    assert tf.io.decode_jpeg(gray).shape == (16, 32, 1)
    assert tf.io.decode_jpeg(data, ratio=8).shape == (2, 4, 3)
    prog = tf.io.encode_jpeg(img, progressive=True)
    assert tf.io.decode_jpeg(prog).shape == (16, 32, 3)


def test_decode_image_float_dtype():
    out = tf.io.decode_image(read("rgb.png"), dtype=tf.float32)
    assert out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy(), EXPECTED["rgb.png|channels=0"] / 255.0, rtol=1e-6)


def test_image_namespace_has_the_codecs():
    for n in ("decode_png", "encode_png", "decode_jpeg", "encode_jpeg", "decode_image", "is_jpeg"):
        assert getattr(tf.image, n) is getattr(tf.io, n)


HOSTILE = [
    (b"", "Unknown image file format"),
    (b"hello world", "Unknown image file format"),
    (b"GIF89a\x01\x00\x01\x00", "GIF images are not supported"),
    (b"BM\x00\x00", "BMP images are not supported"),
    (b"\x89PNG\r\n\x1a\n", "invalid PNG data"),
    (b"\xff\xd8\xff", "invalid JPEG data"),
]


@pytest.mark.parametrize("data,message", HOSTILE)
def test_hostile_bytes_are_clear_errors(data, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        tf.io.decode_image(data)


def test_truncated_and_corrupted_files():
    png, jpg = read("rgb.png"), read("rgb.jpg")
    for cut in (8, 20, 33, 60, len(png) - 13, len(png) - 1):
        with pytest.raises(tf.errors.InvalidArgumentError, match="invalid PNG data"):
            tf.io.decode_png(png[:cut])
    with pytest.raises(tf.errors.InvalidArgumentError, match="invalid JPEG data"):
        tf.io.decode_jpeg(jpg[:100])
    with pytest.raises(tf.errors.InvalidArgumentError, match="invalid JPEG data"):
        tf.io.decode_jpeg(jpg[:len(jpg) // 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="invalid JPEG data"):
        tf.io.decode_jpeg(jpg[:-200])
    part = tf.io.decode_jpeg(jpg[:-200], try_recover_truncated=True)
    assert part.shape == (24, 40, 3)
    # A flipped byte in the compressed data: an error naming PNG (its CRC), never a crash.
    bad = bytearray(png)
    bad[len(png) // 2] ^= 0xFF
    with pytest.raises(tf.errors.InvalidArgumentError, match="PNG"):
        tf.io.decode_png(bytes(bad))
    rng = np.random.default_rng(1)
    for _ in range(200):  # random damage: errors or images, nothing else
        b = bytearray(jpg if rng.integers(2) else png)
        for i in rng.integers(0, len(b), 4):
            b[i] = rng.integers(0, 256)
        try:
            out = tf.io.decode_image(bytes(b))
            assert out.dtype == tf.uint8 and out.shape.rank == 3
        except tf.errors.InvalidArgumentError:
            pass


def test_huge_declared_size_is_refused_before_allocating():
    png = bytearray(read("gray.png"))
    # IHDR width/height (bytes 16-23) set to 2^24 - 1 each; the CRC no longer matches,
    # so libpng reports it; either way no allocation of the declared size happens.
    png[16:24] = (0x00FFFFFF).to_bytes(4, "big") * 2
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.io.decode_png(bytes(png))


def test_bad_arguments():
    img = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(tf.errors.InvalidArgumentError, match="channels"):
        tf.io.decode_jpeg(read("rgb.jpg"), channels=4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="ratio"):
        tf.io.decode_jpeg(read("rgb.jpg"), ratio=3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="uint8"):
        tf.io.encode_png(img.astype(np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="3-dimensional"):
        tf.io.encode_png(img[0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="1 or 3 channels"):
        tf.io.encode_jpeg(np.zeros((4, 4, 4), np.uint8))
    with pytest.raises(tf.errors.InvalidArgumentError, match="quality"):
        tf.io.encode_jpeg(img, quality=101)
    with pytest.raises(tf.errors.InvalidArgumentError, match="compression"):
        tf.io.encode_png(img, compression=10)
    with pytest.raises(tf.errors.UnimplementedError, match="no uint16"):
        tf.io.decode_png(read("rgb.png"), dtype="uint16")
