"""`pycdr fuzz --coverage sancov` against omniORB 4.2.5 itself: the library
built by benchmarks/omniorb/build.sh with clang's trace-pc-guard, the coverage
shim and AddressSanitizer, serving conformance/echo.idl from a C++ servant and
from omniORBpy.  The build takes a while and is not part of CI: without it
these tests are skipped."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BUILD = os.environ.get("PYCDR_OMNIORB_COV",
                       os.path.expanduser("~/.cache/pycdr/omniorb-4.2.5-cov"))
ECHO_SERVER = os.path.join(BUILD, "echo", "echo_server")
PYTHON_ASAN = os.path.join(BUILD, "omnipy", "bin", "python-asan")
IDL = os.path.join(REPO, "conformance", "echo.idl")
# The instrumented server's exit on a memory error is seen at once (symbolize=0);
# a killed target leaves no leaks to report.
ENV = {"ASAN_OPTIONS": "symbolize=0:detect_leaks=0"}
# Enough cases to pass new edges of the ORB past its start (each case runs
# twice when it brings new edges): a few seconds.
CASES = 150


def _need(path):
    if not os.path.exists(path):
        pytest.skip(f"no instrumented omniORB build at {BUILD} "
                    f"(bash benchmarks/omniorb/build.sh makes it)")


def _campaign(spawn: str, tmp_path) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "pycdr.cli.main", "fuzz", "--coverage", "sancov", "--spawn", spawn,
         "--idl", IDL, "--interface", "EchoAll::Echo", "--no-catalog", "--seed", "1",
         "--max-cases", str(CASES), "--out", str(tmp_path / "findings"), "--json"],
        capture_output=True, text=True, timeout=600, env={**os.environ, **ENV})
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_sancov_campaign_on_the_instrumented_cxx_servant(tmp_path):
    _need(ECHO_SERVER)
    summary = _campaign(f"{ECHO_SERVER} -ORBendPoint giop:tcp:127.0.0.1:", tmp_path)
    feedback = summary["feedback"]
    assert feedback["kind"] == "sancov" and summary["cases"] == CASES
    # The seeds pass hundreds of the ORB's edges; the cases pass more.
    assert feedback["initial_edges"] > 100
    assert feedback["edges"] > feedback["initial_edges"] and feedback["kept"] > 0
    assert not summary["target_dead"]


def test_sancov_campaign_on_omniorbpy_on_the_instrumented_library(tmp_path):
    _need(PYTHON_ASAN)
    server = os.path.join(HERE, "peers", "omni_server.py")
    summary = _campaign(f"{PYTHON_ASAN} {server} --idl {IDL} --interface EchoAll::Echo "
                        f"-- -ORBendPoint giop:tcp:127.0.0.1:", tmp_path)
    feedback = summary["feedback"]
    assert feedback["kind"] == "sancov" and summary["cases"] == CASES
    # Only the ORB's C++ is instrumented (not _omnipy nor Python): fewer edges.
    assert feedback["initial_edges"] > 100
    assert feedback["edges"] > feedback["initial_edges"] and feedback["kept"] > 0
    assert not summary["target_dead"]
