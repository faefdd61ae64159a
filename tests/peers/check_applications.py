"""kiln.keras.applications against TensorFlow's Keras 3 (run in .venv-peers).

    .venv-peers/bin/python tests/peers/check_applications.py [--kiln-python PY] [NAME ...]

For each application (all, or the NAMEs given, e.g. MobileNetV3Small): builds
Keras' model with weights=None on a small input, perturbs its biases,
normalization statistics and scales (so that no branch hides behind a zero or
a 1e-6), runs it on random pixels, and writes input, output, weights, layer
names and parameter count to an .npz file. Then kiln (a subprocess with
kiln's Python, .venv/bin/python by default) builds the same application,
copies the weights with set_weights (and, for the smaller models, loads them
from Keras' .weights.h5 file with weights=PATH) and compares: parameter count, layer
names and order (kiln's arithmetic layers tf.math.* left out: Keras lists
those as operations, not layers), weight paths, output shape and values (largest
difference relative to the output's largest magnitude, at most 1e-4) and
each family's preprocess_input. Exit status 1 on any mismatch.
"""
import json
import os
import subprocess
import sys
import tempfile
import zlib

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RTOL = 1e-4
H5_MAX_PARAMS = 15_000_000

# name -> (input shape, extra arguments). With the top (10 classes, logits)
# unless the arguments say otherwise.
SPECS = {
    "MobileNetV3Small": ((32, 32, 3), {}),
    "MobileNetV3Large": ((32, 32, 3), {}),
    "MobileNetV3Small-minimalistic": ((48, 40, 3), {"minimalistic": True, "alpha": 0.75}),
    "MobileNetV3Large-notop": ((33, 33, 3), {"include_top": False, "pooling": "avg",
                                             "include_preprocessing": False, "alpha": 1.25}),
    "EfficientNetB0": ((32, 32, 3), {}),
    "EfficientNetB1": ((32, 32, 3), {}),
    "EfficientNetB2": ((32, 32, 3), {}),
    "EfficientNetB3": ((32, 32, 3), {}),
    "EfficientNetB4": ((32, 32, 3), {}),
    "EfficientNetB5": ((32, 32, 3), {}),
    "EfficientNetB6": ((32, 32, 3), {}),
    "EfficientNetB7": ((32, 32, 3), {}),
    "EfficientNetB0-notop": ((35, 35, 3), {"include_top": False, "pooling": "max"}),
    "EfficientNetV2B0": ((32, 32, 3), {}),
    "EfficientNetV2B1": ((32, 32, 3), {}),
    "EfficientNetV2B2": ((32, 32, 3), {}),
    "EfficientNetV2B3": ((32, 32, 3), {}),
    "EfficientNetV2S": ((32, 32, 3), {}),
    "EfficientNetV2M": ((32, 32, 3), {}),
    "EfficientNetV2L": ((32, 32, 3), {}),
    "EfficientNetV2B0-notop": ((32, 32, 3), {"include_top": False,
                                             "include_preprocessing": False}),
    "ConvNeXtTiny": ((32, 32, 3), {}),
    "ConvNeXtSmall": ((32, 32, 3), {}),
    "ConvNeXtBase": ((32, 32, 3), {}),
    "ConvNeXtTiny-notop": ((64, 64, 3), {"include_top": False, "pooling": "avg"}),
    "Xception": ((71, 71, 3), {}),
    "InceptionV3": ((75, 75, 3), {}),
    "InceptionV3-notop": ((80, 90, 3), {"include_top": False, "pooling": "avg"}),
    "MobileNetV2": ((32, 32, 3), {}),
    "ResNet50": ((32, 32, 3), {}),
    "ResNet50V2": ((32, 32, 3), {}),
    "VGG16": ((32, 32, 3), {"include_top": False}),
    "DenseNet121": ((32, 32, 3), {}),
}

