"""The workloads in JAX: jax.numpy / lax equivalents of the seeds' code.

Modes: "eager" (un-jitted calls: one dispatch per primitive) and "jit"
(jax.jit). JAX has one compiled mode, so every "jit" row is also recorded
under "function" (meta says so).
"""
import os
import time

import numpy as np

import common as cm
import model_common as mc
from common import Case

NAME = "jax"
_jax = None
COMPILED = ("jit", ("function",))  # mode timed, modes that get a copy


def configure(threads):
    """Imports JAX on the CPU; returns (version, notes). XLA's CPU backend sizes
    its thread pool to the machine's cores; `threads` is recorded."""
    global _jax
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    _jax = jax
    return jax.__version__, {
        "threads": f"XLA CPU default thread pool ({threads} cores)",
        "jaxlib": __import__("jaxlib").__version__,
        "modes": "eager = un-jitted jax.numpy; jit = jax.jit, also reported as 'function'"}


def _case(name, mode, build, **kw):
    if mode == "jit":
        kw.setdefault("meta", {})
        kw["meta"] = dict(kw["meta"], compiled="jax.jit")
        return Case(name, "jit", build, also_as=COMPILED[1], **kw)
    return Case(name, mode, build, **kw)


def _charunpack(rows, mode):
    jax = _jax
    jnp = jax.numpy
    x_host = cm.charunpack_input(rows)

    def char_unpack(x):
        shifts = jnp.arange(7, -1, -1, dtype=jnp.uint8).reshape(1, 1, 8)
        bits = jnp.bitwise_and(jnp.right_shift(jnp.expand_dims(x, 2), shifts), jnp.uint8(1))
        return bits.reshape(x.shape[0], -1).astype(jnp.float32)

    def build():
        fn = char_unpack if mode == "eager" else jax.jit(char_unpack)
        return fn, (jnp.asarray(x_host),)

    def check(out):
        cm.close(out[0], cm.charunpack_reference(x_host), "charunpack")
    return _case(f"charunpack_{rows}x400", mode, build, check=check)


