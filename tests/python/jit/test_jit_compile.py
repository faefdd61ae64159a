"""kiln.function(jit_compile=True): compiled fused kernels that agree with graph mode,
TensorFlow's experimental_get_compiler_ir, the unsupported-op error, gradients, control
flow and Keras (the cache and the compiler: test_jit_cache.py)."""

import inspect
import os
import subprocess
import sys

import numpy as np
import pytest

import kiln as tf


def both(fn, **kw):
    return tf.function(fn, jit_compile=True, **kw), tf.function(fn, **kw)


def kernels(f, *args):
    return f.get_concrete_function(*args)._cf._jit_kernels


def test_float_chain_matches_graph_mode():
    def fn(x, y):
        return tf.nn.relu(x * y - 0.5) + tf.sigmoid(x) / (1.0 + tf.abs(y))

    j, g = both(fn)
    x = tf.constant(np.random.RandomState(0).randn(33, 65).astype(np.float32))
    y = tf.constant(np.random.RandomState(1).randn(65).astype(np.float32))
    np.testing.assert_allclose(j(x, y).numpy(), g(x, y).numpy(), rtol=1e-6, atol=1e-6)
    # 1 + |y| is computed once per column in its own kernel, not per element.
    assert kernels(j, x, y) == 2
    ir = j.experimental_get_compiler_ir(x, y)("optimized_hlo")
    assert "over [65]" in ir and "over [33,65]" in ir


def test_char_unpack_seed_000_is_bit_exact():
    # The seed's CharUnpack layer: expand_dims, right_shift, bitwise_and, reshape, cast.
    def char_unpack(x):
        bits = tf.bitwise.bitwise_and(
            tf.bitwise.right_shift(tf.expand_dims(x, -1), tf.constant([7, 6, 5, 4, 3, 2, 1, 0],
                                                                      tf.uint8)), 1)
        return tf.cast(tf.reshape(bits, [tf.shape(x)[0], -1]), tf.float32)

    j, g = both(char_unpack)
    x = tf.constant(np.random.RandomState(2).randint(0, 256, (64, 400)).astype(np.uint8))
    want = np.unpackbits(x.numpy(), axis=-1).astype(np.float32)
    np.testing.assert_array_equal(j(x).numpy(), want)
    np.testing.assert_array_equal(g(x).numpy(), want)
    # One kernel: the reshape relabels the points, the output is written once.
    assert kernels(j, x) == 1
    assert "over [64,400,8]" in j.experimental_get_compiler_ir(x)("optimized_hlo")


def test_reshape_between_ops_with_a_full_size_operand_after_it():
    # After the reshape, `y` is read in the [6, 4] layout: the cluster is
    # relabelled into [2, 3, 4] and reads `y` reshaped alike (the same flat
    # index), one kernel per output.
    def fn(x, y):
        return tf.reshape(tf.exp(x) * 2.0, [6, 4]) + y, tf.reshape(x * 3.0 - 1.0, [4, 6]) * 2.0

    j, g = both(fn)
    x = tf.constant(np.random.RandomState(8).randn(2, 3, 4).astype(np.float32))
    y = tf.constant(np.arange(24, dtype=np.float32).reshape(6, 4))
    for got, want in zip(j(x, y), g(x, y)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert kernels(j, x, y) == 2


def test_integer_and_bool_ops_are_exact():
    def fn(a, b):
        q = tf.math.floordiv(a, b) + tf.math.floormod(a, b) * 3
        return tf.where(a > b, q, -q), tf.logical_xor(a > 0, b > 2)

    j, g = both(fn)
    rs = np.random.RandomState(3)
    a = tf.constant(rs.randint(-50, 50, (7, 9)).astype(np.int32))
    b = tf.constant(rs.randint(1, 6, (9,)).astype(np.int32))
    for got, want in zip(j(a, b), g(a, b)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.fixture
def strict_halves():
    old = tf.config.experimental.set_jit_excess_precision(False)
    yield
    tf.config.experimental.set_jit_excess_precision(old)


@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16])
def test_half_chains_round_once_per_op_like_graph_mode(dtype, strict_halves):
    # Without excess precision each op computes in float32 and rounds to the
    # half dtype; the kernel does the same, so results are bit-exact, edge
    # values included.
    def fn(x, w):
        y = tf.tanh(x * w + tf.constant(0.5, dtype)) * x
        return tf.nn.relu(y - w), tf.cast(y, tf.int32), tf.cast(x, tf.float32) * 3.0

    j, g = both(fn)
    rs = np.random.RandomState(12)
    vals = np.concatenate([rs.randn(60) * 300, [0.0, -0.0, 6e-8, 65504, 70000, np.inf, -np.inf,
                                                 np.nan, 2049, 1e-3]]).astype(np.float32)
    x = tf.cast(tf.constant(vals.reshape(7, 10)), dtype)
    w = tf.cast(tf.constant(rs.randn(10).astype(np.float32)), dtype)
    for got, want in zip(j(x, w), g(x, w)):
        assert got.dtype == want.dtype
        a, b = got.numpy(), want.numpy()
        if a.dtype.itemsize == 2:
            a, b = a.view(np.uint16), b.view(np.uint16)
        np.testing.assert_array_equal(a, b)
    assert kernels(j, x, w) >= 1
    assert f"{dtype.name} load" in j.experimental_get_compiler_ir(x, w)("hlo")


