"""TFRecord files: kiln's writer and reader against the files TensorFlow 2.21 wrote
(tests/fixtures/tf_written/tfrecord, made by its make_fixtures.py), compression,
TFRecordDataset options, and damaged files."""
import gzip
import os
import zlib

import numpy as np
import pytest

import kiln as tf
from kiln import _kiln

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tf_written", "tfrecord")
EXPECTED = np.load(os.path.join(FIX, "expected.npz"))
RECORDS = [EXPECTED[f"record|{i}"].tobytes() for i in range(6)]
FILES = [("plain.tfrecord", ""), ("zlib.tfrecord", "ZLIB"), ("gzip.tfrecord", "GZIP")]


def read(path, compression=None, **kw):
    return list(tf.data.TFRecordDataset(path, compression_type=compression, **kw)
                .as_numpy_iterator())


@pytest.mark.parametrize("name,compression", FILES)
def test_reads_files_tensorflow_wrote(name, compression):
    assert read(os.path.join(FIX, name), compression) == RECORDS
    assert list(tf.io.tf_record_iterator(os.path.join(FIX, name), options=compression)) == RECORDS


@pytest.mark.parametrize("name,compression", FILES)
def test_writes_the_bytes_tensorflow_writes(tmp_path, name, compression):
    path = tmp_path / name
    with tf.io.TFRecordWriter(str(path), options=compression) as w:
        for r in RECORDS:
            w.write(r)
    assert path.read_bytes() == open(os.path.join(FIX, name), "rb").read()


def test_record_framing_and_crc():
    assert _kiln.crc32c(b"123456789") == 0xE3069283  # CRC-32C's check value
    assert _kiln.crc32c(b"") == 0
    assert _kiln.crc32c(b"6789", _kiln.crc32c(b"12345")) == 0xE3069283
    framed = _kiln.frame_record(b"hello")
    assert framed[:8] == (5).to_bytes(8, "little") and framed[12:17] == b"hello"
    assert int.from_bytes(framed[17:], "little") == _kiln.mask_crc32c(_kiln.crc32c(b"hello"))


@pytest.mark.parametrize("record", [b"", b"x", "text é", b"\x00" * 70000,
                                    tf.constant(b"tensor")])
@pytest.mark.parametrize("compression", ["", "ZLIB", "GZIP"])
def test_round_trip(tmp_path, record, compression):
    path = str(tmp_path / "r")
    options = tf.io.TFRecordOptions(compression_type=compression, compression_level=1)
    with tf.io.TFRecordWriter(path, options) as w:
        w.write(record)
        w.write(b"second")
    want = record.numpy() if isinstance(record, tf.Tensor) else \
        record.encode() if isinstance(record, str) else record
    assert read(path, compression, buffer_size=7) == [want, b"second"]


def test_compressed_streams_are_standard(tmp_path):
    for comp, decode in [("GZIP", gzip.decompress), ("ZLIB", zlib.decompress)]:
        path = str(tmp_path / comp)
        with tf.io.TFRecordWriter(path, comp) as w:
            w.write(b"abc")
        assert decode(open(path, "rb").read()) == _kiln.frame_record(b"abc")
    # Concatenated GZIP members read as one stream (as `cat a.gz b.gz`).
    both = gzip.compress(_kiln.frame_record(b"1")) + gzip.compress(_kiln.frame_record(b"2"))
    (tmp_path / "cat.gz").write_bytes(both)
    assert read(str(tmp_path / "cat.gz"), "GZIP") == [b"1", b"2"]


def test_flush_makes_records_readable_before_close(tmp_path):
    path = str(tmp_path / "f")
    for comp in ["", "GZIP"]:
        w = tf.io.TFRecordWriter(path, comp)
        w.write(b"one")
        w.flush()
        if comp == "":
            assert read(path) == [b"one"]
        else:  # a sync-flushed stream inflates up to the flush point
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            assert d.decompress(open(path, "rb").read()) == _kiln.frame_record(b"one")
        w.close()
        w.close()  # twice is fine
        with pytest.raises(tf.errors.FailedPreconditionError, match="Writer is closed."):
            w.write(b"x")


def test_dataset_options(tmp_path):
    paths = []
    for k in range(3):
        p = str(tmp_path / f"f{k}")
        with tf.io.TFRecordWriter(p) as w:
            for i in range(k + 1):
                w.write(f"{k}.{i}".encode())
        paths.append(p)
    ds = tf.data.TFRecordDataset(paths)
    assert ds.element_spec == tf.TensorSpec([], tf.string)
    assert ds.cardinality().numpy() == -2
    assert read(paths) == [b"0.0", b"1.0", b"1.1", b"2.0", b"2.1", b"2.2"]
    # In turns over two files at a time (tf.data's deterministic interleave).
    assert read(paths, num_parallel_reads=2) == [b"0.0", b"1.0", b"1.1", b"2.0", b"2.1",
                                                 b"2.2"]
    assert read(tf.data.Dataset.from_tensor_slices(paths[1:])) == [b"1.0", b"1.1", b"2.0",
                                                                   b"2.1", b"2.2"]
    assert read(paths[2], buffer_size=1) == [b"2.0", b"2.1", b"2.2"]
    with pytest.raises(TypeError, match="tf.string"):
        tf.data.TFRecordDataset(tf.data.Dataset.range(3))


