"""Mixed precision (tf.keras.mixed_precision): dtype policies, layers' compute and
variable dtypes, LossScaleOptimizer, compile / fit / save under mixed_float16 and
mixed_bfloat16. The expected dtypes, configs and loss-scale values are those
TensorFlow 2.21 (Keras 3.15) printed for the same code (.venv-peers)."""
import json
import zipfile

import numpy as np
import pytest

import kiln as tf

keras = tf.keras
L = keras.layers
mp = keras.mixed_precision


@pytest.fixture(autouse=True)
def _float32_after():
    yield
    mp.set_global_policy("float32")


def policy_dict(name):
    return {"module": "keras", "class_name": "DTypePolicy", "config": {"name": name},
            "registered_name": None}


def dtype_of(t):
    return t.dtype.name


# ---- policies ----

@pytest.mark.parametrize("name,compute,variable", [
    ("mixed_float16", "float16", "float32"), ("mixed_bfloat16", "bfloat16", "float32"),
    ("float32", "float32", "float32"), ("float16", "float16", "float16"),
    ("bfloat16", "bfloat16", "bfloat16"), ("float64", "float64", "float64"),
    ("int32", "int32", "int32")])
def test_policy_dtypes(name, compute, variable):
    p = mp.Policy(name)
    assert (p.name, p.compute_dtype, p.variable_dtype) == (name, compute, variable)
    assert repr(p) == str(p) == f'<DTypePolicy "{name}">'
    assert p.get_config() == {"name": name}
    assert mp.Policy is keras.DTypePolicy is mp.DTypePolicy


def test_policy_errors_and_equality():
    with pytest.raises(ValueError, match="Cannot convert 'foo' to a mixed precision "
                                         "DTypePolicy. Valid policies include"):
        mp.Policy("foo")
    with pytest.raises(TypeError, match="'name' must be a string, such as 'mixed_float16'"):
        mp.Policy(3)
    assert repr(mp.Policy(None)) == '<DTypePolicy "float32">'  # the global policy's name
    assert mp.Policy("float32") == mp.Policy("float32")
    assert mp.Policy("float32") != "float32"
    with pytest.raises(ValueError, match="Invalid `policy` argument"):
        mp.set_global_policy(None)
    with pytest.raises(ValueError, match="Cannot convert 'foo'"):
        mp.set_global_policy("foo")


def test_global_policy_and_clear_session():
    assert repr(mp.global_policy()) == '<DTypePolicy "float32">'
    mp.set_global_policy("mixed_float16")
    assert repr(mp.global_policy()) == '<DTypePolicy "mixed_float16">'
    assert mp.dtype_policy() is mp.global_policy()
    keras.backend.clear_session()  # Keras 3 resets the policy too
    assert mp.global_policy().name == "float32"


def test_layer_dtype_argument_forms():
    assert L.Dense(3, dtype=mp.Policy("mixed_bfloat16")).dtype_policy.name == "mixed_bfloat16"
    spec = {"class_name": "DTypePolicy", "config": {"name": "mixed_bfloat16"}}
    assert L.Dense(3, dtype=spec).dtype_policy.name == "mixed_bfloat16"
    assert L.Dense(3, dtype=tf.float16).dtype_policy.name == "float16"
    assert L.Dense(3, dtype=np.float16).dtype_policy.name == "float16"
    layer = L.Dense(3)
    layer.dtype_policy = "mixed_float16"
    assert (layer.dtype, layer.compute_dtype) == ("float32", "float16")


# ---- layers under mixed_float16 (TF 2.21's dtypes) ----

def test_dense_under_the_global_policy():
    mp.set_global_policy("mixed_float16")
    d = L.Dense(3)
    y = d(np.ones((2, 4), np.float32))
    assert dtype_of(y) == "float16" and dtype_of(d.kernel) == "float32"
    assert (d.dtype, d.compute_dtype, d.variable_dtype) == ("float32", "float16", "float32")
    assert repr(d.dtype_policy) == '<DTypePolicy "mixed_float16">'
    assert isinstance(d.kernel, keras.Variable)  # restored after the call
    assert dtype_of(d(np.ones((2, 4)))) == "float16"  # float64 inputs are cast too
    assert d.get_config()["dtype"] == policy_dict("mixed_float16")
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.cast(d(np.ones((2, 4), np.float32)), "float32"))
    assert [dtype_of(g) for g in tape.gradient(loss, d.trainable_variables)] == \
        ["float32", "float32"]


