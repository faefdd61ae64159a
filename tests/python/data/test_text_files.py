"""tf.data.TextLineDataset and Dataset.list_files on files written here; the
expected lines, orders, cardinalities and error texts are those TensorFlow 2.21
gave for the same files (.venv-peers)."""
import gzip
import os
import zlib

import numpy as np
import pytest

import kiln as tf
from kiln import errors

D = tf.data.Dataset
STRING = "TensorSpec(shape=(), dtype=tf.string, name=None)"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "f1.txt").write_bytes(b"a\nbb\r\nccc\n\nlast")
    (tmp_path / "f2.txt").write_bytes(b"x\ny\n")
    (tmp_path / "g.txt.gz").write_bytes(gzip.compress(b"g1\ng2\n"))
    (tmp_path / "z.txt.z").write_bytes(zlib.compress(b"z1\nz2"))
    (tmp_path / "empty.txt").write_bytes(b"")
    return tmp_path


def lines(ds):
    return [v.numpy() for v in ds]


F1 = [b"a", b"bb", b"ccc", b"", b"last"]


@pytest.mark.parametrize("make,want", [
    (lambda d: tf.data.TextLineDataset(str(d / "f1.txt")), F1),
    (lambda d: tf.data.TextLineDataset([str(d / "f1.txt"), str(d / "f2.txt")]),
     F1 + [b"x", b"y"]),
    (lambda d: tf.data.TextLineDataset(tf.constant([str(d / "f2.txt")] * 2)),
     [b"x", b"y", b"x", b"y"]),
    (lambda d: tf.data.TextLineDataset(D.from_tensor_slices([str(d / "f2.txt"),
                                                             str(d / "f1.txt")])),
     [b"x", b"y"] + F1),
    (lambda d: tf.data.TextLineDataset(str(d / "g.txt.gz"), compression_type="GZIP"),
     [b"g1", b"g2"]),
    (lambda d: tf.data.TextLineDataset(str(d / "z.txt.z"), compression_type="ZLIB"),
     [b"z1", b"z2"]),
    (lambda d: tf.data.TextLineDataset(str(d / "f2.txt"), compression_type=""), [b"x", b"y"]),
    (lambda d: tf.data.TextLineDataset(str(d / "empty.txt")), []),
    (lambda d: tf.data.TextLineDataset([str(d / "f1.txt"), str(d / "f2.txt")],
                                       num_parallel_reads=2),
     [b"a", b"x", b"bb", b"y", b"ccc", b"", b"last"]),
    (lambda d: tf.data.TextLineDataset(str(d / "f1.txt"), buffer_size=2), F1),
], ids=["one", "two", "tensor", "dataset", "gzip", "zlib", "empty_type", "empty_file",
        "parallel", "small_buffer"])
def test_text_lines_as_tensorflow(files, make, want, helpers):
    ds = make(files)
    assert repr(ds.element_spec) == STRING and int(ds.cardinality()) == -2
    assert lines(ds) == want
    assert helpers.graph(ds) == [(w,) for w in want]


def test_gzip_members_and_large_files(files):
    (files / "two.gz").write_bytes(gzip.compress(b"m1\n") + gzip.compress(b"m2\nm3"))
    assert lines(tf.data.TextLineDataset(str(files / "two.gz"), "GZIP")) == [b"m1", b"m2", b"m3"]
    big = [f"line {i}".encode() for i in range(20000)]
    (files / "big.gz").write_bytes(gzip.compress(b"\n".join(big) + b"\n"))
    assert lines(tf.data.TextLineDataset(str(files / "big.gz"), "GZIP")) == big


@pytest.mark.parametrize("name,kwargs,error,message", [
    ("nope.txt", {}, errors.NotFoundError, "nope.txt; No such file or directory"),
    ("f2.txt", {"compression_type": "BZ2"}, errors.InvalidArgumentError,
     "Unsupported compression_type."),
    ("f2.txt", {"compression_type": "GZIP"}, errors.DataLossError,
     "inflate() failed with error -3: incorrect header check"),
    ("", {}, errors.FailedPreconditionError, "; Is a directory"),
])
def test_text_line_errors_when_iterated(files, name, kwargs, error, message):
    ds = tf.data.TextLineDataset(str(files / name) if name else str(files), **kwargs)
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        lines(ds)


def test_text_line_filename_types():
    with pytest.raises(TypeError, match=r"^The `filenames` argument must contain `tf.string` "
                                        r"elements. Got `tf.int32` elements.$"):
        tf.data.TextLineDataset([1, 2])


def test_list_files(files, helpers):
    d = str(files)
    ds = D.list_files(f"{d}/*.txt", shuffle=False)
    want = [f"{d}/{n}".encode() for n in ("empty.txt", "f1.txt", "f2.txt")]
    assert repr(ds.element_spec) == STRING and int(ds.cardinality()) == 3
    assert lines(ds) == want and helpers.graph(ds) == [(w,) for w in want]
    # TF sorts the matches of all the patterns together (a file twice if matched twice).
    assert lines(D.list_files([f"{d}/f*.txt", f"{d}/e*.txt"], shuffle=False)) == want
    assert lines(D.list_files([f"{d}/f1.txt", f"{d}/f*.txt"], shuffle=False)) == \
        [want[1], want[1], want[2]]
    assert lines(D.list_files(f"{d}/f?.txt", shuffle=False)) == want[1:]
    assert lines(D.list_files(f"{d}/f[12].txt", shuffle=False)) == want[1:]
    assert lines(D.list_files(d, shuffle=False)) == [d.encode()]
    (files / ".hidden.txt").write_bytes(b"")
    assert len(lines(D.list_files(f"{d}/*.txt", shuffle=False))) == 4


def test_list_files_shuffles(files):
    d = str(files)
    names = sorted(os.listdir(d))
    seeded = D.list_files(f"{d}/*", seed=1)
    assert int(seeded.cardinality()) == len(names)
    orders = [[os.path.basename(v.decode()) for v in lines(seeded)] for _ in range(6)]
    assert all(sorted(o) == names for o in orders)
    assert len({tuple(o) for o in orders}) > 1  # reshuffled each iteration, as TF
    again = D.list_files(f"{d}/*", seed=1)
    assert [os.path.basename(v.decode()) for v in lines(again)] == orders[0]


def test_list_files_errors(files):
    d = str(files)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"^Expected 'tf.Tensor\(False, shape=\(\), dtype=bool\)' to be true. "
                             rf"Summarized data: b'No files matched pattern: {d}/\*.csv'$"):
        D.list_files(f"{d}/*.csv")
    with pytest.raises(errors.InvalidArgumentError,
                       match=rf"No files matched pattern: {d}/\*.csv, {d}/\*.x'$"):
        D.list_files([f"{d}/*.csv", f"{d}/*.x"])


def test_list_files_feed_text_lines(files, helpers):
    d = str(files)
    ds = D.list_files(f"{d}/f*.txt", shuffle=False).interleave(tf.data.TextLineDataset,
                                                               cycle_length=1)
    assert lines(ds) == F1 + [b"x", b"y"]
    counts = tf.data.TextLineDataset(D.list_files(f"{d}/f*.txt", shuffle=False)).map(
        tf.strings.length)
    assert [int(v) for v in counts] == [1, 2, 3, 0, 4, 1, 1]
    assert np.asarray(helpers.graph(counts)).ravel().tolist() == [1, 2, 3, 0, 4, 1, 1]
