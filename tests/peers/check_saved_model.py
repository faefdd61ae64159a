"""TensorFlow's own protobuf classes read kiln's saved_model.pb (run in .venv-peers).

    .venv-peers/bin/python tests/peers/check_saved_model.py DIR [DIR ...]

For each export kiln wrote: parses saved_model.pb with tensorflow's SavedModel
message, checks what kiln wrote is what TensorFlow reads (schema version, tags,
library functions, node ops and inputs, signature defs, the object graph's
functions, variables and signatures), prints it, then tries tf.saved_model.load and
runs each export's serving signature in TensorFlow, comparing with kiln's output
(<dir>_input.npy, <dir>_expected.npy written by examples/export_model.py).
Exit status 1 when TensorFlow's parse or outputs disagree with the export.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from tensorflow.core.protobuf import saved_model_pb2  # noqa: E402


def check(path):
    sm = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        sm.ParseFromString(f.read())
    problems = []

    def expect(cond, what):
        if not cond:
            problems.append(what)

    expect(sm.saved_model_schema_version == 1, "schema version is not 1")
    expect(len(sm.meta_graphs) == 1, "not one meta graph")
    mg = sm.meta_graphs[0]
    expect(list(mg.meta_info_def.tags) == ["serve"], "tags are not ['serve']")
    lib = {f.signature.name: f for f in mg.graph_def.library.function}
    print(f"{path}: {len(lib)} functions, written by {mg.meta_info_def.tensorflow_version!r}")
    for name, f in sorted(lib.items()):
        ops = sorted({n.op for n in f.node_def})
        print(f"  {name}: {len(f.signature.input_arg)} args, {len(f.node_def)} nodes, "
              f"{len(f.signature.output_arg)} outputs; ops {', '.join(ops)}")
        names = {a.name for a in f.signature.input_arg} | {n.name for n in f.node_def}
        for n in f.node_def:
            for i in n.input:
                expect(i.lstrip("^").split(":", 1)[0] in names, f"{name}/{n.name}: input {i}")
            for a in n.attr.values():
                if a.WhichOneof("value") == "func":
                    expect(a.func.name in lib, f"{name}/{n.name}: calls {a.func.name}")
        for o in f.signature.output_arg:
            expect(o.name in f.ret, f"{name}: output {o.name} has no ret")
    graph_nodes = {n.name: n for n in mg.graph_def.node}
    for key, sd in sorted(mg.signature_def.items()):
        ins = {k: (v.name, v.dtype, [d.size for d in v.tensor_shape.dim]) for k, v in sd.inputs.items()}
        outs = {k: (v.name, v.dtype, [d.size for d in v.tensor_shape.dim]) for k, v in sd.outputs.items()}
        print(f"  signature {key} ({sd.method_name}): inputs {ins} outputs {outs}")
        for _, (tname, _, _) in list(ins.items()) + list(outs.items()):
            expect(tname.split(":")[0] in graph_nodes, f"signature {key}: {tname} is no node")
        for n in graph_nodes.values():
            if n.op == "StatefulPartitionedCall":
                expect(n.attr["f"].func.name in lib, f"main graph calls {n.attr['f'].func.name}")
    og = mg.object_graph_def
    kinds = {}
    for node in og.nodes:
        kinds[node.WhichOneof("kind")] = kinds.get(node.WhichOneof("kind"), 0) + 1
        if node.WhichOneof("kind") == "function":
            for c in node.function.concrete_functions:
                expect(c in og.concrete_functions and c in lib, f"object function {c}")
    print(f"  object graph: {dict(sorted(kinds.items()))}; root children "
          f"{[c.local_name for c in og.nodes[0].children]}")
    try:
        import numpy as np
        import tensorflow as tf
        loaded = tf.saved_model.load(path)
        print("  tf.saved_model.load: loaded")
    except Exception as e:  # noqa: BLE001
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        problems.append(f"tf.saved_model.load: {type(e).__name__}: {first[:300]}")
        loaded = None
    stem = path.rstrip("/")
    if loaded is not None and os.path.exists(stem + "_input.npy"):
        sig = loaded.signatures["serving_default"]
        (key,) = sm.meta_graphs[0].signature_def["serving_default"].inputs.keys()
        out = sig(**{key: tf.constant(np.load(stem + "_input.npy"))})
        got = (next(iter(out.values())) if isinstance(out, dict) else out).numpy()
        want = np.load(stem + "_expected.npy")
        diff = float(np.abs(got.astype(np.float64) - want).max())
        print(f"  TensorFlow runs serving_default: max |TF - kiln| = {diff:.2e}")
        expect(diff <= 1e-5 * max(1.0, float(np.abs(want).max())),
               f"TensorFlow's output differs from kiln's by {diff}")
    for p in problems:
        print(f"  MISMATCH: {p}")
    return not problems


def main(argv):
    if not argv:
        sys.exit(__doc__)
    ok = all([check(p) for p in argv])
    print("TensorFlow reads kiln's exports" if ok else "TensorFlow's reading differs")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
