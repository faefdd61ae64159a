"""The workloads in PyTorch (CPU): plain tensor code and torch.compile.

Modes: "eager" (plain calls) and "jit" (torch.compile, the default Inductor
backend, which generates and compiles C++ on the CPU); every "jit" row is also
recorded under "function" (PyTorch has one compiled mode). Gradients are off
(torch.set_grad_enabled(False)), as in inference. Layout: PyTorch's
convolution is NCHW, so the Conv2D input is the same values transposed.
"""
import atexit
import logging
import os
import shutil
import tempfile

import numpy as np

import common as cm
import model_common as mc
from common import Case, Skip

NAME = "torch"
_torch = None
UNAVAILABLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), ".venv-peers", "torch-unavailable.txt")


def configure(threads):
    """Imports PyTorch with `threads` intra-op threads; returns (version, notes).
    Raises RuntimeError with the reason when scripts/setup_peers.sh could not
    install a working CPU PyTorch."""
    global _torch
    if os.path.exists(UNAVAILABLE):
        with open(UNAVAILABLE) as f:
            raise RuntimeError(f.read().strip())
    # A fresh Inductor cache for this run, so first calls compile for real.
    if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
        cache = tempfile.mkdtemp(prefix="kiln-inductor-")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
        atexit.register(shutil.rmtree, cache, ignore_errors=True)
    import torch
    logging.getLogger("torch").setLevel(logging.ERROR)  # "triton not found" and the like
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    torch.set_grad_enabled(False)
    _torch = torch
    return torch.__version__, {
        "threads": f"torch.set_num_threads({threads}), interop 1",
        "grad": "torch.set_grad_enabled(False)",
        "modes": "eager = plain; jit = torch.compile (Inductor, C++ on the CPU), "
                 "also reported as 'function'",
        "inductor_cache": os.environ["TORCHINDUCTOR_CACHE_DIR"]}


def _case(name, mode, build, **kw):
    if mode == "jit":
        kw["meta"] = dict(kw.get("meta", {}), compiled="torch.compile")
        return Case(name, "jit", build, also_as=("function",), **kw)
    return Case(name, mode, build, **kw)


def _maybe_compile(fn, mode):
    return fn if mode == "eager" else _torch.compile(fn)


def _charunpack(rows, mode):
    torch = _torch
    x_host = cm.charunpack_input(rows)
    shifts = torch.arange(7, -1, -1, dtype=torch.uint8).reshape(1, 1, 8)

    def char_unpack(x):
        bits = (x.unsqueeze(2) >> shifts) & 1
        return bits.reshape(x.shape[0], -1).to(torch.float32)

    def build():
        return _maybe_compile(char_unpack, mode), (torch.from_numpy(x_host.copy()),)

    def check(out):
        cm.close(out[0], cm.charunpack_reference(x_host), "charunpack")
    return _case(f"charunpack_{rows}x400", mode, build, check=check)


def _conv(mode):
    torch = _torch

    def build():
        conv = torch.nn.Conv2d(100, 100, 3)  # padding 0, like Keras' "valid"
        with torch.no_grad():
            conv.weight.copy_(torch.from_numpy(cm.conv_kernel_hwio().transpose(3, 2, 0, 1).copy()))
            conv.bias.zero_()
        conv.eval()
        image = torch.from_numpy(np.ascontiguousarray(cm.conv_input().transpose(0, 3, 1, 2)))
        return _maybe_compile(conv, mode), (image,)
    return _case("conv2d_seed002", mode, build,
                 meta={"layout": "NCHW input [1, 100, 200, 200] (the same values), OIHW kernel"})


def _while_tanh(mode):
    torch = _torch
    x_host = cm.while_tanh_input()
    ref, iters = cm.while_tanh_reference(x_host)

    def f(x):
        while torch.sum(x) > 1:
            x = torch.tanh(x)
        return x

    def build():
        return _maybe_compile(f, mode), (torch.from_numpy(x_host.copy()),)

    def check(out):
        cm.close(out[0], ref, "while_tanh", rtol=1e-4)
    meta = {"iterations": iters}
    if mode == "jit":
        meta["note"] = ("the data-dependent Python while breaks torch.compile's graph: the "
                        "loop stays in Python around compiled pieces")
    return _case("while_tanh", mode, build, check=check, meta=meta)


