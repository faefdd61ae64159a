"""Checkpoint files in TensorFlow's bundle format: every dtype round-trips,
damaged files give clear kiln.errors errors (never a crash or a huge
allocation), and writes are atomic."""
import os

import numpy as np
import pytest

import kiln as tf
from kiln import _kiln
from kiln.train import bundle

DLE = tf.errors.DataLossError
KEY = "v/.ATTRIBUTES/VARIABLE_VALUE"


@pytest.fixture
def prefix(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3)),
                               n=tf.Variable(np.int64(7)))
    return ckpt.write(str(tmp_path / "c"))


def restore_into_fresh(prefix):
    ckpt = tf.train.Checkpoint(v=tf.Variable(np.zeros((2, 3), np.float32)),
                               n=tf.Variable(np.int64(0)))
    return ckpt.restore(prefix)


def every_reader(prefix):
    """Each way of opening a checkpoint: all must fail the same way."""
    return [lambda: restore_into_fresh(prefix), lambda: tf.train.list_variables(prefix),
            lambda: tf.train.load_checkpoint(prefix).get_tensor(KEY)]


def expect(prefix, error, match):
    for read in every_reader(prefix):
        with pytest.raises(error, match=match):
            read()


def flip(path, at):
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x40]))


def test_files_are_tensorflows_format(prefix):
    assert bundle.is_bundle(prefix)
    with open(prefix + ".index", "rb") as f:
        assert f.read()[-8:] == bytes.fromhex("57fb808b247547db")  # the table magic
    keys = dict(tf.train.list_variables(prefix))
    assert keys[KEY] == [2, 3] and keys["n/.ATTRIBUTES/VARIABLE_VALUE"] == []
    graph = tf.train.load_checkpoint(prefix).get_tensor(bundle.OBJECT_GRAPH_KEY)
    nodes = _kiln._decode_object_graph(graph, "test")
    v = dict(nodes[0][0])["v"]
    assert sorted(dict(nodes[0][0])) == ["n", "v"]
    assert nodes[v][1] == [("VARIABLE_VALUE", "Variable", KEY)]


ROUND_TRIP = {
    "f32": np.arange(6, dtype=np.float32).reshape(2, 3), "f64": np.array([1.5, -2.0]),
    "f16": np.array([0.5, -3.0], np.float16), "i8": np.array([-128, 127], np.int8),
    "u8": np.array([0, 255], np.uint8), "i32": np.array([[1, -2]], np.int32),
    "i64": np.array(2 ** 40, np.int64), "b": np.array([True, False]),
    "c64": np.array([1 + 2j], np.complex64), "c128": np.array([3 - 1j]),
    "empty": np.zeros((0, 3), np.float32), "s": np.array([b"a", b"", "\u00e9".encode()], object),
    "s0": np.array(b"scalar", object),
}


def test_every_dtype_round_trips(tmp_path):
    variables = {k: tf.Variable(v) for k, v in ROUND_TRIP.items()}
    variables["bf16"] = tf.Variable(tf.constant([1.0, -2.5], tf.bfloat16))
    path = tf.train.Checkpoint(**variables).write(str(tmp_path / "all"))
    fresh = {k: tf.Variable(np.full(v.shape, b"", object) if v.dtype == object else
                            np.zeros_like(v)) for k, v in ROUND_TRIP.items()}
    fresh["bf16"] = tf.Variable(tf.zeros([2], tf.bfloat16))
    tf.train.Checkpoint(**fresh).restore(path).assert_consumed()
    reader = tf.train.load_checkpoint(path)
    for k, want in ROUND_TRIP.items():
        got = reader.get_tensor(f"{k}/.ATTRIBUTES/VARIABLE_VALUE")
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(fresh[k].numpy(), want)
    np.testing.assert_array_equal(fresh["bf16"].numpy().astype(np.float32), [1.0, -2.5])


