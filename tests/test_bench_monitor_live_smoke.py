"""Smoke test of benchmarks/bench_monitor_live.py: one low rate for two seconds on
loopback.  At 200 calls a second nothing may be lost and every call's duration_ns must
fit in its client's own measurement: a monitor that drops or misreports there is wrong,
not slow.  Needs capture rights (root) and omniORBpy."""

import importlib.util
import os

import pytest

from bench_results import check_tables
from pycdr.capture.live import libpcap
from pycdr.errors import CaptureError

ROOT = os.path.join(os.path.dirname(__file__), os.pardir)
BENCH = os.path.join(ROOT, "benchmarks", "bench_monitor_live.py")


def _why_not() -> str | None:
    try:
        libpcap()
    except CaptureError:
        return "live capture needs libpcap"
    if os.geteuid() != 0:
        return "live capture needs capture rights (root)"
    try:
        import omniORB  # noqa: F401
    except ImportError:
        return "needs omniORBpy (PyPI salome-omniorb)"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_monitor_live", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_low_rate_loses_nothing_and_durations_fit_the_clients(bench):
    results = bench.run([200], seconds=2.0, clients=2)
    (step,) = results["steps"]
    assert step["calls"] > 300 and step["achieved"] > 150
    assert (step["dropped"], step["lost"], step["extra_rows"]) == (0, 0, 0), step
    # every call matched to its row by order, the operations agreeing
    assert (step["compared"], step["mismatched"]) == (step["calls"], 0), step
    assert step["within_share"] >= bench.TARGET_WITHIN, step
    assert step["monitor_cpu_us_per_call"] > 0 and step["load_cpu_us_per_call"] > 0
    assert results["highest_clean_offered"] == 200
    table = bench.format_table(results)
    assert "durations: duration_ns <= client's in" in table
    assert "highest rate with no packet dropped and no call lost: 200" in table
    assert check_tables(bench.results_tables(results)) == []
