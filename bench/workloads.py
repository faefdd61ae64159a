"""The seed workloads written against kiln with `import kiln as tf`, as the seed
documents write them. Each workload maps a mode ("eager", "function") to a
callable and its arguments; bench/demo.py times them with kiln.benchmark.

Names and inputs are shared with bench/peers/ (TensorFlow, JAX, PyTorch) so
that results can be compared row by row.
"""
import numpy as np

import kiln as tf


class Workload:
    """One row group of the demo table."""

    def __init__(self, name, title, build, min_runs=7, unavailable=None):
        self.name = name
        self.title = title
        self.build = build  # () -> {mode: (callable, args)}
        self.min_runs = min_runs
        self.unavailable = unavailable  # a reason string when it cannot run yet


# ---- seed 000: CharUnpack (bit-unpacking uint8 -> float32) ----

class CharUnpack(tf.keras.layers.Layer):
    """Seed 000's layer, as written there."""

    def __init__(self, name="CharUnpack", *args, **kwargs):
        super().__init__(trainable=False, name=name, *args, **kwargs)
        self._shifting_range = tf.reshape(
            tf.dtypes.cast(tf.range(7, -1, -1, name="shifter_range"), tf.uint8,
                           name="shifter_cast"), (1, 1, 8), name="shifter_reshape")
        self._selection_bit = tf.constant(0x01, dtype=tf.uint8, name="and_selection_bit")

    def call(self, inputs):
        return tf.dtypes.cast(
            tf.reshape(
                tf.bitwise.bitwise_and(
                    tf.bitwise.right_shift(tf.expand_dims(inputs, 2), self._shifting_range),
                    self._selection_bit),
                [x if x else -1 for x in self.compute_output_shape(inputs.shape)]),
            tf.float32)

    def compute_output_shape(self, input_shape):
        try:
            if len(input_shape) > 1:
                return tf.TensorShape(tuple(list(input_shape[:-1]) + [input_shape[-1] * 8]))
            return tf.TensorShape((input_shape[0] * 8,))
        except TypeError:
            return input_shape


def charunpack(rows):
    def build():
        layer = CharUnpack()
        x = tf.constant(np.random.default_rng(0).integers(0, 256, (rows, 400), dtype=np.uint8))

        @tf.function
        def fun(x):
            return layer(x)  # the fix from seed 000: return the result
        return {"eager": (layer, (x,)), "function": (fun, (x,))}
    return build


# ---- seed 002: the guide's Conv2D example ----

def conv2d_seed002():
    conv_layer = _conv_layer()
    image = tf.constant(np.random.default_rng(1).standard_normal((1, 200, 200, 100),
                                                                 dtype=np.float32))

    @tf.function
    def conv_fn(image):
        return conv_layer(image)
    return {"eager": (conv_layer, (image,)), "function": (conv_fn, (image,))}


def _conv_layer():
    layers = getattr(tf.keras, "layers", None)
    if layers is not None and hasattr(layers, "Conv2D"):
        return layers.Conv2D(100, 3)
    # Until kiln.keras.layers.Conv2D exists: the same computation with tf.nn.
    kernel = tf.Variable(tf.random.normal([3, 3, 100, 100], stddev=0.05, seed=1))
    bias = tf.Variable(tf.zeros([100]))

    def conv_layer(image):
        return tf.nn.bias_add(tf.nn.conv2d(image, kernel, 1, "VALID"), bias)
    return conv_layer


# ---- seed 002: the while/tanh loop and dynamic_rnn ----

def while_tanh():
    def f(x):  # the guide's loop without its tf.print (printing is not the workload)
        while tf.reduce_sum(x) > 1:
            x = tf.tanh(x)
        return x
    x = tf.constant(np.random.default_rng(2).uniform(size=5).astype(np.float32))
    return {"eager": (f, (x,)), "function": (tf.function(f), (x,))}