LAYER_CASES = [  # (name, layer factory, input, call kwargs, output dtype, variable dtypes)
    ("embedding_int_input", lambda: L.Embedding(5, 3), np.array([[1, 2]]), {}, "float16",
     ["float32"]),
    ("batchnorm_training", lambda: L.BatchNormalization(), np.ones((2, 3), np.float32),
     {"training": True}, "float16", ["float32"] * 4),
    ("batchnorm_inference", lambda: L.BatchNormalization(), np.ones((2, 3), np.float32), {},
     "float16", ["float32"] * 4),
    ("layernorm", lambda: L.LayerNormalization(), np.ones((2, 3), np.float32), {}, "float16",
     ["float32"] * 2),
    ("conv2d", lambda: L.Conv2D(2, 3), np.ones((1, 5, 5, 2), np.float32), {}, "float16",
     ["float32"] * 2),
    ("lstm", lambda: L.LSTM(4), np.ones((2, 3, 2), np.float32), {}, "float16",
     ["float32"] * 3),
    ("gru", lambda: L.GRU(2), np.ones((1, 2, 2), np.float32), {}, "float16", ["float32"] * 3),
    ("dropout", lambda: L.Dropout(0.5), np.ones((2, 3), np.float32), {"training": True},
     "float16", []),
    ("float64_policy", lambda: L.Dense(2, dtype="float64"), np.ones((2, 4), np.float32), {},
     "float64", ["float64"] * 2),
    ("softmax_float32", lambda: L.Activation("softmax", dtype="float32"),
     np.ones((2, 3), np.float16), {}, "float32", []),
    ("flatten_int", lambda: L.Flatten(), np.ones((2, 2), np.int32), {}, "int32", []),
    ("rescaling", lambda: L.Rescaling(0.5), np.ones((2, 2), np.float32), {}, "float16", []),
    ("conv2d_transpose", lambda: L.Conv2DTranspose(2, 1), np.ones((1, 2, 2, 2), np.float32),
     {}, "float16", ["float32"] * 2),
    ("depthwise", lambda: L.DepthwiseConv2D(1), np.ones((1, 2, 2, 2), np.float32), {},
     "float16", ["float32"] * 2),
    ("max_pooling", lambda: L.MaxPooling2D(), np.ones((1, 2, 2, 2), np.float32), {}, "float16",
     []),
    ("gaussian_noise", lambda: L.GaussianNoise(0.1), np.ones((1, 2), np.float32),
     {"training": True}, "float16", []),
]


@pytest.mark.parametrize("name,make,x,kwargs,out,variables", LAYER_CASES,
                         ids=[c[0] for c in LAYER_CASES])
def test_layer_dtypes_under_mixed_float16(name, make, x, kwargs, out, variables):
    mp.set_global_policy("mixed_float16")
    layer = make()
    y = layer(x, **kwargs)
    assert dtype_of(y) == out
    assert [dtype_of(w) for w in layer.weights] == variables
    assert np.all(np.isfinite(np.asarray(y.numpy(), np.float32)))


def test_layers_under_mixed_bfloat16_match_float32():
    x = np.random.default_rng(0).random((4, 6)).astype("float32")
    ref = keras.Sequential([keras.Input((6,)), L.Dense(5, activation="relu"),
                            L.LayerNormalization(), L.Dense(3)])
    mp.set_global_policy("mixed_bfloat16")
    mixed = keras.Sequential([keras.Input((6,)), L.Dense(5, activation="relu"),
                              L.LayerNormalization(), L.Dense(3)])
    mixed.set_weights(ref.get_weights())
    got = mixed(x)
    assert dtype_of(got) == "bfloat16"
    np.testing.assert_allclose(np.asarray(got.numpy(), np.float32), ref(x).numpy(), atol=0.05)