@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16])
def test_half_rows_of_every_width_match_graph_mode(dtype, strict_halves):
    # A scale, activation and shift over half rows: the last (cols % 16)
    # points of each row run in a loop of their own (8-point vectors); every
    # width around the vector sizes is bit-exact with graph mode (no multiply
    # feeds an add, which the kernel could contract into an FMA).
    def fn(x, s, b):
        return tf.cast(tf.nn.relu(tf.cast(x, tf.float32) * s) - b, dtype)

    j, g = both(fn)
    rs = np.random.RandomState(3)
    for cols in (1, 7, 8, 9, 15, 16, 17, 24, 31, 40, 72, 88):
        x = tf.cast(tf.constant(rs.randn(6, 5, cols).astype(np.float32) * 4), dtype)
        s = tf.constant(rs.uniform(0.5, 1.5, cols).astype(np.float32))
        b = tf.constant(rs.randn(cols).astype(np.float32))
        got, want = j(x, s, b).numpy(), g(x, s, b).numpy()
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16), err_msg=str(cols))
    source = j.experimental_get_compiler_ir(x, s, b)("source")
    assert "kiln:tail" in source


def _half_chain(x):
    xb = tf.cast(x, tf.bfloat16)
    return tf.cast(tf.tanh(xb * xb + tf.constant(0.5, tf.bfloat16)) * xb, tf.float32)


def test_half_chains_keep_excess_precision_by_default():
    # As XLA (xla_allow_excess_precision): inside a kernel the chain stays in
    # float32, rounded once to bfloat16 at the end, so it is closer to float64.
    assert tf.config.experimental.get_jit_excess_precision() is True
    x = np.random.RandomState(5).uniform(-3, 3, (40, 50)).astype(np.float32)
    j, g = both(_half_chain)
    got, graph = j(tf.constant(x)).numpy(), g(tf.constant(x)).numpy()
    x64 = x.astype(np.float64)
    ref = np.tanh(x64 * x64 + 0.5) * x64
    np.testing.assert_allclose(got, ref, rtol=2 ** -7, atol=1e-30)  # one bf16 rounding
    assert np.abs(got - ref).sum() < np.abs(graph - ref).sum()
    source = j.experimental_get_compiler_ir(tf.constant(x))("source")
    assert source.count("f32_to_bf16(") == 1


def test_xla_flags_turn_excess_precision_off():
    # TensorFlow's switch, read from the environment: kernels then round every op.
    code = (f"import numpy as np, kiln as tf\n{_chain_source()}\n"
            "x = tf.constant(np.random.RandomState(5).uniform(-3, 3, (40, 50)).astype(np.float32))\n"
            "j, g = tf.function(_half_chain, jit_compile=True), tf.function(_half_chain)\n"
            "assert (j(x).numpy() == g(x).numpy()).all()\n"
            "print('ok')\n")
    env = dict(os.environ, XLA_FLAGS="--xla_cpu_foo=1 --xla_allow_excess_precision=false")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def _chain_source():
    return inspect.getsource(_half_chain)


@pytest.mark.parametrize("dtype", [tf.complex64, tf.complex128])
def test_complex_chains_compile_and_match_numpy(dtype):
    # Arithmetic, parts, conj, abs and casts of complex values: one kernel
    # (GCC's __complex__ types), within a few ulp of graph mode and numpy.
    def fn(z, w, r):
        u = z * w - z / (w + tf.cast(1.5, dtype)) + tf.cast(r, dtype)
        v = tf.complex(tf.math.real(u) * 2, tf.math.imag(tf.math.conj(u)))
        return tf.math.abs(v) + tf.cast(v, r.dtype)

    part = np.float32 if dtype == tf.complex64 else np.float64
    rs = np.random.RandomState(13)
    z = (rs.randn(20, 30) + 1j * rs.randn(20, 30)).astype(dtype.as_numpy_dtype)
    w = (rs.randn(30) + 2 + 1j * rs.randn(30)).astype(dtype.as_numpy_dtype)
    r = rs.randn(20, 30).astype(part)
    j, g = both(fn)
    u = z * w - z / (w + 1.5) + r
    v = (u.real * 2) - 1j * u.imag
    want = np.abs(v) + v.real
    tol = 1e-5 if dtype == tf.complex64 else 1e-12  # |v| + re(v) may cancel: absolute
    np.testing.assert_allclose(j(z, w, r).numpy(), want, rtol=tol, atol=tol)
    np.testing.assert_allclose(j(z, w, r).numpy(), g(z, w, r).numpy(), rtol=tol, atol=tol)
    assert kernels(j, z, w, r) == 1
    assert f"{dtype.name} Mul" in j.experimental_get_compiler_ir(z, w, r)("hlo")


