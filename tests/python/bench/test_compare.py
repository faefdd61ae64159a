"""bench/peers/compare.py on synthetic results: ratios, missing cells, goals,
files. Needs only the standard library (not the peers environment)."""
import json
import os
import re

import pytest
from by_path import REPO, load


cmp = load("bench/peers/compare.py", "peers_compare")


def row(name, mode, median, **meta):
    return {"name": name, "mode": mode, "median_s": median, "meta": meta}


def kiln_doc():
    return {"framework": "kiln", "version": "0.1.0", "date": "d", "command": "c",
            "results": [row("chain100", "eager", 30e-6), row("chain100", "function", 4e-6),
                        row("charunpack_8192x400", "function", 0.05),
                        row("eager_add_overhead", "eager", 2e-6),
                        row("function_call_overhead", "function", 2e-6),
                        row("trace_1000_ops", "function", 3e-3)],
            "skipped": [{"name": "efficientnetv2s", "reason": "needs layers"}],
            "jit": "no JIT yet"}


def peers_doc():
    tf = {"framework": "tensorflow", "version": "2.x",
          "results": [row("chain100", "eager", 1.6e-3), row("chain100", "function", 200e-6),
                      row("chain100", "jit", 100e-6),
                      row("charunpack_8192x400", "function", 0.1),
                      row("eager_add_overhead", "eager", 20e-6),
                      row("function_call_overhead", "function", 100e-6),
                      row("trace_1000_ops", "function", 0.5,
                          get_concrete_function_median_s=0.3)],
          "skipped": []}
    tf.update(machine={"cores": 2}, load_start=[3.5, 2.0, 1.0], load_end=[1.0, 1.0, 1.0])
    jax = {"framework": "jax", "version": "0.y", "machine": {"cores": 2},
           "load_start": [0.5, 0.5, 0.5], "load_end": [1.9, 1.0, 1.0],
           "results": [row("chain100", "jit", 16e-6),
                       row("chain100", "function", 16e-6, same_as="jit"),
                       row("function_call_overhead", "jit", 5e-6)],
           "skipped": []}
    torch = {"framework": "torch", "version": None, "results": [],
             "skipped": [{"name": "efficientnetv2s", "mode": m, "reason": "no model"}
                         for m in ("eager", "function", "jit")],
             "error": "worker exited with status 1"}
    return {"frameworks": [tf, jax, torch], "date": "d", "command": "c"}


def find(doc, name, mode):
    return next(r for r in doc["rows"] if r["name"] == name and r["mode"] == mode)


def test_ratios_are_kiln_over_peer():
    doc = cmp.compare(kiln_doc(), peers_doc())
    r = find(doc, "chain100", "function")
    assert r["kiln_s"] == pytest.approx(4e-6)
    assert r["peers"]["tensorflow"]["ratio"] == pytest.approx(4e-6 / 200e-6)
    assert r["peers"]["jax"]["ratio"] == pytest.approx(4e-6 / 16e-6)
    assert r["peers"]["torch"] == {"median_s": None, "ratio": None}
    assert doc["frameworks"] == ["tensorflow", "jax", "torch"]


def test_missing_entries_are_dashes_in_the_table():
    doc = cmp.compare(kiln_doc(), peers_doc())
    lines = cmp.table(doc).splitlines()
    jit = next(re.split(r"\s{2,}", line) for line in lines
               if line.startswith("chain100") and " jit" in line)
    # kiln has no jit row: its time and every ratio are "-"; the peers' times are shown.
    assert jit == ["chain100", "jit", "-", "100 us", "-", "16 us", "-", "-", "-"]
    fn = next(line for line in lines if line.startswith("chain100") and "function" in line)
    assert "0.02x" in fn and "0.25x" in fn        # 4 us / 200 us, 4 us / 16 us


def test_rows_follow_the_demo_order_then_modes():
    doc = cmp.compare(kiln_doc(), peers_doc())
    keys = [(r["name"], r["mode"]) for r in doc["rows"]]
    assert keys.index(("charunpack_8192x400", "function")) < keys.index(("chain100", "eager"))
    assert keys.index(("chain100", "eager")) < keys.index(("chain100", "function")) \
        < keys.index(("chain100", "jit"))
    assert keys[-1] == ("trace_1000_ops", "function")