def test_convolutions_under_mixed_bfloat16_match_float32():
    # Conv2D and DepthwiseConv2D run bf16 natively (float32 accumulation): eager,
    # traced and under jit_compile they agree with the float32 model.
    x = np.random.default_rng(3).random((2, 12, 12, 3)).astype("float32")

    def build():
        return keras.Sequential([keras.Input((12, 12, 3)),
                                 L.Conv2D(16, 3, padding="same", activation="swish"),
                                 L.BatchNormalization(), L.DepthwiseConv2D(3),
                                 L.Conv2D(8, 1), L.GlobalAveragePooling2D()])
    ref = build()
    want = ref(x, training=False).numpy()
    mp.set_global_policy("mixed_bfloat16")
    mixed = build()
    mixed.set_weights(ref.get_weights())
    for run in (lambda v: mixed(v, training=False),
                tf.function(lambda v: mixed(v, training=False)),
                tf.function(lambda v: mixed(v, training=False), jit_compile=True)):
        got = run(x)
        assert dtype_of(got) == "bfloat16"
        np.testing.assert_allclose(np.asarray(got.numpy(), np.float32), want, atol=0.05)

def test_convolution_gradients_under_mixed_bfloat16_match_float32():
    # The gradients of Conv2D, DepthwiseConv2D and Conv2DTranspose run bf16
    # natively too (float32 accumulation, rounded once): close to float32's.
    x = np.random.default_rng(4).random((2, 12, 12, 3)).astype("float32")

    def build():
        return keras.Sequential([keras.Input((12, 12, 3)), L.Conv2D(16, 3, padding="same"),
                                 L.DepthwiseConv2D(3, padding="same"),
                                 L.Conv2DTranspose(4, 3, strides=2, padding="same"),
                                 L.GlobalAveragePooling2D()])

    def grads(model):
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(tf.cast(model(x), "float32") ** 2)
        return [np.asarray(g.numpy(), np.float32)
                for g in tape.gradient(y, model.trainable_variables)]
    ref = build()
    want = grads(ref)
    mp.set_global_policy("mixed_bfloat16")
    mixed = build()
    mixed.set_weights(ref.get_weights())
    for g, w in zip(grads(mixed), want):
        assert np.linalg.norm(g - w) <= 0.02 * np.linalg.norm(w)


def test_products_under_mixed_bfloat16_match_float32():
    # Dense and MultiHeadAttention's products run bf16 MatMuls natively (float32
    # accumulation, no casts around them): eager, traced and under jit_compile they
    # agree with the float32 model.
    x = np.random.default_rng(4).random((2, 16, 32)).astype("float32")

    def build():
        inp = keras.Input((16, 32))
        a = L.MultiHeadAttention(4, 8)(inp, inp)
        h = L.LayerNormalization()(L.Add()([inp, a]))
        return keras.Model(inp, L.Dense(32)(L.Dense(64, activation="relu")(h)))
    ref = build()
    want = ref(x).numpy()
    mp.set_global_policy("mixed_bfloat16")
    mixed = build()
    mixed.set_weights(ref.get_weights())
    traced = tf.function(lambda v: mixed(v))
    for run in (mixed, traced, tf.function(lambda v: mixed(v), jit_compile=True)):
        got = run(x)
        assert dtype_of(got) == "bfloat16"
        np.testing.assert_allclose(np.asarray(got.numpy(), np.float32), want, atol=0.05)
    graph = traced.get_concrete_function(tf.TensorSpec((2, 16, 32), tf.float32)).graph
    products = [n for n in graph.get_operations() if n.op in ("MatMul", "BatchMatMulV2")]
    assert len(products) == 8 and all(n.outputs[0][0] == tf.bfloat16 for n in products)
    # The six kernels (attention's four, two Dense) are read as float32 and packed
    # to bf16 once (matmul_float_weights), not cast on every call.
    optimized = traced.get_concrete_function(tf.TensorSpec((2, 16, 32), tf.float32))
    assert [n.op for n in optimized.optimized_graph.get_operations()].count("_FusedMatMul") == 6


