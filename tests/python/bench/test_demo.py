"""bench/demo.py: the table, the speed-up column and the JSON it writes (one
quick workload with a tiny time budget; timings themselves are not checked)."""
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import demo  # noqa: E402
from kiln import benchmark as kb  # noqa: E402


def result(name, mode, samples, first=0.1):
    return kb.Result(name, mode, samples, 1, first)


def test_table_speedups_and_skips():
    rs = [result("w", "eager", [4e-3, 4e-3, 4e-3]), result("w", "function", [1e-3, 1e-3])]
    text = demo.table(rs, [{"name": "big", "reason": "needs layers"}])
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["workload", "mode", "median"]
    assert lines[2].split()[:3] == ["w", "eager", "4"] and lines[2].endswith("100 ms")
    assert "4.00x" in lines[3]
    assert lines[-1] == "big: not run — needs layers"
    assert demo.speedups(rs)[("w", "function")] == pytest.approx(4.0)


def test_runs_one_workload_and_writes_json(tmp_path, capsys):
    assert demo.main(["--only", "chain100", "--min-time", "0.01", "--json-only",
                      "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "demo.json").read_text())
    assert doc["framework"] == "kiln" and doc["machine"]["cores"] >= 1
    modes = {r["mode"]: r for r in doc["results"] if r["name"] == "chain100"}
    assert set(modes) == {"eager", "function", "jit"}
    assert modes["function"]["speedup_vs_eager"] == pytest.approx(
        modes["eager"]["median_s"] / modes["function"]["median_s"])
    assert "chain100" in capsys.readouterr().out
    assert not (tmp_path / "demo.png").exists()


def test_png(tmp_path):
    path = tmp_path / "d.png"
    demo.write_png([result("w", "eager", [2e-3]), result("w", "function", [1e-3])], str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unknown_workload_is_an_error():
    with pytest.raises(SystemExit):
        demo.main(["--only", "nope"])


def test_busy_run_writes_demo_busy_json_with_the_load(tmp_path, capsys):
    assert demo.main(["--only", "chain100", "--min-time", "0.01", "--json-only", "--busy", "1",
                      "--out", str(tmp_path)]) == 0
    assert not (tmp_path / "demo.json").exists()
    doc = json.loads((tmp_path / "demo-busy.json").read_text())
    assert doc["busy_processes"] == 1
    assert len(doc["load_start"]) == 3 and len(doc["load_end"]) == 3
    assert {r["mode"] for r in doc["results"]} == {"eager", "function", "jit"}
    assert "busy machine: 1 processes spinning" in capsys.readouterr().out