def test_complex128_moves_in_every_mode():
    # Transposes, slices and concatenation of 16-byte values (complex128's
    # copies had no element type before), eagerly, traced and compiled.
    rs = np.random.RandomState(14)
    z = (rs.randn(40, 70) + 1j * rs.randn(40, 70)).astype(np.complex128)

    def fn(z):
        return tf.concat([tf.transpose(z) * 2, tf.transpose(z[:, ::-1])], 0)

    want = np.concatenate([z.T * 2, z[:, ::-1].T], 0)
    np.testing.assert_array_equal(fn(tf.constant(z)).numpy(), want)
    j, g = both(fn)
    np.testing.assert_array_equal(g(z).numpy(), want)
    np.testing.assert_array_equal(j(z).numpy(), want)


def layer_norm(x, gamma, beta):
    mean, var = tf.nn.moments(x, [-1], keepdims=True)
    return tf.nn.batch_normalization(x, mean, var, beta, gamma, 1e-3)


def test_softmax_and_layer_norm_are_row_kernels():
    def fn(x, gamma, beta, bias):
        m = tf.reduce_max(x, axis=-1, keepdims=True)
        e = tf.exp(x - m)
        by_hand = e / tf.reduce_sum(e, axis=-1, keepdims=True)
        return by_hand, tf.nn.softmax(x + bias) * 2.0, layer_norm(x, gamma, beta)

    spec = [tf.TensorSpec([None, 96], tf.float32), tf.TensorSpec([96], tf.float32),
            tf.TensorSpec([96], tf.float32), tf.TensorSpec([96], tf.float32)]
    j, g = both(fn, input_signature=spec)
    rs = np.random.RandomState(8)
    for rows in (1, 5, 130):
        args = [tf.constant(rs.randn(rows, 96).astype(np.float32) * 3)] + [
            tf.constant(rs.randn(96).astype(np.float32)) for _ in range(3)]
        for got, want in zip(j(*args), g(*args)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    # Three kernels, one per row computation; each folds its rows in place.
    assert kernels(j, *args) == 3
    hlo = j.experimental_get_compiler_ir(*args)("hlo")
    assert "reducing the last 1" in hlo and "reduce Maximum" in hlo and "reduce AddV2" in hlo
    assert "passes" in j.experimental_get_compiler_ir(*args)("source")


def test_gradient_of_a_jit_layer_norm_matches_graph_mode():
    rs = np.random.RandomState(9)
    x = tf.Variable(rs.randn(6, 32).astype(np.float32))
    gamma = tf.Variable(rs.randn(32).astype(np.float32))
    beta = tf.Variable(rs.randn(32).astype(np.float32))
    grads = []
    for jit in (True, False):
        @tf.function(jit_compile=jit)
        def loss():
            return tf.reduce_sum(tf.nn.softmax(layer_norm(x, gamma, beta)) * tf.range(32.0))

        with tf.GradientTape() as tape:
            value = loss()
        grads.append([value.numpy()] + [t.numpy() for t in tape.gradient(value, [x, gamma, beta])])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_compiler_ir_stages():
    @tf.function(jit_compile=True)
    def fn(x):
        return tf.exp(x) * 2.0 + 1.0

    x = tf.ones([4])
    ir = fn.experimental_get_compiler_ir(x)
    assert "Exp" in ir(stage="hlo") and "kernel" in ir()
    assert "kernel" in ir(stage="optimized_hlo")
    src = ir(stage="source")
    assert "kiln::fn::Exp{}" in src and "#include <cmath>" not in src
    with pytest.raises(ValueError, match="valid stages are 'hlo', 'optimized_hlo', 'source'"):
        ir(stage="llvm")
    with pytest.raises(ValueError, match="jit_compile=True"):
        tf.function(lambda x: x + 1).experimental_get_compiler_ir(x)()


def test_unsupported_ops_are_named_with_their_line():
    @tf.function(jit_compile=True)
    def fn(x):
        tf.print(x)
        return tf.strings.as_string(x)

    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        fn(tf.constant([1.0]))
    msg = str(e.value)
    assert "Detected unsupported operations" in msg and "jit_compile=True" in msg
    assert "PrintV2" in msg and "AsString" in msg
    assert "test_jit_compile.py" in msg


def test_unsupported_ops_in_a_nested_function_are_found():
    @tf.function
    def inner(x):
        tf.print("inner", x)
        return x * 2.0

    @tf.function(jit_compile=True)
    def outer(x):
        return inner(x) + 1.0

    with pytest.raises(tf.errors.InvalidArgumentError, match="PrintV2"):
        outer(tf.constant([1.0]))


def test_none_dims_never_retrace_and_match():
    spec = [tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([None, 3], tf.float32)]

    def fn(x, y):
        return tf.tanh(x + y) * y

    j, g = both(fn, input_signature=spec)
    for n, m in [(1, 1), (5, 5), (1, 7), (7, 1), (0, 1)]:
        x = tf.constant(np.random.RandomState(n).randn(n, 3).astype(np.float32))
        y = tf.constant(np.random.RandomState(m + 9).randn(m, 3).astype(np.float32))
        np.testing.assert_allclose(j(x, y).numpy(), g(x, y).numpy(), rtol=1e-6, atol=1e-6)
    assert j.experimental_get_tracing_count() == 1


def test_gradients_through_a_jit_function():
    @tf.function(jit_compile=True)
    def fn(x):
        return tf.reduce_sum(tf.sigmoid(x) * x)

    x = tf.Variable([[-1.0, 0.5, 2.0]])
    with tf.GradientTape() as tape:
        y = fn(x)
    s = 1 / (1 + np.exp(-x.numpy()))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), s + x.numpy() * s * (1 - s),
                               rtol=1e-5)