@pytest.mark.parametrize("jit", [False, True])
def test_dense_bias_and_relu_join_the_bf16_product(jit):
    # Dense(relu) and Dense under mixed_bfloat16: the bias and relu, computed in
    # float32 between casts, join the product (matmul_float_weights): oneDNN adds the
    # bias to the float32 sums and the output is rounded to bf16 once. Against float64
    # on the same bf16 values: within one bf16 rounding (atol: a hidden value whose
    # rounding a different summation order flips moves an output by up to ~0.02).
    mp.set_global_policy("mixed_bfloat16")
    inp = keras.Input((24, 32))
    d1, d2 = L.Dense(64, activation="relu"), L.Dense(16)
    model = keras.Model(inp, d2(d1(inp)))
    rng = np.random.default_rng(7)
    model.set_weights([rng.normal(0, 0.3, w.shape).astype("float32")
                       for w in model.get_weights()])
    x = rng.normal(size=(3, 24, 32)).astype("float32")
    f = tf.function(lambda v: model(v), jit_compile=jit)
    got = f(x)
    assert dtype_of(got) == "bfloat16"
    ops = [n.op for n in f.get_concrete_function(x).optimized_graph.get_operations()]
    assert ops.count("_FusedMatMul") == 2, ops
    assert "BiasAdd" not in ops and "Relu" not in ops, ops

    def bf16(a):
        return np.asarray(tf.cast(tf.cast(a, tf.bfloat16), tf.float32).numpy(), np.float64)

    w1, b1, w2, b2 = model.get_weights()
    h = bf16(np.maximum(bf16(x) @ bf16(w1) + bf16(b1), 0))
    want = h @ bf16(w2) + bf16(b2)
    out = np.asarray(got.numpy(), np.float64)
    np.testing.assert_allclose(out, want, rtol=2 ** -7, atol=3e-2)


def test_attention_casts_every_argument():
    mp.set_global_policy("mixed_float16")
    out = L.MultiHeadAttention(2, 2)(tf.ones((1, 2, 4)), tf.ones((1, 2, 4)))
    assert dtype_of(out) == "float16"


def test_functional_model_dtypes():
    mp.set_global_policy("mixed_float16")
    i = keras.Input((4,))
    assert dtype_of(i) == "float32"  # Input keeps float32, as Keras
    h = L.Dense(3)(i)
    assert dtype_of(h) == "float16"
    out = L.Activation("softmax", dtype="float32")(h)
    assert dtype_of(out) == "float32"
    model = keras.Model(i, out)
    assert (repr(model.dtype_policy), model.dtype, model.compute_dtype) == \
        ('<DTypePolicy "mixed_float16">', "float32", "float16")
    assert dtype_of(model(np.ones((2, 4), np.float32))) == "float32"
    cfg = model.get_config()
    assert cfg["layers"][1]["config"]["dtype"] == policy_dict("mixed_float16")
    assert cfg["layers"][0]["config"]["dtype"] == "float32" and "dtype" not in cfg


def test_functional_sequence_model_dtypes():
    """TF 2.21: Embedding gives the compute dtype for int indices (float32 under
    the float32 policy), and so on down the model."""
    assert dtype_of(L.Embedding(5, 4)(keras.Input((3,), dtype="int32"))) == "float32"
    mp.set_global_policy("mixed_float16")
    i = keras.Input((3,), dtype="int32")
    e = L.Embedding(5, 4)(i)
    seq = L.LSTM(2, return_sequences=True)(e)
    norm = L.LayerNormalization()(L.BatchNormalization()(seq))
    att = L.MultiHeadAttention(2, 2)(norm, norm)
    both = L.Bidirectional(L.GRU(2))(att)
    out = L.Activation("softmax", dtype="float32")(L.Dense(2)(both))
    assert [dtype_of(t) for t in (e, seq, norm, att, both, out)] == ["float16"] * 5 + ["float32"]
    model = keras.Model(i, out)
    assert dtype_of(model(tf.constant([[1, 2, 3]]))) == "float32"
    assert {dtype_of(w) for w in model.weights} == {"float32"}


def test_custom_layer_variables_are_autocast():
    class Scale(L.Layer):
        def build(self, shape):
            self.w = self.add_weight(name="w", shape=(shape[-1],), initializer="ones")
            self.stat = self.add_weight(name="stat", shape=(), initializer="zeros",
                                        trainable=False, autocast=False)

        def call(self, x):
            assert self.w.dtype.name == "float16" and self.stat.dtype.name == "float32"
            self.stat.assign_add(1.0)
            return x * self.w

    mp.set_global_policy("mixed_float16")
    layer = Scale()
    assert dtype_of(layer(np.ones((1, 3), np.float32))) == "float16"
    assert isinstance(layer.w, keras.Variable) and float(layer.stat.numpy()) == 1.0

    @tf.function
    def f(x):
        return layer(x)
    assert dtype_of(f(tf.ones((1, 3)))) == "float16"


