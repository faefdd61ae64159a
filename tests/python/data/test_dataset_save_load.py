"""Dataset.save / Dataset.load / Dataset.snapshot (kiln's own on-disk format,
see python/kiln/data/saving.py), with TensorFlow 2.21's signatures and
semantics: round trips keep element_spec and cardinality; shards come back in
shard order through reader_func; snapshot writes on the first full pass."""
import collections
import json
import os

import numpy as np
import pytest

import kiln as tf
from kiln import errors

D = tf.data.Dataset
Point = collections.namedtuple("Point", ["x", "y"])


def values(ds):
    return [tf.nest.map_structure(lambda v: np.asarray(v).tolist(), e)
            for e in ds.as_numpy_iterator()]


def strings():
    return tf.constant(np.array([b"x", b"a\x00", b"", b"\xff\x00b"], dtype=object))


SOURCES = [
    ("dict_with_strings", lambda: D.from_tensor_slices(
        {"a": np.arange(4), "b": [[1., 2.]] * 4, "s": strings()})),
    ("ragged_lengths", lambda: D.range(5).map(lambda x: tf.fill([x], x))),
    ("namedtuple", lambda: D.from_tensor_slices(Point(np.arange(3, dtype=np.int32),
                                                      np.ones((3, 2), np.float64)))),
    ("nested_tuple", lambda: D.from_tensor_slices(([True, False], ([1.5, 2.5], [[1], [2]])))),
    ("half_types", lambda: D.from_tensor_slices((tf.constant([1.5, -2.0], tf.float16),
                                                 tf.constant([0.5, 3.0], tf.bfloat16)))),
    ("complex_scalar_strings", lambda: D.from_tensors(
        (tf.constant(np.array([1 + 2j], np.complex64)), tf.constant("hello")))),
    ("unknown_rank", lambda: D.from_generator(lambda: [[1], [[2, 3]]], tf.int32)),
]


@pytest.mark.parametrize("compression", [None, "GZIP"])
@pytest.mark.parametrize("name,make", SOURCES, ids=[s[0] for s in SOURCES])
def test_round_trip(name, make, compression, tmp_path, helpers):
    ds = make()
    assert ds.save(str(tmp_path), compression=compression) is None  # TF 2.21 returns None
    loaded = D.load(str(tmp_path), compression=compression)
    assert repr(loaded.element_spec) == repr(ds.element_spec)
    assert int(loaded.cardinality()) == len(values(ds))  # TF 2.21: known after load
    # A namedtuple comes back as a namedtuple class of the same name and fields (as TF).
    assert type(loaded.element_spec).__name__ == type(ds.element_spec).__name__
    assert values(loaded) == values(ds)
    if name != "unknown_rank":
        assert helpers.graph(loaded) == helpers.eager(ds)


