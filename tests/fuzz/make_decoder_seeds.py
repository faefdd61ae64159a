"""Seeds for decoders_fuzz (tests/fuzz/decoders_fuzz.cpp): valid inputs of each decoder,
each prefixed with its selector byte (the low nibble picks the decoder, the high nibble
varies attributes). Protobufs are hand-encoded wire bytes; images and TFRecord files are
TensorFlow-written fixtures (tests/fixtures/tf_written). Standard library only.

    python3 tests/fuzz/make_decoder_seeds.py OUT_DIR
"""

import hashlib
import os
import struct
import sys
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "tf_written")


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def tag(field, wire):
    return varint(field << 3 | wire)


def len_field(field, body):
    return tag(field, 2) + varint(len(body)) + body


def varint_field(field, v):
    return tag(field, 0) + varint(v)


# tf.train.Feature: bytes_list = 1, float_list = 2, int64_list = 3; each list's value = 1.
def int64_list(values, packed=True):
    if packed:
        body = len_field(1, b"".join(varint(v) for v in values))
    else:
        body = b"".join(varint_field(1, v) for v in values)
    return len_field(3, body)


def float_list(values, packed=True):
    if packed:
        body = len_field(1, b"".join(struct.pack("<f", v) for v in values))
    else:
        body = b"".join(tag(1, 5) + struct.pack("<f", v) for v in values)
    return len_field(2, body)


def bytes_list(values):
    return len_field(1, b"".join(len_field(1, v) for v in values))


def features(entries):
    """Features { map<string, Feature> feature = 1; }; entries: (key, Feature body)."""
    return b"".join(len_field(1, len_field(1, k.encode()) + len_field(2, f)) for k, f in entries)


def example(entries):
    """Example { Features features = 1; }"""
    return len_field(1, features(entries))


def sequence_example(context, lists):
    """SequenceExample { Features context = 1; FeatureLists feature_lists = 2; }
    FeatureLists { map<string, FeatureList> feature_list = 1; } FeatureList { Feature feature = 1; }
    """
    body = len_field(1, features(context)) if context else b""
    fl = b""
    for key, steps in lists:
        flist = b"".join(len_field(1, s) for s in steps)
        fl += len_field(1, len_field(1, key.encode()) + len_field(2, flist))
    return body + len_field(2, fl)


# TensorProto: dtype = 1, tensor_shape = 2, tensor_content = 4, float_val = 5,
# double_val = 6, int_val = 7, string_val = 8, int64_val = 10, bool_val = 11.
DT = {"float": 1, "double": 2, "int32": 3, "uint8": 4, "int8": 6, "string": 7, "int64": 9,
      "bool": 10, "complex64": 8, "bfloat16": 14, "half": 19, "complex128": 18}


def shape_proto(dims):
    return b"".join(len_field(2, varint_field(1, d)) for d in dims)


def tensor_proto(dtype, dims, content=None, field=None, values=b""):
    b = varint_field(1, DT[dtype]) + len_field(2, shape_proto(dims))
    if content is not None:
        b += len_field(4, content)
    if field is not None:
        b += values if field == 8 else len_field(field, values)
    return b


def utf(s, enc):
    return s.encode(enc)


def crc32c(b):
    """CRC-32C (Castagnoli), bitwise: the standard library has no crc32c."""
    crc = 0xFFFFFFFF
    for byte in b:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked_crc(b):
    c = crc32c(b)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord_header(n):
    """A record's length and the masked CRC-32C of its 8 bytes."""
    length = struct.pack("<Q", n)
    return length + struct.pack("<I", masked_crc(length))


def tfrecord_frame(data):
    """One TFRecord record: header, bytes, masked CRC-32C of the bytes."""
    return tfrecord_header(len(data)) + data + struct.pack("<I", masked_crc(data))


