"""kiln.keras.applications against TensorFlow's Keras 3 (run in .venv-peers).

    .venv-peers/bin/python tests/peers/check_applications.py [--kiln-python PY] [NAME ...]

For each application (all, or the NAMEs given, e.g. MobileNetV3Small): builds
Keras' model with weights=None on a small input, perturbs its biases,
normalization statistics and scales (so that no branch hides behind a zero or
a 1e-6; for the CALIBRATED ones, batch norm statistics measured on the input,
so that the output depends on the input and every layer: a result line says
when an output barely does), runs it on random pixels, and writes input, output, weights, layer
names and parameter count to an .npz file. Then kiln (a subprocess with
kiln's Python, .venv/bin/python by default) builds the same application,
copies the weights with set_weights (and, for the smaller models, loads them
from Keras' .weights.h5 file with weights=PATH) and compares: parameter count, layer
names and order (kiln's arithmetic layers tf.math.* left out: Keras lists
those as operations, not layers), weight paths, output shape and values (largest
difference relative to the output's largest magnitude, at most 1e-4) and
each family's preprocess_input and decode_predictions (a made-up class index).
The NAME-imagenet entries go through weights="imagenet": Keras' own loading
path reads the model's weights from its legacy .h5 layout (that of the files
it downloads) under the file name it asks its cache for, and kiln loads the
same file from a $KERAS_HOME/models folder. "weights-files" (in a full run, or
named) compares the file names and URLs Keras asks for with kiln's
missing-file errors. Exit status 1 on any mismatch.
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
    "MobileNet": ((32, 32, 3), {}),
    "MobileNet-multipliers": ((40, 48, 3), {"alpha": 0.5, "depth_multiplier": 2,
                                            "dropout": 0.3, "include_top": False,
                                            "pooling": "avg"}),
    "InceptionResNetV2": ((75, 75, 3), {}),
    "InceptionResNetV2-notop": ((80, 90, 3), {"include_top": False, "pooling": "max"}),
    "NASNetMobile": ((32, 32, 3), {}),
    "NASNetMobile-notop": ((48, 40, 3), {"include_top": False}),
    "NASNetLarge": ((32, 32, 3), {}),
    # weights="imagenet": Keras' weights written in its legacy .h5 layout (that of
    # the files it downloads) under the file name Keras asks its cache for; kiln
    # loads them from $KERAS_HOME/models.
    "ResNet50-imagenet": ((32, 32, 3), {"include_top": False, "pooling": "avg"}),
    "EfficientNetB0-imagenet": ((32, 32, 3), {"include_top": False}),
    "DenseNet121-imagenet": ((32, 32, 3), {"include_top": False}),
    "MobileNet-imagenet": ((128, 128, 3), {"alpha": 0.25, "classes": 1000}),
    "MobileNetV2-imagenet": ((96, 96, 3), {"alpha": 0.35, "include_top": False}),
    "MobileNetV3Small-imagenet": ((32, 32, 3), {"classes": 1000}),
    "NASNetMobile-imagenet": ((32, 32, 3), {"include_top": False, "pooling": "avg"}),
}

# weights="imagenet" (an empty cache folder): the file name and URL Keras asks
# keras.utils.get_file for, against kiln's error message.
WEIGHTS_FILES = [
    ("ResNet101", {}), ("ResNet50V2", {"include_top": False}), ("DenseNet201", {}),
    ("VGG16", {"include_top": False}), ("VGG19", {}), ("Xception", {}),
    ("InceptionV3", {"include_top": False}), ("InceptionResNetV2", {}),
    ("MobileNet", {"alpha": 0.75, "input_shape": (160, 160, 3)}),
    ("MobileNet", {"include_top": False}),
    ("MobileNetV2", {"alpha": 1.3, "include_top": False, "input_shape": (192, 192, 3)}),
    ("MobileNetV3Large", {"alpha": 0.75}),
    ("MobileNetV3Small", {"minimalistic": True, "include_top": False}),
    ("EfficientNetB3", {"include_top": False}), ("EfficientNetV2B1", {}),
    ("EfficientNetV2M", {"include_top": False}), ("ConvNeXtSmall", {}),
    ("NASNetMobile", {"include_top": False}), ("NASNetLarge", {}),
]

# Applications whose batch norms get statistics from the input (_calibrate).
# Not the deeper EfficientNets (B4..B7, V2 S/M/L): calibrated on two 32x32
# samples, their activations grow to 1e3..1e6 and float32 rounding alone
# then parts Keras' outputs from kiln's by more than RTOL.
CALIBRATED = {"MobileNet", "MobileNetV2", "MobileNetV3Small", "MobileNetV3Large",
              "InceptionResNetV2", "NASNetMobile", "NASNetLarge", "ResNet50", "ResNet50V2",
              "DenseNet121", "Xception", "InceptionV3", "VGG16", "EfficientNetB0",
              "ConvNeXtTiny", "ConvNeXtSmall", "ConvNeXtBase"}

# Keras module -> kiln module with the same preprocess_input.
PREPROCESS = {"mobilenet_v3": "mobilenet_v3", "efficientnet": "efficientnet",
              "efficientnet_v2": "efficientnet_v2", "convnext": "convnext",
              "xception": "xception", "inception_v3": "inception_v3",
              "mobilenet_v2": "mobilenet_v2", "resnet": "resnet", "resnet50": "resnet50",
              "resnet_v2": "resnet_v2", "vgg16": "vgg16", "vgg19": "vgg19",
              "densenet": "densenet", "mobilenet": "mobilenet",
              "inception_resnet_v2": "inception_resnet_v2", "nasnet": "nasnet"}


def _arguments(spec):
    shape, extra = SPECS[spec]
    kw = {"weights": None, "input_shape": shape}
    if extra.get("include_top", True):
        kw.update(classes=10, classifier_activation=None)
    kw.update(extra)
    return spec.split("-")[0], kw


class _Asked(Exception):
    pass


def keras_weights_file(name, kw):
    """(file name, URL) that Keras' application ``name`` asks get_file for
    with weights="imagenet" (nothing downloaded: the request is stopped)."""
    import warnings

    import keras
    from keras.src.utils import file_utils
    asked = []

    def get_file(fname=None, origin=None, **kwargs):
        asked.append((fname, origin, kwargs.get("cache_subdir")))
        raise _Asked()

    real, file_utils.get_file = file_utils.get_file, get_file
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(keras.applications, name)(**dict(kw, weights="imagenet"))
    except _Asked:
        pass
    finally:
        file_utils.get_file = real
        keras.backend.clear_session()
    if len(asked) != 1 or asked[0][2] != "models":
        raise RuntimeError(f"{name}({kw}): Keras asked get_file for {asked}")
    return asked[0][:2]


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


def _calibrate(model, x, rng):
    """Batch norms' moving statistics from ``x`` (one training-mode pass with
    momentum 0), the variances then floored and raised by up to 50%: unlike the random
    statistics alone, this keeps the input's signal through a deep network
    (the two samples' outputs differ), so that every weight is compared."""
    bns = [layer for layer in model._flatten_layers()
           if type(layer).__name__ == "BatchNormalization"]
    momenta = [layer.momentum for layer in bns]
    for layer in bns:
        layer.momentum = 0.0
    model(x, training=True)
    for layer, momentum in zip(bns, momenta):
        layer.momentum = momentum
        var = layer.moving_variance
        value = np.asarray(var.numpy())
        # A floor: two samples' variance can be ~0 in a channel (a 1x1 grid).
        value = (value + 0.25 * value.mean() + 1e-3) * rng.uniform(1.0, 1.5, value.shape)
        var.assign(value.astype("float32"))


def keras_imagenet(name, kw, model, home):
    """Keras' own weights="imagenet" path on ``model``'s weights: get_file
    (stopped before any download) writes them in Keras' legacy .h5 layout,
    that of the files it downloads, under the name asked for in the cache
    folder ``home``/models, and Keras loads that file. Returns (the loaded
    model, (file name, URL))."""
    import warnings

    import h5py
    import keras
    from keras.src.legacy.saving import legacy_h5_format
    from keras.src.utils import file_utils
    asked = []

    def get_file(fname=None, origin=None, **kwargs):
        target = os.path.join(home, kwargs.get("cache_subdir"), fname)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with h5py.File(target, "w") as f:
            legacy_h5_format.save_weights_to_hdf5_group(f, model)
        asked.append((fname, origin))
        return target

    real, file_utils.get_file = file_utils.get_file, get_file
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loaded = getattr(keras.applications, name)(**dict(kw, weights="imagenet"))
    finally:
        file_utils.get_file = real
    return loaded, asked[0]


def keras_side(spec, folder):
    import keras
    name, kw = _arguments(spec)
    keras.backend.clear_session()
    model = getattr(keras.applications, name)(**kw)
    rng = np.random.default_rng(zlib.crc32(spec.encode()))
    _perturb(model, rng)
    for layer in model._flatten_layers():
        if type(layer).__name__ == "Normalization":
            layer.finalize_state()  # Keras' Normalization reads its weights only then
    x = rng.uniform(0, 255, (2,) + kw["input_shape"]).astype(np.float32)
    if spec.split("-")[0] in CALIBRATED:
        _calibrate(model, x, rng)
    y = np.asarray(model(x, training=False))
    meta_sensitivity = float(np.max(np.abs(y[0] - y[1])) / max(float(np.max(np.abs(y))), 1e-6))
    weights = model.get_weights()
    meta = {"spec": spec, "name": name, "kwargs": kw, "count": int(model.count_params()),
            "paths": [v.path for v in model.weights],
            "sensitivity": meta_sensitivity,
            "model_name": model.name, "layers": [layer.name for layer in model.layers
                                                 if type(layer).__name__ != "InputLayer"]}
    arrays = {}
    if spec.endswith("-imagenet"):
        home = os.path.join(folder, spec + "-keras-home")
        loaded, (fname, origin) = keras_imagenet(name, kw, model, home)
        arrays["y_imagenet"] = np.asarray(loaded(x, training=False))
        meta["imagenet"] = {"home": home, "fname": fname, "origin": origin,
                            "model_name": loaded.name}
    # The smaller models also go through a Keras .weights.h5 file (weights=path).
    elif model.count_params() < H5_MAX_PARAMS:
        meta["h5"] = os.path.join(folder, spec + ".weights.h5")
        model.save_weights(meta["h5"])
    path = os.path.join(folder, spec + ".npz")
    np.savez(path, x=x, y=y, meta=json.dumps(meta), **arrays,
             **{f"w{i:05d}": w for i, w in enumerate(weights)})
    return path


def keras_preprocess(folder):
    """preprocess_input of each family, and decode_predictions with a made-up
    class index (Keras' CLASS_INDEX set directly: nothing downloaded)."""
    import keras
    from keras.src.applications import imagenet_utils
    x = np.random.default_rng(0).uniform(0, 255, (2, 4, 5, 3)).astype(np.float32)
    out = {m: np.asarray(getattr(keras.applications, m).preprocess_input(x.copy()))
           for m in PREPROCESS}
    index = {str(i): [f"n{i:08d}", f"made-up class {i}"] for i in range(1000)}
    home = os.path.join(folder, "decode-keras-home")
    os.makedirs(os.path.join(home, "models"))
    with open(os.path.join(home, "models", "imagenet_class_index.json"), "w") as f:
        json.dump(index, f)
    imagenet_utils.CLASS_INDEX = index
    preds = np.random.default_rng(1).random((3, 1000)).astype(np.float32)
    decoded = keras.applications.imagenet_utils.decode_predictions(preds, top=7)
    decoded = [[[str(c), str(n), float(p)] for c, n, p in row] for row in decoded]
    path = os.path.join(folder, "preprocess.npz")
    np.savez(path, x=x, preds=preds, decoded=json.dumps(decoded), home=home, **out)
    return path


def keras_weights_files(folder):
    """The file name and URL Keras asks for, per WEIGHTS_FILES entry."""
    import warnings
    asked = []
    for name, extra in WEIGHTS_FILES:
        kw = dict(extra)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            asked.append([name, extra, *keras_weights_file(name, kw)])
    path = os.path.join(folder, "weights_files.json")
    with open(path, "w") as f:
        json.dump(asked, f)
    return path


def kiln_side(paths):
    """(Runs with kiln's Python.) One JSON line of results per .npz file."""
    import kiln as tf
    for path in paths:
        if os.path.basename(path) == "weights_files.json":
            print(json.dumps(_kiln_weights_files(tf, path)), flush=True)
            continue
        data = np.load(path)
        if os.path.basename(path) == "preprocess.npz":
            print(json.dumps(_kiln_preprocess(tf, data)), flush=True)
            continue
        meta = json.loads(str(data["meta"]))
        res = {"spec": meta["spec"], "problems": [], "sensitivity": meta.get("sensitivity")}
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
    res["abs_err"] = float(np.max(np.abs(y - ref)))
    if meta.get("imagenet"):
        _kiln_imagenet(tf, meta, kw, data, res)
    if meta.get("h5"):
        loaded = getattr(tf.keras.applications, meta["name"])(**dict(kw, weights=meta["h5"]))
        y = loaded(tf.constant(data["x"]), training=False).numpy()
        _compare(y, ref, "outputs with weights from Keras' .weights.h5", problems)


def _kiln_imagenet(tf, meta, kw, data, res):
    """weights="imagenet" with Keras' legacy .h5 file in a Keras cache folder."""
    info = meta["imagenet"]
    os.environ["KERAS_HOME"] = info["home"]
    try:
        tf.keras.backend.clear_session()
        loaded = getattr(tf.keras.applications, meta["name"])(**dict(kw, weights="imagenet"))
    finally:
        del os.environ["KERAS_HOME"]
    y = loaded(tf.constant(data["x"]), training=False).numpy()
    res["imagenet_file"] = info["fname"]
    res["imagenet_abs_err"] = float(np.max(np.abs(y - data["y_imagenet"])))
    res["imagenet_rel_err"] = _compare(y, data["y_imagenet"], "outputs with "
                                       f"weights='imagenet' (Keras' legacy .h5 file "
                                       f"{info['fname']})", res["problems"])
    if loaded.name != info["model_name"]:
        res["problems"].append(f"weights='imagenet': model name {loaded.name!r} vs Keras' "
                               f"{info['model_name']!r}")


def _kiln_weights_files(tf, path):
    """kiln's missing-file error names Keras' file and URL for each case."""
    import re
    import warnings
    with open(path) as f:
        cases = json.load(f)
    problems = []
    with tempfile.TemporaryDirectory() as home:
        os.environ["KERAS_HOME"] = home
        try:
            for name, extra, fname, origin in cases:
                kw = dict(extra, weights="imagenet")
                if "input_shape" in kw:
                    kw["input_shape"] = tuple(kw["input_shape"])
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        getattr(tf.keras.applications, name)(**kw)
                    problems.append(f"{name}({extra}): no error without the file")
                    continue
                except ValueError as e:
                    text = str(e)
                got = re.search(r"the file (\S+) is not in .* download it from (\S+);", text)
                if not got or got.groups() != (fname, origin):
                    problems.append(f"{name}({extra}): Keras asks for {fname} from {origin}; "
                                    f"kiln says: {text[:300]}")
        finally:
            del os.environ["KERAS_HOME"]
    return {"spec": f"weights files ({len(cases)} cases)", "problems": problems}


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
    os.environ["KERAS_HOME"] = str(data["home"])
    try:
        decoded = tf.keras.applications.imagenet_utils.decode_predictions(data["preds"], top=7)
    finally:
        del os.environ["KERAS_HOME"]
    decoded = [[[str(c), str(n), float(p)] for c, n, p in row] for row in decoded]
    if decoded != json.loads(str(data["decoded"])):
        problems.append("decode_predictions differs from Keras'")
    return {"spec": "preprocess_input, decode_predictions", "problems": problems}


def main(argv):
    if argv[:1] == ["--kiln-side"]:
        kiln_side(argv[1:])
        return 0
    kiln_python = os.path.join(REPO, ".venv", "bin", "python")
    if argv[:1] == ["--kiln-python"]:
        kiln_python, argv = argv[1], argv[2:]
    specs = argv or list(SPECS) + ["weights-files"]
    files = "weights-files" in specs
    specs = [s for s in specs if s != "weights-files"]
    unknown = [s for s in specs if s not in SPECS]
    if unknown:
        print(f"unknown applications {unknown}; known: {list(SPECS)}")
        return 2
    with tempfile.TemporaryDirectory() as folder:
        paths = [keras_preprocess(folder)] + [keras_side(s, folder) for s in specs]
        if files:
            paths.append(keras_weights_files(folder))
        proc = subprocess.run([kiln_python, os.path.abspath(__file__), "--kiln-side"] + paths,
                              capture_output=True, text=True, cwd=REPO)
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    failed = proc.returncode != 0 or len(results) != len(paths)
    if failed:
        print(proc.stderr[-3000:])
    for r in results:
        extra = f" out {tuple(r['shape'])}, rel. error {r['rel_err']:.1e} (abs " \
            f"{r['abs_err']:.1e})" if "rel_err" in r else ""
        if r.get("sensitivity") is not None and r["sensitivity"] < 1e-3:
            extra += " (the output barely depends on the input)"
        if "imagenet_rel_err" in r:
            extra += (f"; weights='imagenet' ({r['imagenet_file']}): rel. error "
                      f"{r['imagenet_rel_err']:.1e} (abs {r['imagenet_abs_err']:.1e})")
        print(f"{r['spec']}: {'MISMATCH' if r['problems'] else 'ok'}{extra}")
        for p in r["problems"]:
            print(f"  {p}")
        failed |= bool(r["problems"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