def test_values_of_dtypes_kiln_variables_lack_are_kept(tmp_path):
    writer = _kiln._BundleWriter(str(tmp_path / "raw"))
    values = {"a": np.array([-300, 300], np.int16), "b": np.array([7, 2 ** 63], np.uint64),
              "c": np.array([1, 2 ** 32 - 1], np.uint32), "d": np.array([65535], np.uint16)}
    for k, v in values.items():
        writer.add_bytes(k, v.dtype.name, list(v.shape), v.tobytes())
    writer.finish()
    reader = tf.train.load_checkpoint(str(tmp_path / "raw"))
    for k, v in values.items():
        got = reader.get_tensor(k)
        assert got.dtype == v.dtype
        np.testing.assert_array_equal(got, v)


def test_many_keys_span_several_blocks(tmp_path):
    # 2000 variables with long names: the index holds two 256 KiB blocks
    names = {f"v{i:05d}{'x' * 150}": tf.Variable(float(i)) for i in range(2000)}
    path = tf.train.Checkpoint(**names).write(str(tmp_path / "many"))
    assert os.path.getsize(path + ".index") > 262144
    fresh = {k: tf.Variable(0.0) for k in names}
    tf.train.Checkpoint(**fresh).restore(path).assert_consumed()
    assert [float(fresh[k].numpy()) for k in list(names)[::500]] == [0.0, 500.0, 1000.0, 1500.0]


def test_values_are_64_byte_aligned(prefix):
    reader = _kiln._BundleReader(prefix)
    assert set(reader.keys()) >= {KEY, bundle.OBJECT_GRAPH_KEY}
    # the data file pads each plain value to a 64-byte boundary (zero-copy reads)
    assert os.path.getsize(prefix + bundle.DATA_SUFFIX) % 64 != 1


def test_extent_past_the_end_of_the_data(prefix):
    path = prefix + bundle.DATA_SUFFIX
    os.truncate(path, os.path.getsize(path) - 3)
    expect(prefix, DLE, "lie past the end of")


def test_flipped_data_byte_fails_the_checksum(prefix):
    with open(prefix + bundle.DATA_SUFFIX, "rb") as f:
        at = f.read().index(np.arange(6, dtype=np.float32).tobytes())
    flip(prefix + bundle.DATA_SUFFIX, at + 5)
    with pytest.raises(DLE, match="fails its checksum"):
        restore_into_fresh(prefix)
    with pytest.raises(DLE, match="fails its checksum"):
        tf.train.load_checkpoint(prefix).get_tensor(KEY)
    assert tf.train.list_variables(prefix)  # the index alone is fine


@pytest.mark.parametrize("at", [3, 20, 60])
def test_flipped_index_byte_fails_a_block_checksum(prefix, at):
    flip(prefix + ".index", at)
    expect(prefix, DLE, "checksum|malformed")


@pytest.mark.parametrize("keep", [0, 10, 47, 100])
def test_truncated_index(prefix, keep):
    os.truncate(prefix + ".index", keep)
    expect(prefix, DLE, "not a table file|lies outside the file|not a checkpoint index")


def test_flipped_magic_reads_as_another_format(prefix):
    path = prefix + ".index"
    flip(path, os.path.getsize(path) - 1)
    assert not bundle.is_bundle(prefix)
    expect(prefix, DLE, "not a checkpoint index: neither")


def test_missing_files(prefix):
    os.remove(prefix + bundle.DATA_SUFFIX)
    expect(prefix, tf.errors.NotFoundError, "data-00000-of-00001")
    os.remove(prefix + ".index")
    expect(prefix, tf.errors.NotFoundError, r"\.index")


def raw_checkpoint(path, entries, nodes):
    writer = _kiln._BundleWriter(path)
    for key, dtype, shape, data in entries:
        writer.add_bytes(key, dtype, shape, data)
    writer.add_strings(bundle.OBJECT_GRAPH_KEY, [], [_kiln._encode_object_graph(nodes)])
    writer.finish()
    return path


def test_bool_values_must_be_0_or_1(tmp_path):
    path = raw_checkpoint(str(tmp_path / "b"), [("b", "bool", [2], b"\x02\x00")],
                          [([("b", 1)], [], []), ([], [("VARIABLE_VALUE", "", "b")], [])])
    with pytest.raises(DLE, match="bool not 0 or 1"):
        tf.train.load_checkpoint(path).get_tensor("b")