def seeds():
    ex = [
        example([("i", int64_list([1, -2, 300])), ("f", float_list([1.5, -2.0])),
                 ("s", bytes_list([b"ab", b""]))]),
        example([("i", int64_list([5, 6], packed=False)), ("f", float_list([3.0], packed=False)),
                 ("s", bytes_list([b"x", b"yz"]))]),
        example([("i", int64_list([7, 8])), ("f", float_list([0.25, 0.5])),
                 ("s", bytes_list([b"p", b"q"]))]),
        example([("i", int64_list([1])), ("i", float_list([2.0]))]),  # last entry wins
        example([]),
    ]
    for i, e in enumerate(ex):
        for opt in (0x00, 0x20, 0x60, 0x10):
            yield "example_%d_%02x" % (i, opt), bytes([opt | 0]) + e

    ctx = [("ci", int64_list([2])), ("cf", float_list([0.5])), ("cs", bytes_list([b"c"]))]
    se = [
        sequence_example(ctx, [("i", [int64_list([1, 2]), int64_list([3], packed=False)]),
                               ("f", [float_list([1.0, 2.0]), float_list([3.0, 4.0])]),
                               ("s", [bytes_list([b"a", b"b"]), bytes_list([b"c", b"d"])])]),
        sequence_example([], [("i", [int64_list([9, 9])]), ("f", []), ("s", [bytes_list([])])]),
        sequence_example(ctx, []),
    ]
    for i, e in enumerate(se):
        for opt in (0x00, 0x10, 0x20, 0x40):
            yield "seqex_%d_%02x" % (i, opt), bytes([opt | 1]) + e

    images = os.path.join(FIXTURES, "images")
    for name in sorted(os.listdir(images)):
        path = os.path.join(images, name)
        with open(path, "rb") as f:
            data = f.read()
        if name.endswith(".png"):
            for opt in (0x00, 0x10, 0x30):
                yield "png_%s_%02x" % (name, opt), bytes([opt | 2]) + data
        elif name.endswith(".jpg"):
            for opt in (0x00, 0x30, 0x42, 0x80):
                yield "jpeg_%s_%02x" % (name, opt), bytes([opt | 3]) + data
        else:
            continue
        for opt in (0x00, 0x20, 0x80):
            yield "image_%s_%02x" % (name, opt), bytes([opt | 4]) + data

    raw = struct.pack("<4f", 1.0, -2.0, 3.5, 0.0) + struct.pack("<2q", 1, -1)
    for opt in (0x00, 0x10, 0x60, 0xE1):
        yield "raw_%02x" % opt, bytes([opt | 5]) + raw
    yield "raw_odd", bytes([5]) + b"\x01\x02\x03"

    tensors = [
        tensor_proto("float", [2, 2], content=struct.pack("<4f", 1, 2, 3, 4)),
        tensor_proto("float", [3], field=5, values=struct.pack("<f", 7.0)),  # repeated last value
        tensor_proto("double", [2], field=6, values=struct.pack("<2d", 1, 2)),
        tensor_proto("int32", [2, 1], field=7, values=varint(5) + varint(-3)),
        tensor_proto("int64", [3], field=10, values=varint(1) + varint(2) + varint(3)),
        tensor_proto("int64", [2], content=struct.pack("<2q", 9, -9)),
        tensor_proto("uint8", [4], content=b"\x00\x01\xfe\xff"),
        tensor_proto("int8", [2], field=7, values=varint(1) + varint(-1)),
        tensor_proto("bool", [3], field=11, values=varint(1) + varint(0) + varint(1)),
        tensor_proto("string", [2], field=8,
                     values=len_field(8, b"hello") + len_field(8, b"")),
        tensor_proto("string", [], field=8, values=len_field(8, b"scalar")),
        tensor_proto("complex64", [1], content=struct.pack("<2f", 1, 2)),
        tensor_proto("half", [2], content=b"\x00\x3c\x00\x40"),
        tensor_proto("bfloat16", [1], content=b"\x80\x3f"),
        tensor_proto("float", [0, 3]),
    ]
    for i, t in enumerate(tensors):
        yield "tensor_%d" % i, bytes([6]) + t

    texts = ["hello", "h\u00e9llo w\u00f6rld", "\u65e5\u672c\u8a9e \U0001F600", "a\tb\x01c"]
    for i, s in enumerate(texts):
        yield "utf8_%d" % i, bytes([0x00 | 7]) + utf(s, "utf-8")
        yield "utf8_%d_ctl" % i, bytes([0x40 | 7]) + utf(s, "utf-8")
        yield "utf16_%d" % i, bytes([0x10 | 7]) + utf(s, "utf-16-be")
        yield "utf32_%d" % i, bytes([0x20 | 7]) + utf(s, "utf-32-be")
        yield "utf32_%d_strict" % i, bytes([0xA0 | 7]) + utf(s, "utf-32-be")
    yield "utf8_bad", bytes([7]) + b"a\xc3(\xe2\x82\xf0\x9f\x98"

    tfr = os.path.join(FIXTURES, "tfrecord")
    for name in sorted(os.listdir(tfr)):
        if name.endswith(".tfrecord"):
            with open(os.path.join(tfr, name), "rb") as f:
                data = f.read()
            for opt in (0x00, 0x10):
                yield "tfrecord_%s_%02x" % (name, opt), bytes([opt | 8]) + data
    recs = b"".join(tfrecord_frame(r) for r in (ex[0], b"", b"x" * 40))
    yield "tfrecord_made", bytes([8]) + recs
    yield "tfrecord_made_zlib", bytes([8]) + zlib.compress(recs)
    gz = zlib.compressobj(wbits=31)
    yield "tfrecord_made_gzip", bytes([0x10 | 8]) + gz.compress(recs) + gz.flush()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    n = 0
    for name, data in seeds():
        # Named by content (as libFuzzer names corpus files) plus a readable tag.
        digest = hashlib.sha1(data).hexdigest()[:12]
        with open(os.path.join(out, "%s_%s" % (name, digest)), "wb") as f:
            f.write(data)
        n += 1
    print("%d decoder seeds in %s" % (n, out))


if __name__ == "__main__":
    main()