def test_files(tmp_path):
    D.range(4).save(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["kiln_dataset.json", "shard_00000000.npz"]
    meta = json.loads((tmp_path / "kiln_dataset.json").read_text())
    assert meta["cardinality"] == 4 and meta["shards"] == {"0": 4}
    with np.load(tmp_path / "shard_00000000.npz") as shard:  # plain NumPy can read it
        assert [int(shard[f"e{i}_c0"]) for i in range(4)] == [0, 1, 2, 3]


def test_shards_and_readers(tmp_path):
    path = str(tmp_path)
    D.range(10).save(path, shard_func=lambda x: x % 3)
    assert sorted(os.listdir(path))[1:] == [f"shard_{k:08d}.npz" for k in range(3)]
    # TF 2.21: [0, 3, 6, 9, 1, 4, 7, 2, 5, 8] (the shards in order).
    in_order = D.load(path, reader_func=lambda datasets: datasets.flat_map(lambda d: d))
    assert [int(v) for v in in_order] == [0, 3, 6, 9, 1, 4, 7, 2, 5, 8]
    assert int(in_order.cardinality()) == 10
    # TF 2.21 on 2 CPUs, default reader (interleave, a cycle per CPU):
    # [0, 1, 3, 4, 6, 7, 9, 2, 5, 8].
    n = tf.data.interleave.cpu_count()
    want = [int(v) for v in D.range(3).interleave(lambda k: D.range(k, 10, 3), cycle_length=n)]
    assert [int(v) for v in D.load(path)] == want
    # A new save replaces the old shards.
    D.range(2).save(path)
    assert [int(v) for v in D.load(path)] == [0, 1]


def test_load_with_element_spec(tmp_path):
    D.range(3).save(str(tmp_path))
    spec = tf.TensorSpec([], tf.int64)
    assert D.load(str(tmp_path), element_spec=spec).element_spec == spec
    with pytest.raises(errors.InvalidArgumentError,
                       match="Data type mismatch at component 0: expected int32 but got int64."):
        list(D.load(str(tmp_path), element_spec=tf.TensorSpec([], tf.int32)))


def test_experimental_names(tmp_path):
    tf.data.experimental.save(D.range(3), str(tmp_path))
    assert [int(v) for v in tf.data.experimental.load(str(tmp_path))] == [0, 1, 2]


def test_save_errors(tmp_path):
    with pytest.raises(errors.NotFoundError, match="kiln_dataset.json"):
        D.load(str(tmp_path / "missing"))
    with pytest.warns(UserWarning, match="Unsupported compression_type:FOO. No compression"):
        D.range(2).save(str(tmp_path / "a"), compression="FOO")
    with pytest.raises(ValueError, match="`checkpoint_args` are not allowed to include "
                                         "'checkpoint'"):
        D.range(2).save(str(tmp_path / "b"), checkpoint_args={"checkpoint": None})
    with pytest.raises(TypeError, match="cannot be saved"):
        D.range(4).window(2).save(str(tmp_path / "c"))

    @tf.function
    def f():
        D.range(2).save(str(tmp_path / "d"))
        return 0
    with pytest.raises(NotImplementedError, match="eagerly"):
        f()


def test_snapshot(tmp_path, helpers):
    calls = []

    def gen():
        calls.append(1)
        yield from range(5)
    source = D.from_generator(gen, output_signature=tf.TensorSpec([], tf.int64))
    ds = source.snapshot(str(tmp_path))
    assert int(ds.cardinality()) == -2 and int(D.range(5).snapshot(str(tmp_path / "r"))
                                               .cardinality()) == 5  # TF 2.21's
    assert [int(v) for v in ds] == list(range(5)) and len(calls) == 1
    assert [int(v) for v in ds] == list(range(5)) and len(calls) == 1  # read back
    assert helpers.graph(ds) == [(v,) for v in range(5)] and len(calls) == 1
    (run,) = os.listdir(tmp_path)  # one folder named by a fingerprint, as TF's
    assert run.isdigit() and "kiln_dataset.json" in os.listdir(tmp_path / run)


def test_snapshot_partial_pass_is_not_kept(tmp_path):
    calls = []

    def gen():
        calls.append(1)
        yield from range(5)
    ds = D.from_generator(gen, output_signature=tf.TensorSpec([], tf.int64)).snapshot(
        str(tmp_path), shard_func=lambda x: x % 2)
    assert [int(v) for v in ds.take(2)] == [0, 1]
    assert os.listdir(tmp_path) == []
    assert sorted(int(v) for v in ds) == list(range(5)) and len(calls) == 2
    assert sorted(int(v) for v in ds) == list(range(5)) and len(calls) == 2
    with pytest.raises(TypeError, match=r"Invalid `shard_func`. `shard_func` must return "
                                        r"`tf.int64` scalar tensor but its return type is "
                                        r"TensorSpec\(shape=\(\), dtype=tf.float32"):
        D.range(5).snapshot(str(tmp_path), shard_func=lambda x: 1.0)


def test_damaged_saves_are_clear_errors(tmp_path):
    """Saved datasets are files kiln reads: damage is a DataLossError naming the file."""
    path = str(tmp_path / "s")
    D.from_tensor_slices([b"ab", b"", b"cde"]).save(path)
    meta = os.path.join(path, "kiln_dataset.json")
    shard = next(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".npz"))
    good_meta, good_shard = open(meta).read(), open(shard, "rb").read()

    def restore():
        open(meta, "w").write(good_meta)
        open(shard, "wb").write(good_shard)

    for text in ("{not json", "[]", json.dumps({"format": "kiln.data", "shards": {"0": -1},
                                                "cardinality": 3, "element_spec": None})):
        open(meta, "w").write(text)
        with pytest.raises(errors.DataLossError):
            list(D.load(path))
        restore()
    open(shard, "wb").write(good_shard[: len(good_shard) // 2])
    with pytest.raises(errors.DataLossError, match="shard"):
        list(D.load(path))
    restore()
    assert [x.numpy() for x in D.load(path)] == [b"ab", b"", b"cde"]