# Keras module -> kiln module with the same preprocess_input.
PREPROCESS = {"mobilenet_v3": "mobilenet_v3", "efficientnet": "efficientnet",
              "efficientnet_v2": "efficientnet_v2", "convnext": "convnext",
              "xception": "xception", "inception_v3": "inception_v3",
              "mobilenet_v2": "mobilenet_v2", "resnet": "resnet", "resnet50": "resnet50",
              "resnet_v2": "resnet_v2", "vgg16": "vgg16", "vgg19": "vgg19",
              "densenet": "densenet"}


def _arguments(spec):
    shape, extra = SPECS[spec]
    kw = {"weights": None, "input_shape": shape}
    if extra.get("include_top", True):
        kw.update(classes=10, classifier_activation=None)
    kw.update(extra)
    return spec.split("-")[0], kw


def _perturb(model, rng):
    """Random biases, means, variances and scales in place of Keras' 0s and 1s."""
    for v in model.weights:
        value = np.asarray(v.numpy())
        if value.ndim > 1 or value.dtype.kind != "f":
            continue
        name = v.path.rsplit("/", 1)[-1]
        # Contracting (variances above 1, scales below): a very deep random
        # network that amplifies would turn float32 rounding into large errors.
        if "variance" in name:
            new = rng.uniform(1.0, 3.0, value.shape)
        elif "mean" in name or name in ("beta", "bias"):
            new = rng.normal(0.0, 0.1, value.shape)
        else:  # gamma, LayerScale's variable
            new = rng.uniform(0.5, 1.0, value.shape)
        v.assign(new.astype(value.dtype))


def keras_side(spec, folder):
    import keras
    name, kw = _arguments(spec)
    keras.backend.clear_session()
    model = getattr(keras.applications, name)(**kw)
    rng = np.random.default_rng(zlib.crc32(spec.encode()))
    _perturb(model, rng)
    x = rng.uniform(0, 255, (2,) + kw["input_shape"]).astype(np.float32)
    y = np.asarray(model(x, training=False))
    weights = model.get_weights()
    meta = {"spec": spec, "name": name, "kwargs": kw, "count": int(model.count_params()),
            "paths": [v.path for v in model.weights],
            "model_name": model.name, "layers": [layer.name for layer in model.layers
                                                 if type(layer).__name__ != "InputLayer"]}
    # The smaller models also go through a Keras .weights.h5 file (weights=path).
    if model.count_params() < H5_MAX_PARAMS:
        meta["h5"] = os.path.join(folder, spec + ".weights.h5")
        model.save_weights(meta["h5"])
    path = os.path.join(folder, spec + ".npz")
    np.savez(path, x=x, y=y, meta=json.dumps(meta),
             **{f"w{i:05d}": w for i, w in enumerate(weights)})
    return path


def keras_preprocess(folder):
    import keras
    x = np.random.default_rng(0).uniform(0, 255, (2, 4, 5, 3)).astype(np.float32)
    out = {m: np.asarray(getattr(keras.applications, m).preprocess_input(x.copy()))
           for m in PREPROCESS}
    path = os.path.join(folder, "preprocess.npz")
    np.savez(path, x=x, **out)
    return path


def kiln_side(paths):
    """(Runs with kiln's Python.) One JSON line of results per .npz file."""
    import kiln as tf
    for path in paths:
        data = np.load(path)
        if os.path.basename(path) == "preprocess.npz":
            print(json.dumps(_kiln_preprocess(tf, data)), flush=True)
            continue
        meta = json.loads(str(data["meta"]))
        res = {"spec": meta["spec"], "problems": []}
        try:
            _kiln_compare(tf, data, meta, res)
        except Exception as e:  # noqa: BLE001  (reported, the next model goes on)
            res["problems"].append(f"{type(e).__name__}: {str(e)[:300]}")
        print(json.dumps(res), flush=True)


