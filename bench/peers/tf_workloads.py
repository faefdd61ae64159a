"""The workloads in TensorFlow, with the seeds' own code.

Modes: "eager" (plain calls), "function" (tf.function) and "jit"
(tf.function(jit_compile=True), XLA on the CPU).
"""
import os
import time

import numpy as np

import common as cm
import model_common as mc
from common import Case

NAME = "tensorflow"
_tf = None


def configure(threads):
    """Imports TensorFlow with `threads` intra-op threads and one inter-op
    thread; returns (version, notes for the framework record)."""
    global _tf
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    tf.get_logger().setLevel("ERROR")  # trace_1000_ops retraces on purpose
    # intra-op = the cores; inter-op = 1: on the 2-core machine inter_op=2 doubled
    # tf.function's call overhead (about 240 vs 120 us) and the default was between,
    # so this is the setting that is fairest to TensorFlow.
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    _tf = tf
    return tf.__version__, {
        "threads": f"intra_op={threads}, inter_op=1 (tf.config.threading)",
        "keras": getattr(tf.keras, "__version__", "?"),
        "jit": "tf.function(jit_compile=True): XLA on the CPU"}


def _char_unpack_class(tf):
    class CharUnpack(tf.keras.layers.Layer):
        """Seed 000's layer as written there (bit-unpacking uint8 -> float32)."""

        def __init__(self, name="CharUnpack", *args, **kwargs):
            super(CharUnpack, self).__init__(trainable=False, name=name, *args, **kwargs)
            # Range [7, 6, ..., 0] to bit-shift integers
            self._shifting_range = tf.reshape(
                tf.dtypes.cast(
                    tf.range(7, -1, -1, name='shifter_range'),
                    tf.uint8,
                    name='shifter_cast'),
                (1, 1, 8),
                name='shifter_reshape')
            # Constant value 0b00000001 to use as bitwise and operator
            self._selection_bit = tf.constant(0x01, dtype=tf.uint8, name='and_selection_bit')

        def call(self, inputs):
            return tf.dtypes.cast(
                tf.reshape(
                    tf.bitwise.bitwise_and(
                        tf.bitwise.right_shift(
                            tf.expand_dims(inputs, 2),
                            self._shifting_range,
                        ),
                        self._selection_bit,
                    ),
                    [x if x else -1 for x in self.compute_output_shape(inputs.shape)]
                ),
                tf.float32
            )

        def compute_output_shape(self, input_shape):
            try:
                if len(input_shape) > 1:
                    output_shape = tf.TensorShape(
                        tuple(list(input_shape[:-1]) + [input_shape[-1] * 8]))
                else:
                    output_shape = tf.TensorShape((input_shape[0] * 8,))
            except TypeError:
                output_shape = input_shape
            return output_shape

    return CharUnpack


def _compiled(tf, fn, mode):
    return fn if mode == "eager" else tf.function(fn, jit_compile=(mode == "jit"))


def _charunpack(rows, mode):
    tf = _tf
    x_host = cm.charunpack_input(rows)

    def build():
        layer = _char_unpack_class(tf)()

        def fun(x):
            return layer(x)  # seed 000's fix: return the result
        fn = layer if mode == "eager" else _compiled(tf, fun, mode)
        return fn, (tf.constant(x_host),)

    def check(out):
        cm.close(out[0], cm.charunpack_reference(x_host), "charunpack")
    return Case(f"charunpack_{rows}x400", mode, build, check=check)


def _conv(mode):
    tf = _tf

    def build():
        conv_layer = tf.keras.layers.Conv2D(100, 3)

        def conv_fn(image):
            return conv_layer(image)
        fn = conv_layer if mode == "eager" else _compiled(tf, conv_fn, mode)
        return fn, (tf.constant(cm.conv_input()),)
    return Case("conv2d_seed002", mode, build, meta={"layout": "NHWC, kernel 3x3 HWIO, VALID"})


def _while_tanh(mode):
    tf = _tf
    x_host = cm.while_tanh_input()
    ref, iters = cm.while_tanh_reference(x_host)

    def f(x):  # the guide's loop without its tf.print (printing is not the workload)
        while tf.reduce_sum(x) > 1:
            x = tf.tanh(x)
        return x

    def build():
        return _compiled(tf, f, mode), (tf.constant(x_host),)

    def check(out):
        cm.close(out[0], ref, "while_tanh", rtol=1e-4)
    return Case("while_tanh", mode, build, check=check, meta={"iterations": iters})