@pytest.mark.parametrize("nodes, match", [
    ([([("v", 7)], [], [])], "refers to node 7"),
    ([([("v", 1)], [], []), ([], [], [(-1, "m", 0)])], "refers to node -1"),
    ([([("v", 1)], [], []), ([], [("VARIABLE_VALUE", "", "missing")], [])],
     "names a missing value"),
    ([], "damaged or empty"),
])
def test_bad_object_graphs(tmp_path, nodes, match):
    path = raw_checkpoint(str(tmp_path / "g"), [(KEY, "float32", [2, 3], bytes(24))], nodes)
    with pytest.raises(DLE, match=match):
        restore_into_fresh(path)


def test_garbage_object_graph(tmp_path):
    path = str(tmp_path / "g")
    writer = _kiln._BundleWriter(path)
    writer.add_strings(bundle.OBJECT_GRAPH_KEY, [], [b"\xff\xff\xff garbage"])
    writer.finish()
    with pytest.raises(DLE, match="object graph is damaged"):
        restore_into_fresh(path)


def test_writer_refuses_bad_input(tmp_path):
    writer = _kiln._BundleWriter(str(tmp_path / "w"))
    writer.add_bytes("a", "float32", [2], bytes(8))
    with pytest.raises(tf.errors.InvalidArgumentError, match="duplicate key"):
        writer.add_bytes("a", "float32", [2], bytes(8))
    with pytest.raises(tf.errors.InvalidArgumentError, match="bytes for 3 elements"):
        writer.add_bytes("b", "float32", [3], bytes(8))
    with pytest.raises(tf.errors.InvalidArgumentError, match="bad dimension"):
        writer.add_bytes("c", "float32", [-1], b"")
    with pytest.raises(tf.errors.InvalidArgumentError, match="must not be empty"):
        writer.add_bytes("", "float32", [0], b"")
    with pytest.raises(tf.errors.UnimplementedError, match="float8"):
        writer.add_bytes("d", "float8", [1], b"\x00")
    del writer  # never finished: no files are left behind
    assert os.listdir(tmp_path) == []


def test_a_failed_save_keeps_the_previous_checkpoint(tmp_path):
    v = tf.Variable([1.0, 2.0])
    ckpt = tf.train.Checkpoint(v=v)
    first = ckpt.save(str(tmp_path / "c"))
    os.mkdir(str(tmp_path / "c-2.index"))  # the index cannot be renamed into place
    v.assign([5.0, 6.0])
    with pytest.raises(tf.errors.FailedPreconditionError, match="cannot write"):
        ckpt.save(str(tmp_path / "c"))
    assert int(ckpt.save_counter.numpy()) == 1  # the failed save is not counted
    assert tf.train.latest_checkpoint(str(tmp_path)) == first
    assert not [f for f in os.listdir(tmp_path) if "tmp" in f or "tempstate" in f]
    tf.train.Checkpoint(v=v).restore(first).assert_consumed()
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_a_failed_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    real_add = bundle._add

    def add_then_fail(writer, key, value):
        real_add(writer, key, value)
        raise RuntimeError("crash while writing")
    monkeypatch.setattr(bundle, "_add", add_then_fail)
    with pytest.raises(RuntimeError, match="crash while writing"):
        tf.train.Checkpoint(v=tf.Variable(1.0)).write(str(tmp_path / "c"))
    assert os.listdir(tmp_path) == []


def test_slots_naming_objects_that_are_not_optimizers_are_ignored(tmp_path):
    nodes = [([("v", 1), ("n", 2)], [], [(1, "m", 1)]),
             ([], [("VARIABLE_VALUE", "v", KEY)], [(0, "m", 0)]),
             ([], [("VARIABLE_VALUE", "n", "n/.ATTRIBUTES/VARIABLE_VALUE")], [])]
    path = raw_checkpoint(str(tmp_path / "s"), [
        (KEY, "float32", [2, 3], np.arange(6, dtype=np.float32).tobytes()),
        ("n/.ATTRIBUTES/VARIABLE_VALUE", "int64", [], np.int64(7).tobytes())], nodes)
    restore_into_fresh(path).assert_existing_objects_matched()