def test_dataset_writer(tmp_path):
    path = str(tmp_path / "d")
    tf.data.experimental.TFRecordWriter(path, "GZIP").write(
        tf.data.Dataset.from_tensor_slices([b"a", b"bb"]))
    assert read(path, "GZIP") == [b"a", b"bb"]
    with pytest.raises(TypeError, match="scalar `tf.string` elements"):
        tf.data.experimental.TFRecordWriter(path).write(tf.data.Dataset.range(3))


def test_options():
    o = tf.io.TFRecordOptions(compression_type="GZIP", compression_level=9)
    assert (o.compression_type, o.compression_level, o.flush_mode) == ("GZIP", 9, None)
    get = tf.io.TFRecordOptions.get_compression_type_string
    assert get(None) == "" and get("ZLIB") == "ZLIB" and get(o) == "GZIP"
    assert get(tf.io.TFRecordCompressionType.GZIP) == "GZIP"
    with pytest.raises(ValueError, match='Not a valid compression_type: "LZ4"'):
        tf.io.TFRecordOptions("LZ4")


def damaged(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_damaged_files(tmp_path):
    good = open(os.path.join(FIX, "plain.tfrecord"), "rb").read()
    first = 12 + len(RECORDS[0]) + 4
    cases = [
        (good[:-3], tf.errors.DataLossError,
         f"truncated record at {len(good) - 12 - len(RECORDS[5]) - 4}"),
        (good[:14] + bytes([good[14] ^ 1]) + good[15:], tf.errors.DataLossError,
         "corrupted record at 12$"),
        (good[:3] + bytes([good[3] ^ 1]) + good[4:],
         tf.errors.DataLossError, r"corrupted record at 0 \(Is this even a TFRecord file\?\)"),
        (good[:first + 3] + bytes([good[first + 3] ^ 4]) + good[first + 4:],
         tf.errors.DataLossError, f"corrupted record at {first}$"),
    ]
    for k, (data, err, match) in enumerate(cases):
        with pytest.raises(err, match=match):
            read(damaged(tmp_path, f"d{k}", data))
    # A partial length header at the very end is a file still being written: its end.
    assert read(damaged(tmp_path, "partial", good + good[:5])) == RECORDS
    assert read(damaged(tmp_path, "empty", b"")) == []
    # A huge length with valid checksums is refused, nothing is allocated for it.
    n = (1 << 40).to_bytes(8, "little")
    header = n + _kiln.mask_crc32c(_kiln.crc32c(n)).to_bytes(4, "little")
    with pytest.raises(tf.errors.DataLossError, match="more than the limit"):
        read(damaged(tmp_path, "huge", header + b"x" * 100))
    with pytest.raises(tf.errors.DataLossError, match="inflate"):
        read(damaged(tmp_path, "badgz", b"\x1f\x8b\x08\x00garbage"), "GZIP")
    with pytest.raises(tf.errors.DataLossError, match="ends early"):
        read(damaged(tmp_path, "cutgz", open(os.path.join(FIX, "gzip.tfrecord"), "rb")
                     .read()[:-20]), "GZIP")


def test_random_damage_is_an_error_or_records(tmp_path):
    good = open(os.path.join(FIX, "plain.tfrecord"), "rb").read()
    rng = np.random.default_rng(0)
    for k in range(200):
        data = bytearray(good)
        for _ in range(rng.integers(1, 4)):
            data[rng.integers(len(data))] ^= 1 << rng.integers(8)
        try:
            got = read(damaged(tmp_path, "r", bytes(data)[:rng.integers(len(data) + 1)]))
        except tf.errors.DataLossError:
            continue
        assert all(r in RECORDS for r in got)


def test_file_errors(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="No such file or directory"):
        read(str(tmp_path / "missing"))
    with pytest.raises(tf.errors.FailedPreconditionError, match="Is a directory"):
        read(str(tmp_path))
    with pytest.raises(tf.errors.NotFoundError, match="No such file or directory"):
        tf.io.TFRecordWriter(str(tmp_path / "no" / "dir"))
    with pytest.raises(ValueError, match="compression_type"):
        tf.io.TFRecordWriter(str(tmp_path / "x"), "LZ4")
    with pytest.raises(ValueError, match="compression_type"):
        read(os.path.join(FIX, "plain.tfrecord"), "LZ4")
    with pytest.raises(tf.errors.InvalidArgumentError, match="Unsupported compression_type"):
        _kiln.RecordReader(os.path.join(FIX, "plain.tfrecord"), "LZ4")
    with pytest.raises(TypeError, match="bytes or str"):
        tf.io.TFRecordWriter(str(tmp_path / "y")).write(3)
