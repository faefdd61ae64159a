"""kiln.onnx.export: exported models run in onnxruntime and agree with kiln (integers
exactly, floats within rtol 1e-5), and pass onnx.checker's full check."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest

import kiln as tf
from kiln import keras
from tests.python.seeds.test_seed000_charunpack import CharUnpack


def _run(path, *inputs):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, dict(zip(names, inputs)))


def _check(fn, path, *inputs, rtol=1e-5, atol=1e-6, kiln_fn=None):
    """Exports nothing: runs the model at `path` on `inputs` and compares with kiln."""
    onnx.checker.check_model(str(path), full_check=True)
    got = _run(path, *inputs)
    want = (kiln_fn or fn)(*inputs)
    want = want if isinstance(want, (list, tuple)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape
        if np.issubdtype(w.dtype, np.floating):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, w)
    return got


def test_charunpack_layer(tmp_path):
    layer = CharUnpack()
    fn = tf.function(layer.call, input_signature=[tf.TensorSpec([None, 400], tf.uint8)])
    path = tf.onnx.export(fn, tmp_path / "charunpack.onnx", opset=18)
    rng = np.random.default_rng(0)
    for n in (1, 5):  # None batch: two batch sizes
        data = rng.integers(0, 256, size=(n, 400), dtype=np.uint8)
        (got,) = _check(lambda x: fn(x).numpy(), path, data)
        assert got.shape == (n, 3200) and got.dtype == np.float32


def test_charunpack_needs_opset_18_for_bitwise_and(tmp_path):
    fn = tf.function(CharUnpack().call, input_signature=[tf.TensorSpec([None, 400], tf.uint8)])
    with pytest.raises(tf.errors.InvalidArgumentError, match="BitwiseAnd.*opset 18"):
        tf.onnx.export(fn, tmp_path / "c.onnx", opset=17)


def test_digits_mlp_none_batch(tmp_path):
    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(32, activation="relu"),
                              keras.layers.Dense(10, activation="softmax")])
    path = tf.onnx.export(model, tmp_path / "mlp.onnx")
    rng = np.random.default_rng(1)
    for n in (3, 7):
        x = rng.standard_normal((n, 64)).astype(np.float32)
        _check(lambda v: model(v, training=False).numpy(), path, x)


def test_computed_shift_counts_are_clamped_as_kiln_does(tmp_path):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.uint8)] * 2)
    def f(x, n):
        return (tf.bitwise.right_shift(x, n), tf.bitwise.left_shift(x, n),
                tf.bitwise.bitwise_xor(x, n), tf.bitwise.invert(x))

    path = tf.onnx.export(f, tmp_path / "shift.onnx", opset=18)
    x = np.array([255, 128, 7, 1, 200], np.uint8)
    n = np.array([0, 3, 7, 8, 200], np.uint8)  # 8 and 200 shift by 7
    _check(lambda a, b: [t.numpy() for t in f(a, b)], path, x, n)


def test_keras_conv_model(tmp_path):
    model = keras.Sequential([
        keras.Input((16, 16, 3)),
        keras.layers.Conv2D(8, 3, padding="same", activation="relu"),
        keras.layers.BatchNormalization(),
        keras.layers.MaxPooling2D(2),
        keras.layers.DepthwiseConv2D(3, padding="valid"),
        keras.layers.AveragePooling2D(2, padding="same"),
        keras.layers.Flatten(),
        keras.layers.Dense(10, activation="softmax"),
    ])
    path = tf.onnx.export(model, tmp_path / "conv.onnx")
    x = np.random.default_rng(2).standard_normal((2, 16, 16, 3)).astype(np.float32)
    _check(lambda v: model(v, training=False).numpy(), path, x)



def test_bfloat16_convolutions_run_on_float_between_casts(tmp_path):
    # kiln runs bf16 convolutions natively; ONNX's Conv has no bf16, so the export
    # casts around it (onnxruntime: float32 products of the same bf16 values).
    rng = np.random.default_rng(5)
    w = tf.constant(rng.standard_normal((3, 3, 4, 8)).astype(np.float32) * 0.3)
    d = tf.constant(rng.standard_normal((3, 3, 8, 1)).astype(np.float32) * 0.3)

    @tf.function(input_signature=[tf.TensorSpec([None, 9, 9, 4], tf.float32)])
    def f(x):
        y = tf.nn.conv2d(tf.cast(x, tf.bfloat16), tf.cast(w, tf.bfloat16), 1, "SAME")
        y = tf.nn.depthwise_conv2d(y, tf.cast(d, tf.bfloat16), [1, 1, 1, 1], "VALID")
        return tf.cast(y, tf.float32)

    path = tf.onnx.export(f, tmp_path / "bf16_conv.onnx")
    x = rng.standard_normal((2, 9, 9, 4)).astype(np.float32)
    _check(lambda v: f(v).numpy(), path, x, rtol=2e-2, atol=2e-2)

def test_bfloat16_products_run_on_float_between_casts(tmp_path):
    # kiln runs bf16 MatMuls natively; onnxruntime's CPU MatMul has no bf16, so the
    # export casts around them (float32 products of the same bf16 values).
    rng = np.random.default_rng(6)
    w = tf.constant(rng.standard_normal((8, 6)).astype(np.float32) * 0.3)

    @tf.function(input_signature=[tf.TensorSpec([None, 5, 8], tf.float32)])
    def f(x):
        xb = tf.cast(x, tf.bfloat16)
        y = tf.matmul(xb, tf.cast(w, tf.bfloat16))
        y = tf.matmul(y, xb, transpose_a=True)
        return tf.cast(y, tf.float32)

    path = tf.onnx.export(f, tmp_path / "bf16_matmul.onnx")
    x = rng.standard_normal((2, 5, 8)).astype(np.float32)
    _check(lambda v: f(v).numpy(), path, x, rtol=2e-2, atol=2e-2)


def test_while_loop_of_tanh(tmp_path):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(x):
        i = tf.constant(0)
        _, y = tf.while_loop(lambda i, y: i < 5, lambda i, y: (i + 1, tf.tanh(y) * 1.5), [i, x])
        return y

    path = tf.onnx.export(f, tmp_path / "loop.onnx")
    x = np.linspace(-2, 2, 7).astype(np.float32)
    _check(lambda v: f(v).numpy(), path, x)


def test_cond_becomes_if(tmp_path):
    @tf.function(input_signature=[tf.TensorSpec([3], tf.float32)])
    def f(x):
        return tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: -x)

    path = tf.onnx.export(f, tmp_path / "if.onnx")
    model = onnx.load(str(path))
    assert "If" in [n.op_type for n in model.graph.node]
    for x in (np.array([1, 2, 3], np.float32), np.array([-1, -2, 0.5], np.float32)):
        _check(lambda v: f(v).numpy(), path, x)


def test_variables_become_initializers(tmp_path):
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="weights")
    b = tf.Variable(np.array([0.5, -1], np.float32), name="bias")

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def f(x):
        return tf.matmul(x, w) + b

    path = tf.onnx.export(f, tmp_path / "vars.onnx", output_names=["y"])
    model = onnx.load(str(path))
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    np.testing.assert_array_equal(inits["weights"], w.numpy())
    assert [i.name for i in model.graph.input] == ["x"]
    assert [o.name for o in model.graph.output] == ["y"]
    x = np.ones((4, 3), np.float32)
    _check(lambda v: f(v).numpy(), path, x)


def test_concrete_function_and_elementwise_ops(tmp_path):
    @tf.function
    def f(x, k):
        a = tf.sqrt(tf.abs(x)) + tf.math.rsqrt(tf.abs(x) + 1.0) - tf.square(x)
        b = tf.maximum(x, 0.5) * tf.minimum(x, -0.5) + tf.clip_by_value(x, -1.0, 1.0)
        c = tf.where(x > 0, tf.exp(-x), tf.math.log(tf.abs(x) + 1.0))
        d = tf.floor(x) + tf.math.ceil(x) + tf.sign(x) + tf.sin(x) * tf.cos(x)
        s = tf.reduce_mean(a + b, axis=1, keepdims=True) + tf.reduce_max(c, axis=0)
        t = tf.concat([s, d], axis=1)[:, 1:3]
        return t, tf.argmax(x, axis=1), tf.reduce_sum(k * 2, axis=0), tf.transpose(x)

    cf = f.get_concrete_function(tf.TensorSpec([None, 4], tf.float32),
                                 tf.TensorSpec([3, 2], tf.int32))
    path = tf.onnx.export(cf, tmp_path / "ops.onnx")
    x = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)
    k = np.arange(6, dtype=np.int32).reshape(3, 2)
    _check(lambda a, b: [t.numpy() for t in cf(a, b)], path, x, k)


def _export_and_check(fn, tmp_path, *args, opset=17):
    """Traces ``fn`` with a free first dim, exports it and compares on ``args``."""
    specs = [tf.TensorSpec([None] + list(a.shape[1:]), tf.as_dtype(a.dtype)) for a in args]
    cf = fn.get_concrete_function(*specs)
    path = tf.onnx.export(cf, tmp_path / f"{cf.name}_{opset}.onnx", opset=opset)

    def run(*values):
        out = cf(*values)
        return [t.numpy() for t in (out if isinstance(out, (list, tuple)) else [out])]

    return _check(run, path, *args)


@tf.function
def _shape_ops(x, i):
    parts = tf.split(x, 2, axis=1)
    values, indices = tf.math.top_k(x, k=2)
    return (tf.stack([x, x * 2], axis=1), tf.slice(x, [0, 1], [-1, 2]),
            tf.gather(x, [2, 0], axis=1), tf.tile(x, [1, 2]),
            tf.pad(x, [[1, 0], [0, 2]], constant_values=3.0),
            tf.fill(tf.shape(x), 7.0) + tf.zeros_like(x) + tf.ones_like(x),
            tf.cast(tf.range(0, 5), tf.float32), tf.one_hot(i, 4),
            tf.math.cumsum(x, axis=1, exclusive=True, reverse=True), values, indices,
            parts[0], parts[1], tf.unstack(x, axis=1)[3], tf.reshape(x, [-1, 2, 2]),
            tf.where(x > 0.5), x[:, 1], x[1:, ::2], x[..., -1], x[:, tf.newaxis, 1:3],
            x[::-1, ::-2], x[-2:, :-1])


@tf.function
def _math_ops(x, y, k):
    return (x // y, x % y, k // 3, k % -3, tf.pow(tf.abs(x), y), x != y, x <= y, x >= y,
            tf.reduce_any(x > 0, axis=1), tf.reduce_all(x > -5),
            tf.argmin(x, axis=0, output_type=tf.int32), tf.nn.log_softmax(x),
            tf.reduce_prod(x, axis=1), tf.reduce_min(x, axis=[0, 1]),
            tf.math.squared_difference(x, y), tf.math.expm1(y), tf.math.log1p(tf.abs(x)),
            tf.math.is_finite(x), tf.nn.relu(k), tf.round(x * 3),
            tf.math.logical_xor(x > 0, y > 0), tf.size(x), tf.rank(x),
            tf.matmul(x, y, transpose_b=True), tf.nn.sigmoid(x), tf.maximum(k, 2))


def test_shape_and_slicing_ops(tmp_path):
    x = np.random.default_rng(5).uniform(-1, 1, (3, 4)).astype(np.float32)
    _export_and_check(_shape_ops, tmp_path, x, np.array([0, 3, 1], np.int32))


@pytest.mark.parametrize("opset", [11, 13, 17, 18])
def test_math_ops_across_opsets(tmp_path, opset):
    rng = np.random.default_rng(6)
    x = rng.uniform(-3, 3, (3, 4)).astype(np.float32)
    y = rng.uniform(0.5, 2, (3, 4)).astype(np.float32)
    k = np.array([[-7, 5, 9, -1]], np.int32).repeat(3, 0)
    _export_and_check(_math_ops, tmp_path, x, y, k, opset=opset)


def test_dynamic_rnn_tensor_array_becomes_sequences(tmp_path):
    rs = np.random.RandomState(0)
    w = tf.Variable(rs.uniform(-0.5, 0.5, (3, 4)).astype(np.float32))
    u = tf.Variable(rs.uniform(-0.5, 0.5, (4, 4)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 5, 3], tf.float32),
                                  tf.TensorSpec([None, 4], tf.float32)])
    def dynamic_rnn(input_data, initial_state):
        input_data = tf.transpose(input_data, [1, 0, 2])
        states = tf.TensorArray(tf.float32, size=input_data.shape[0])
        state = initial_state
        for i in tf.range(input_data.shape[0]):
            state = tf.tanh(tf.matmul(input_data[i], w) + tf.matmul(state, u))
            states = states.write(i, state)
        return tf.transpose(states.stack(), [1, 0, 2])

    path = tf.onnx.export(dynamic_rnn, tmp_path / "rnn.onnx")
    ops = [n.op_type for n in onnx.load(str(path)).graph.node]
    assert "Loop" in ops and "ConcatFromSequence" in ops
    for n in (2, 3):
        x = rs.uniform(0, 1, (n, 5, 3)).astype(np.float32)
        h = np.zeros((n, 4), np.float32)
        _check(lambda a, b: dynamic_rnn(a, b).numpy(), path, x, h)


def test_tensor_array_unstack_read_and_size(tmp_path):
    @tf.function(input_signature=[tf.TensorSpec([4, 2], tf.float32)])
    def f(x):
        ta = tf.TensorArray(tf.float32, size=4).unstack(x)
        return ta.read(2) * 2.0, ta.size(), ta.stack() + 1.0

    path = tf.onnx.export(f, tmp_path / "ta.onnx")
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    _check(lambda v: [t.numpy() for t in f(v)], path, x)


def test_efficientnetv2s_small_input(tmp_path):
    model = keras.applications.EfficientNetV2S(weights=None, input_shape=(64, 64, 3), classes=10)
    path = tf.onnx.export(model, tmp_path / "effnet.onnx")
    x = np.random.default_rng(4).uniform(0, 255, (1, 64, 64, 3)).astype(np.float32)
    _check(lambda v: model(v, training=False).numpy(), path, x)


def test_unsupported_ops_are_listed(tmp_path):
    @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
    def f(x):
        tf.print("x:", x)
        return tf.strings.to_number(tf.strings.as_string(x)) + x

    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.onnx.export(f, tmp_path / "bad.onnx")
    for op in ("PrintV2", "AsString", "StringToNumber"):
        assert op in str(e.value)
    assert not (tmp_path / "bad.onnx").exists()


def test_function_with_one_trace_and_round_trip_through_kiln_onnx_load(tmp_path):
    @tf.function
    def f(x):
        i = tf.constant(0)
        _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, tf.tanh(y) * 1.5), [i, x])
        return tf.cond(tf.reduce_sum(y) > 0, lambda: y * 2.0, lambda: -y)

    x = np.linspace(-2, 2, 7).astype(np.float32)
    want = f(x).numpy()  # the one trace export picks
    path = tf.onnx.export(f, tmp_path / "rt.onnx")
    (got,) = tf.onnx.load(str(path))(x)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    f(np.zeros(3, np.float64))  # a second trace: which one to export is ambiguous
    with pytest.raises(ValueError, match="2 concrete functions"):
        tf.onnx.export(f, tmp_path / "two.onnx")
