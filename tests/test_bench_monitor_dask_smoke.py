"""Smoke test of benchmarks/bench_monitor_dask.py at tiny scale: 1 and 2 workers on 4
small files report their throughput and the ratio, and the tables are one process's
(numbers not tested)."""

import importlib.util
import os

import pytest

from bench_results import check_tables

pytest.importorskip("distributed")

ROOT = os.path.join(os.path.dirname(__file__), os.pardir)
BENCH = os.path.join(ROOT, "benchmarks", "bench_monitor_dask.py")
CAPTURES = [os.path.join(ROOT, "captures", "messages.pcap"),
            os.path.join(ROOT, "captures", "real", "omniorbpy-to-pycdr-giop12.pcap")]


def test_a_tiny_run_reports_both_worker_counts_and_identical_tables():
    spec = importlib.util.spec_from_file_location("bench_monitor_dask", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    results = bench.run(CAPTURES, files=4, workers=(1, 2))
    assert set(results["dask"]) == {1, 2}
    assert all(one["identical"] and one["wall"] > 0 and one["rows"] > 0
               for one in results["dask"].values())
    assert results["dask"][1]["rows"] == results["dask"][2]["rows"]
    text = bench.format_table(results)
    assert "throughput 2 workers / 1 worker: " in text and "target >= 1.6" in text
    assert "NO" not in text.split()
    assert check_tables(bench.results_tables(results)) == []
