"""pycdr proxy between real ORBs: omniORBpy's echo calls relayed, a reference an
omniORBpy factory returns rewritten so the client's calls on it come through the proxy
too, what omniORBpy's client does under a TRANSIENT rule, a reset and a target that is
down, a corbaname target (omniNames), and omniORBpy and JacORB calling each other."""

import contextlib
import json
import os
import signal
import subprocess
import sys

import pytest

from peers.omni import run_omni_client, start_omni_echo_server
from peers.process import PEERS_DIR, PeerError
from pycdr_serve import PYCDR

HERE = os.path.dirname(os.path.abspath(__file__))
FACTORY_IDL = os.path.join(HERE, "idl", "replay", "factory.idl")

pytestmark = pytest.mark.skipif(os.environ.get("PYCDR_PURE") == "1",
                                reason="omniORBpy on both sides: the codec's pure path is "
                                       "covered by tests/test_proxy.py")


@contextlib.contextmanager
def proxy_for(target, tmp_path, *args):
    """`pycdr proxy` in front of ``target``; yields (its IOR for the target, rows read
    at the end into the list)."""
    rows_file = tmp_path / "rows.jsonl"
    process = subprocess.Popen(PYCDR + ["proxy", "--listen", "127.0.0.1:0", "--target", target,
                                        "--json", str(rows_file), "-q", *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rows = []
    try:
        ior = process.stdout.readline().strip()
        assert ior.startswith("IOR:"), process.stderr.read()
        yield ior, rows
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=20)
        assert process.returncode == 0, err
        rows += [json.loads(line) for line in rows_file.read_text().splitlines()]


def test_omniorbpy_echo_calls_through_the_proxy(tmp_path):
    with start_omni_echo_server() as server, proxy_for(server.ior, tmp_path) as (ior, rows):
        calls = [("echo_long", 42), ("echo_string", "via the proxy"),
                 ("echo_octets", bytes(range(256)) * 64), ("echo_double", 2.5)]
        results = run_omni_client(ior, calls)
        assert [r.get("result") for r in results] == [v for _, v in calls]
    done = [r for r in rows if r["operation"] and r["operation"].startswith("echo_")]
    assert [r["operation"] for r in done] == [op for op, _ in calls]
    assert all(r["outcome"] == "success" for r in done)


def test_a_reference_an_omniorbpy_factory_returns_keeps_the_client_behind_the_proxy(tmp_path):
    from peers.omni import start_omni_factory_server
    with start_omni_factory_server(prefix="made-", idl=FACTORY_IDL) as server, \
            proxy_for(server.ior, tmp_path, "--idl", FACTORY_IDL) as (ior, rows):
        done = subprocess.run([sys.executable, os.path.join(PEERS_DIR,
                                                            "replay_factory_client.py"),
                               FACTORY_IDL, ior], capture_output=True, text=True, timeout=120)
        assert done.stdout.strip() == "done", done.stderr
    operations = [r["operation"] for r in rows if r["message_type"] == "Request"
                  and not r["operation"].startswith("_")]
    # every call on the counters the factory made came through the proxy
    assert operations == ["make", "name", "twice", "make", "name", "twice", "twice"]
    assert all(r["outcome"] == "success" for r in rows)


def test_what_omniorbpy_sees_under_transient_and_reset(tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([
        {"match": {"operation": "echo_long"},
         "action": {"type": "system_exception", "id": "TRANSIENT", "minor": 0x4F4D0001,
                    "completed": "no"}},
        {"match": {"operation": "echo_double"}, "action": {"type": "reset"}}]))
    with start_omni_echo_server() as server, \
            proxy_for(server.ior, tmp_path, "--rules", str(rules)) as (ior, rows):
        try:
            results = run_omni_client(ior, [("echo_long", 1), ("echo_double", 1.5),
                                            ("echo_string", "still here")])
        except PeerError as e:
            pytest.fail(str(e))
    transient, reset, fine = results
    assert transient["exception"] == "IDL:omg.org/CORBA/TRANSIENT:1.0" and transient["minor"] == 0x4F4D0001
    assert transient["completed"] == 1                  # COMPLETED_NO
    assert reset["exception"] == "IDL:omg.org/CORBA/COMM_FAILURE:1.0"
    assert fine["result"] == "still here"
    hit = [r for r in rows if r["faults"]]
    assert {r["operation"] for r in hit} == {"echo_long", "echo_double"}


def test_a_corbaname_target_is_resolved_through_omninames(tmp_path):
    from peers.omni import start_omni_names
    with start_omni_names() as ns, start_omni_echo_server() as server:
        bound = subprocess.run(PYCDR + ["names", "bind", "--ns", ns.corbaloc, "echo.obj",
                                        server.ior], capture_output=True, text=True,
                               timeout=60)
        assert bound.returncode == 0, bound.stderr
        with proxy_for(ns.corbaname("echo.obj"), tmp_path) as (ior, rows):
            assert run_omni_client(ior, [("echo_long", 5)]) == [{"op": "echo_long",
                                                                  "result": 5}]
        unreachable = subprocess.run(PYCDR + ["proxy", "--listen", "127.0.0.1:0", "--target",
                                              "corbaname::127.0.0.1:1#echo.obj",
                                              "--connect-timeout", "3"],
                                     capture_output=True, text=True, timeout=60)
    assert [r["operation"] for r in rows if r["operation"] == "echo_long"] == ["echo_long"]
    assert unreachable.returncode == 3
    assert unreachable.stderr.count("\n") == 1 and "unreachable" in unreachable.stderr


def test_omniorbpy_through_a_proxy_whose_target_is_down_gets_transient(tmp_path):
    with start_omni_echo_server() as server:
        gone = server.ior                   # (its type id spares the client an _is_a)
    with proxy_for(gone, tmp_path, "--connect-timeout", "3") as (ior, rows):
        (result,) = run_omni_client(ior, [("echo_long", 1)])
    assert result["exception"] == "IDL:omg.org/CORBA/TRANSIENT:1.0"
    assert result["completed"] == 1                     # COMPLETED_NO


def test_omniorbpy_and_jacorb_call_each_other_through_the_proxy(tmp_path):
    from peers.jacorb import run_jacorb_client, start_jacorb_echo_server
    from peers.process import PeerNotInstalled
    calls = [("echo_long", -7), ("echo_string", "across ORBs")]
    (tmp_path / "to-jacorb").mkdir()
    (tmp_path / "to-omniorbpy").mkdir()
    try:
        with start_jacorb_echo_server() as server, \
                proxy_for(server.ior, tmp_path / "to-jacorb") as (ior, rows_to_jacorb):
            assert [r["result"] for r in run_omni_client(ior, calls)] == [-7, "across ORBs"]
    except PeerNotInstalled as e:
        pytest.skip(f"JacORB not installed: {e}")
    with start_omni_echo_server() as server, \
            proxy_for(server.ior, tmp_path / "to-omniorbpy") as (ior, rows_to_omni):
        results = run_jacorb_client(ior, calls)
        assert [r.get("result") for r in results] == [-7, "across ORBs"], results
    for rows in (rows_to_jacorb, rows_to_omni):
        assert [r["operation"] for r in rows
                if (r["operation"] or "").startswith("echo_")] == ["echo_long", "echo_string"]
        assert all(r["outcome"] == "success" for r in rows)


def _address(ior_text):
    from pycdr.addressing.iiop import decode_profile
    from pycdr.codec.ior import ior_from_string
    profile = decode_profile(ior_from_string(ior_text).profiles[0])
    return (profile.host, profile.port), profile.object_key


def _returned_reference_rows(rows):
    return [(r["operation"], r["outcome"]) for r in rows
            if r["message_type"] == "Request" and r["operation"] in ("echo_object", "echo_long")]


def test_omniorbpy_calls_a_reference_jacorb_returned_through_the_proxy(tmp_path):
    # JacORB (DSI) answers echo_object with the reference it was given: its own, pointing at
    # its own port. The proxy rewrites it (--idl), so omniORBpy's call on what came back comes
    # through the proxy too.
    from peers.jacorb import start_jacorb_echo_server
    from pycdr.conformance.echo import ECHO_IDL, ECHO_INTERFACE, load_echo_module
    echo = load_echo_module().interfaces[ECHO_INTERFACE]
    with start_jacorb_echo_server(interface=echo) as server, \
            proxy_for(server.ior, tmp_path, "--idl", ECHO_IDL) as (ior, rows):
        done = subprocess.run([sys.executable, os.path.join(PEERS_DIR,
                                                            "omni_returned_reference_client.py"),
                               ior, server.ior], capture_output=True, text=True, timeout=120)
        line = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}
        assert line.get("echo_long") == 7, (line, done.stderr)
        proxy_address, _ = _address(ior)
        assert _address(line["returned"]) == (proxy_address, server.object_key)
        assert _address(server.ior)[0] != proxy_address
    assert _returned_reference_rows(rows) == [("echo_object", "success"),
                                              ("echo_long", "success")]


def test_jacorb_calls_a_reference_omniorbpy_returned_through_the_proxy(tmp_path):
    # omniORBpy answers echo_object with the reference it was given, its own; JacORB calls
    # on the reference that came back in the same process (ReturnedReferenceClient.java).
    from peers.jacorb import call_returned_reference_from_jacorb
    from pycdr.conformance.echo import ECHO_IDL, ECHO_INTERFACE
    with start_omni_echo_server(idl=ECHO_IDL, interface=ECHO_INTERFACE,
                                object_id="Echo") as server, \
            proxy_for(server.ior, tmp_path, "--idl", ECHO_IDL) as (ior, rows):
        line = call_returned_reference_from_jacorb(ior, server.ior)
        assert line.get("echo_long") == 7, line
        proxy_address, _ = _address(ior)
        assert _address(line["returned"]) == (proxy_address, server.object_key)
        assert _address(server.ior)[0] != proxy_address
    assert _returned_reference_rows(rows) == [("echo_object", "success"),
                                              ("echo_long", "success")]
