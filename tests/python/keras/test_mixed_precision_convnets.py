"""Convolution epilogues under mixed_bfloat16: Keras's bf16 convnet blocks (batch norm
computed in float32 between Casts, swish, relu6, hard swish, residual adds) fuse into
the bf16 convolutions (fuse_conv), which compute them on oneDNN's float32 accumulator
and round the output once: no full-size elementwise work is left between the
convolutions, and the outputs are at least as close to float32's as the unfused
graph's."""
import os
import sys

import numpy as np
import pytest

import kiln as tf
from kiln import config as kiln_config

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "fixtures", "tf_written", "saved_models"))
import conv_blocks  # noqa: E402  (the blocks of the keras_convnet_bf16 fixture)

keras = tf.keras
L = keras.layers
mp = keras.mixed_precision

CONV_OPS = ("_FusedConv2D", "_FusedDepthwiseConv2dNative")


@pytest.fixture(autouse=True)
def _float32_after():
    yield
    mp.set_global_policy("float32")


def function_of(model, jit, fuse=True):
    """model in a kiln.function; fuse=False leaves fuse_conv out (the unfused graph)."""
    saved = kiln_config.optimizer._disabled_passes
    if not fuse:
        kiln_config.optimizer._disabled_passes = staticmethod(lambda: {"fuse_conv"})
    try:
        return tf.function(lambda v: model(v, training=False), jit_compile=jit)
    finally:
        kiln_config.optimizer._disabled_passes = saved


def rms(a, b):
    return float(np.sqrt(np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2)))


@pytest.mark.parametrize("jit", [False, True])
def test_bf16_blocks_fuse_their_epilogues_and_stay_accurate(jit):
    rng = np.random.default_rng(11)
    x = rng.normal(size=(2, 16, 16, 3)).astype("float32")
    ref = conv_blocks.random_weights(conv_blocks.build(keras), rng)
    want = ref(x, training=False).numpy()
    mp.set_global_policy("mixed_bfloat16")
    mixed = conv_blocks.build(keras)
    mixed.set_weights(ref.get_weights())
    fused, unfused = function_of(mixed, jit), function_of(mixed, jit, fuse=False)
    got, plain = fused(x), unfused(x)
    assert got.dtype == tf.bfloat16
    ops = fused.get_concrete_function(x).optimized_graph.get_operations()
    convs = [n for n in ops if n.op in CONV_OPS]
    assert len(convs) == 6, [n.op for n in ops]
    # Work on activations (batch 2) is the convolutions and the input's casts only:
    # every batch norm, activation and residual add went into a convolution.
    big = [(n.op, n.name) for n in ops if n.op not in CONV_OPS + ("Placeholder", "Identity")
           and any(len(s) == 4 and s[0] == 2 and tuple(s) != x.shape for _, s in n.outputs)]
    assert not big, big
    err, err_plain = (rms(np.asarray(v.numpy(), np.float32), want) for v in (got, plain))
    scale = float(np.sqrt(np.mean(want.astype(np.float64) ** 2)))
    assert err <= 1.1 * err_plain + 1e-3 * scale, (err, err_plain, scale)
    assert err <= 0.02 * scale, (err, scale)