def test_train_step_with_optimizer_matches_graph_mode():
    rs = np.random.RandomState(5)
    xs = tf.constant(rs.randn(32, 4).astype(np.float32))
    ys = tf.constant(rs.randn(32, 1).astype(np.float32))
    results = []
    for jit in (True, False):
        w = tf.Variable(tf.zeros([4, 1]))
        b = tf.Variable(tf.zeros([1]))
        opt = tf.keras.optimizers.Adam(0.1)

        @tf.function(jit_compile=jit)
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
            opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
            return loss

        losses = [float(step(xs, ys)) for _ in range(5)]
        results.append((losses, w.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-6)


def test_while_loop_and_cond_inside():
    def fn(x):
        i = tf.constant(0)
        while i < 3:
            x = tf.tanh(x) * 1.5 + 0.1
            i += 1
        if tf.reduce_sum(x) > 0:
            x = x * 2.0 - 1.0
        else:
            x = -x
        return x

    j, g = both(fn)
    x = tf.constant(np.linspace(-2, 2, 12).astype(np.float32))
    np.testing.assert_allclose(j(x).numpy(), g(x).numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(j(-x).numpy(), g(-x).numpy(), rtol=1e-6, atol=1e-6)
    # The loop body and the branches are compiled too.
    assert kernels(j, x) >= 2


def test_unsupported_op_in_a_branch_is_named_with_its_line():
    @tf.function(jit_compile=True)
    def fn(x):
        if tf.reduce_sum(x) > 0:
            tf.print(x)
            x = x * 2.0
        return x

    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"(?s)unsupported operations.*PrintV2.*test_jit_compile.py:\d+"):
        fn(tf.constant([1.0, 2.0]))


def test_keras_fit_with_jit_compile():
    rs = np.random.RandomState(6)
    x = rs.randn(64, 8).astype(np.float32)
    y = rs.randint(0, 3, 64)
    histories = []
    for jit in (True, False):
        tf.keras.utils.set_random_seed(1)
        model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"),
                                     tf.keras.layers.Dense(3)])
        model.compile(optimizer="adam", jit_compile=jit,
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        histories.append(model.fit(x, y, epochs=2, batch_size=16, verbose=0,
                                   shuffle=False).history["loss"])
    np.testing.assert_allclose(histories[0], histories[1], rtol=1e-5)


@pytest.mark.parametrize("perm", [[1, 0, 2], [2, 0, 1], [0, 2, 1], [1, 2, 0], [2, 1, 0]])
def test_transposes_of_inputs_fuse_in_place_or_in_tiles(perm):
    # x[t, b, :] read as [b, t, :] in place: an LSTM-style time-major swap.
    # A swap of the inner two dims ([0, 2, 1], [1, 2, 0]; [2, 0, 1], whose
    # last two dims read x's first two in order and merge) is read in tiles;
    # [2, 1, 0] comes back to each line once per row: a Transpose call.
    def fn(x, w):
        return tf.tanh(tf.transpose(x, perm) * w + 0.5)

    j, g = both(fn)
    x = tf.constant(np.random.RandomState(3).randn(5, 6, 7).astype(np.float32))
    w = tf.constant(np.random.RandomState(4).randn(np.array(x.shape)[perm][-1]).astype(np.float32))
    want = np.tanh(np.transpose(x.numpy(), perm) * w.numpy() + 0.5)
    np.testing.assert_allclose(j(x, w).numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g(x, w).numpy(), want, rtol=1e-5, atol=1e-6)
    ir = j.experimental_get_compiler_ir(x, w)("hlo")
    assert ("read through Transpose" in ir) == (perm != [2, 1, 0]), ir


@pytest.mark.parametrize("which", ["transpose", "slice", "split"])
def test_views_of_computed_values_move_onto_the_inputs(which):
    # The view moves ahead of the elementwise ops it reads (sink_views):
    # one kernel reads x through it, and the value is never written out.
    def fn(x):
        t = tf.tanh(x * 3.0) * 2.0
        if which == "transpose":
            return tf.transpose(t) + 1.0
        if which == "slice":
            return t[:, ::2] + 1.0
        i, f, g, o = tf.split(t, 4, axis=1)
        return tf.sigmoid(i) * f + tf.tanh(g) * o

    j, g = both(fn)
    x = tf.constant(np.random.RandomState(6).randn(24, 32).astype(np.float32))
    np.testing.assert_allclose(j(x).numpy(), g(x).numpy(), rtol=1e-5, atol=1e-6)
    ir = j.experimental_get_compiler_ir(x)("hlo")
    assert "input x:0 read through" in ir, ir
    assert kernels(j, x) == 1


def test_slices_and_split_parts_are_read_in_place():
    # Python slicing (StridedSlice) and tf.split (SplitV) on a [None, 4u]
    # input: the LSTM gates read their parts in place, one kernel, one trace.
    units = 8
    spec = [tf.TensorSpec([None, 4 * units], tf.float32), tf.TensorSpec([None, units], tf.float32)]

    def cell(z, c):
        i, f, g, o = tf.split(z, 4, axis=1)
        c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
        return tf.sigmoid(o) * tf.tanh(c) + z[:, :units] * 0.0, c

    j = tf.function(cell, jit_compile=True, input_signature=spec)
    g = tf.function(cell, input_signature=spec)
    rng = np.random.RandomState(5)
    for b in (3, 1, 6):
        z = tf.constant(rng.randn(b, 4 * units).astype(np.float32))
        c = tf.constant(rng.randn(b, units).astype(np.float32))
        for got, want in zip(j(z, c), g(z, c)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    ir = j.experimental_get_compiler_ir(z, c)("hlo")
    assert ir.count("read through SplitV") == 4, ir
    assert ir.count("read through StridedSlice") == 1, ir
    assert kernels(j, z, c) == 1
    assert j.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16])
