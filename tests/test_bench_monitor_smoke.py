"""Smoke test of benchmarks/bench_monitor.py: a quick run on two small captures reports
every contender and the ratios to pcap --json and to the floor (numbers not tested)."""

import importlib.util
import os

import pytest

from bench_results import check_tables

ROOT = os.path.join(os.path.dirname(__file__), os.pardir)
BENCH = os.path.join(ROOT, "benchmarks", "bench_monitor.py")
CAPTURES = [os.path.join(ROOT, "captures", "real", "omniorbpy-to-pycdr-giop12.pcap"),
            os.path.join(ROOT, "captures", "real", "pycdr-to-omniorbpy-giop11.pcap")]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_monitor", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quick_run_reports_every_contender_and_the_ratios(bench):
    results = bench.run(CAPTURES, repeat=1)
    names = {"ref-frame", "pcap-json", "monitor-json", "monitor-text", "monitor-parquet",
             "monitor-idl"}
    assert [set(one["rows"]) for one in results["captures"]] == [names, names]
    assert all(wall > 0 and rss > 0 and cpu >= 0 for one in results["captures"]
               for wall, rss, cpu in one["rows"].values())
    table = bench.format_table(results)
    assert "monitor --json / pcap --json" in table and "monitor --json / floor" in table
    # The flatness line compares captures of 50 MB and more; these are small ones.
    assert "peak RSS across captures" not in table
    bench.FLAT_FROM = 0
    assert "peak RSS across captures" in bench.format_table(results)
    tables = bench.results_tables(results)
    assert check_tables(tables) == [] and tables[-1]["title"].startswith("monitor --json peak")
