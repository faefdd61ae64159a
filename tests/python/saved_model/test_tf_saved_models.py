"""SavedModels TensorFlow 2.21 wrote (tests/fixtures/tf_written/saved_models,
made by its make_fixtures.py) load in kiln: outputs, signatures, variables,
state updates, jit_compile, gradients."""
import os
import shutil

import numpy as np
import pytest

import kiln as tf

HERE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tf_written",
                    "saved_models")
E = np.load(os.path.join(HERE, "expected.npz"))


def load(name):
    return tf.saved_model.load(os.path.join(HERE, name))


def test_module_with_if_while_and_variables():
    m = load("module")
    out = m(tf.constant(E["module/x"]))
    np.testing.assert_allclose(out["y"].numpy(), E["module/y"], rtol=1e-6)
    np.testing.assert_allclose(out["total"].numpy(), E["module/total"], rtol=1e-6)
    np.testing.assert_allclose(m.w.numpy(), np.linspace(-1, 1, 6).reshape(3, 2), rtol=1e-6)
    assert int(m.steps.numpy()) == 1  # the function's assign_add ran
    m(tf.constant(E["module/x"]))
    assert int(m.steps.numpy()) == 2


def test_module_signature_keys_as_tensorflow_names_them():
    m = load("module")
    sig = m.signatures["serving_default"]
    out = sig(x=tf.constant(E["module/x"]))
    assert sorted(out) == ["total", "y"]
    np.testing.assert_allclose(out["y"].numpy(), E["module/y"], rtol=1e-6)


def test_gradients_through_if_and_while():
    m = load("module")
    x = tf.constant(E["module/x"])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(m(x)["y"])
    gw, gb = tape.gradient(y, [m.w, m.b])
    # y = sum over rows of 1.5^3 * relu-branch(xW + b) + constants, relu active
    h = E["module/x"] @ m.w.numpy() + m.b.numpy()
    active = (h > 0).astype(np.float32) if h.sum() > 0 else -np.ones_like(h)
    np.testing.assert_allclose(gw.numpy(), E["module/x"].T @ (3.375 * active), rtol=1e-5)
    np.testing.assert_allclose(gb.numpy(), (3.375 * active).sum(0), rtol=1e-5)


def test_jit_compile_function():
    m = load("jit_module")
    np.testing.assert_allclose(m(tf.constant(E["jit_module/x"])).numpy(), E["jit_module/y"],
                               rtol=1e-5, atol=1e-6)
    assert m.__call__.concrete_functions[0]._cf._jit_compile  # saved with jit_compile=True


def test_keras_cnn_export():
    m = load("keras_cnn")
    x = tf.constant(E["keras_cnn/x"])
    np.testing.assert_allclose(m.serve(x).numpy(), E["keras_cnn/y"], rtol=1e-5, atol=1e-6)
    out = m.signatures["serving_default"](x)
    np.testing.assert_allclose(out["output_0"].numpy(), E["keras_cnn/y"], rtol=1e-5, atol=1e-6)
    assert len(m.variables) == 12 and len(m.trainable_variables) == 10


def test_keras_cnn_gradients_match_tensorflow():
    m = load("keras_cnn")
    x = tf.constant(E["keras_cnn/x"])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(m.serve(x) * np.arange(5, dtype=np.float32))
    grads = tape.gradient(y, m.trainable_variables)
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g.numpy(), E[f"keras_cnn/grad{i}"], rtol=1e-4, atol=1e-6)


def test_keras_lstm_gru_export():
    m = load("keras_rnn")
    got = m.serve(tf.constant(E["keras_rnn/x"]))
    np.testing.assert_allclose(got.numpy(), E["keras_rnn/y"], rtol=1e-5, atol=1e-6)


def test_keras_export_takes_other_batch_sizes():
    m = load("keras_cnn")
    x = np.concatenate([E["keras_cnn/x"]] * 3)
    got = m.serve(tf.constant(x)).numpy()
    np.testing.assert_allclose(got[4:], E["keras_cnn/y"], rtol=1e-5, atol=1e-6)


def test_assets_are_bound_as_their_paths(tmp_path):
    d = copy_fixture(tmp_path, "asset_module")  # a copy: the path is the export's own
    m = tf.saved_model.load(str(d))
    assert m.vocab.asset_path.numpy().decode() == str(d / "assets" / "vocab.txt")
    words = tf.constant(E["asset_module/x"])
    assert m(words).numpy().tolist() == E["asset_module/y"].tolist()
    out = m.signatures["serving_default"](words=words)["output_0"]
    assert out.numpy().tolist() == E["asset_module/y"].tolist()
    (d / "assets" / "vocab.txt").write_bytes(b"edited\n")  # read when called, as TF does
    assert m(words).numpy()[0] == b"green|edited"