# ---- LossScaleOptimizer ----

def test_loss_scale_optimizer_dynamic_scale_as_tensorflow():
    opt = mp.LossScaleOptimizer(keras.optimizers.SGD(0.1), initial_scale=8.0,
                                dynamic_growth_steps=2)
    v = tf.Variable(1.0)
    assert [x.path for x in opt.variables] == [
        "loss_scale_optimizer/iteration", "loss_scale_optimizer/learning_rate",
        "SGD/iteration", "SGD/learning_rate"]
    assert float(opt.scale_loss(tf.constant(2.0))) == 16.0
    # TF 2.21: (gradient, v, scale, counter, iterations) after each apply_gradients.
    want = [(np.inf, 1.0, 4.0, 0, 0), (4.0, 0.9, 4.0, 1, 1), (4.0, 0.79999995, 8.0, 0, 2),
            (np.nan, 0.79999995, 4.0, 0, 2), (2.0, 0.74999994, 4.0, 1, 3)]
    for g, v_want, scale, counter, iters in want:
        opt.apply_gradients([(tf.constant(g, tf.float32), v)])
        assert float(v.numpy()) == pytest.approx(v_want, abs=1e-7)
        assert (float(opt.dynamic_scale.numpy()), int(opt.step_counter.numpy()),
                int(opt.iterations.numpy())) == (scale, counter, iters)
    assert [x.path.split("/")[-1] for x in opt.variables][:4] == [
        "iteration", "learning_rate", "step_counter", "dynamic_scale"]
    assert opt.learning_rate is opt.inner_optimizer.learning_rate


def test_loss_scale_optimizer_config_and_errors():
    opt = mp.LossScaleOptimizer(keras.optimizers.SGD(0.1), initial_scale=8.0,
                                dynamic_growth_steps=2)
    cfg = opt.get_config()
    assert cfg["name"] == "loss_scale_optimizer" and cfg["initial_scale"] == 8.0
    assert cfg["dynamic_growth_steps"] == 2
    assert cfg["inner_optimizer"]["class_name"] == "SGD"
    again = keras.optimizers.deserialize(keras.optimizers.serialize(opt))
    assert type(again.inner_optimizer).__name__ == "SGD" and again.initial_scale == 8.0
    assert keras.optimizers.LossScaleOptimizer is mp.LossScaleOptimizer
    with pytest.raises(ValueError, match="no longer supports `dynamic=False`"):
        mp.LossScaleOptimizer(keras.optimizers.SGD(), dynamic=False)
    with pytest.raises(ValueError, match="does not support `clipnorm`. Instead, set "
                                         "`clipnorm` on the `inner_optimizer`."):
        mp.LossScaleOptimizer(keras.optimizers.SGD(), clipnorm=1.0)
    with pytest.raises(ValueError, match="does not support arguments: `foo`."):
        mp.LossScaleOptimizer(keras.optimizers.SGD(), foo=1.0)


def test_loss_scale_factor_of_plain_optimizers():
    opt = keras.optimizers.SGD(0.1, loss_scale_factor=4.0)
    v = tf.Variable(1.0)
    assert float(opt.scale_loss(tf.constant(2.0))) == 8.0
    opt.apply_gradients([(tf.constant(4.0), v)])
    assert float(v.numpy()) == pytest.approx(0.9) and opt.get_config()["loss_scale_factor"] == 4.0


def _guide_model():
    return keras.Sequential([keras.Input((3,)), L.Dense(4, activation="relu"), L.Dense(2),
                             L.Activation("linear", dtype="float32")])


@pytest.mark.parametrize("api", ["keras3", "tf2"])
def test_custom_training_loop_in_a_function(api):
    """The guide's loop: scale the loss, unscale the gradients (TF 2.x) or let
    apply_gradients do it (Keras 3)."""
    mp.set_global_policy("mixed_float16")
    model = _guide_model()
    opt = mp.LossScaleOptimizer(keras.optimizers.SGD(0.05), initial_scale=256.0)
    x = np.random.default_rng(1).random((8, 3)).astype("float32")
    y = np.zeros((8, 2), np.float32)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
            scaled = opt.get_scaled_loss(loss) if api == "tf2" else opt.scale_loss(loss)
        grads = tape.gradient(scaled, model.trainable_variables)
        if api == "tf2":
            grads = opt.get_unscaled_gradients(grads)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    losses = [float(step()) for _ in range(20)]
    assert losses[-1] < losses[0]
    assert int(opt.iterations.numpy()) == 20 and float(opt.loss_scale.numpy()) == 256.0
    assert int(opt.dynamic_counter.numpy()) == 20


