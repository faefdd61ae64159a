"""Writes fuzz inputs for the loader over a SavedModel TensorFlow wrote
(tests/fixtures/tf_written/saved_models/module): its three files whole,
truncated and with bytes flipped, as inputs of fuzz_body.h's load_one (a byte
choosing the file, then its bytes). The first 40 are checked in as
tests/fuzz/tf_corpus (replayed by test_saved_model on every run).

    python3 tests/fuzz/make_tf_seeds.py OUT_DIR [COUNT]
"""
import hashlib
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = os.path.join(HERE, "..", "fixtures", "tf_written", "saved_models", "module")
FILES = ["saved_model.pb", "variables/variables.index",
         "variables/variables.data-00000-of-00001"]


def seeds(count):
    rng = random.Random(7)
    out = []
    for which, name in enumerate(FILES):
        with open(os.path.join(BASE, name), "rb") as f:
            good = f.read()
        out.append((which, good))
        out += [(which, good[:keep]) for keep in (0, 7, len(good) // 3, len(good) - 9)]
    while len(out) < count:
        which = rng.randrange(3)
        with open(os.path.join(BASE, FILES[which]), "rb") as f:
            b = bytearray(f.read())
        for _ in range(rng.randint(1, 6)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        out.append((which, bytes(b)))
    return out[:count]


def main(out, count=40):
    os.makedirs(out, exist_ok=True)
    for which, data in seeds(count):
        blob = bytes([which]) + data
        with open(os.path.join(out, hashlib.sha1(blob).hexdigest()), "wb") as f:
            f.write(blob)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40)