def _dynamic_rnn(mode):
    torch = _torch
    data_host = cm.rnn_input()

    def rnn_step(inp, state):
        return inp + state

    def dynamic_rnn(input_data, initial_state):
        input_data = input_data.permute(1, 0, 2)
        states, state = [], initial_state
        for i in range(input_data.shape[0]):
            state = rnn_step(input_data[i], state)
            states.append(state)
        return torch.stack(states).permute(1, 0, 2)

    def build():
        b, _, f = cm.RNN_SHAPE
        return (_maybe_compile(dynamic_rnn, mode),
                (torch.from_numpy(data_host.copy()), torch.zeros(b, f)))

    def check(out):
        cm.close(out[0], cm.rnn_reference(data_host), "dynamic_rnn")
    return _case("dynamic_rnn", mode, build, check=check,
                 meta={"loop": "Python loop + torch.stack (PyTorch has no TensorArray)"})


def _chain100(mode):
    torch = _torch
    x_host = cm.chain_input()

    def build():
        return _maybe_compile(cm.chain(0.5, 50), mode), (torch.from_numpy(x_host.copy()),)

    def check(out):
        cm.close(out[0], cm.chain_reference(x_host), "chain100", rtol=1e-4)
    return _case("chain100", mode, build, check=check)


def _micro():
    torch = _torch
    a_host, b_host = cm.micro_inputs()

    def eager_build():
        return (lambda a, b: a + b), (torch.from_numpy(a_host), torch.from_numpy(b_host))

    def call_build():
        return (torch.compile(lambda a, b: a + b),
                (torch.from_numpy(a_host), torch.from_numpy(b_host)))

    x = torch.from_numpy(cm.chain_input())

    def fresh(i):
        torch._dynamo.reset()  # forget earlier samples' compiled code and guards
        f = torch.compile(cm.chain(0.5 + 1e-4 * i, cm.TRACE_OPS // 2))
        return lambda: f(x)

    return [
        Case("eager_add_overhead", "eager", eager_build),
        _case("function_call_overhead", "jit", call_build),
        _case("trace_1000_ops", "jit", fresh, fresh=True, min_runs=3,
              meta={"note": "the constant c is baked into the generated C++, so every "
                            "sample compiles a new kernel"}),
    ]


def cases():
    """Every case, in table order."""
    modes = ("eager", "jit")
    out = [_charunpack(64, m) for m in modes] + [_charunpack(8192, m) for m in modes]
    for make in (_conv, _while_tanh, _dynamic_rnn, _chain100):
        out += [make(m) for m in modes]
    reason = ("PyTorch has no EfficientNetV2-S of its own (torchvision's needs "
              "a torchvision wheel built for this torch; none is pinned)")
    out += [Skip("efficientnetv2s", m, reason) for m in ("eager", "function", "jit")]
    return out + _micro()


# ---- model workloads (issue 41): run_peers.py --models ----

def _t(a):
    return _torch.from_numpy(np.ascontiguousarray(a))


def _lstm2():
    """nn.LSTM(64, 64, num_layers=2) with the Keras weights (same gate order
    i, f, g, o; PyTorch's two biases: Keras' bias and zeros)."""
    torch = _torch
    lstm = torch.nn.LSTM(mc.LSTM_SHAPE[2], mc.LSTM_UNITS, mc.LSTM_LAYERS, batch_first=True)
    for i, (kernel, recurrent, bias) in enumerate(mc.lstm_weights()):
        getattr(lstm, f"weight_ih_l{i}").copy_(_t(kernel.T))
        getattr(lstm, f"weight_hh_l{i}").copy_(_t(recurrent.T))
        getattr(lstm, f"bias_ih_l{i}").copy_(_t(bias))
        getattr(lstm, f"bias_hh_l{i}").zero_()
    return lstm.eval(), lambda x: lstm(x)[0]


def _gru2():
    """nn.GRU(64, 64, num_layers=2) with the Keras weights: PyTorch's gates are
    r, z, n where Keras' are z, r, h; its two biases are Keras' two rows."""
    torch = _torch
    gru = torch.nn.GRU(mc.LSTM_SHAPE[2], mc.LSTM_UNITS, mc.LSTM_LAYERS, batch_first=True)
    u = mc.LSTM_UNITS

    def reorder(a):  # last axis z, r, h -> r, z, n
        return np.concatenate([a[..., u:2 * u], a[..., :u], a[..., 2 * u:]], axis=-1)
    for i, (kernel, recurrent, bias) in enumerate(mc.gru_weights()):
        getattr(gru, f"weight_ih_l{i}").copy_(_t(reorder(kernel).T))
        getattr(gru, f"weight_hh_l{i}").copy_(_t(reorder(recurrent).T))
        getattr(gru, f"bias_ih_l{i}").copy_(_t(reorder(bias[0])))
        getattr(gru, f"bias_hh_l{i}").copy_(_t(reorder(bias[1])))
    return gru.eval(), lambda x: gru(x)[0]


def _load_block(layer, w):
    d = mc.TR_D
    qkv = [w[k].reshape(d, d).T for k in ("wq", "wk", "wv")]  # [in, heads*key_dim] -> [out, in]
    layer.self_attn.in_proj_weight.copy_(_t(np.concatenate(qkv)))
    layer.self_attn.in_proj_bias.copy_(_t(np.concatenate([w[k].reshape(d) for k in
                                                          ("bq", "bk", "bv")])))
    layer.self_attn.out_proj.weight.copy_(_t(w["wo"].reshape(d, d).T))
    layer.self_attn.out_proj.bias.copy_(_t(w["bo"]))
    for mod, (wk, bk) in ((layer.linear1, ("w1", "c1")), (layer.linear2, ("w2", "c2"))):
        mod.weight.copy_(_t(w[wk].T))
        mod.bias.copy_(_t(w[bk]))
    for mod, (g, b) in ((layer.norm1, ("g1", "b1")), (layer.norm2, ("g2", "b2"))):
        mod.weight.copy_(_t(w[g]))
        mod.bias.copy_(_t(w[b]))


def _transformer4():
    """nn.TransformerEncoder: 4 post-norm layers, ReLU, no dropout, Keras' weights."""
    torch = _torch
    layer = torch.nn.TransformerEncoderLayer(mc.TR_D, mc.TR_HEADS, mc.TR_FFN, dropout=0.0,
                                             layer_norm_eps=mc.LN_EPS, batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, mc.TR_BLOCKS, enable_nested_tensor=False)
    for block, w in zip(enc.layers, mc.transformer_weights()):
        _load_block(block, w)
    return enc.eval(), enc


def _model_case(name, mode):
    make, inp = {"lstm2": (_lstm2, mc.lstm_input), "gru2": (_gru2, mc.lstm_input),
                 "transformer4": (_transformer4, mc.transformer_input)}[name]

    def build():
        _, fn = make()
        return _maybe_compile(fn, mode), (_t(inp()),)

    def check(out):
        mc.check(name, out[0])
    meta = {"module": {"lstm2": "nn.LSTM", "gru2": "nn.GRU"}.get(name, "nn.TransformerEncoder")}
    if name in ("lstm2", "gru2") and mode == "jit":
        meta["note"] = "Dynamo does not trace nn.LSTM/nn.GRU (a graph break): it runs eagerly"
    return _case(name, mode, build, check=check, min_runs=5, meta=meta)


def compile_in_process():
    """Inductor's compile-worker processes start in the background and took the
    2 cores for seconds (nn.LSTM calls 1.6 s instead of 8 ms): compile in process."""
    import torch._inductor.config
    torch._inductor.config.compile_threads = 1


def model_cases():
    """lstm2, gru2 and transformer4 eager and compiled; no torchvision for the CNNs."""
    compile_in_process()
    out = [_model_case(n, m) for n in ("lstm2", "gru2", "transformer4") for m in ("eager", "jit")]
    reason = "torchvision is not installed in .venv-peers (no ResNet50/MobileNetV3 in torch)"
    return out + [Skip(n, m, reason) for n in mc.APPS for m in ("eager", "jit")]
