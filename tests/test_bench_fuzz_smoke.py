"""Smoke test of benchmarks/bench_fuzz.py: a quick run against the raw GIOP server
measures a campaign without and one with feedback beside the floors, prints feedback's
cost and writes a valid results file (numbers not tested)."""

import json
import os
import subprocess
import sys

from bench_results import check

BENCH = os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks", "bench_fuzz.py")


def test_quick_run_reports_feedback_cost_and_ratios_to_the_floors(tmp_path):
    out_file = tmp_path / "fuzz.json"
    done = subprocess.run([sys.executable, BENCH, "150", "50", "--repeats", "1",
                           "--only", "raw GIOP server", "--results", str(out_file)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "raw GIOP server: floor " in out and "same-job " in out
    for kind in ("none", "state"):
        assert f"  {kind} " in out
    assert "with/without feedback: rate " in out and "fuzzer CPU/case x" in out
    record = json.loads(out_file.read_text())
    assert check(record) == []
    assert record["quick"] is True and record["settings"]["repeats"] == 1
    table = record["tables"][0]
    (row,) = table["rows"]
    cells = dict(zip(table["columns"], row))
    assert cells["target"] == "raw GIOP server"
    # Each ratio is the quotient of the rates the same row reports.
    with_without = cells["fuzz/s (state feedback)"] / cells["fuzz/s (no feedback)"]
    assert abs(cells["with/without feedback ×"] - with_without) < 0.02 * with_without + 0.01
    assert cells["fuzzer CPU ms/case (no feedback)"] > 0
    assert cells["fuzzer CPU ms/case (state feedback)"] > 0
