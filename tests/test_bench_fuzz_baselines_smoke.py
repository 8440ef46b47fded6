"""Smoke test of benchmarks/bench_fuzz_baselines.py: its statistic and class filter, the
boofuzz block model's messages as a real JacORB answers them, and a quick run of the
boofuzz campaign through the recording relay, replayed into a JacORB with the JaCoCo agent
(numbers not tested beyond "some probes ran").  Skipped without boofuzz 0.4.2 (the
`test` extra) or without JacORB and the agent.  On omniORB: recording_relay.py as the
spawned command in front of the instrumented echo servant, and a quick boofuzz campaign
measured by branch coverage in the source-coverage build; skipped, saying how to make
them, where benchmarks/omniorb/build.sh has not built them."""

import importlib.util
import json
import os
import socket
import subprocess
import sys

import pytest

from bench_results import check

from peers.jacoco import agent_jar
from peers.jacorb import JACORB, peers_echo_interface
from peers.java_orb import start_java_echo_server
from peers.process import PeerNotInstalled

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
BENCH_DIR = os.path.join(ROOT, "benchmarks")
BENCH = os.path.join(BENCH_DIR, "bench_fuzz_baselines.py")

boofuzz = pytest.importorskip("boofuzz", reason="boofuzz is not installed (the `benchmarks` "
                                                "extra)")


def _load(name):
    if BENCH_DIR not in sys.path:
        sys.path.insert(0, BENCH_DIR)
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCH_DIR, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    return _load("bench_fuzz_baselines")


def test_a12_and_the_measured_classes(bench):
    assert bench.a12([3, 4], [1, 2]) == 1.0 and bench.a12([1, 2], [3, 4]) == 0.0
    assert bench.a12([2, 2], [2, 2]) == 0.5 and bench.a12([1, 3], [2]) == 0.5
    for name in ("org/jacorb/orb/giop/GIOPConnection", "org/jacorb/orb/iiop/IIOPAddress",
                 "org/jacorb/orb/CDRInputStream", "org/jacorb/orb/TypeCode"):
        assert bench.measured(name), name
    for name in ("org/jacorb/orb/ORB", "org/jacorb/poa/POA", "org/jacorb/orb/dii/Request",
                 "org/jacorb/orb/CDR/Nested"):
        assert not bench.measured(name), name


def _exchange(server, data: bytes) -> bytes:
    with socket.create_connection((server.host, server.port), timeout=10) as s:
        s.sendall(data)
        answer = b""
        while len(answer) < 12 or len(answer) < 12 + int.from_bytes(answer[8:12], "big"):
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
        return answer


def test_block_model_messages_are_answered_by_jacorb():
    model = _load("boofuzz_giop")
    try:
        server = start_java_echo_server(JACORB, peers_echo_interface())
    except PeerNotInstalled as e:
        pytest.skip(str(e))
    with server:
        names = model.build_model(server.object_key)
        for name in names:
            data = boofuzz.s_get(name).render()
            if name.startswith("request_"):
                reply = _exchange(server, data)
                assert reply[:4] == b"GIOP" and reply[7] == 1, (name, reply)   # a Reply
                # reply_status NO_EXCEPTION: after the request id (1.2), or after the
                # service contexts and the request id (1.0).
                status = reply[16:20] if reply[5] == 2 else reply[20:24]
                assert status == bytes(4), (name, reply)
            elif name.startswith("locate_"):
                reply = _exchange(server, data)
                assert reply[7] == 4 and reply[16:20] == (1).to_bytes(4, "big")  # OBJECT_HERE
    assert len(names) == 6


