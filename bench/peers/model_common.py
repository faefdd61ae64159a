"""The model workloads (issue 41) shared by kiln and its peers: inputs, weights
and NumPy references. NumPy only, so both environments import it.

Weights come from `weights_for(specs)`: one generator over the model's
(path, shape) list in Keras order, so kiln and TensorFlow build the same Keras
model and get the same values; PyTorch and JAX map them by hand.
"""
import functools

import numpy as np

LSTM_SHAPE = (32, 100, 64)  # batch, time, features
LSTM_UNITS, LSTM_LAYERS = 64, 2
TR_BATCH, TR_SEQ, TR_D, TR_HEADS, TR_FFN, TR_BLOCKS = 8, 128, 256, 4, 1024, 4
LN_EPS = 1e-3  # Keras' LayerNormalization default (PyTorch is told the same)

# The Keras applications: workload name -> (keras.applications name, batch, image size).
APPS = {"resnet50_224": ("ResNet50", 1, 224), "mobilenetv3_224": ("MobileNetV3Small", 1, 224)}
# Issue 43's convnet rows: EfficientNetV2-S (seed 003's model), each at 224 and 384, batch 1
# and 8 (throughput).
for _short, _app in (("efficientnetv2s", "EfficientNetV2S"), ("resnet50", "ResNet50"),
                     ("mobilenetv3", "MobileNetV3Small")):
    for _size in (224, 384):
        for _batch in (1, 8):
            _name = f"{_short}_{_size}" + ("_b8" if _batch == 8 else "")
            APPS.setdefault(_name, (_app, _batch, _size))

TITLES = {
    "lstm2": "2-layer LSTM(64), return_sequences, [32, 100, 64], inference",
    "transformer4": "4 encoder blocks (d 256, 4 heads, ffn 1024), [8, 128, 256], inference",
    "gru2": "2-layer GRU(64) (reset_after), return_sequences, [32, 100, 64], inference",
}
TITLES.update({n: f"keras.applications.{a}(weights=None), [{b}, {s}, {s}, 3]"
               for n, (a, b, s) in APPS.items()})
NAMES = list(TITLES)
# The hand-sized workloads with NumPy references (the applications have none).
HAND_NAMES = ("lstm2", "gru2", "transformer4")
# What `bench/demo.py --models` and the peers' `--models` runs time (issue 41's set).
DEFAULT_NAMES = ["lstm2", "transformer4", "resnet50_224", "mobilenetv3_224"]


def hand_flops(name):
    """FLOPs (2 x multiply-adds) of one call of lstm2, gru2 or transformer4, from the shapes;
    None for the applications (bench/peers/onnx_engines.py counts their exports)."""
    if name == "lstm2":
        b, t, i = LSTM_SHAPE
        u = LSTM_UNITS
        return sum(2 * b * t * 4 * u * ((i if layer == 0 else u) + u)
                   for layer in range(LSTM_LAYERS))
    if name == "gru2":
        b, t, i = LSTM_SHAPE
        u = LSTM_UNITS
        return sum(2 * b * t * 3 * u * ((i if layer == 0 else u) + u)
                   for layer in range(LSTM_LAYERS))
    if name == "transformer4":
        tokens = TR_BATCH * TR_SEQ
        projections = 4 * 2 * tokens * TR_D * TR_D  # q, k, v, output
        attention = 2 * 2 * tokens * TR_SEQ * TR_D  # scores and the weighted sum
        ffn = 2 * 2 * tokens * TR_D * TR_FFN
        return TR_BLOCKS * (projections + attention + ffn)
    return None


def lstm_input():
    return np.random.default_rng(7).standard_normal(LSTM_SHAPE, dtype=np.float32)


def transformer_input():
    return np.random.default_rng(8).standard_normal((TR_BATCH, TR_SEQ, TR_D), dtype=np.float32)


def image_input(name="resnet50_224"):
    """The input of APPS[name]: [batch, size, size, 3] in [0, 255) (MobileNetV3 and
    EfficientNetV2 rescale inside the model; ResNet50 takes it as is)."""
    _, batch, size = APPS[name]
    shape = (batch, size, size, 3)
    return (np.random.default_rng(9).random(shape, dtype=np.float32) * 255).astype(np.float32)