def test_overflow_skips_the_step_in_a_function():
    opt = mp.LossScaleOptimizer(keras.optimizers.SGD(0.1), initial_scale=4.0)
    v = tf.Variable(1.0)

    @tf.function
    def step(g):
        opt.apply_gradients([(g, v)])

    step(tf.constant(np.inf, tf.float32))
    assert (float(v.numpy()), float(opt.dynamic_scale.numpy())) == (1.0, 2.0)
    step(tf.constant(2.0))
    assert float(v.numpy()) == pytest.approx(0.9) and int(opt.iterations.numpy()) == 1


# ---- compile, fit, save ----

def _data():
    rng = np.random.default_rng(0)
    x = rng.random((64, 4)).astype("float32")
    return x, np.eye(2)[(x.sum(1) > 2).astype(int)].astype("float32")


@pytest.mark.parametrize("policy,wrapped", [("mixed_float16", True),
                                            ("mixed_bfloat16", False)])
def test_fit_trains_under_mixed_policies(policy, wrapped):
    mp.set_global_policy(policy)
    model = keras.Sequential([keras.Input((4,)), L.Dense(16, activation="relu"),
                              L.Dense(2), L.Activation("softmax", dtype="float32")])
    model.compile(keras.optimizers.Adam(0.01), "categorical_crossentropy",
                  metrics=["accuracy"])
    # TF 2.21: compile wraps the optimizer only under mixed_float16.
    assert isinstance(model.optimizer, mp.LossScaleOptimizer) == wrapped
    x, y = _data()
    losses = model.fit(x, y, epochs=8, batch_size=16, verbose=0).history["loss"]
    assert losses[-1] < losses[0] and all(np.isfinite(losses))
    assert dtype_of(model(x[:2])) == "float32"
    assert [dtype_of(w) for w in model.weights] == ["float32"] * 4
    if wrapped:
        assert model.optimizer.name == "loss_scale_optimizer"
        assert model.optimizer.inner_optimizer.name == "adam"
        assert int(model.optimizer.iterations.numpy()) == 32


def test_loss_objects_compute_in_float32():
    y = tf.constant([[0.3, 0.7]], "float16")
    t = tf.constant([[0., 1.]], "float32")
    # TF 2.21: Loss objects cast float16 predictions to their float32 dtype; the
    # loss functions compute in the inputs' dtype.
    assert dtype_of(keras.losses.MeanSquaredError()(t, y)) == "float32"
    assert dtype_of(keras.losses.CategoricalCrossentropy()(t, y)) == "float32"
    assert dtype_of(keras.losses.SparseCategoricalCrossentropy()(tf.constant([1]), y)) == \
        "float32"
    assert dtype_of(keras.losses.BinaryCrossentropy()(t, y)) == "float32"
    assert dtype_of(keras.losses.MSE(tf.cast(t, "float16"), y)) == "float16"


def test_float16_outputs_train_with_float32_losses():
    mp.set_global_policy("mixed_float16")
    model = keras.Sequential([keras.Input((4,)), L.Dense(2, activation="softmax")])
    model.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    x, y = _data()
    history = model.fit(x, y.argmax(1), epochs=5, batch_size=16, verbose=0).history
    assert dtype_of(model(x[:1])) == "float16"
    assert history["loss"][-1] < history["loss"][0]
    assert float(model.optimizer.dynamic_scale.numpy()) == 2.0 ** 15  # no overflow


def test_activity_regularizer_under_mixed_float16():
    """TF 2.21's fit raises a TypeError here (a float16 activity loss summed with
    float32 ones); kiln adds it in float32."""
    mp.set_global_policy("mixed_float16")
    model = keras.Sequential([keras.Input((4,)),
                              L.Dense(3, activity_regularizer="l2", kernel_regularizer="l2"),
                              L.Activation("linear", dtype="float32")])
    model.compile("sgd", "mse")
    losses = model.fit(np.ones((8, 4), np.float32), np.zeros((8, 3), np.float32), epochs=2,
                       verbose=0).history["loss"]
    assert losses[1] < losses[0]
    assert [dtype_of(v) for v in model.losses] == ["float16", "float32"]


