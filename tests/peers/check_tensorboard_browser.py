"""The real TensorBoard, in a real browser, over logs kiln wrote (run in .venv-peers).

    .venv-peers/bin/python tests/peers/check_tensorboard_browser.py DIR

DIR is what tests/peers/write_kiln_summaries.py wrote. Starts TensorBoard on a loopback
port over DIR/fit, checks its HTTP API lists the runs, scalar tags and the Keras model
graph, then opens its time-series page in headless Chromium (Debian's `chromium`) and
checks the rendered page shows both runs and the epoch_loss card. The screenshot is kept
as DIR/tensorboard.png. Exit status 1 on any difference.
"""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

PROBLEMS = []


def expect(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        PROBLEMS.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read()


def wait_ready(base, proc, timeout=90):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            return False
        try:
            if json.loads(get(base + "/data/runs")):
                return True
        except OSError:
            pass
        time.sleep(0.5)
    return False


def browser(url, *args):
    cmd = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
           "--virtual-time-budget=20000", *args, url]
    return subprocess.run(cmd, capture_output=True, timeout=120)


def main():
    root = sys.argv[1]
    logdir = os.path.join(root, "fit")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    tb = os.path.join(os.path.dirname(sys.executable), "tensorboard")
    proc = subprocess.Popen([tb, "--logdir", logdir, "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        expect(wait_ready(base, proc), "TensorBoard serves the log dir")
        runs = json.loads(get(base + "/data/runs"))
        expect(sorted(runs) == ["train", "validation"], f"runs {runs}")
        tags = json.loads(get(base + "/data/plugin/scalars/tags"))
        expect("epoch_loss" in tags.get("train", {}) and
               "evaluation_loss_vs_iterations" in tags.get("validation", {}), "scalar tags")
        scalars = json.loads(get(base + "/data/plugin/scalars/scalars?run=train&tag=epoch_loss"))
        expect([s[1] for s in scalars] == [0, 1], "epoch_loss steps 0 and 1")
        shot = os.path.join(root, "tensorboard.png")
        r = browser(base + "/#timeseries", f"--screenshot={shot}")
        expect(r.returncode == 0 and os.path.getsize(shot) > 10000, f"screenshot at {shot}")
        dom = browser(base + "/#timeseries", "--dump-dom").stdout.decode("utf-8", "replace")
        for text in ("train", "validation", "epoch_loss", "epoch_accuracy"):
            expect(text in dom, f"the page shows {text}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"{len(PROBLEMS)} problems")
    sys.exit(1 if PROBLEMS else 0)


if __name__ == "__main__":
    main()