def test_quick_boofuzz_campaign_is_replayed_and_counted(bench, tmp_path):
    try:
        agent_jar()
    except PeerNotInstalled as e:
        pytest.skip(str(e))
    if bench.boofuzz_version() != bench.BOOFUZZ_VERSION:
        pytest.skip(f"boofuzz {bench.boofuzz_version()}, not {bench.BOOFUZZ_VERSION}")
    out = tmp_path / "baselines.json"
    done = subprocess.run([sys.executable, BENCH, "--target", "jacorb",
                           "--seconds", "3", "--trials", "1",
                           "--only", "boofuzz", "--keep", str(tmp_path / "inputs"),
                           "--results", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    rec = json.loads(out.read_text())
    assert check(rec) == [] and rec["benchmark"] == "fuzz_baselines" and rec["quick"]
    summary, campaigns = rec["tables"]
    [row] = summary["rows"]
    assert row[:3] == ["JacORB", "boofuzz", 1] and row[3] > 0
    [campaign] = campaigns["rows"]
    assert campaign[4] > 0 and 0 < campaign[5] <= campaign[4]
    # The recorded connections were kept: GIOP messages, as the model makes them.
    [kept] = list((tmp_path / "inputs").iterdir())
    data, at, connections = kept.read_bytes(), 0, 0
    while at < len(data):
        size = int.from_bytes(data[at:at + 4], "big")
        assert data[at + 4:at + 8] == b"GIOP"          # (the model's magic is not fuzzed)
        at, connections = at + 4 + size, connections + 1
    assert at == len(data) and connections == campaign[5]


def test_journals_keep_each_connection_in_order(tmp_path):
    relay = _load("recording_relay")
    with socket.create_server(("127.0.0.1", 0)) as server:
        recorder = relay.RecordingRelay(server.getsockname()[:2], str(tmp_path / "a.journal"))
        sent = [b"one", b"two" * 1000, b"three"]
        clients = [socket.create_connection(("127.0.0.1", recorder.port)) for _ in sent]
        for client, data in zip(clients, sent):
            client.sendall(data[:2])
        for client, data in zip(clients, sent):
            client.sendall(data[2:])
            client.close()
        accepted = [server.accept()[0] for _ in sent]
        for conn in accepted:
            while conn.recv(65536):
                pass
            conn.close()
        assert sorted(recorder.close()) == sorted(sent)
    connections, cut = relay.read_journals(str(tmp_path))
    assert sorted(connections) == sorted(sent) and cut == 0
    relay.save_connections(connections, str(tmp_path / "kept.bin"))
    assert relay.load_connections(str(tmp_path / "kept.bin")) == connections


@pytest.fixture(scope="module")
def omniorb(bench):
    omni, measure = bench.omniorb_modules()
    why = bench.OmniORB().missing()
    if why:
        pytest.skip(why)
    return omni, measure


def test_measured_omniorb_sources(bench):
    _, measure = bench.omniorb_modules()
    for path in ("/x/src/omniorb-dfsg-4.2.5+ds1/src/lib/omniORB/orbcore/giopImpl12.cc",
                 "/x/src/omniorb-dfsg-4.2.5+ds1/src/lib/omniORB/orbcore/GIOP_S.cc",
                 "/x/src/omniorb-dfsg-4.2.5+ds1/src/lib/omniORB/orbcore/cdrStream.cc",
                 "/x/src/omniorb-dfsg-4.2.5+ds1/src/lib/omniORB/dynamic/tcParser.cc",
                 "/x/src/omniorb-dfsg-4.2.5+ds1/include/omniORB4/cdrStream.h"):
        assert measure.measured(measure.relative_source(path)), path
    for path in ("/x/src/omniorb-dfsg-4.2.5+ds1/src/lib/omniORB/orbcore/poa.cc",
                 "/x/src/omniorb-dfsg-4.2.5+ds1/src/lib/omniORB/dynamic/any.cc",
                 "/usr/include/c++/12/bits/stl_vector.h"):
        assert not measure.measured(measure.relative_source(path)), path


def test_spawned_omniorb_is_recorded_and_measured(omniorb, tmp_path):
    omni, measure = omniorb
    from pycdr.fuzz.target import SpawnedTarget
    relay = _load("recording_relay")
    target = SpawnedTarget(f"{sys.executable} {os.path.join(BENCH_DIR, 'recording_relay.py')} "
                           f"--journal {tmp_path / 'journal'} -- {omni.spawn_command('cxx')}",
                           env={"ASAN_OPTIONS": omni.ASAN_OPTIONS})
    ior = target.start()
    try:
        pycdr = os.path.join(os.path.dirname(sys.executable), "pycdr")
        for operation, value in (("echo_long", "7"), ("echo_string", "\"relayed\"")):
            done = subprocess.run([pycdr, "call", ior, operation, value, "--idl", omni.IDL],
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 0 and value in done.stdout, done.stdout + done.stderr
    finally:
        target.stop()
    connections, _ = relay.read_journals(str(tmp_path / "journal"))
    assert connections and all(data.startswith(b"GIOP") for data in connections)
    measured = measure.replay_coverage(connections + [b"GIOP\x01\x02\x01\x07" + bytes(4)])
    assert 0 < measured["covered"] < measured["branches"]
    assert measured["covered"] <= measured["all_covered"] < measured["all_branches"]


def test_quick_boofuzz_campaign_on_omniorb_is_measured(bench, omniorb, tmp_path):
    if bench.boofuzz_version() != bench.BOOFUZZ_VERSION:
        pytest.skip(f"boofuzz {bench.boofuzz_version()}, not {bench.BOOFUZZ_VERSION}")
    out = tmp_path / "baselines.json"
    done = subprocess.run([sys.executable, BENCH, "--target", "omniorb", "--seconds", "3",
                           "--trials", "1", "--only", "boofuzz", "--results", str(out)],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    rec = json.loads(out.read_text())
    assert check(rec) == [] and rec["quick"]
    summary, campaigns = rec["tables"]
    [row] = summary["rows"]
    assert row[:3] == ["omniORB", "boofuzz", 1] and 0 < row[3] <= row[6]
    [campaign] = campaigns["rows"]
    # (target restarts; replay restarts, of a spinning server among them)
    assert 0 < campaign[5] <= campaign[4] and campaign[10] is not None
    assert 0 <= campaign[12] <= campaign[11]
