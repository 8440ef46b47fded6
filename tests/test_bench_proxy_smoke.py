"""Smoke test of benchmarks/bench_proxy.py --quick: a tiny run reports calls/s direct,
through the byte relay and through the proxy for each payload and client count, and the
reference-rewriting run both ways (the script checks the references came back rewritten
and unchanged); numbers not tested."""

import json
import os
import subprocess
import sys

import pytest

from bench_results import check

BENCH = os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks", "bench_proxy.py")

pytestmark = pytest.mark.skipif(os.environ.get("PYCDR_PURE") == "1",
                                reason="omniORBpy on both sides of a relay: nothing of "
                                       "pycdr's codec beyond the proxy's, which "
                                       "tests/test_proxy.py covers in this pass")


def test_quick_run_reports_every_contender_and_both_targets(tmp_path):
    results = tmp_path / "proxy.json"
    out = subprocess.run([sys.executable, BENCH, "--quick", "--results", str(results)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    rows = [line.split() for line in lines
            if line.split()[:1] in (["long"], ["octets64k"], ["refs"])]
    assert [(r[0], r[1]) for r in rows] == [("long", "1"), ("long", "2"), ("octets64k", "1"),
                                            ("octets64k", "2"), ("refs", "1"), ("refs", "2")]
    for r in rows:
        assert all(float(n) > 0 for n in (r[2:5] if r[0] != "refs" else r[2:4]))
    targets = [line for line in lines if line.startswith("  ")]
    assert sum("proxy/relay" in t for t in targets) == 4
    assert sum("rewriting cost" in t for t in targets) == 2
    record = json.loads(results.read_text())
    assert check(record) == [] and record["quick"] is True
    assert [len(t["rows"]) for t in record["tables"]] == [4, 2]