def _kiln_compare(tf, data, meta, res):
    problems = res["problems"]
    tf.keras.backend.clear_session()
    kw = dict(meta["kwargs"])
    kw["input_shape"] = tuple(kw["input_shape"])
    model = getattr(tf.keras.applications, meta["name"])(**kw)
    names = [layer.name for layer in model.layers[1:] if not layer.name.startswith("tf.math.")]
    if names != meta["layers"]:
        diff = [(i, a, b) for i, (a, b) in enumerate(zip(names, meta["layers"])) if a != b]
        problems.append(f"layer names: {len(names)} vs Keras' {len(meta['layers'])}; "
                        f"first differences (index, kiln, keras) {diff[:4]}")
    if model.count_params() != meta["count"]:
        problems.append(f"count_params {model.count_params()} vs Keras' {meta['count']}")
    if model.name != meta["model_name"]:
        problems.append(f"model name {model.name!r} vs Keras' {meta['model_name']!r}")
    paths = [v.path for v in model.weights]
    if paths != meta["paths"]:
        diff = [(i, a, b) for i, (a, b) in enumerate(zip(paths, meta["paths"])) if a != b]
        problems.append(f"weight paths: {len(paths)} vs Keras' {len(meta['paths'])}; first "
                        f"differences (index, kiln, keras) {diff[:3]}")
    weights = [data[k] for k in sorted(data.files) if k.startswith("w")]
    shapes = [tuple(w.shape) for w in model.get_weights()]
    if shapes != [tuple(w.shape) for w in weights]:
        problems.append("weight shapes differ")
        return
    model.set_weights(weights)
    y = model(tf.constant(data["x"]), training=False).numpy()
    ref = data["y"]
    res["shape"] = list(ref.shape)
    if y.shape != ref.shape:
        problems.append(f"output shape {y.shape} vs Keras' {ref.shape}")
        return
    res["rel_err"] = _compare(y, ref, "outputs", problems)
    if meta.get("h5"):
        loaded = getattr(tf.keras.applications, meta["name"])(**dict(kw, weights=meta["h5"]))
        y = loaded(tf.constant(data["x"]), training=False).numpy()
        _compare(y, ref, "outputs with weights from Keras' .weights.h5", problems)


def _compare(y, ref, what, problems):
    err = float(np.max(np.abs(y - ref)) / max(float(np.max(np.abs(ref))), 1e-6))
    if not np.isfinite(y).all() or not err <= RTOL:
        problems.append(f"{what} differ: relative error {err:.2e}")
    return err


def _kiln_preprocess(tf, data):
    problems = []
    for keras_mod, kiln_mod in PREPROCESS.items():
        mod = getattr(tf.keras.applications, kiln_mod, None)
        if mod is None:
            problems.append(f"no kiln.keras.applications.{kiln_mod}")
            continue
        got = np.asarray(mod.preprocess_input(data["x"].copy()))
        if got.shape != data[keras_mod].shape or \
                not np.allclose(got, data[keras_mod], rtol=1e-5, atol=1e-4):
            problems.append(f"{kiln_mod}.preprocess_input differs from Keras' {keras_mod}")
    return {"spec": "preprocess_input", "problems": problems}


def main(argv):
    if argv[:1] == ["--kiln-side"]:
        kiln_side(argv[1:])
        return 0
    kiln_python = os.path.join(REPO, ".venv", "bin", "python")
    if argv[:1] == ["--kiln-python"]:
        kiln_python, argv = argv[1], argv[2:]
    specs = argv or list(SPECS)
    unknown = [s for s in specs if s not in SPECS]
    if unknown:
        print(f"unknown applications {unknown}; known: {list(SPECS)}")
        return 2
    with tempfile.TemporaryDirectory() as folder:
        paths = [keras_preprocess(folder)] + [keras_side(s, folder) for s in specs]
        proc = subprocess.run([kiln_python, os.path.abspath(__file__), "--kiln-side"] + paths,
                              capture_output=True, text=True, cwd=REPO)
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    failed = proc.returncode != 0 or len(results) != len(paths)
    if failed:
        print(proc.stderr[-3000:])
    for r in results:
        extra = f" out {tuple(r['shape'])}, rel. error {r['rel_err']:.1e}" \
            if "rel_err" in r else ""
        print(f"{r['spec']}: {'MISMATCH' if r['problems'] else 'ok'}{extra}")
        for p in r["problems"]:
            print(f"  {p}")
        failed |= bool(r["problems"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
