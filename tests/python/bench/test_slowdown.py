"""bench/peers/slowdown.py (make bench-peers-busy) on synthetic idle and busy results,
and the harness's busy-machine pieces (Spinners, machine_load, busy_note)."""
import json
import os
import time

from by_path import load
from kiln import benchmark as kb

sd = load("bench/peers/slowdown.py", "peers_slowdown")


def row(name, mode, median):
    return {"name": name, "mode": mode, "median_s": median, "meta": {}}


def write(tmp_path, name, doc):
    with open(tmp_path / name, "w") as f:
        json.dump(doc, f)


def test_slowdowns_per_framework_and_workload(tmp_path, capsys):
    write(tmp_path, "demo.json", {"results": [row("efficientnetv2s", "function", 0.1),
                                              row("chain100", "function", 4e-6)]})
    write(tmp_path, "demo-busy.json", {"busy_processes": 2,
                                       "results": [row("efficientnetv2s", "function", 0.2)]})
    write(tmp_path, "peers.json", {"frameworks": [
        {"framework": "tensorflow", "results": [row("efficientnetv2s", "function", 0.13)]}]})
    write(tmp_path, "peers-busy.json", {"busy_processes": 2, "frameworks": [
        {"framework": "tensorflow", "results": [row("efficientnetv2s", "function", 0.28)]}]})
    assert sd.main(["--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2 processes spinning" in out
    assert "2.00x" in out and "2.15x" in out
    doc = json.load(open(tmp_path / "slowdown.json"))
    (r,) = doc["rows"]  # chain100 has no busy number: left out
    assert r["name"] == "efficientnetv2s"
    assert r["kiln"]["slowdown"] == 2.0
    assert abs(r["tensorflow"]["slowdown"] - 0.28 / 0.13) < 1e-12


def test_nothing_to_compare_is_an_error(tmp_path, capsys):
    assert sd.main(["--results", str(tmp_path)]) == 1
    assert "run make bench-peers-busy" in capsys.readouterr().err


def test_spinners_run_while_open_and_stop_after():
    with kb.Spinners(1) as s:
        (p,) = s.procs
        time.sleep(0.3)
        assert p.poll() is None  # still spinning
    assert p.poll() is not None and s.procs == []


def test_busy_note():
    cores = os.cpu_count()
    assert kb.busy_note(None) is None
    assert kb.busy_note([0.0, 0.0, 0.0]) is None
    note = kb.busy_note([cores * 2.0, 1.0, 1.0])
    assert "the machine was busy" in note and f"on {cores} cores" in note
    # A busy-machine run discounts its own spinners.
    assert kb.busy_note([cores * 1.0, 1.0, 1.0], own=cores) is None
    load = kb.machine_load()
    assert load is None or (len(load) == 3 and all(x >= 0 for x in load))