def test_auto_scale_loss_false_keeps_the_optimizer():
    mp.set_global_policy("mixed_float16")
    model = _guide_model()
    model.compile("sgd", "mse", auto_scale_loss=False)
    assert not isinstance(model.optimizer, mp.LossScaleOptimizer)


def test_save_and_load_keep_the_policy(tmp_path):
    mp.set_global_policy("mixed_float16")
    model = keras.Sequential([keras.Input((4,)), L.Dense(2),
                              L.Activation("softmax", dtype="float32")])
    model.compile("adam", "mse")
    x, y = _data()
    model.fit(x, y, epochs=1, verbose=0)
    path = str(tmp_path / "m.keras")
    model.save(path)
    with zipfile.ZipFile(path) as z:
        config = json.loads(z.read("config.json"))
    # As TF 2.21 writes it: DTypePolicy configs; the compile config keeps the
    # optimizer compile() was given (Adam), not its LossScaleOptimizer.
    assert config["config"]["dtype"] == policy_dict("mixed_float16")
    layers = config["config"]["layers"]
    assert layers[0]["config"]["dtype"] == "float32"
    assert layers[1]["config"]["dtype"] == policy_dict("mixed_float16")
    assert layers[2]["config"]["dtype"] == policy_dict("float32")
    assert config["compile_config"]["optimizer"]["class_name"] == "Adam"
    loaded = keras.models.load_model(path)  # still mixed_float16: same optimizer layout
    assert isinstance(loaded.optimizer, mp.LossScaleOptimizer)
    assert loaded.layers[0].dtype_policy.name == "mixed_float16"
    np.testing.assert_allclose(loaded.predict(x[:3], verbose=0),
                               model.predict(x[:3], verbose=0))
    mp.set_global_policy("float32")
    with pytest.warns(UserWarning, match="Skipping variable loading for optimizer 'adam'"):
        plain = keras.models.load_model(path)  # as TF: an Adam with fewer variables
    assert type(plain.optimizer).__name__ == "Adam"
    assert plain.layers[0].dtype_policy.name == "mixed_float16"
    assert dtype_of(plain.layers[0](x)) == "float16" and dtype_of(plain(x)) == "float32"


def test_a_tensorflow_written_mixed_config_loads():
    """The Sequential config TF 2.21 writes under mixed_float16."""
    config = {
        "name": "sequential", "trainable": True, "dtype": policy_dict("mixed_float16"),
        "layers": [
            {"module": "keras.layers", "class_name": "InputLayer",
             "config": {"batch_shape": [None, 4], "dtype": "float32", "sparse": False,
                        "ragged": False, "name": "input_layer", "optional": False},
             "registered_name": None},
            {"module": "keras.layers", "class_name": "Dense",
             "config": {"name": "dense", "trainable": True,
                        "dtype": policy_dict("mixed_float16"), "units": 2,
                        "activation": "linear", "use_bias": True,
                        "kernel_initializer": {"module": "keras.initializers",
                                               "class_name": "GlorotUniform",
                                               "config": {"seed": None}, "registered_name": None},
                        "bias_initializer": {"module": "keras.initializers",
                                             "class_name": "Zeros", "config": {},
                                             "registered_name": None},
                        "kernel_regularizer": None, "bias_regularizer": None,
                        "kernel_constraint": None, "bias_constraint": None,
                        "quantization_config": None},
             "registered_name": None, "build_config": {"input_shape": [None, 4]}},
            {"module": "keras.layers", "class_name": "Activation",
             "config": {"name": "activation", "trainable": True,
                        "dtype": policy_dict("float32"), "activation": "softmax"},
             "registered_name": None}],
        "build_input_shape": [None, 4]}
    model = keras.Sequential.from_config(config)
    assert [layer.dtype_policy.name for layer in model.layers] == ["mixed_float16", "float32"]
    assert dtype_of(model.layers[0](np.ones((1, 4), np.float32))) == "float16"
    assert dtype_of(model(np.ones((1, 4), np.float32))) == "float32"
