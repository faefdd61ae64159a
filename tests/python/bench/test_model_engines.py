"""bench/peers' model workloads for issue 43: the convnet rows, their inputs, and the
FLOP counts the GFLOP/s columns divide by (checked against hand counts)."""
import os
import sys

import numpy as np
import pytest

import kiln as tf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bench", "peers"))

import model_common as mc  # noqa: E402
import onnx_engines as oe  # noqa: E402


def test_every_convnet_row_of_the_issue_is_a_workload():
    for short in ("efficientnetv2s", "resnet50", "mobilenetv3"):
        for size in (224, 384):
            for batch, suffix in ((1, ""), (8, "_b8")):
                name = f"{short}_{size}{suffix}"
                assert name in mc.NAMES
                assert mc.image_input(name).shape == (batch, size, size, 3)
                assert f"[{batch}, {size}, {size}, 3]" in mc.TITLES[name]
    assert mc.DEFAULT_NAMES == ["lstm2", "transformer4", "resnet50_224", "mobilenetv3_224"]


@pytest.mark.parametrize("name, expected", [
    # 2 layers x 100 steps x batch 32: gates [32, 4*64] from inputs (64, then 64) and h (64).
    ("lstm2", 2 * (2 * 32 * 100 * 256 * 128)),
    # the same with three gates
    ("gru2", 2 * (2 * 32 * 100 * 192 * 128)),
    # per block: q, k, v, out [1024 tokens, 256]^2; scores and sum 2 x [8, 128, 128, 256];
    # the FFN 256 -> 1024 -> 256.
    ("transformer4", 4 * (4 * 2 * 1024 * 256 * 256 + 2 * 2 * 1024 * 128 * 256
                          + 2 * 2 * 1024 * 256 * 1024)),
    ("resnet50_224", None),
])
def test_hand_flops(name, expected):
    assert mc.hand_flops(name) == expected


def test_flops_of_an_export_count_convolutions_and_products(tmp_path):
    pytest.importorskip("onnx")
    inp = tf.keras.Input((8, 8, 3))
    x = tf.keras.layers.Conv2D(4, 3, padding="same")(inp)  # 2*8*8*4 * 3*3*3
    x = tf.keras.layers.DepthwiseConv2D(3, padding="valid")(x)  # 2*6*6*4 * 3*3
    x = tf.keras.layers.Flatten()(x)
    out = tf.keras.layers.Dense(5)(x)  # 2 * 144 * 5
    model = tf.keras.Model(inp, out)
    path = str(tmp_path / "m.onnx")
    tf.onnx.export(model, path)
    expected = 2 * 8 * 8 * 4 * 27 + 2 * 6 * 6 * 4 * 9 + 2 * 144 * 5
    assert oe.count_flops(path, (1, 8, 8, 3)) == expected
    # Batch 2 doubles every count.
    assert oe.count_flops(path, (2, 8, 8, 3)) == 2 * expected
    x = np.ones((1, 8, 8, 3), np.float32)
    assert np.asarray(model(x)).shape == (1, 5)



@pytest.mark.parametrize("name", ["lstm2", "gru2"])
def test_recurrent_workloads_match_their_numpy_references(name):
    # kiln's Keras model as a function (its loops fused) against the float64 NumPy step.
    model = getattr(mc, f"build_{name}")(tf.keras)
    x, want = mc.reference(name)
    got = tf.function(model)(tf.constant(x)).numpy()
    assert mc.max_error(got, want) < 1e-5
