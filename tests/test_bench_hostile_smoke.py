"""Smoke test of benchmarks/bench_hostile_load.py at a tiny scale: it runs the server, the
bounded attacker and the honest client, and reports every phase and the three targets
(no timing or memory assertions: the numbers themselves are not tested)."""

import json
import os
import subprocess
import sys

from bench_results import check

BENCH = os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks", "bench_hostile_load.py")


def test_tiny_run_reports_every_phase_and_target(tmp_path):
    results = tmp_path / "results.json"
    run = subprocess.run([sys.executable, BENCH, "--connections", "30", "--body-kb", "4",
                          "--hold", "0.3", "--calls", "3", "--settle", "0.2", "--waves", "2",
                          "--server-arg=--max-connections=20", "--json", str(results),
                          "--results", str(tmp_path / "hostile_load.json")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    for phase in ("before:", "during (wave 1 of 2):", "after (wave 2 of 2):"):
        assert any(line.startswith(phase) for line in lines), run.stdout
    assert sum(line.startswith(("PASS", "FAIL")) for line in lines) == 3
    report = json.loads(results.read_text())
    assert len(report["waves"]) == 2
    for wave in report["waves"]:
        assert wave["attacker"]["sent"]["sent"] == 30
        # 30 connections against a limit of 20: the server closed some of them.
        assert wave["attacker"]["closed"] >= 10
        assert len(wave["during"]["latencies"]) >= 3 and not wave["during"]["failures"]
    rec = json.loads((tmp_path / "hostile_load.json").read_text())
    assert check(rec) == [] and rec["benchmark"] == "hostile_load" and rec["quick"]
    phases, targets = rec["tables"]
    assert [row[0] for row in phases["rows"]] == ["before", "during (wave 1): peak", "after (wave 1)",
                                          "during (wave 2): peak", "after (wave 2)"]
    assert len(targets["rows"]) == 3
