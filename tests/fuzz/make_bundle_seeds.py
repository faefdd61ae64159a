"""Writes the checkpoint reader's fuzz seeds (tests/fuzz/bundle_corpus): the
base bundle TensorFlow wrote (tests/fixtures/tf_written/checkpoints/dtypes)
whole, truncated and with bytes flipped, as inputs of fuzz_body.h's
load_bundle_one (a byte choosing the file, then its bytes).

    python3 tests/fuzz/make_bundle_seeds.py OUT_DIR
"""
import hashlib
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = os.path.join(HERE, "..", "fixtures", "tf_written", "checkpoints", "dtypes", "ckpt")


def seeds():
    rng = random.Random(42)
    for which, path in [(0, BASE + ".index"), (1, BASE + ".data-00000-of-00001")]:
        with open(path, "rb") as f:
            good = f.read()
        yield which, good
        for keep in (0, 1, 8, 47, 48, len(good) // 2, len(good) - 1):
            yield which, good[:keep]
        for _ in range(12):
            b = bytearray(good)
            for _ in range(rng.randint(1, 4)):
                at = rng.randrange(len(b))
                b[at] ^= 1 << rng.randrange(8)
            yield which, bytes(b)
        yield which, good + bytes(rng.randrange(256) for _ in range(64))


def main(out):
    os.makedirs(out, exist_ok=True)
    for which, data in seeds():
        blob = bytes([which]) + data
        with open(os.path.join(out, hashlib.sha1(blob).hexdigest()), "wb") as f:
            f.write(blob)


if __name__ == "__main__":
    main(sys.argv[1])