def _conv(mode):
    jax = _jax
    jnp, lax = jax.numpy, jax.lax

    def build():
        kernel = jnp.asarray(cm.conv_kernel_hwio())
        bias = jnp.zeros([100], jnp.float32)

        def conv(image):
            y = lax.conv_general_dilated(image, kernel, (1, 1), "VALID",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
            return y + bias
        fn = conv if mode == "eager" else jax.jit(conv)
        return fn, (jnp.asarray(cm.conv_input()),)
    return _case("conv2d_seed002", mode, build,
                 meta={"layout": "NHWC input, HWIO kernel, VALID (lax.conv_general_dilated)"})


def _while_tanh(mode):
    jax = _jax
    jnp, lax = jax.numpy, jax.lax
    x_host = cm.while_tanh_input()
    ref, iters = cm.while_tanh_reference(x_host)

    def eager(x):
        while jnp.sum(x) > 1:
            x = jnp.tanh(x)
        return x

    def compiled(x):
        return lax.while_loop(lambda x: jnp.sum(x) > 1, jnp.tanh, x)

    def build():
        fn = eager if mode == "eager" else jax.jit(compiled)
        return fn, (jnp.asarray(x_host),)

    def check(out):
        cm.close(out[0], ref, "while_tanh", rtol=1e-4)
    loop = "Python while" if mode == "eager" else "lax.while_loop"
    return _case("while_tanh", mode, build, check=check,
                 meta={"iterations": iters, "loop": loop})


def _dynamic_rnn(mode):
    jax = _jax
    jnp, lax = jax.numpy, jax.lax
    data_host = cm.rnn_input()

    def rnn_step(inp, state):
        return inp + state

    def eager(input_data, initial_state):
        input_data = jnp.transpose(input_data, [1, 0, 2])
        states, state = [], initial_state
        for i in range(input_data.shape[0]):
            state = rnn_step(input_data[i], state)
            states.append(state)
        return jnp.transpose(jnp.stack(states), [1, 0, 2])

    def compiled(input_data, initial_state):
        def step(state, inp):
            state = rnn_step(inp, state)
            return state, state
        _, states = lax.scan(step, initial_state, jnp.transpose(input_data, [1, 0, 2]))
        return jnp.transpose(states, [1, 0, 2])

    def build():
        fn = eager if mode == "eager" else jax.jit(compiled)
        b, _, f = cm.RNN_SHAPE
        return fn, (jnp.asarray(data_host), jnp.zeros([b, f], jnp.float32))

    def check(out):
        cm.close(out[0], cm.rnn_reference(data_host), "dynamic_rnn")
    loop = "Python loop + jnp.stack" if mode == "eager" else "lax.scan (JAX's TensorArray)"
    return _case("dynamic_rnn", mode, build, check=check, meta={"loop": loop})


def _chain100(mode):
    jax = _jax
    x_host = cm.chain_input()

    def build():
        fn = cm.chain(0.5, 50)
        return (fn if mode == "eager" else jax.jit(fn)), (jax.numpy.asarray(x_host),)

    def check(out):
        cm.close(out[0], cm.chain_reference(x_host), "chain100", rtol=1e-4)
    return _case("chain100", mode, build, check=check)


_model = []


def _keras_jax():
    os.environ["KERAS_BACKEND"] = "jax"
    import keras
    if keras.backend.backend() != "jax":
        raise RuntimeError(f"keras imported with backend {keras.backend.backend()!r}")
    return keras


def _keras_forward(model, x, mode):
    """(fn, args) of a Keras 3 model on JAX: plain call, or jax.jit of
    model.stateless_call."""
    if mode == "eager":
        return (lambda x: model(x, training=False)), (x,)
    tv = [v.value for v in model.trainable_variables]
    ntv = [v.value for v in model.non_trainable_variables]

    @_jax.jit
    def forward(tv, ntv, x):
        return model.stateless_call(tv, ntv, x, training=False)[0]
    return (lambda x: forward(tv, ntv, x)), (x,)


def _efficientnet(mode):
    """Keras 3's EfficientNetV2S on its JAX backend: the same model code as the
    TensorFlow row, running on JAX (jit: jax.jit of model.stateless_call)."""
    jax = _jax

    def build():
        if not _model:
            keras = _keras_jax()
            keras.utils.set_random_seed(0)
            _model.append(keras.applications.EfficientNetV2S(weights=None))
        return _keras_forward(_model[0], jax.numpy.asarray(cm.efficientnet_input()), mode)
    return _case("efficientnetv2s", mode, build, min_runs=3, max_warmup_time=3.0,
                 meta={"model": "keras.applications.EfficientNetV2S(weights=None), "
                                "KERAS_BACKEND=jax"})


def _micro():
    jax = _jax
    jnp = jax.numpy
    a_host, b_host = cm.micro_inputs()

    def eager_build():
        return (lambda a, b: a + b), (jnp.asarray(a_host), jnp.asarray(b_host))

    def call_build():
        return jax.jit(lambda a, b: a + b), (jnp.asarray(a_host), jnp.asarray(b_host))

    x = jnp.asarray(cm.chain_input())

    def fresh(i):
        f = jax.jit(cm.chain(0.5 + 1e-4 * i, cm.TRACE_OPS // 2))
        return lambda: f(x)

    def lower_only():
        times = []
        for i in range(3):
            t0 = time.perf_counter()
            jax.jit(cm.chain(0.25 + 1e-4 * i, cm.TRACE_OPS // 2)).lower(x)
            times.append(time.perf_counter() - t0)
        return {"lower_median_s": float(np.median(times)),
                "lower_note": "jax.jit(f).lower(x): tracing + StableHLO, no XLA compile"}

    return [
        Case("eager_add_overhead", "eager", eager_build),
        _case("function_call_overhead", "jit", call_build),
        _case("trace_1000_ops", "jit", fresh, fresh=True, min_runs=3, extra=lower_only),
    ]


def cases():
    """Every case, in table order."""
    modes = ("eager", "jit")
    out = [_charunpack(64, m) for m in modes] + [_charunpack(8192, m) for m in modes]
    for make in (_conv, _while_tanh, _dynamic_rnn, _chain100):
        out += [make(m) for m in modes]
    # EfficientNet last: importing Keras also loads TensorFlow into this process.
    return out + _micro() + [_efficientnet(m) for m in modes]



# ---- model workloads (issue 41): run_peers.py --models ----

def _lstm_layer(x, kernel, recurrent, bias):
    jnp, lax = _jax.numpy, _jax.lax
    sig = _jax.nn.sigmoid

    def step(carry, xw):  # xw: this step's x @ kernel + bias
        h, c = carry
        i, f, g, o = jnp.split(xw + h @ recurrent, 4, axis=-1)
        c = sig(f) * c + sig(i) * jnp.tanh(g)
        h = sig(o) * jnp.tanh(c)
        return (h, c), h
    h0 = jnp.zeros((x.shape[0], recurrent.shape[0]), x.dtype)
    _, hs = lax.scan(step, (h0, h0), jnp.swapaxes(x @ kernel + bias, 0, 1))
    return jnp.swapaxes(hs, 0, 1)


def _lstm2(x, weights):
    for kernel, recurrent, bias in weights:
        x = _lstm_layer(x, kernel, recurrent, bias)
    return x


def _layer_norm(x, g, b):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) * _jax.lax.rsqrt(x.var(-1, keepdims=True) + mc.LN_EPS) * g + b


def _attention(x, w):
    jnp = _jax.numpy
    q, k, v = (jnp.einsum("btd,dhk->bhtk", x, w["w" + n]) + w["b" + n][None, :, None]
               for n in "qkv")
    p = _jax.nn.softmax(q @ jnp.swapaxes(k, -1, -2) / jnp.sqrt(float(q.shape[-1])), axis=-1)
    return jnp.einsum("bhqk,hkd->bqd", p @ v, w["wo"]) + w["bo"]


def _transformer4(x, weights):
    for w in weights:
        x = _layer_norm(x + _attention(x, w), w["g1"], w["b1"])
        f = _jax.nn.relu(x @ w["w1"] + w["c1"]) @ w["w2"] + w["c2"]
        x = _layer_norm(x + f, w["g2"], w["b2"])
    return x


def _hand_model(name):
    jnp = _jax.numpy
    fn, weights, inp = {"lstm2": (_lstm2, mc.lstm_weights, mc.lstm_input),
                        "transformer4": (_transformer4, mc.transformer_weights,
                                         mc.transformer_input)}[name]
    def build():
        w, jitted = _jax.tree_util.tree_map(jnp.asarray, weights()), _jax.jit(fn)
        return (lambda x: jitted(x, w)), (jnp.asarray(inp()),)

    def check(out):
        mc.check(name, out[0])
    loop = "lax.scan" if name == "lstm2" else "jax.numpy"
    return _case(name, "jit", build, check=check, min_runs=5, meta={"written": loop})


def _keras_app(name):
    def build():
        model = mc.build_app(_keras_jax(), name)
        return _keras_forward(model, _jax.numpy.asarray(mc.image_input(name)), "jit")
    return _case(name, "jit", build, min_runs=5,
                 meta={"model": f"keras.applications.{mc.APPS[name][0]}, KERAS_BACKEND=jax"})


def model_cases():
    """jax.jit only: lstm2 (lax.scan), transformer4 (jax.numpy), then the Keras
    applications on Keras' JAX backend (last: importing Keras loads TensorFlow)."""
    return [_hand_model("lstm2"), _hand_model("transformer4")] + [_keras_app(n) for n in mc.APPS]