def _dynamic_rnn(mode):
    tf = _tf
    data_host = cm.rnn_input()

    def rnn_step(inp, state):
        return inp + state

    def dynamic_rnn(rnn_step, input_data, initial_state):
        # [batch, time, features] -> [time, batch, features]
        input_data = tf.transpose(input_data, [1, 0, 2])
        max_seq_len = input_data.shape[0]

        states = tf.TensorArray(tf.float32, size=max_seq_len)
        state = initial_state
        for i in tf.range(max_seq_len):
            state = rnn_step(input_data[i], state)
            states = states.write(i, state)
        return tf.transpose(states.stack(), [1, 0, 2])

    def build():
        fn = _compiled(tf, dynamic_rnn, mode)
        b, _, f = cm.RNN_SHAPE
        return (lambda d, s: fn(rnn_step, d, s)), (tf.constant(data_host), tf.zeros([b, f]))

    def check(out):
        cm.close(out[0], cm.rnn_reference(data_host), "dynamic_rnn")
    return Case("dynamic_rnn", mode, build, check=check)


def _train_step(mode):
    tf = _tf
    x_host, y_host = cm.train_step_input()

    def build():
        model = tf.keras.Sequential([tf.keras.layers.Dense(64, activation="relu"),
                                     tf.keras.layers.Dense(10)])
        model.build((None, 64))
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)

        def train_step(x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        return _compiled(tf, train_step, mode), (tf.constant(x_host), tf.constant(y_host))
    return Case("train_step", mode, build)


def _chain100(mode):
    tf = _tf
    x_host = cm.chain_input()

    def build():
        return _compiled(tf, cm.chain(0.5, 50), mode), (tf.constant(x_host),)

    def check(out):
        cm.close(out[0], cm.chain_reference(x_host), "chain100", rtol=1e-4)
    return Case("chain100", mode, build, check=check)


_model = []


def _efficientnet(mode):
    tf = _tf

    def build():
        if not _model:
            tf.keras.utils.set_random_seed(0)
            _model.append(tf.keras.applications.EfficientNetV2S(weights=None))
        model = _model[0]
        fn = model if mode == "eager" else tf.function(model, jit_compile=(mode == "jit"))
        return fn, (tf.constant(cm.efficientnet_input()),)
    return Case("efficientnetv2s", mode, build, min_runs=3, max_warmup_time=3.0,
                meta={"model": "tf.keras.applications.EfficientNetV2S(weights=None)"})


def _micro():
    tf = _tf
    a_host, b_host = cm.micro_inputs()

    def eager_build():
        return (lambda a, b: a + b), (tf.constant(a_host), tf.constant(b_host))

    def call_build(mode):
        def build():
            return (tf.function(lambda a, b: a + b, jit_compile=(mode == "jit")),
                    (tf.constant(a_host), tf.constant(b_host)))
        return build

    x = tf.constant(cm.chain_input())

    def fresh(mode):
        def build(i):
            f = tf.function(cm.chain(0.5 + 1e-4 * i, cm.TRACE_OPS // 2), jit_compile=(mode == "jit"))
            return lambda: f(x)
        return build

    def trace_only():
        # What kiln's row measures: get_concrete_function (TF defers its graph
        # optimization (Grappler) to the first call, so this is tracing alone).
        spec = tf.TensorSpec([10, 10], tf.float32)
        times = []
        for i in range(3):
            t0 = time.perf_counter()
            tf.function(cm.chain(0.25 + 1e-4 * i, cm.TRACE_OPS // 2)).get_concrete_function(spec)
            times.append(time.perf_counter() - t0)
        return float(np.median(times))

    return [
        Case("eager_add_overhead", "eager", eager_build),
        Case("function_call_overhead", "function", call_build("function")),
        Case("function_call_overhead", "jit", call_build("jit")),
        Case("trace_1000_ops", "function", fresh("function"), fresh=True, min_runs=3,
             extra=lambda: {"get_concrete_function_median_s": trace_only()}),
        Case("trace_1000_ops", "jit", fresh("jit"), fresh=True, min_runs=3),
    ]


def cases():
    """Every case, in table order."""
    modes = ("eager", "function", "jit")
    out = [_charunpack(64, m) for m in modes] + [_charunpack(8192, m) for m in modes]
    for make in (_conv, _while_tanh, _dynamic_rnn, _chain100, _train_step, _efficientnet):
        out += [make(m) for m in modes]
    return out + _micro()


# ---- model workloads (issue 41): run_peers.py --models ----

def _model_case(name, mode):
    """A Keras 3 model from model_common, as tf.function (graph) or XLA."""
    tf = _tf
    make = {"lstm2": (mc.build_lstm2, mc.lstm_input), "gru2": (mc.build_gru2, mc.lstm_input),
            "transformer4": (mc.build_transformer4, mc.transformer_input)}.get(name)

    def build():
        model = make[0](tf.keras) if make else mc.build_app(tf.keras, name)
        x = make[1]() if make else mc.image_input(name)
        return tf.function(model, jit_compile=(mode == "jit")), (tf.constant(x),)

    def check(out):
        mc.check(name, out[0])
    return Case(name, mode, build, min_runs=5, max_warmup_time=5.0,
                check=check if make else None)


def model_cases():
    """The model workloads in graph mode and XLA."""
    return [_model_case(n, m) for n in mc.NAMES for m in ("function", "jit")]
