"""tf.io.parse_sequence_example / parse_single_sequence_example on SequenceExamples
TensorFlow 2.21 serialized (hex below); expected values and error texts are TensorFlow's
for the same calls. Eagerly and inside a kiln.function."""
import numpy as np
import pytest

import kiln as tf
from ops_harness import as_list

# SequenceExamples: context {"len": [2]}, feature lists tokens [[1, 2], [3]] and
# scores [[0.5], [1.5]]; {"len": [1]}, tokens [[4, 5, 6]]; {"len": [0]}, tokens [] and
# scores [[2.5]] (TF 2.21's SerializeToString).
SERIALIZED = [bytes.fromhex(h) for h in (
    "0a0e0a0c0a036c656e12051a030a0102123b0a190a06746f6b656e73120f0a061a040a0201020a051a03"
    "0a01030a1e0a0673636f72657312140a0812060a040000003f0a0812060a040000c03f",
    "0a0e0a0c0a036c656e12051a030a010112150a130a06746f6b656e7312090a071a050a03040506",
    "0a0e0a0c0a036c656e12051a030a010012220a0a0a06746f6b656e7312000a140a0673636f726573120a"
    "0a0812060a0400002040")]
CONTEXT = {"len": tf.io.FixedLenFeature([], tf.int64)}


def _both(fn, *args):
    return [fn(*args), tf.function(fn, autograph=False)(*args)]


def test_batch_of_sequence_examples():
    def parse(s):
        return tf.io.parse_sequence_example(
            s, context_features=CONTEXT,
            sequence_features={"tokens": tf.io.VarLenFeature(tf.int64),
                               "scores": tf.io.FixedLenSequenceFeature(
                                   [], tf.float32, allow_missing=True)})

    for context, lists, lengths in _both(parse, tf.constant(SERIALIZED)):
        assert context["len"].numpy().tolist() == [2, 1, 0]
        tokens = lists["tokens"]
        assert tokens.indices.numpy().tolist() == [[0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0],
                                                   [1, 0, 1], [1, 0, 2]]
        assert tokens.values.numpy().tolist() == [1, 2, 3, 4, 5, 6]
        assert tokens.dense_shape.numpy().tolist() == [3, 2, 3]
        np.testing.assert_array_equal(lists["scores"].numpy(),
                                      [[0.5, 1.5], [0.0, 0.0], [2.5, 0.0]])
        assert lengths["scores"].numpy().tolist() == [2, 0, 1]
        assert list(lengths) == ["scores"]


def test_ragged_features_and_row_splits_dtype():
    for dtype in (tf.int64, tf.int32):
        def parse(s):
            return tf.io.parse_sequence_example(
                s, sequence_features={"tokens": tf.io.RaggedFeature(tf.int64,
                                                                    row_splits_dtype=dtype)})
        for _, lists, lengths in _both(parse, tf.constant(SERIALIZED)):
            assert as_list(lists["tokens"]) == [[[1, 2], [3]], [[4, 5, 6]], []]
            assert lists["tokens"].row_splits.dtype == dtype and lengths == {}


def test_single_sequence_example():
    def parse(s):
        return tf.io.parse_single_sequence_example(
            s, context_features=CONTEXT,
            sequence_features={"tokens": tf.io.VarLenFeature(tf.int64),
                               "scores": tf.io.FixedLenSequenceFeature([1], tf.float32),
                               "r": tf.io.RaggedFeature(tf.int64, value_key="r"),
                               "none": tf.io.FixedLenSequenceFeature([2], tf.int64,
                                                                     allow_missing=True),
                               "nv": tf.io.VarLenFeature(tf.string)})

    for context, lists in _both(parse, tf.constant(SERIALIZED[0])):
        assert context["len"].numpy() == 2
        assert lists["tokens"].indices.numpy().tolist() == [[0, 0], [0, 1], [1, 0]]
        assert lists["tokens"].dense_shape.numpy().tolist() == [2, 2]
        np.testing.assert_array_equal(lists["scores"].numpy(), [[0.5], [1.5]])
        assert lists["none"].shape == (0, 2)
        assert lists["nv"].dense_shape.numpy().tolist() == [0, 0]
        assert as_list(lists["r"]) == []
    # parse_sequence_example with a scalar: one example, without the batch dimension
    context, lists, lengths = tf.io.parse_sequence_example(
        tf.constant(SERIALIZED[0]), context_features=CONTEXT,
        sequence_features={"scores": tf.io.FixedLenSequenceFeature([], tf.float32)})
    assert context["len"].numpy() == 2 and lengths["scores"].numpy() == 2
    assert lists["scores"].numpy().tolist() == [0.5, 1.5]


def test_strings_of_missing_lists_are_empty():
    _, lists, lengths = tf.io.parse_sequence_example(
        SERIALIZED, sequence_features={"s": tf.io.FixedLenSequenceFeature(
            [], tf.string, allow_missing=True)})
    assert lists["s"].shape == (3, 0) and lengths["s"].numpy().tolist() == [0, 0, 0]


@pytest.mark.parametrize("features, text", [
    ({"scores": tf.io.FixedLenSequenceFeature([], tf.float32)},
     "Name: <unknown>, Feature list 'scores' is required but could not be found.  Did you "
     "mean to include it in feature_list_dense_missing_assumed_empty or "
     "feature_list_dense_defaults?"),
    ({"tokens": tf.io.FixedLenSequenceFeature([], tf.int64, allow_missing=True)},
     "Name: <unknown>, Key: tokens, Index: 0.  Number of values != expected.  values size: 2 "
     "but output shape: []"),
    ({"tokens": tf.io.VarLenFeature(tf.float32)},
     "Name: <unknown>, Feature list: tokens, Index: 0.  Data types don't match. Expected "
     "type: float"),
])
def test_tensorflows_errors(features, text):
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.io.parse_sequence_example(SERIALIZED, sequence_features=features)
    assert str(e.value).startswith(text) or text in str(e.value)


def test_hostile_bytes_are_clean_errors():
    rng = np.random.default_rng(5)
    good = SERIALIZED[0]
    spec = {"tokens": tf.io.VarLenFeature(tf.int64),
            "scores": tf.io.FixedLenSequenceFeature([], tf.float32, allow_missing=True)}
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid protocol message input"):
        tf.io.parse_sequence_example([b"\x12\x05\x0a\x03\x0a\x01"], sequence_features=spec)
    for _ in range(300):
        b = bytearray(good)
        if rng.random() < 0.5:
            b = b[:rng.integers(0, len(b))]
        else:
            for _ in range(rng.integers(1, 4)):
                b[rng.integers(0, len(b))] = int(rng.integers(0, 256))
        try:
            tf.io.parse_sequence_example([bytes(b)], sequence_features=spec)
        except tf.errors.InvalidArgumentError:
            pass


def test_spec_errors():
    with pytest.raises(ValueError, match="at least one"):
        tf.io.parse_sequence_example(SERIALIZED)
    with pytest.raises(ValueError, match=r"Value feature_list.dense_defaults\[s\] must be None"):
        tf.io.parse_sequence_example(SERIALIZED, sequence_features={
            "s": tf.io.FixedLenSequenceFeature([], tf.float32, allow_missing=True,
                                               default_value=-1.0)})
