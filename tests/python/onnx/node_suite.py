"""ONNX's backend node tests (``onnx.backend.test.loader.load_model_tests(kind="node")``)
run through kiln's ONNX backend, with the comparisons ONNX's own runner makes
(outputs' dtypes and shapes, values within each case's rtol/atol).

``python tests/python/onnx/node_suite.py [--report docs/ONNX.md] [--jit]`` runs them all
and prints (or writes into the report) the pass table per op; tests/python/onnx/
test_onnx_node.py runs a subset inside ``make test``.
"""
import argparse
import collections
import os
import re
import sys
import time
import warnings

import numpy as np
from onnx import TensorProto, numpy_helper

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from onnx.backend.test.loader import load_model_tests

import kiln
from kiln.onnx.backend import KilnBackend


def node_cases():
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return load_model_tests(kind="node")


def _graph_ops(graph, out):
    for n in graph.node:
        out.add((n.domain + "." if n.domain and n.domain != "ai.onnx" else "") + n.op_type)
        for a in n.attribute:
            if a.HasField("g"):
                _graph_ops(a.g, out)
            for g in a.graphs:
                _graph_ops(g, out)
    return out


def op_types(case):
    """The op types of a case's model (nested If/Loop bodies included), sorted."""
    return sorted(_graph_ops(case.model.graph, set()))


def supported(case, ops=None):
    ops = set(ops if ops is not None else kiln.onnx.supported_ops())
    return all(t in ops for t in op_types(case))


def _compare(ref, out, rtol, atol):
    ref = np.asarray(ref)
    out = np.asarray(out)
    if ref.dtype != out.dtype:
        raise AssertionError(f"dtype {out.dtype}, expected {ref.dtype}")
    if ref.shape != out.shape:
        raise AssertionError(f"shape {out.shape}, expected {ref.shape}")
    if ref.dtype.kind in "OSU":
        if not np.array_equal(ref, out):
            raise AssertionError("string values differ")
        return
    np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)


def _array(v):
    return numpy_helper.to_array(v) if isinstance(v, TensorProto) else v


def run_case(case, jit=False):
    """None when the case passes, else the reason (one line)."""
    try:
        rep = KilnBackend.prepare(case.model, jit_compile=jit)
        for inputs, refs in case.data_sets:
            refs = [_array(r) for r in refs]
            outs = rep.run([_array(i) for i in inputs])
            if len(outs) != len(refs):
                return f"{len(outs)} outputs, expected {len(refs)}"
            for ref, out in zip(refs, outs):
                _compare(ref, out, case.rtol, case.atol)
        return None
    except AssertionError as e:
        msg = str(e).strip().splitlines()
        return "wrong result: " + " ".join(m.strip() for m in msg[:3] if m.strip())[:200]
    except Exception as e:  # kiln's errors: the first line names the node and why
        return f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"


def run_all(cases, jit=False):
    """{case name: (op types, None or reason)} for the cases kiln supports."""
    ops = kiln.onnx.supported_ops()
    out = {}
    for case in cases:
        if supported(case, ops):
            out[case.name] = (op_types(case), run_case(case, jit))
    return out


def table(cases, results):
    """The per-op markdown table and the totals."""
    per_op = collections.defaultdict(lambda: [0, 0, 0])  # cases, supported, passed
    for case in cases:
        for t in op_types(case):
            per_op[t][0] += 1
        if case.name in results:
            for t in op_types(case):
                per_op[t][1] += 1
                per_op[t][2] += results[case.name][1] is None
    lines = ["| op | node cases | kiln imports | pass |", "|---|---:|---:|---:|"]
    for t in sorted(per_op):
        n, s, p = per_op[t]
        lines.append(f"| {t} | {n} | {s} | {p} |")
    total = len(cases)
    sup = len(results)
    passed = sum(r[1] is None for r in results.values())
    return "\n".join(lines), total, sup, passed


def failures(results):
    lines = []
    for name in sorted(results):
        reason = results[name][1]
        if reason is not None:
            lines.append(f"- `{name}`: {reason}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", help="rewrite the node-test section of this markdown file")
    ap.add_argument("--jit", action="store_true", help="load every model with jit_compile")
    ap.add_argument("-k", default="", help="only cases whose name matches this regex")
    args = ap.parse_args()
    cases = [c for c in node_cases() if re.search(args.k, c.name)]
    t0 = time.time()
    results = run_all(cases, args.jit)
    secs = time.time() - t0
    tab, total, sup, passed = table(cases, results)
    summary = (f"{total} node cases; kiln imports every op of {sup}; {passed} of those pass "
               f"({100.0 * passed / max(sup, 1):.1f} %); {secs:.0f} s"
               f"{' (jit_compile)' if args.jit else ''}.")
    print(summary)
    if not args.report:
        print(tab)
        print(failures(results))
        return 0
    text = open(args.report).read() if os.path.exists(args.report) else ""
    begin, end = "<!-- node-tests:begin -->", "<!-- node-tests:end -->"
    body = (f"{begin}\n{summary}\n\n{tab}\n\nFailures (cases whose ops kiln imports):\n\n"
            f"{failures(results)}\n{end}")
    if begin in text and end in text:
        text = text[:text.index(begin)] + body + text[text.index(end) + len(end):]
    else:
        text += "\n" + body + "\n"
    with open(args.report, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
