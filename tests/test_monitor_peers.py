"""pycdr monitor on real omniORBpy traffic: a client's calls to an omniORBpy server,
recorded on the loopback interface (dumpcap) and watched live (pycdr monitor -i lo); the
rows are checked against what the client did and measured.  Needs dumpcap, libpcap and
capture rights (root): skipped without."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from peers.omni import start_omni_echo_server
from peers.process import PEERS_DIR
from peers.recording import CAN_RECORD, WHY_NOT, record_loopback
from pycdr import idl
from pycdr.calls.bodies import CallBodies
from pycdr.capture.monitor import iter_calls

pytestmark = pytest.mark.skipif(not CAN_RECORD, reason=WHY_NOT)

HERE = os.path.dirname(os.path.abspath(__file__))
IDL = os.path.join(HERE, "idl", "replay", "echo_items.idl")
INTERFACE = "ReplayEcho::Echo"
ROUNDS = 3
TIMED_CALLS = 200
PYCDR = [sys.executable, "-c", "from pycdr.cli.main import main; main()", "monitor"]


def run_clients(server):
    """The replay client's rounds (every kind of value, a fragmented 20 KB octet
    sequence, oneways), then the timed client; what the timed client printed."""
    done = subprocess.run([sys.executable, os.path.join(PEERS_DIR, "replay_client.py"), IDL,
                           server.ior, str(ROUNDS)], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "done", done.stderr
    done = subprocess.run([sys.executable, os.path.join(PEERS_DIR, "monitor_client.py"), IDL,
                           server.ior, str(TIMED_CALLS),
                           f"corbaloc::{server.host}:{server.port}/NoSuchObject"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("monitor") / "omniorbpy.pcapng")
    with start_omni_echo_server(idl=IDL, interface=INTERFACE) as server:
        with record_loopback(path, server.port):
            seen = run_clients(server)
    return path, server.port, seen


def check_rows(rows, port, seen):
    """The rows of the clients' traffic against what the clients did."""
    assert not [r for r in rows if r["outcome"] in ("malformed", "gap", "orphan_reply")]
    echo = [r for r in rows if r["server_port"] == port]
    ops = Counter(r["operation"] for r in echo if r["message_type"] == "Request")
    assert ops == {"echo_long": ROUNDS + TIMED_CALLS, "echo_double": ROUNDS,
                   "echo_string": ROUNDS, "echo_octets": ROUNDS, "echo_items": ROUNDS,
                   "note": ROUNDS, "_is_a": 1}
    assert all(r["outcome"] == "oneway" for r in echo if r["operation"] == "note")
    assert all(r["outcome"] == "success" and 0 < r["duration_ns"] for r in echo
               if r["operation"] and r["operation"].startswith("echo_"))
    octets = [r for r in echo if r["operation"] == "echo_octets"]
    assert max(r["fragments"] for r in octets) >= 2     # the 20 KB one, both ways
    assert max(r["request_bytes"] for r in octets) > 20000
    # The timed calls: each row's duration within the client's own measurement.
    timed = [c for c in seen if c["op"] == "echo_long"]
    connection = [r for r in echo if r["operation"] == "echo_long"][-TIMED_CALLS:]
    assert [r["arguments"]["value"] for r in connection] == [c["value"] for c in timed]
    assert [r["result"]["return"] for r in connection] == [c["value"] for c in timed]
    over = [(r["duration_ns"], c["ns"]) for r, c in zip(connection, timed)
            if r["duration_ns"] > c["ns"]]
    assert len(over) <= TIMED_CALLS // 100, over
    # The call on a key the server does not know: the exception the client got.
    (failed,) = [c for c in seen if c["op"] == "_is_a"]
    (row,) = [r for r in echo if r["operation"] == "_is_a"]
    assert (row["outcome"], row["exception_id"], row["minor_code"]) == \
        ("failure", failed["exception"], failed["minor"])
    assert row["completion_status"] == ["COMPLETED_YES", "COMPLETED_NO",
                                        "COMPLETED_MAYBE"][failed["completed"]]
    assert row["object_key"] == b"NoSuchObject".hex()
    # Every row of a connection carries its Community ID; the client is the caller.
    by_stream = {}
    for r in echo:
        by_stream.setdefault(r["stream"], set()).add((r["community_id"], r["client_port"]))
    assert all(len(ids) == 1 for ids in by_stream.values())
    assert all(r["client_port"] != port for r in echo)


