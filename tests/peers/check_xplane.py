"""TensorBoard's profile plugin (XProf, .venv-peers) reads kiln's .xplane.pb files.

    .venv-peers/bin/python tests/peers/check_xplane.py DIR

DIR as written by write_kiln_summaries.py: DIR/profile holds a kiln.profiler profile of
a function called 5 times (_FusedConv2D, Reshape, BatchMatMulV2, Relu kernels) and
one eager Relu. The
plugin's own converters (the code behind its trace viewer and framework op stats pages)
must list the tools, count every kernel kiln's Chrome trace holds, and show the threads;
then the real `tensorboard` server with the plugin serves the same pages over loopback.
"""
import collections
import glob
import gzip
import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

from xprof.convert import raw_to_tool_data as xprof

problems = []


def check(cond, what):
    if not cond:
        problems.append(what)
        print("PROBLEM:", what)


def kiln_kernels(trace_path):
    """op type -> (calls in functions, eager calls) from kiln's own Chrome trace."""
    with gzip.open(trace_path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    counts = collections.defaultdict(lambda: [0, 0])
    for e in doc["traceEvents"]:
        if e["ph"] == "X" and e.get("cat") in ("kernel", "eager"):
            counts[e["args"]["op"]][e["cat"] == "eager"] += 1
    return counts, doc


def tool_json(paths, tool):
    data, _ = xprof.xspace_to_tool_data(paths, tool, {"use_saved_result": False})
    check(data is not None, f"{tool}: the plugin produced nothing")
    return json.loads(data if isinstance(data, str) else data.decode()) if data else None


def check_framework_op_stats(paths, kernels):
    tables = tool_json(paths, "framework_op_stats")
    if not tables:
        return
    table = tables[0]
    cols = [c["id"] for c in table["cols"]]
    seen = collections.Counter()
    for row in table["rows"]:
        v = dict(zip(cols, (c.get("v") for c in row["c"])))
        if v["type"] != "IDLE":
            check(v["host_or_device"] == "Host", f"op stats row not on the host: {v}")
            seen[v["type"]] += int(v["occurrences"])
    for op, (fn_calls, eager_calls) in kernels.items():
        check(seen[op] == fn_calls + eager_calls,
              f"framework_op_stats counts {seen[op]} {op}, kiln's trace {fn_calls + eager_calls}")
    print("framework_op_stats:", dict(seen))


def check_trace_viewer(paths, kernels, doc):
    data, _ = xprof.xspace_to_tool_data(paths, "trace_viewer", {"use_saved_result": False})
    check(data is not None, "trace_viewer: the plugin produced nothing")
    if data is None:
        return
    view = json.loads(data if isinstance(data, str) else data.decode())
    events = view["traceEvents"]
    names = collections.Counter(e["name"].rsplit(":", 1)[-1] for e in events if e.get("ph") == "X")
    for op, (fn_calls, eager_calls) in kernels.items():
        check(names[op] == fn_calls + eager_calls,
              f"trace viewer shows {names[op]} {op} events, kiln's trace {fn_calls + eager_calls}")
    threads = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    kiln_threads = {e["args"]["name"] for e in doc["traceEvents"]
                    if e["ph"] == "M" and e["name"] == "thread_name"}
    check(threads & kiln_threads, f"trace viewer threads {threads} share none of {kiln_threads}")
    procs = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    check("/host:CPU" in procs, f"no /host:CPU process in the trace viewer: {procs}")
    print("trace_viewer:", sum(names.values()), "events on threads", sorted(threads))


def get_json(url):
    with urllib.request.urlopen(url, timeout=60) as r:
        body = r.read()
        if r.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
    return json.loads(body)


def serve(logdir):
    """(process, base URL) of `tensorboard` over logdir on a free loopback port, once
    the profile plugin answers; (process, None) when it does not within 90 s."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tb = os.path.join(os.path.dirname(sys.executable), "tensorboard")
    proc = subprocess.Popen([tb, "--logdir", logdir, "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    end = time.time() + 90
    while time.time() < end and proc.poll() is None:
        try:
            if get_json(base + "/data/plugin/profile/runs"):
                return proc, base
        except OSError:
            pass
        time.sleep(0.5)
    return proc, None


def check_tensorboard(logdir, kernels):
    proc, base = serve(logdir)
    try:
        check(base is not None, "tensorboard's profile plugin lists no run")
        if base is None:
            return
        listing = get_json(base + "/data/plugins_listing")
        check(listing.get("profile", {}).get("enabled"), "the profile plugin is not enabled")
        runs = get_json(base + "/data/plugin/profile/runs")
        check(len(runs) == 1, f"profile runs {runs}")
        run = urllib.parse.quote(runs[0])
        tools = get_json(f"{base}/data/plugin/profile/run_tools?run={run}")
        check("framework_op_stats" in tools and "trace_viewer@" in tools, f"run tools {tools}")
        hosts = [h["hostname"] for h in get_json(
            f"{base}/data/plugin/profile/hosts?run={run}&tag=framework_op_stats")]
        check(len(hosts) == 1, f"hosts {hosts}")
        q = f"run={run}&host={urllib.parse.quote(hosts[0])}"
        table = get_json(f"{base}/data/plugin/profile/data?{q}&tag=framework_op_stats")[0]
        cols = [c["id"] for c in table["cols"]]
        seen = collections.Counter()
        for row in table["rows"]:
            v = dict(zip(cols, (c.get("v") for c in row["c"])))
            seen[v["type"]] += int(v["occurrences"])
        for op, calls in kernels.items():
            check(seen[op] == sum(calls), f"served framework_op_stats: {seen[op]} {op}")
        view = get_json(f"{base}/data/plugin/profile/data?{q}&tag=trace_viewer@")
        check(view.get("returnedEventsSize", 0) > 0, "the served trace viewer has no events")
        print(f"tensorboard: run {runs[0]}, host {hosts[0]}, {len(tools)} tools, "
              f"{view.get('returnedEventsSize')} trace events")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main():
    out = sys.argv[1]
    planes = glob.glob(os.path.join(out, "profile", "plugins", "profile", "*", "*.xplane.pb"))
    check(len(planes) == 1, f"expected one .xplane.pb, found {planes}")
    if not planes:
        sys.exit(1)
    trace = planes[0].replace(".xplane.pb", ".trace.json.gz")
    kernels, doc = kiln_kernels(trace)
    # The convolution is fused with its Relu (_FusedConv2D); the eager Relu shares its
    # node's name "Relu", which the plugin must not merge with it.
    for op in ("_FusedConv2D", "Relu", "BatchMatMulV2"):
        check(kernels[op][0] == 5, f"kiln's trace has {kernels[op][0]} {op} kernels, expected 5")
    check(kernels["Relu"][1] == 1, f"kiln's trace has {kernels['Relu'][1]} eager Relu, expected 1")
    tools = xprof.xspace_to_tool_names(planes)
    print("tools:", tools)
    for tool in ("framework_op_stats", "overview_page"):
        check(tool in tools, f"{tool} not offered for kiln's profile: {tools}")
    check(any(t.startswith("trace_viewer") for t in tools), f"no trace viewer: {tools}")
    check_framework_op_stats(planes, kernels)
    check_trace_viewer(planes, kernels, doc)
    check(tool_json(planes, "overview_page") is not None, "overview_page failed")
    check_tensorboard(os.path.join(out, "profile"), kernels)
    print(f"check_xplane: {len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