def test_goals_measured_and_judged():
    doc = cmp.compare(kiln_doc(), peers_doc())
    g = {x["goal"].split(" <=")[0].split(" as a")[0].split(" graph")[0] + x["measure"]: x
         for x in doc["goals"]}
    call_tf = g["function-call overheadkiln/tf"]
    assert call_tf["value"] == pytest.approx(2e-6 / 100e-6) and call_tf["met"] is True
    call_jax = g["function-call overheadkiln/jax"]
    assert call_jax["value"] == pytest.approx(0.4) and call_jax["met"] is True
    eager = g["eager op overheadkiln/tf"]
    assert eager["value"] == pytest.approx(0.1) and eager["met"] is True
    unpack = g["CharUnpack [8192, 400]kiln/tf"]
    assert unpack["value"] == pytest.approx(0.5) and unpack["met"] is True
    chain = g["chain100kiln speed-up / tf speed-up"]
    assert chain["value"] == pytest.approx((30 / 4) / (1600 / 200))   # 7.5 / 8
    assert chain["met"] is False


def test_goal_without_numbers_is_not_measured():
    doc = cmp.compare(kiln_doc(), {"frameworks": []})
    assert all(g["met"] is None and g["value"] is None for g in doc["goals"])
    assert "[not measured]" in cmp.goals_text(doc)


def test_ratio_edge_cases():
    assert cmp.ratio(None, 1.0) is None
    assert cmp.ratio(1.0, None) is None
    assert cmp.ratio(1.0, 0.0) is None
    assert cmp.ratio(1.0, 4.0) == 0.25
    assert cmp._cell_ratio(None) == "-"
    assert cmp._cell_ratio(0.5) == "0.50x"
    assert cmp._cell_ratio(0.0042) == "0.0042x"


def test_notes_group_skips_and_report_errors_and_trace_only_times():
    doc = cmp.compare(kiln_doc(), peers_doc())
    notes = "\n".join(doc["notes"])
    assert "kiln: efficientnetv2s: needs layers" in notes
    assert "torch: efficientnetv2s [eager, function, jit]: no model" in notes
    assert notes.count("no model") == 1
    assert "torch: worker exited with status 1" in notes
    assert "get_concrete_function(spec) alone: 300 ms (kiln/tensorflow 0.01x)" in notes
    assert "tensorflow: the machine was busy (1-minute load up to 3.5 on 2 cores)" in notes
    assert "jax: the machine was busy" not in notes