def dynamic_rnn_workload():
    def rnn_step(inp, state):
        return inp + state

    def dynamic_rnn(rnn_step, input_data, initial_state):
        input_data = tf.transpose(input_data, [1, 0, 2])
        max_seq_len = input_data.shape[0]
        states = tf.TensorArray(tf.float32, size=max_seq_len)
        state = initial_state
        for i in tf.range(max_seq_len):
            state = rnn_step(input_data[i], state)
            states = states.write(i, state)
        return tf.transpose(states.stack(), [1, 0, 2])

    batch_size, seq_len, feature_size = 2, 3, 4  # the guide's sizes
    data = tf.constant(np.random.default_rng(3).uniform(
        size=(batch_size, seq_len, feature_size)).astype(np.float32))
    init = tf.zeros([batch_size, feature_size])
    # The guide's form: rnn_step passed to the function (as the peers do).
    fn, jit = tf.function(dynamic_rnn), tf.function(dynamic_rnn, jit_compile=True)
    return {"eager": (lambda d, s: dynamic_rnn(rnn_step, d, s), (data, init)),
            "function": (lambda d, s: fn(rnn_step, d, s), (data, init)),
            "jit": (lambda d, s: jit(rnn_step, d, s), (data, init))}


# ---- many small ops ----

def chain100():
    def chain(x):
        y = x
        for _ in range(50):
            y = y * 0.5 + x
        return y
    x = tf.constant(np.random.default_rng(4).standard_normal((10, 10), dtype=np.float32))
    return {"eager": (chain, (x,)), "function": (tf.function(chain), (x,))}


# ---- the guide's training step: tape + optimizer (issue 7) ----

def train_step_workload():
    rng = np.random.default_rng(6)  # the inputs of bench/peers/common.train_step_input
    x = tf.constant(rng.standard_normal((32, 64), dtype=np.float32))
    y = tf.constant(rng.integers(0, 10, 32).astype(np.int32))
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
    return {"eager": (train_step, (x, y)), "function": (tf.function(train_step), (x, y))}


# ---- seed 003: EfficientNetV2-S forward ----

def _efficientnet_reason():
    apps = getattr(tf.keras, "applications", None)
    if apps is None or not hasattr(apps, "EfficientNetV2S"):
        return "needs kiln.keras.applications.EfficientNetV2S (issue 6)"
    return None


def efficientnetv2s():
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.applications.EfficientNetV2S(weights=None)
    x = tf.constant(np.random.default_rng(5).random((1, 384, 384, 3), dtype=np.float32))
    return {"eager": (model, (x,)), "function": (tf.function(model), (x,))}


# ---- micro-benchmarks (shared with the peers run) ----

def eager_add_overhead():
    a, b = tf.constant([1.0]), tf.constant([2.0])
    return {"eager": (lambda a, b: a + b, (a, b))}


def function_call_overhead():
    a, b = tf.constant([1.0]), tf.constant([2.0])
    f = tf.function(lambda a, b: a + b)
    return {"function": (f, (a, b))}


def trace_1000_ops():
    x = tf.constant(np.random.default_rng(6).standard_normal((10, 10), dtype=np.float32))

    def chain(x):
        y = x
        for _ in range(500):
            y = y * 0.5 + x
        return y

    def first_call(x):
        # Every call is the first call of a new function: trace, optimize,
        # plan and run a 1,000-op graph (the peers time the same thing).
        return tf.function(chain)(x)
    return {"function": (first_call, (x,))}


WORKLOADS = [
    Workload("charunpack_64x400", "seed 000 CharUnpack, uint8 [64, 400]", charunpack(64)),
    Workload("charunpack_8192x400", "seed 000 CharUnpack, uint8 [8192, 400]", charunpack(8192)),
    Workload("conv2d_seed002", "seed 002 Conv2D(100, 3) on [1, 200, 200, 100]", conv2d_seed002),
    Workload("while_tanh", "seed 002 while reduce_sum(x) > 1: x = tanh(x), [5]", while_tanh),
    Workload("dynamic_rnn", "seed 002 dynamic_rnn with TensorArray, [2, 3, 4]",
             dynamic_rnn_workload),
    Workload("chain100", "100 small ops (50 x y * 0.5 + x) on [10, 10]", chain100),
    Workload("train_step", "guide train step: tape + Adam, MLP 64-64-10, batch 32",
             train_step_workload),
    Workload("efficientnetv2s", "seed 003 EfficientNetV2-S forward, [1, 384, 384, 3]",
             efficientnetv2s, min_runs=5, unavailable=_efficientnet_reason()),
]

MICRO = [
    Workload("eager_add_overhead", "eager a + b, 1-element float32", eager_add_overhead),
    Workload("function_call_overhead", "cached function call f(a, b) = a + b",
             function_call_overhead),
    Workload("trace_1000_ops", "first call of a fresh 1,000-op function (trace, optimize, run)",
             trace_1000_ops,
             min_runs=5),
]