def test_lstm_step_computes_its_recurrent_product_in_the_cell_kernel(dtype):
    # z = p + h @ u read through four column splits: the cell's kernel computes
    # the product itself (by blocks of rows on both threads at batch 32);
    # bfloat16 products on oneDNN's bf16 kernels.
    units = 64

    def step(p, h, c, u):
        i, f, g, o = tf.split(p + tf.matmul(h, u), 4, axis=1)
        c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
        return tf.sigmoid(o) * tf.tanh(c), c

    j, g = both(step)
    rng = np.random.RandomState(3)
    for b in (32, 5):
        args = [tf.cast(rng.randn(*s).astype(np.float32) / 4, dtype) for s in
                ((b, 4 * units), (b, units), (b, units), (units, 4 * units))]
        # (FMAs contract in generated code; bf16 values stay float32 between ops)
        tol = 1e-6 if dtype == tf.float32 else 1e-2
        for got, want in zip(j(*args), g(*args)):
            np.testing.assert_allclose(tf.cast(got, tf.float32).numpy(),
                                       tf.cast(want, tf.float32).numpy(), rtol=tol, atol=tol)
        ir = j.experimental_get_compiler_ir(*args)("hlo")
        # Without oneDNN's bf16 kernels (AVX2) the bf16 product stays a MatMul.
        computed = dtype == tf.float32 or tf._kiln._cpu_kernels()["bf16_products"]
        assert ir.count("computed here by blocks of rows") == (4 if computed else 0), ir
        assert kernels(j, *args) == 1