def test_rows_of_a_recording_match_what_the_clients_did(recorded):
    path, port, seen = recorded
    bodies = CallBodies([idl.load(IDL, register=False)])
    rows = list(iter_calls(path, bodies=bodies))
    check_rows(rows, port, seen)
    items = [r for r in rows if r["operation"] == "echo_items"][-1]
    assert items["arguments"]["value"][4] == {"name": "item4", "count": 8,
                                              "weight": 4 / 3}
    assert items["interface"] is None or items["interface"] == "IDL:ReplayEcho/Echo:1.0"


def test_live_on_loopback_gives_the_rows_a_recording_gives(tmp_path):
    out = tmp_path / "live.jsonl"
    with start_omni_echo_server(idl=IDL, interface=INTERFACE) as server:
        monitor = subprocess.Popen(PYCDR + ["-i", "lo", "--filter", f"tcp port {server.port}",
                                            "--idl", IDL, "--json", str(out)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = monitor.stderr.readline()
            assert line.startswith("capturing on lo"), line + monitor.stderr.read()
            time.sleep(0.5)
            seen = run_clients(server)
            time.sleep(1.0)
        finally:
            monitor.send_signal(signal.SIGINT)
            _, err = monitor.communicate(timeout=60)
    assert monitor.returncode == 0, err
    assert "Traceback" not in err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    check_rows(rows, server.port, seen)
    assert all(r["capture_file"] is None for r in rows)
    # The last line: libpcap's count of the packets it dropped (none at this pace).
    last = err.strip().splitlines()[-1]
    assert re.fullmatch(r"[1-9]\d* packets captured on lo, 0 dropped \(libpcap's count\)",
                        last), err


FACTORY_IDL = os.path.join(HERE, "idl", "replay", "factory.idl")


def test_interfaces_learned_from_references_an_omniorbpy_factory_returns(tmp_path):
    """The Counters' keys appear first in the Maker's replies (object references): their
    calls carry the Counter interface and decode by it."""
    from peers.omni import start_omni_factory_server
    path = str(tmp_path / "factory.pcapng")
    with start_omni_factory_server(prefix="made-", idl=FACTORY_IDL) as server:
        with record_loopback(path, server.port):
            done = subprocess.run([sys.executable, os.path.join(PEERS_DIR,
                                                                "replay_factory_client.py"),
                                   FACTORY_IDL, server.ior],
                                  capture_output=True, text=True, timeout=120)
        assert done.stdout.strip() == "done", done.stderr
    out = tmp_path / "calls.jsonl"
    done = subprocess.run(PYCDR + [path, "--idl", FACTORY_IDL, "--json", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    calls = [(r["operation"], r["interface"], r["arguments"], r["result"]) for r in rows
             if r["message_type"] == "Request" and not r["operation"].startswith("_")]
    counter = "IDL:ReplayFactory/Counter:1.0"
    made = [c for c in calls if c[0] == "make"]
    assert [c[2] for c in made] == [{"name": "a"}, {"name": "b"}]
    assert all(c[3]["return"].startswith("IOR:") for c in made)
    assert [c for c in calls if c[0] != "make"] == [
        ("name", counter, {}, {"return": "a"}), ("twice", counter, {"value": 21}, {"return": 42}),
        ("name", counter, {}, {"return": "b"}), ("twice", counter, {"value": -4}, {"return": -8}),
        ("twice", counter, {"value": 5}, {"return": 10})]
