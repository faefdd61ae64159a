"""TensorFlow's "TFRecord and tf.train.Example" tutorial, cell by cell with
`import kiln as tf` (run side by side with TensorFlow 2.21, the outputs matched
except the order of map entries in serialized bytes, which protobuf leaves open).
The tutorial's _int64_feature(True) fails on protobuf >= 6 for TensorFlow too
(bool is no longer an int there), so features go through int() as a current
reader would write them."""
import numpy as np

import kiln as tf


def _bytes_feature(value):
    if isinstance(value, type(tf.constant(0))):
        value = value.numpy()
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def _float_feature(value):
    return tf.train.Feature(float_list=tf.train.FloatList(value=[value]))


def _int64_feature(value):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


N = 300
feature0 = np.random.RandomState(0).choice([False, True], N)
feature1 = np.random.RandomState(1).randint(0, 5, N)
feature2 = np.array([b"cat", b"dog", b"chicken", b"horse", b"goat"])[feature1]
feature3 = np.random.RandomState(2).randn(N)


def serialize_example(f0, f1, f2, f3):
    feature = {"feature0": _int64_feature(int(f0)), "feature1": _int64_feature(int(f1)),
               "feature2": _bytes_feature(f2), "feature3": _float_feature(f3)}
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


DESCRIPTION = {
    "feature0": tf.io.FixedLenFeature([], tf.int64, default_value=0),
    "feature1": tf.io.FixedLenFeature([], tf.int64, default_value=0),
    "feature2": tf.io.FixedLenFeature([], tf.string, default_value=""),
    "feature3": tf.io.FixedLenFeature([], tf.float32, default_value=0.0),
}


def check(records):
    for i, r in enumerate(records):
        assert r["feature0"] == int(feature0[i]) and r["feature1"] == feature1[i]
        assert r["feature2"] == feature2[i]
        assert r["feature3"] == np.float32(feature3[i])


def test_features_and_messages():
    assert str(_bytes_feature(b"test_string")) == 'bytes_list {\n  value: "test_string"\n}\n'
    assert str(_int64_feature(1)) == "int64_list {\n  value: 1\n}\n"
    assert _float_feature(np.exp(1)).SerializeToString() == b"\x12\x06\n\x04T\xf8-@"
    example = tf.train.Example.FromString(serialize_example(False, 4, b"goat", 0.9876))
    assert example.features.feature["feature2"].bytes_list.value == [b"goat"]
    assert example.features.feature["feature1"].WhichOneof("kind") == "int64_list"


def test_dataset_write_read_parse(tmp_path):
    features_dataset = tf.data.Dataset.from_tensor_slices((feature0, feature1, feature2,
                                                           feature3))

    def tf_serialize_example(f0, f1, f2, f3):
        tf_string = tf.py_function(serialize_example, (f0, f1, f2, f3), tf.string)
        return tf.reshape(tf_string, ())

    serialized = features_dataset.map(tf_serialize_example)
    filename = str(tmp_path / "test.tfrecord")
    tf.data.experimental.TFRecordWriter(filename).write(serialized)

    def generator():
        for features in features_dataset:
            yield serialize_example(*features)

    gen = tf.data.Dataset.from_generator(generator, output_types=tf.string, output_shapes=())
    gen_file = str(tmp_path / "gen.tfrecord")
    tf.data.experimental.TFRecordWriter(gen_file).write(gen)
    assert open(gen_file, "rb").read() == open(filename, "rb").read()

    raw_dataset = tf.data.TFRecordDataset([filename])
    parsed = raw_dataset.map(lambda p: tf.io.parse_single_example(p, DESCRIPTION))
    check([{k: v.numpy() for k, v in r.items()} for r in parsed])


def test_python_writer_and_reading_back(tmp_path):
    filename = str(tmp_path / "py.tfrecord")
    with tf.io.TFRecordWriter(filename) as writer:
        for i in range(N):
            writer.write(serialize_example(feature0[i], feature1[i], feature2[i], feature3[i]))
    rows = []
    for raw_record in tf.data.TFRecordDataset([filename]):
        example = tf.train.Example()
        example.ParseFromString(raw_record.numpy())
        result = {}
        for key, feature in example.features.feature.items():
            kind = feature.WhichOneof("kind")
            result[key] = np.array(getattr(feature, kind).value)[0]
        rows.append(result)
    check(rows)
    batch = tf.data.TFRecordDataset([filename]).batch(N).map(
        lambda s: tf.io.parse_example(s, DESCRIPTION))
    (b,) = list(batch)
    np.testing.assert_array_equal(b["feature2"].numpy(), feature2)
    np.testing.assert_array_equal(b["feature3"].numpy(), feature3.astype(np.float32))