def _one_weight(rng, leaf, shape):
    if leaf == "gamma":
        return 1 + 0.1 * rng.standard_normal(shape)
    if leaf == "moving_variance":
        return rng.uniform(0.5, 1.5, shape)
    if leaf in ("beta", "bias", "moving_mean") or len(shape) < 2:
        return 0.1 * rng.standard_normal(shape)
    fan_in = int(np.prod(shape[:-1]))
    return rng.standard_normal(shape) / np.sqrt(fan_in)


def weights_for(specs, seed=41):
    """Arrays for a Keras model's [(path, shape)] in get_weights() order."""
    rng = np.random.default_rng(seed)
    return [_one_weight(rng, path.split("/")[-1], tuple(shape)).astype(np.float32)
            for path, shape in specs]


def specs_of(model):
    """[(path, shape)] of a Keras model (kiln's or Keras 3's)."""
    return [(getattr(v, "path", v.name), tuple(int(d) for d in v.shape)) for v in model.weights]


def set_model_weights(model):
    model.set_weights(weights_for(specs_of(model)))
    return model


# ---- Keras 3 model builders, run with kiln.keras or keras (same code) ----

def _recurrent2(keras, layer):
    inp = keras.Input(LSTM_SHAPE[1:])
    x = inp
    for _ in range(LSTM_LAYERS):
        x = getattr(keras.layers, layer)(LSTM_UNITS, return_sequences=True)(x)
    return set_model_weights(keras.Model(inp, x))


def build_lstm2(keras):
    return _recurrent2(keras, "LSTM")


def build_gru2(keras):
    """lstm2's shape with GRU layers (Keras' default reset_after=True)."""
    return _recurrent2(keras, "GRU")




def _encoder_block(keras, x):
    L = keras.layers
    a = L.MultiHeadAttention(TR_HEADS, TR_D // TR_HEADS)(x, x)
    x = L.LayerNormalization(epsilon=LN_EPS)(L.Add()([x, a]))
    f = L.Dense(TR_D)(L.Dense(TR_FFN, activation="relu")(x))
    return L.LayerNormalization(epsilon=LN_EPS)(L.Add()([x, f]))


def build_transformer4(keras):
    inp = keras.Input((TR_SEQ, TR_D))
    x = inp
    for _ in range(TR_BLOCKS):
        x = _encoder_block(keras, x)
    return set_model_weights(keras.Model(inp, x))


def build_app(keras, name, **kw):
    """keras.applications.<APPS[name]>(weights=None, **kw) at its image size, with
    weights_for's values."""
    app, _, size = APPS[name]
    kw.setdefault("input_shape", (size, size, 3))
    return set_model_weights(getattr(keras.applications, app)(weights=None, **kw))


# ---- the weights by role, for the hand-written PyTorch and JAX versions ----

def lstm_weights():
    """[(kernel [in, 4u], recurrent [u, 4u], bias [4u])] per layer, gates i, f, c, o."""
    specs = []
    for i in range(LSTM_LAYERS):
        specs += [("kernel", (LSTM_SHAPE[2] if i == 0 else LSTM_UNITS, 4 * LSTM_UNITS)),
                  ("recurrent_kernel", (LSTM_UNITS, 4 * LSTM_UNITS)), ("bias", (4 * LSTM_UNITS,))]
    w = weights_for(specs)
    return [tuple(w[3 * i:3 * i + 3]) for i in range(LSTM_LAYERS)]


def gru_weights():
    """[(kernel [in, 3u], recurrent [u, 3u], bias [2, 3u])] per layer, gates z, r, h;
    bias rows: input, recurrent."""
    specs = []
    for i in range(LSTM_LAYERS):
        specs += [("kernel", (LSTM_SHAPE[2] if i == 0 else LSTM_UNITS, 3 * LSTM_UNITS)),
                  ("recurrent_kernel", (LSTM_UNITS, 3 * LSTM_UNITS)),
                  ("bias", (2, 3 * LSTM_UNITS))]
    w = weights_for(specs)
    return [tuple(w[3 * i:3 * i + 3]) for i in range(LSTM_LAYERS)]


def _block_specs():
    d, h, k = TR_D, TR_HEADS, TR_D // TR_HEADS
    qkv = [("kernel", (d, h, k)), ("bias", (h, k))] * 3
    return (qkv + [("kernel", (h, k, d)), ("bias", (d,)), ("gamma", (d,)), ("beta", (d,)),
                   ("kernel", (d, TR_FFN)), ("bias", (TR_FFN,)), ("kernel", (TR_FFN, d)),
                   ("bias", (d,)), ("gamma", (d,)), ("beta", (d,))])


BLOCK_KEYS = ["wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "g1", "b1",
              "w1", "c1", "w2", "c2", "g2", "b2"]


def transformer_weights():
    """One dict per block (BLOCK_KEYS; Keras shapes: wq [d, heads, key_dim])."""
    n = len(BLOCK_KEYS)
    w = weights_for(_block_specs() * TR_BLOCKS)
    return [dict(zip(BLOCK_KEYS, w[i * n:(i + 1) * n])) for i in range(TR_BLOCKS)]


# ---- NumPy references (float64) ----

def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def lstm_reference(x):
    x = x.astype(np.float64)
    for kernel, recurrent, bias in lstm_weights():
        h = np.zeros((x.shape[0], LSTM_UNITS))
        c = np.zeros_like(h)
        out = []
        for t in range(x.shape[1]):
            i, f, g, o = np.split(x[:, t] @ kernel + h @ recurrent + bias, 4, axis=-1)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
            h = _sigmoid(o) * np.tanh(c)
            out.append(h)
        x = np.stack(out, axis=1)
    return x


def gru_reference(x):
    x = x.astype(np.float64)
    for kernel, recurrent, bias in gru_weights():
        h = np.zeros((x.shape[0], LSTM_UNITS))
        out = []
        for t in range(x.shape[1]):
            xz, xr, xh = np.split(x[:, t] @ kernel + bias[0], 3, axis=-1)
            pz, pr, ph = np.split(h @ recurrent + bias[1], 3, axis=-1)
            z, r = _sigmoid(xz + pz), _sigmoid(xr + pr)
            h = z * h + (1 - z) * np.tanh(xh + r * ph)
            out.append(h)
        x = np.stack(out, axis=1)
    return x


def _layer_norm(x, g, b):
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LN_EPS) * g + b


