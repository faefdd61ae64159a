"""tf.strings.to_hash_bucket_fast / to_hash_bucket_strong: TensorFlow's buckets
(FarmHash Fingerprint64, SipHash-2-4). The expected values were printed by
TensorFlow 2.21 for the same strings (lengths reach every branch of both
hashes: 0-3, 4-7, 8-16, 17-32, 33-64 and the 64-byte loop)."""
import numpy as np
import pytest

import kiln as tf

LENGTHS = [0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 127, 128, 129,
           200, 1000]
STRINGS = [bytes((i * 37 + n * 11) % 256 for i in range(n)) for n in LENGTHS] + [
    b"hello", "日本語".encode()]
BIG = 2**62 + 7
KEY = [12345, 2**62 + 99]
# TensorFlow 2.21: tf.strings.to_hash_bucket_fast(STRINGS, BIG)
TF_FAST = [
    1936946117179621441, 176124231402506083, 1057892755533161107, 1391590960341357285,
    4561447471691752839, 1779591755388221548, 2700319997276414914, 621130554209677431,
    2657424633403617643, 1535286945129824709, 1288097421791121095, 4214642572965775965,
    2092107961373731933, 707094922032897085, 3212755088085778925, 1626503777164777224,
    3184901953778894311, 3654596272245784286, 383436890146863729, 4005342679790018233,
    1181104013308204133, 1318295021509232979, 3129236371932873957, 3786372426573024474,
    1846174170784512050]
# TensorFlow 2.21: tf.strings.to_hash_bucket_strong(STRINGS, BIG, KEY)
TF_STRONG = [
    2451530702935186802, 4321127046205118254, 3356710370490132609, 951230919451338935,
    3049800311315522508, 391639616050267780, 2623085885861929894, 586855120426270900,
    39372553045221455, 4541947039961826300, 2295228609682567814, 2884987920629923134,
    4393488198478927102, 1901930756148336745, 1696789798948715123, 110367283059729263,
    1139685104112968091, 3033807419486538688, 4163275310703966669, 1166089992252788707,
    686801009949127536, 651959561773416897, 28683686429455815, 313633901968014434,
    1110149115148134615]
# TensorFlow 2.21: tf.strings.to_hash_bucket_fast(STRINGS, 10)
TF_FAST10 = [3, 4, 7, 5, 1, 8, 4, 3, 6, 0, 5, 8, 3, 8, 6, 5, 2, 7, 0, 6, 6, 9, 7, 6, 3]


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_buckets_equal_tensorflows(mode):
    def run(x):
        return (tf.strings.to_hash_bucket_fast(x, BIG),
                tf.strings.to_hash_bucket_strong(x, BIG, KEY),
                tf.strings.to_hash_bucket_fast(x, 10))

    fn = tf.function(run) if mode == "function" else run
    fast, strong, fast10 = fn(tf.constant(STRINGS))
    assert fast.dtype == tf.int64 and fast.shape == [len(STRINGS)]
    assert fast.numpy().tolist() == TF_FAST
    assert strong.numpy().tolist() == TF_STRONG
    assert fast10.numpy().tolist() == TF_FAST10


def test_shapes_ragged_and_trailing_nul_bytes():
    x = tf.constant([[b"a", b"b"], [b"c", b"a"]])
    got = tf.strings.to_hash_bucket_fast(x, 7).numpy()
    assert got.shape == (2, 2) and got[0, 0] == got[1, 1]
    rt = tf.ragged.constant([[b"a"], [b"b", b"c"]])
    out = tf.strings.to_hash_bucket_fast(rt, 7)
    assert out.flat_values.numpy().tolist() == tf.strings.to_hash_bucket_fast(
        tf.constant([b"a", b"b", b"c"]), 7).numpy().tolist()
    # A trailing NUL byte is part of the string (NumPy's fixed-width strings drop it).
    a, b = tf.strings.to_hash_bucket_fast(tf.constant([b"ab\x00", b"ab"]), BIG).numpy()
    assert a != b


def test_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_buckets"):
        tf.strings.to_hash_bucket_fast(["a"], 0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="key"):
        tf.strings.to_hash_bucket_strong(["a"], 3, [1])
    with pytest.raises((tf.errors.InvalidArgumentError, TypeError, ValueError)):
        tf.strings.to_hash_bucket_fast(tf.constant([1, 2]), 3)
