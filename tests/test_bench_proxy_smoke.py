"""Smoke test of benchmarks/bench_proxy.py: a tiny run reports calls/s direct, through the
byte relay and through the proxy for each payload and client count (numbers not tested)."""

import importlib.util
import os

import pytest

from bench_results import check_tables

BENCH = os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks", "bench_proxy.py")

pytestmark = pytest.mark.skipif(os.environ.get("PYCDR_PURE") == "1",
                                reason="omniORBpy on both sides of a relay: nothing of "
                                       "pycdr's codec beyond the proxy's, which "
                                       "tests/test_proxy.py covers in this pass")


def test_tiny_run_reports_every_contender():
    spec = importlib.util.spec_from_file_location("bench_proxy", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    results = bench.run(calls=20, clients=(1, 2))
    assert [(r["payload"], r["clients"]) for r in results["rows"]] == \
        [("long", 1), ("long", 2), ("octets64k", 1), ("octets64k", 2)]
    for row in results["rows"]:
        for name in ("direct", "relay", "proxy"):
            assert row[name]["calls"] >= 1 and row[name]["calls_per_s"] > 0
    table = bench.format_table(results)
    assert "proxy/relay" in table and len(table.splitlines()) == 5
    assert check_tables(bench.results_tables(results)) == []