def _attention(x, w):
    q = np.einsum("btd,dhk->bhtk", x, w["wq"], optimize=True) + w["bq"][None, :, None]
    k = np.einsum("btd,dhk->bhtk", x, w["wk"], optimize=True) + w["bk"][None, :, None]
    v = np.einsum("btd,dhk->bhtk", x, w["wv"], optimize=True) + w["bv"][None, :, None]
    s = q / np.sqrt(q.shape[-1]) @ k.transpose(0, 1, 3, 2)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bhqk,hkd->bqd", p @ v, w["wo"], optimize=True) + w["bo"]


def transformer_reference(x):
    x = x.astype(np.float64)
    for w in transformer_weights():
        x = _layer_norm(x + _attention(x, w), w["g1"], w["b1"])
        f = np.maximum(x @ w["w1"] + w["c1"], 0) @ w["w2"] + w["c2"]
        x = _layer_norm(x + f, w["g2"], w["b2"])
    return x


@functools.lru_cache(maxsize=None)
def reference(name):
    """(input, NumPy reference) of lstm2, gru2 or transformer4."""
    if name == "lstm2":
        x = lstm_input()
        return x, lstm_reference(x)
    if name == "gru2":
        x = lstm_input()
        return x, gru_reference(x)
    x = transformer_input()
    return x, transformer_reference(x)


def max_error(actual, expected):
    """Largest absolute difference, relative to the reference's largest value."""
    a, e = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    if a.shape != e.shape:
        raise AssertionError(f"shape {a.shape} != reference {e.shape}")
    return float(np.abs(a - e).max() / max(np.abs(e).max(), 1e-30))


def check(name, out, tol=1e-4):
    """Raises AssertionError when out differs from name's NumPy reference."""
    err = max_error(out, reference(name)[1])
    if not err <= tol:
        raise AssertionError(f"{name}: relative error {err:.2g} > {tol:g}")
    return err
