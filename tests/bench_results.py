"""The benchmarks' results format (benchmarks/results.py), for the benchmarks' smoke tests."""

import os
import sys

BENCH_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "benchmarks")
if BENCH_DIR not in sys.path:
    sys.path.insert(0, BENCH_DIR)

from results import check, check_tables  # noqa: E402

__all__ = ["check", "check_tables"]