def test_keras_lstm_under_jit_matches_graph_mode():
    model = tf.keras.Sequential([tf.keras.Input((20, 12)),
                                 tf.keras.layers.LSTM(16, return_sequences=True),
                                 tf.keras.layers.LSTM(16, return_sequences=True)])
    x = tf.constant(np.random.RandomState(4).randn(32, 20, 12).astype(np.float32))
    j, g = both(lambda x: model(x))
    np.testing.assert_allclose(j(x).numpy(), g(x).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(j(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)


def test_dense_layers_compute_their_product_in_the_epilogue_kernel():
    # A Keras Dense layer's MatMul is computed inside the kernel of its bias
    # and activation (by blocks of rows), for any batch size, one trace.
    dense = tf.keras.layers.Dense(24, activation="relu")
    out = tf.keras.layers.Dense(10)
    spec = [tf.TensorSpec([None, 12], tf.float32)]

    def model(x):
        return tf.nn.softmax(out(dense(x)))

    j = tf.function(model, jit_compile=True, input_signature=spec)
    g = tf.function(model, input_signature=spec)
    rng = np.random.RandomState(7)
    for b in (5, 1, 300):
        x = tf.constant(rng.randn(b, 12).astype(np.float32))
        np.testing.assert_allclose(j(x).numpy(), g(x).numpy(), rtol=1e-5, atol=1e-6)
    ir = j.experimental_get_compiler_ir(x)("hlo")
    assert ir.count("computed here by blocks of rows") == 2, ir
    assert kernels(j, x) == 2
    # One signature: the first trace builds the layers' variables, so it runs (and
    # counts) twice, as TensorFlow 2.21 counts it.
    assert j.experimental_get_tracing_count() == 2


def test_attention_scores_compute_their_batched_product_in_the_softmax_kernel():
    # softmax(q @ k^T / sqrt(d) + mask): the batched product is computed in
    # the kernel of its scale, mask and softmax rows. The weights are returned
    # too, so fuse_attention leaves the pattern to the JIT (without them it
    # becomes one _FusedAttention: tests/python/keras/test_fused_attention.py).
    b, h, t, d = 2, 3, 5, 8
    rng = np.random.RandomState(11)
    q, k, v = (tf.constant(rng.randn(b, h, t, d).astype(np.float32)) for _ in range(3))
    mask = tf.constant(np.triu(np.full((t, t), -1e9, np.float32), 1))

    def attend(q, k, v):
        w = tf.nn.softmax(tf.matmul(q, k, transpose_b=True) / np.sqrt(d).astype(np.float32) + mask)
        return tf.matmul(w, v), w

    j = tf.function(attend, jit_compile=True)
    for got, want in zip(j(q, k, v), tf.function(attend)(q, k, v)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    ir = j.experimental_get_compiler_ir(q, k, v)("hlo")
    assert ir.count("computed here by blocks of rows") == 1, ir
    assert "(transposed)" in ir, ir


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_batch_norm_statistics_compile_into_the_kernel_of_their_input(layout):
    # tf.nn.moments over N, H, W. NHWC: the variance's reduction folds into
    # the kernel of (x - mean)^2. NCHW (axes [0, 2, 3], not one run): it
    # splits, its H, W part reduced in that kernel's rows and N afterwards.
    # Any batch size gives graph mode's results.
    nhwc = layout == "NHWC"
    dims, axes = ([5, 5, 16], [0, 1, 2]) if nhwc else ([16, 5, 5], [0, 2, 3])
    spec = [tf.TensorSpec([None] + dims, tf.float32)]

    def stats(x):
        mean, var = tf.nn.moments(x, axes=axes, keepdims=not nhwc)
        return (x - mean) * tf.math.rsqrt(var + 1e-3), mean, var

    j = tf.function(stats, jit_compile=True, input_signature=spec)
    g = tf.function(stats, input_signature=spec)
    rng = np.random.RandomState(3)
    for b in (8, 1, 33):
        x = tf.constant(rng.randn(b, *dims).astype(np.float32) * 3 + 1)
        for got, want in zip(j(x), g(x)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=1e-5)
    ir = j.experimental_get_compiler_ir(x)("hlo")
    if nhwc:
        assert "folded by" in ir, ir
    else:
        assert "/jit_part'" in ir and "reducing the last 2" in ir, ir
    assert j.experimental_get_tracing_count() == 1


def test_global_average_pooling_folds_into_the_activation_kernel():
    # GlobalAveragePooling2D over swish(x) (a CNN head) and a mean over a
    # sequence's steps: reductions over middle dims fold into the kernel
    # that computes their input, for any batch size.
    spec = [tf.TensorSpec([None, 6, 6, 32], tf.float32), tf.TensorSpec([None, 9, 8], tf.float32)]
    pool = tf.keras.layers.GlobalAveragePooling2D()

    def heads(x, s):
        return pool(tf.nn.swish(x * 2.0 + 0.5)), tf.reduce_max(tf.tanh(s) * 3.0, axis=1)

    j = tf.function(heads, jit_compile=True, input_signature=spec)
    rng = np.random.RandomState(8)
    for b in (4, 1, 0):
        x = rng.randn(b, 6, 6, 32).astype(np.float32)
        s = rng.randn(b, 9, 8).astype(np.float32)
        z = x * 2.0 + 0.5
        want = ((z / (1.0 + np.exp(-z))).mean(axis=(1, 2)), (np.tanh(s) * 3.0).max(axis=1))
        for got, w in zip(j(tf.constant(x), tf.constant(s)), want):
            np.testing.assert_allclose(got.numpy(), w, rtol=2e-5, atol=1e-5)
    ir = j.experimental_get_compiler_ir(tf.constant(x), tf.constant(s))("hlo")
    assert ir.count("folded by") == 2, ir
    assert j.experimental_get_tracing_count() == 1


def test_a_bias_gradient_folds_a_copy_of_the_value_the_products_read():
    # d(loss)/db = sum(dz, 0) where dz also feeds dx and dw: the kernel that
    # computes dz writes it and folds a copy of it into db.
    w = tf.Variable(np.random.RandomState(9).randn(16, 8).astype(np.float32) * 0.3)
    b = tf.Variable(np.zeros(8, np.float32))

    def step(x):
        with tf.GradientTape() as tape:
            y = tf.tanh(tf.matmul(x, w) + b)
            loss = tf.reduce_sum(y * y)
        return tape.gradient(loss, [w, b])

    j, g = both(step)
    x = tf.constant(np.random.RandomState(10).randn(32, 16).astype(np.float32))
    for got, want in zip(j(x), g(x)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=1e-5)
    ir = j.experimental_get_compiler_ir(x)("hlo")
    assert "(a copy of output" in ir, ir


def test_a_loss_mean_folds_into_the_kernel_of_its_values():
    # A mean over every dim (tf.keras.losses' reduction): the kernel of
    # (y - t)^2 folds it, and the gradient through it matches graph mode.
    spec = [tf.TensorSpec([None, 7], tf.float32)] * 2

    def loss(y, t):
        return tf.reduce_mean(tf.square(y - t)), tf.reduce_sum(tf.abs(y - t), keepdims=True)

    j = tf.function(loss, jit_compile=True, input_signature=spec)
    g = tf.function(loss, input_signature=spec)
    rng = np.random.RandomState(4)
    for b in (3000, 1, 0):
        y = tf.constant(rng.randn(b, 7).astype(np.float32))
        t = tf.constant(rng.randn(b, 7).astype(np.float32))
        for got, want in zip(j(y, t), g(y, t)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=1e-6)
    ir = j.experimental_get_compiler_ir(y, t)("hlo")
    assert ir.count("over all its 2 dims") == 2, ir
    assert j.experimental_get_tracing_count() == 1
    y = tf.constant(rng.randn(50, 7).astype(np.float32))
    t = tf.constant(rng.randn(50, 7).astype(np.float32))

    def grad(f):
        with tf.GradientTape() as tape:
            tape.watch(y)
            value = f(y, t)[0]
        return tape.gradient(value, y)

    np.testing.assert_allclose(grad(j).numpy(), grad(g).numpy(), rtol=1e-5, atol=1e-7)


def test_attention_over_a_none_sequence_fuses_its_softmax():
    # Scores scaled and masked, then softmax over a sequence of unknown
    # length: one row kernel that reads N at run time; no retrace.
    spec = [tf.TensorSpec([2, None, 8], tf.float32), tf.TensorSpec([2, 1, None], tf.float32)]

    def attend(q, mask):
        scores = tf.matmul(q, q, transpose_b=True) * 0.35 + mask
        return tf.matmul(tf.nn.softmax(scores), q)

    j = tf.function(attend, jit_compile=True, input_signature=spec)
    g = tf.function(attend, input_signature=spec)
    rng = np.random.RandomState(5)
    for n in (7, 1, 40):
        q = tf.constant(rng.randn(2, n, 8).astype(np.float32))
        mask = tf.constant(np.where(rng.rand(2, 1, n) < 0.2, -1e9, 0).astype(np.float32))
        np.testing.assert_allclose(j(q, mask).numpy(), g(q, mask).numpy(), rtol=1e-5, atol=1e-6)
    assert j.experimental_get_tracing_count() == 1
    src = j.experimental_get_compiler_ir(q, mask)("source")
    assert "rows of N (known at run time) points" in src, src


def test_set_jit_autoclustering_compiles_functions_left_at_none():
    # tf.config.optimizer.set_jit: jit_compile=None follows it (read when the
    # function is created); an explicit True or False always wins.
    assert tf.config.optimizer.get_jit() == ""

    def fn(x):
        return tf.tanh(x * 2.0 + 1.0) - x

    x = tf.constant(np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4))
    try:
        tf.config.optimizer.set_jit("autoclustering")
        assert tf.config.optimizer.get_jit() == "autoclustering"
        auto, off = tf.function(fn), tf.function(fn, jit_compile=False)
        tf.config.optimizer.set_jit(False)
        later = tf.function(fn)
        tf.config.optimizer.set_jit(True)  # TensorFlow's deprecated alias
        assert tf.config.optimizer.get_jit() == "autoclustering"
        with pytest.raises(ValueError, match="autoclustering"):
            tf.config.optimizer.set_jit("always")
    finally:
        tf.config.optimizer.set_jit(False)
    assert tf.config.optimizer.get_jit() == ""
    want = np.tanh(x.numpy() * 2 + 1) - x.numpy()
    for f in (auto, off, later):
        np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-5, atol=1e-6)
    assert kernels(auto, x) == 1
    assert kernels(off, x) == 0
    assert kernels(later, x) == 0
    assert "Tanh" in auto.experimental_get_compiler_ir(x)("hlo")


def test_sibling_readers_of_one_value_share_a_kernel():
    # abs(w), a cast and a small chain all read w: one kernel with three
    # outputs reads it once. With None dims each output keeps its own shape
    # when an input broadcasts at run time.
    spec = [tf.TensorSpec([None, None], tf.float32), tf.TensorSpec([None, None], tf.float32)]

    def readers(w, v):
        return tf.abs(w), tf.cast(w, tf.float64), tf.tanh(w) * 2.0 + 1.0, (w + v) * 3.0

    j = tf.function(readers, jit_compile=True, input_signature=spec)
    g = tf.function(readers, input_signature=spec)
    rng = np.random.RandomState(12)
    for ws, vs in (((7, 9), (7, 9)), ((4, 1), (1, 3))):
        w = tf.constant(rng.randn(*ws).astype(np.float32))
        v = tf.constant(rng.randn(*vs).astype(np.float32))
        for got, want in zip(j(w, v), g(w, v)):
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    ops = [n.op for n in j.get_concrete_function(w, v).optimized_graph.as_graph_def().node]
    assert ops.count("_JitKernel") == 1, ops
    assert "Abs" not in ops and "Cast" not in ops, ops


def test_shifted_parts_of_a_none_dim_are_read_in_place():
    # A language model's loss over shifted tokens behind [None, None]
    # signatures: logits[:, :-1] and labels[:, 1:] are parts of a dim of
    # unknown size, read in place for every sequence length (one trace),
    # including lengths that leave nothing.
    spec = [tf.TensorSpec([None, None, 32], tf.float32), tf.TensorSpec([None, None], tf.float32)]

    def shifted(logits, weights):
        logp = tf.nn.log_softmax(logits[:, :-1] * 2.0)
        return logp, tf.tanh(weights[:, 1:]) * 3.0 + 1.0, logits[1:, 0] * 2.0 - 1.0

    j = tf.function(shifted, jit_compile=True, input_signature=spec)
    g = tf.function(shifted, input_signature=spec)
    rng = np.random.RandomState(21)
    for b, t in ((4, 9), (2, 1), (1, 2), (0, 3), (3, 17)):
        logits = tf.constant(rng.randn(b, t, 32).astype(np.float32))
        weights = tf.constant(rng.randn(b, t).astype(np.float32))
        for got, want in zip(j(logits, weights), g(logits, weights)):
            assert got.shape == want.shape
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    assert j.experimental_get_tracing_count() == 1
    ir = j.experimental_get_compiler_ir(logits, weights)("hlo")
    assert "as [:, 0:-1, :]" in ir and "as [:, 1:]" in ir and "as [1:, 0, :]" in ir, ir
    ops = [n.op for n in j.get_concrete_function(logits, weights).optimized_graph.as_graph_def().node]
    assert "StridedSlice" not in ops, ops


def test_row_reductions_of_one_value_share_a_row_kernel():
    # tf.reduce_max/sum/min of one x beside a softmax of 2x: all read x, in
    # one row kernel; results as graph mode's.
    x = tf.constant(np.random.RandomState(13).randn(37, 300).astype(np.float32))

    def stats(x):
        return (tf.reduce_max(x, -1), tf.reduce_sum(x, -1), tf.reduce_min(x, -1, keepdims=True),
                tf.nn.softmax(x * 2.0))

    j, g = both(stats)
    for got, want in zip(j(x), g(x)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    ops = [n.op for n in j.get_concrete_function(x).optimized_graph.as_graph_def().node]
    assert ops.count("_JitKernel") == 1, ops
    assert not any(o in ops for o in ("Max", "Sum", "Min", "Softmax")), ops
