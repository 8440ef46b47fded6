"""Smoke test of benchmarks/bench_pcap.py: the reference reader frames what
pycdr frames, and a quick run reports every contender (numbers not tested)."""

import importlib.util
import os

import pytest

from bench_results import check_tables

from pycdr.capture.giop import decode_capture

ROOT = os.path.join(os.path.dirname(__file__), os.pardir)
BENCH = os.path.join(ROOT, "benchmarks", "bench_pcap.py")
CAPTURE = os.path.join(ROOT, "captures", "real", "omniorbpy-to-pycdr-giop12.pcap")


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_pcap", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_reader_frames_the_messages_pycdr_decodes(bench):
    ours = [(e["request_id"], e.get("operation")) for e in decode_capture(CAPTURE)
            if e.get("type") in ("Request", "Reply")]
    ref = [bench._request_id_operation(m)[1:] for _, _, m in bench.reference_messages(CAPTURE)
           if m[7] in (0, 1)]
    assert ref == ours and ref


def test_quick_run_reports_every_contender(bench):
    names = {"ref-frame", "ref-text", "ref-json", "pycdr", "pycdr-json", "pycdr-idl",
             "pycdr-stats"}                  # (tshark left out: seconds of start-up)
    results = bench.run(CAPTURE, repeat=1, only=names)
    assert names == set(results["rows"])
    assert all(wall > 0 and rss > 0 for wall, rss, _ in results["rows"].values())
    assert "pycdr --json / reference JSON" in bench.format_table(results)
    assert check_tables(bench.results_tables(results)) == []
