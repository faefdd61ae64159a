"""kiln.onnx.export's opset: None (the default) writes the lowest opset from 17 up that
covers the graph; an explicit opset is written as asked or refused with the opset to use."""
import numpy as np
import onnx
import pytest

import kiln as tf

ort = pytest.importorskip("onnxruntime")


def _opset(path):
    (imp,) = [o for o in onnx.load(str(path)).opset_import if o.domain == ""]
    return imp.version


@tf.function(input_signature=[tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.int32)])
def masked(a, b):
    return tf.bitwise.bitwise_and(a, b) + 1


@tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
def scaled(x):
    return x * 2.0


def test_default_opset_covers_bitwise_and_and_runs_in_onnxruntime(tmp_path):
    path = tf.onnx.export(masked, tmp_path / "masked.onnx")
    assert _opset(path) == 18  # BitwiseAnd needs 18: the lowest that covers the graph
    onnx.checker.check_model(str(path), full_check=True)
    a, b = np.array([12, 5, 7], np.int32), np.array([10, 4, 1], np.int32)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {"a": a, "b": b})
    np.testing.assert_array_equal(got, (a & b) + 1)
    np.testing.assert_array_equal(got, masked(a, b).numpy())


def test_default_opset_stays_17_when_nothing_needs_more(tmp_path):
    assert _opset(tf.onnx.export(scaled, tmp_path / "scaled.onnx")) == 17
    assert _opset(tf.onnx.export(scaled, tmp_path / "s.onnx", opset=None)) == 17


@pytest.mark.parametrize("opset", [18, 19])
def test_explicit_opset_is_written_as_asked(tmp_path, opset):
    assert _opset(tf.onnx.export(masked, tmp_path / f"m{opset}.onnx", opset=opset)) == opset
    assert _opset(tf.onnx.export(scaled, tmp_path / f"s{opset}.onnx", opset=opset)) == opset


def test_explicit_opset_too_low_says_which_to_pass(tmp_path):
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"BitwiseAnd needs opset 18.*export with opset=18 or more, or "
                             r"opset=None"):
        tf.onnx.export(masked, tmp_path / "low.onnx", opset=17)
    assert not (tmp_path / "low.onnx").exists()


def test_unmapped_ops_still_fail_with_the_default(tmp_path):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def noisy(x):
        return x + tf.random.uniform(tf.shape(x))

    with pytest.raises(tf.errors.InvalidArgumentError, match="no ONNX mapping"):
        tf.onnx.export(noisy, tmp_path / "noisy.onnx")
