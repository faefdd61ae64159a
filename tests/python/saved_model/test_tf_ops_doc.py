"""docs/TF_OPS.md is what scripts/tf_op_table.py generates from the op table."""
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..")


def test_tf_ops_doc_is_current():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "tf_op_table.py"),
                        "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
