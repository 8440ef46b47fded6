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


FINDINGS = os.path.join(REPO, "benchmarks", "omniorb", "findings")
KINDS = ("crash", "hang", "memory", "spin", "cpu", "flood", "exception", "thread", "callback")


def _finding_folders():
    return sorted(os.path.join(FINDINGS, name) for name in os.listdir(FINDINGS))


def test_every_saved_omniorb_finding_loads_and_names_its_own_replay():
    # Runs without the build: the folders docs/FINDINGS.md points at must stay replayable.
    from pycdr.fuzz.findings import load_messages
    folders = _finding_folders()
    assert folders
    for folder in folders:
        kind, messages = load_messages(folder)
        assert kind in KINDS and messages and all(m[:4] == b"GIOP" for m in messages), folder
        with open(os.path.join(folder, "replay.txt")) as f:
            replay = f.read()
        assert os.path.relpath(folder, REPO) in replay, folder


def _replay(folder: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "pycdr.cli.main", "fuzz", "--spawn",
         f"{ECHO_SERVER} -ORBendPoint giop:tcp:127.0.0.1:", "--replay", folder, "--json"],
        capture_output=True, text=True, timeout=300, env={**os.environ, **ENV})
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("name, kind", [
    ("heap-buffer-overflow-giopImpl11-unmarshalRequestHeader", "heap-buffer-overflow"),
    ("flood-GIOP_S-handleRequest-unexpected-exception", None),
    ("spin-giopWorker-execute-CancelRequest", None),
    ("crash-TypeCode_struct-member-count", "SEGV"),
    ("spin-sequence-length-check-overflow", None),
    ("heap-buffer-overflow-giopImpl12-short-fragment", "heap-buffer-overflow"),
])
def test_saved_omniorb_finding_replays_against_the_instrumented_servant(name, kind):
    _need(ECHO_SERVER)
    result = _replay(os.path.join(FINDINGS, name))
    assert result["reproduced"], result
    if kind is not None:
        assert result["details"]["sanitizer"]["kind"] == kind


def test_close_race_brings_about_the_connection_use_after_free():
    _need(ECHO_SERVER)
    done = subprocess.run(
        [sys.executable, os.path.join(REPO, "benchmarks", "omniorb", "close_race.py"),
         os.path.join(FINDINGS, "heap-use-after-free-giopServer-notifyRzReadable"),
         "--runs", "1", "--duration", "30"],
        capture_output=True, text=True, timeout=300, env={**os.environ, **ENV})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "heap-use-after-free" in done.stdout and "notifyRzReadable" in done.stdout