def test_main_writes_compare_json(tmp_path, capsys):
    k, p, out = tmp_path / "demo.json", tmp_path / "peers.json", tmp_path / "out" / "c.json"
    k.write_text(json.dumps(kiln_doc()))
    p.write_text(json.dumps(peers_doc()))
    assert cmp.main(["--kiln", str(k), "--peers", str(p), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "kiln/tensorflow" in text and "goals" in text
    doc = json.loads(out.read_text())
    assert find(doc, "function_call_overhead", "function")["peers"]["tensorflow"]["ratio"] \
        == pytest.approx(0.02)


def test_main_with_one_side_missing(tmp_path, capsys):
    k = tmp_path / "demo.json"
    k.write_text(json.dumps(kiln_doc()))
    out = tmp_path / "c.json"
    assert cmp.main(["--kiln", str(k), "--peers", str(tmp_path / "none.json"),
                     "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "peers" in captured.err and "not found" in captured.err
    assert json.loads(out.read_text())["frameworks"] == []


def test_main_with_nothing_to_compare(tmp_path, capsys):
    assert cmp.main(["--kiln", str(tmp_path / "a.json"), "--peers", str(tmp_path / "b.json"),
                     "--out", str(tmp_path / "c.json")]) == 1
    assert "not found" in capsys.readouterr().err
    assert not (tmp_path / "c.json").exists()


# ---- the peers runner that feeds compare (bench/peers/common.py, run_peers.py) ----
# These use NumPy callables only, so they run in kiln's .venv too.

@pytest.fixture
def peers_modules(monkeypatch):
    import sys
    monkeypatch.syspath_prepend(os.path.join(REPO, "bench", "peers"))
    import common
    import run_peers
    yield common, run_peers
    for name in ("common", "run_peers"):  # generic names: do not leak them to other tests
        sys.modules.pop(name, None)


def test_run_case_copies_compiled_rows_and_checks_after_timing(peers_modules):
    common, _ = peers_modules
    import numpy as np
    calls = []

    def build():
        return (lambda x: calls.append(1) or x * 2.0), (np.arange(4.0),)

    def check(out):
        assert calls, "the check must run after the timed first call"
        np.testing.assert_array_equal(out[0], np.arange(4.0) * 2.0)

    case = common.Case("chain100", "jit", build, also_as=("function",), min_runs=3,
                       check=check, extra=lambda: {"extra_key": 1})
    rows = common.run_case(case, min_time=0.01)
    assert [r["mode"] for r in rows] == ["jit", "function"]
    assert rows[1]["median_s"] == rows[0]["median_s"] and rows[0]["runs"] >= 3
    assert rows[1]["meta"]["same_as"] == "jit" and rows[0]["meta"]["extra_key"] == 1
    assert rows[0]["meta"]["title"].startswith("100 small ops")


def test_wrong_output_fails_the_case(peers_modules):
    common, _ = peers_modules
    import numpy as np

    def check(out):
        common.close(out[0], np.zeros(2), "demo")
    case = common.Case("chain100", "eager", lambda: ((lambda x: x + 1), (np.zeros(2),)),
                       min_runs=1, check=check)
    with pytest.raises(AssertionError, match="differs from the NumPy reference"):
        common.run_case(case, min_time=0.0)


def test_fresh_cases_time_one_new_function_per_sample(peers_modules):
    common, _ = peers_modules
    made = []

    def build(i):
        made.append(i)
        return lambda: [float(i)]
    case = common.Case("trace_1000_ops", "function", build, fresh=True, min_runs=3)
    (row,) = common.run_case(case, min_time=0.0)
    assert made == [0, 1, 2] and row["runs"] == 3 and row["calls_per_run"] == 1
    assert row["meta"]["measure"].startswith("first call of a fresh function")


def test_worker_records_failures_skips_and_results(peers_modules, monkeypatch, tmp_path):
    common, run_peers = peers_modules
    import sys
    import types
    import numpy as np
    fake = types.ModuleType("fake_workloads")
    fake.configure = lambda threads: ("9.9", {"threads": f"{threads}"})

    def boom():
        raise RuntimeError("kernel missing\nsecond line")
    fake.cases = lambda: [
        common.Case("chain100", "eager", lambda: ((lambda x: x * 0.5), (np.ones(3),)),
                    min_runs=2),
        common.Case("conv2d_seed002", "eager", boom),
        common.Skip("efficientnetv2s", "eager", "no model"),
    ]
    monkeypatch.setitem(sys.modules, "fake_workloads", fake)
    monkeypatch.setitem(run_peers.MODULES, "fake", "fake_workloads")
    partial = tmp_path / "fake.json"
    assert run_peers.worker("fake", str(partial), None, 0.0) == 0
    doc = json.loads(partial.read_text())
    assert doc["version"] == "9.9" and [r["name"] for r in doc["results"]] == ["chain100"]
    assert doc["skipped"] == [
        {"name": "conv2d_seed002", "mode": "eager",
         "reason": "failed: RuntimeError: kernel missing"},
        {"name": "efficientnetv2s", "mode": "eager", "reason": "no model"}]


def test_worker_reports_an_unusable_framework(peers_modules, monkeypatch, tmp_path):
    common, run_peers = peers_modules
    import sys
    import types
    fake = types.ModuleType("broken_workloads")

    def configure(threads):
        raise RuntimeError("import torch fails: libcufile.so.0 missing")
    fake.configure = configure
    monkeypatch.setitem(sys.modules, "broken_workloads", fake)
    monkeypatch.setitem(run_peers.MODULES, "broken", "broken_workloads")
    partial = tmp_path / "b.json"
    assert run_peers.worker("broken", str(partial), None, 0.0) == 0
    doc = json.loads(partial.read_text())
    assert doc["error"] == "RuntimeError: import torch fails: libcufile.so.0 missing"
    assert doc["results"] == []
