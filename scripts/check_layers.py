#!/usr/bin/env python3
"""Checks that every C++ file of kiln includes only its own layer and the
layers below it (docs/ARCHITECTURE.md draws the same map).

Usage: check_layers.py [ROOT]   (exit 1 and one line per violation)
       check_layers.py --self-test
"""
import os
import re
import sys
import tempfile

# Layer -> the layers it may include (its own included). A DAG, bottom first.
# "op_table" is the op row's definition (kiln/op.h, op_list.def); "jit_ir" is
# the JIT's IR (src/jit/ir/), which op rows write their lowerings in.
# "profiler" (src/profiler/) records events from every layer above core.
_OPS = {"core", "comm", "op_table", "jit_ir", "ops", "profiler"}
ALLOWED = {
    "core": {"core"},
    "profiler": {"core", "profiler"},
    "comm": {"core", "comm"},
    "op_table": {"core", "op_table"},
    "jit_ir": {"core", "op_table", "jit_ir"},
    "ops": _OPS,
    "kernels": _OPS | {"kernels"},
    "runtime": _OPS | {"runtime"},
    "graph": _OPS | {"graph"},
    "passes": _OPS | {"graph", "passes"},
    "exec": _OPS | {"kernels", "runtime", "graph", "exec"},
    "jit": _OPS | {"kernels", "runtime", "graph", "passes", "exec", "jit"},
    "function": _OPS | {"kernels", "runtime", "graph", "passes", "exec", "jit", "function"},
    "autodiff": _OPS | {"kernels", "runtime", "graph", "passes", "exec", "jit", "function",
                        "autodiff"},
}
# TFRecord files and tf.train.Example parsing (their kernels bound by the registry).
ALLOWED["io"] = {"core", "op_table", "io"}
ALLOWED["saved_model"] = set(ALLOWED["autodiff"]) | {"saved_model"}
ALLOWED["onnx"] = set(ALLOWED["saved_model"]) | {"onnx"}
# TensorBoard event files (tf.summary): the writer, its ops' kernels.
ALLOWED["summary"] = set(ALLOWED["saved_model"]) | {"io", "summary"}
ALLOWED["registry"] = set(ALLOWED) | {"registry"}

# Public headers (include/kiln/...) by layer; a header not listed is an error,
# so a new header has to be placed on the map.
PUBLIC = {
    "core": ["dtype.h", "half.h", "shape.h", "buffer.h", "tensor.h", "status.h", "refcount.h",
             "small_vector.h", "config.h", "thread_pool.h", "variable.h", "npy.h"],
    "comm": ["comm.h"],
    "profiler": ["profiler.h"],
    "op_table": ["op.h", "op_list.def"],
    "ops": ["ops.h", "ops/", "context.h"],
    "graph": ["graph.h"],
    "passes": ["passes.h"],
    "exec": ["executor.h"],
    "function": ["function.h", "trace.h", "control_flow.h", "benchmark.h"],
    "autodiff": ["gradient_tape.h"],
    "saved_model": ["saved_model.h", "checkpoint.h"],
    "onnx": ["onnx.h"],
    "io": ["record_io.h"],
    "summary": ["summary.h"],
    "registry": ["kiln.h"],
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def public_layer(rel):
    """Layer of include/kiln/<rel>, or None."""
    for layer, names in PUBLIC.items():
        for n in names:
            if rel == n or (n.endswith("/") and rel.startswith(n)):
                return layer
    return None


def layer_of(root, path):
    """(layer, why) of a file under src/ or include/kiln/."""
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    if rel.startswith("include/kiln/"):
        return public_layer(rel[len("include/kiln/"):])
    if rel.startswith("src/jit/ir/"):
        return "jit_ir"
    if rel.startswith("src/"):
        folder = rel.split("/")[1]
        return folder if folder in ALLOWED else None
    return None


def resolve(root, src, name):
    """The file an include names: relative to the including file, then src/,
    then include/ (kiln's include paths)."""
    for base in (os.path.dirname(src), os.path.join(root, "src"), os.path.join(root, "include")):
        p = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(p):
            return p
    return None


def check(root):
    problems = []
    files = []
    for top in ("src", "include/kiln"):
        for d, _, names in os.walk(os.path.join(root, top)):
            files += [os.path.join(d, n) for n in names
                      if n.endswith((".h", ".cpp", ".def"))]
    for f in sorted(files):
        rel = os.path.relpath(f, root)
        mine = layer_of(root, f)
        if mine is None:
            problems.append(f"{rel}: not on the layer map (scripts/check_layers.py)")
            continue
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        for m in INCLUDE.finditer(text):
            target = resolve(root, f, m.group(1))
            if target is None:
                continue  # a system or third-party header
            theirs = layer_of(root, target)
            line = text.count("\n", 0, m.start()) + 1
            if theirs is None:
                problems.append(f"{rel}:{line}: includes {m.group(1)}, which is not on the map")
            elif theirs not in ALLOWED[mine]:
                problems.append(f"{rel}:{line}: {mine} includes {m.group(1)} from {theirs}, "
                                f"a layer above it")
    return problems


def self_test():
    """The checker flags an upward include and an unmapped folder."""
    with tempfile.TemporaryDirectory() as root:
        def write(rel, text):
            p = os.path.join(root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w", encoding="utf-8") as fh:
                fh.write(text)
        write("include/kiln/op.h", "#pragma once\n")
        write("include/kiln/function.h", '#include "kiln/op.h"\n')
        write("src/ops/a.cpp", '#include "kiln/op.h"\n#include "kiln/function.h"\n')
        write("src/function/b.cpp", '#include "kiln/op.h"\n')
        write("src/mystery/c.cpp", "\n")
        got = check(root)
    want_up = "src/ops/a.cpp:2: ops includes kiln/function.h from function, a layer above it"
    want_map = "src/mystery/c.cpp: not on the layer map (scripts/check_layers.py)"
    if sorted(got) != sorted([want_up, want_map]):
        print("self-test failed:", got)
        return 1
    print("self-test passed")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} layer violation(s); see docs/ARCHITECTURE.md")
        return 1
    print("layers: every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
