"""TensorBoard reads the logs kiln wrote (run in .venv-peers, with the tensorboard package).

    .venv-peers/bin/python tests/peers/check_summaries.py DIR

DIR is what tests/peers/write_kiln_summaries.py wrote. TensorBoard's EventAccumulator
(the reader behind its plugins, with its data-compat migration) must find every tag with
its plugin, steps and values; its multiplexer must list the fit's train and validation
runs. Exit status 1 on any difference.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
from tensorboard.backend.event_processing import event_accumulator as ea  # noqa: E402
from tensorboard.backend.event_processing import plugin_event_multiplexer as pem  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402

PROBLEMS = []


def expect(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        PROBLEMS.append(what)


def load(path):
    acc = ea.EventAccumulator(path, size_guidance={ea.TENSORS: 0})
    acc.Reload()
    return acc


def values(acc, tag):
    return [(e.step, tensor_util.make_ndarray(e.tensor_proto)) for e in acc.Tensors(tag)]


def check_direct(path):
    acc = load(path)
    tags = acc.Tags()["tensors"]
    for tag, plugin in (("fn/loss", "scalars"), ("fn/x", "histograms"), ("eager/nan", "scalars"),
                        ("eager/image", "images"), ("eager/text", "text"), ("eager/h", "histograms")):
        expect(tag in tags, f"direct: tag {tag}")
        meta = acc.SummaryMetadata(tag) if tag in tags else None
        expect(meta is not None and meta.plugin_data.plugin_name == plugin,
               f"direct: {tag} belongs to the {plugin} plugin")
    loss = values(acc, "fn/loss")
    expect([s for s, _ in loss] == [0, 1, 2], "direct: steps of a function's scalar")
    expect(np.allclose([float(v) for _, v in loss], [4.5, 9.0, 13.5]), "direct: scalar values")
    hist = values(acc, "fn/x")
    expect(hist and hist[0][1].shape == (5, 3) and hist[0][1][:, 2].sum() == 10,
           "direct: histogram buckets")
    expect(np.isnan(float(values(acc, "eager/nan")[0][1])), "direct: a NaN scalar")
    img = values(acc, "eager/image")[0][1]
    expect(img.shape == (4,) and img[0] == b"4" and img[1] == b"3" and img[2][:4] == b"\x89PNG",
           "direct: images as [width, height, png, png]")
    txt = values(acc, "eager/text")[0][1]
    expect(txt.tolist() == [b"a", b"b"], "direct: text")
    h = values(acc, "eager/h")[0][1]
    expect(np.allclose(h, [[1, 7 / 3, 3], [7 / 3, 11 / 3, 0], [11 / 3, 5, 1]]),
           "direct: histogram equals TensorFlow's buckets")
    expect(acc.Tags()["graph"], "direct: a graph event")
    ops = {n.op for n in acc.Graph().node} if acc.Tags()["graph"] else set()
    expect({"Placeholder", "WriteSummary", "Mean", "AssignAddVariableOp"} <= ops,
           f"direct: the graph's ops ({sorted(ops)})")


def check_fit(path):
    mux = pem.EventMultiplexer()
    mux.AddRunsFromDirectory(path)
    mux.Reload()
    runs = mux.Runs()
    expect(set(runs) == {"train", "validation"}, f"fit: runs train and validation ({sorted(runs)})")
    train = load(os.path.join(path, "train")).Tags()["tensors"]
    val = load(os.path.join(path, "validation")).Tags()["tensors"]
    for tag in ("epoch_loss", "epoch_accuracy", "epoch_learning_rate", "keras"):
        expect(tag in train, f"fit: train has {tag}")
    for tag in ("epoch_loss", "epoch_accuracy", "evaluation_loss_vs_iterations"):
        expect(tag in val, f"fit: validation has {tag}")
    expect(any(t.endswith("kernel/histogram") for t in train), "fit: weight histograms")
    expect(any(t.endswith("kernel/image") for t in train), "fit: weight images")
    keras = load(os.path.join(path, "train"))
    expect("keras" in train and keras.SummaryMetadata("keras").plugin_data.plugin_name
           == "graph_keras_model", "fit: the model config for the graph plugin")
    steps = [s for s, _ in values(load(os.path.join(path, "train")), "epoch_loss")]
    expect(steps == [0, 1], "fit: epoch steps")


def main():
    root = sys.argv[1]
    check_direct(os.path.join(root, "direct"))
    check_fit(os.path.join(root, "fit"))
    print(f"{len(PROBLEMS)} problems")
    sys.exit(1 if PROBLEMS else 0)


if __name__ == "__main__":
    main()
