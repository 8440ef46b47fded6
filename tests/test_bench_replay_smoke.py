"""Smoke test of benchmarks/bench_replay.py: a quick run records omniORBpy's calls and
reports every row, each replay with every call the same (numbers not tested).  Recording
needs dumpcap and capture rights (root): skipped without."""

import os
import subprocess
import json
import sys

import pytest

from bench_results import check

from peers.recording import CAN_RECORD, WHY_NOT

BENCH = os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks", "bench_replay.py")
BOUND = os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks", "replay_bound.py")


@pytest.mark.skipif(not CAN_RECORD, reason=WHY_NOT)
def test_quick_run_reports_causal_and_windowed_replays_beside_the_client(tmp_path):
    done = subprocess.run([sys.executable, BENCH, "--calls", "60", "--repeat", "1",
                           "--window", "8", "--results", str(tmp_path / "replay.json")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for row in ("omniORBpy client", "replay -> omniORBpy, --window 1",
                "replay -> omniORBpy, --window 8", "replay -> reference ORB, --window 1",
                "replay -> reference ORB, --window 8"):
        assert row in out
        if row.startswith("replay"):
            # The 60 calls, the one before the clock starts and the client's LocateRequest.
            assert f"{row}: 62 calls, 62 the same" in out
            assert f"ratio {row} / omniORBpy client:" in out
    assert "CPU us/call" in out and "peak RSS MB" in out
    # omniORBpy's client to the reference ORB: the replays to it are set beside it too
    assert "omniORBpy client -> reference ORB" in out
    assert "ratio replay -> reference ORB, --window 8 / omniORBpy client -> reference ORB:" \
        in out
    # The floor replays the same 62 calls (its byte comparison counts replies whose
    # padding omniORB left uninitialised as different: its "same" is not asserted).
    floor = "floor (plain socket replay) -> omniORBpy, --window 8"
    assert f"{floor}: 62 calls, " in out
    assert f"ratio replay -> omniORBpy, --window 8 / {floor}:" in out
    rec = json.loads((tmp_path / "replay.json").read_text())
    assert check(rec) == [] and rec["benchmark"] == "replay"
    runs = {row[0]: row for row in rec["tables"][0]["rows"]}
    assert runs[f"replay -> omniORBpy, --window 8"][-1] is not None      # against the floor
    assert runs["omniORBpy client"][-3] is None                            # the peer itself


@pytest.mark.skipif(not CAN_RECORD, reason=WHY_NOT)
def test_quick_run_with_jobs_reports_each_replay_per_jobs_value():
    done = subprocess.run([sys.executable, BENCH, "--calls", "60", "--clients", "2",
                           "--repeat", "1", "--window", "8", "--jobs", "1", "2"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    for jobs in (1, 2):
        for row in ("replay -> omniORBpy, --window 1", "replay -> reference ORB, --window 8"):
            # Two clients' 30 calls, each one's call before the clock and LocateRequest.
            assert f"{row}, --jobs {jobs}: 64 calls, 64 the same" in done.stdout


@pytest.mark.skipif(not CAN_RECORD, reason=WHY_NOT)
@pytest.mark.parametrize("server", ["omniORBpy", "reference"])
def test_the_c_bound_makes_every_recorded_call_each_way(server):
    # (replay_bound.py exits non-zero when the C program makes fewer calls than recorded)
    done = subprocess.run([sys.executable, BOUND, "--calls", "60", "--clients", "2",
                           "--repeat", "1", "--server", server],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "; 62 requests" in out       # two clients' 30 calls and the one before the clock
    for row in ("omniORBpy client", "replay_bound.c, sleep", "replay_bound.c, threads",
                "replay_bound.c, poll", "pycdr replay --window 1"):
        assert row in out and "calls/s" in out.split(row, 1)[1].splitlines()[0]