def test_missing_asset_file_is_a_clear_error(tmp_path):
    d = copy_fixture(tmp_path, "asset_module")
    os.remove(d / "assets" / "vocab.txt")
    with pytest.raises(tf.errors.InvalidArgumentError, match="asset file 'vocab.txt' is missing"):
        tf.saved_model.load(str(d))


def copy_fixture(tmp_path, name):
    dst = tmp_path / name
    shutil.copytree(os.path.join(HERE, name), dst)
    return dst


def test_damaged_variables_are_clear_errors(tmp_path):
    d = copy_fixture(tmp_path, "module")
    data = d / "variables" / "variables.data-00000-of-00001"
    raw = bytearray(data.read_bytes())
    raw[-1] ^= 0x10
    data.write_bytes(bytes(raw))
    with pytest.raises(tf.errors.DataLossError):
        tf.saved_model.load(str(d))


def test_truncated_graph_is_a_clear_error(tmp_path):
    d = copy_fixture(tmp_path, "keras_cnn")
    pb = d / "saved_model.pb"
    pb.write_bytes(pb.read_bytes()[:5000])
    with pytest.raises(tf.errors.DataLossError, match="truncated or corrupt"):
        tf.saved_model.load(str(d))


@pytest.mark.parametrize("jit", [False, True])
def test_keras_mixed_bfloat16_encoder_runs_fused(jit):
    # TensorFlow's graph of Keras 3's MultiHeadAttention writes each head product as
    # Reshape(BatchMatMulV2(Reshape, Reshape)) with the reshapes' shapes computed from
    # Shape ops; those fold, the products unfold to their batch dims and the attention
    # fuses (bf16 q, k, v; float32 scores), as kiln's own Keras layer does; the products'
    # biases and relu join them.
    m = load("keras_mha_bf16")
    x = tf.constant(E["keras_mha_bf16/x"])
    f = tf.function(lambda a: m.serve(a), jit_compile=jit)
    got = f(x).numpy()
    ops = [n.op for n in f.get_concrete_function(x).optimized_graph.get_operations()]
    assert ops.count("_FusedAttention") == 1 and "Softmax" not in ops, ops
    assert "Shape" not in ops and "GatherV2" not in ops, ops
    # Every bias and the relu join their products (through tensordot's and the heads'
    # Reshapes): the six products are _FusedMatMul, no BiasAdd or Relu is left.
    assert ops.count("_FusedMatMul") == 6 and "BiasAdd" not in ops and "Relu" not in ops, ops
    # Against the same weights in float32: no farther than TensorFlow's bf16 result
    # (which rounds the scores to bf16; the fused node keeps them in float32).
    exact, theirs = E["keras_mha_bf16/y_float32"], E["keras_mha_bf16/y"]
    rms = lambda d: float(np.sqrt(np.mean(np.square(d))))  # noqa: E731
    assert rms(got - exact) <= 1.1 * rms(theirs - exact), (rms(got - exact), rms(theirs - exact))
    np.testing.assert_allclose(got, exact, atol=0.03)
    np.testing.assert_allclose(got, theirs, atol=0.05)


@pytest.mark.parametrize("jit", [False, True])
def test_keras_mixed_bfloat16_convnet_runs_fused(jit):
    # TensorFlow's graph of Keras 3 convolution blocks under mixed_bfloat16: batch norms
    # in float32 between Casts, swish as Sigmoid and Mul, relu6 as where(y < 6, relu(y), 6)
    # (hard swish on it), residual Adds. Every step joins its convolution (bf16, the steps
    # on oneDNN's float32 accumulator): no op but the convolutions (and the input's Cast)
    # works on activations.
    m = load("keras_convnet_bf16")
    x = tf.constant(E["keras_convnet_bf16/x"])
    f = tf.function(lambda a: m.serve(a), jit_compile=jit)
    got = np.asarray(tf.cast(f(x), tf.float32).numpy())
    ops = f.get_concrete_function(x).optimized_graph.get_operations()
    convs = ("_FusedConv2D", "_FusedDepthwiseConv2dNative")
    assert sum(n.op in convs for n in ops) == 6, [n.op for n in ops]
    big = [(n.op, n.name) for n in ops if n.op not in convs + ("Placeholder", "Identity")
           and any(len(s) == 4 and s[0] == 2 and tuple(s) != x.shape for _, s in n.outputs)]
    assert not big, big
    # Against the same weights in float32: no farther than TensorFlow's bf16 result.
    exact, theirs = E["keras_convnet_bf16/y_float32"], E["keras_convnet_bf16/y"]
    rms = lambda d: float(np.sqrt(np.mean(np.square(d))))  # noqa: E731
    assert rms(got - exact) <= 1.1 * rms(theirs - exact), (rms(got - exact), rms(theirs - exact))
    np.testing.assert_allclose(got, theirs, rtol=2 ** -6, atol=0.05)  # two bf16 ulps
