"""Call-out findings (`pycdr fuzz --callback`), against tests/defect_server.py:
with --plant callback it connects to every corbaloc/http address it sees in
a request (as an ORB that fetches a class from a codebase, or calls a
CodeBase, does), with --plant none to none.  The campaign's listener gets
the connection, the token in it names the case that planted the address,
the case is minimized and confirmed alone against restarted targets, and
`pycdr fuzz --replay` reproduces it -- on the port its messages name, or on
another when that one is taken (the messages are rewritten to name it)."""

import json
import os
import socket
import subprocess
import sys

from pycdr.codec import tc
from pycdr.fuzz.callback import planted_port
from pycdr.fuzz.engine import REPRODUCTIONS, Campaign
from pycdr.fuzz.findings import save
from pycdr.fuzz.seeds import Seed
from pycdr.giop.messages import KeyAddr, LocateRequest, Request, encode_message

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import defect_server  # noqa: E402

PYCDR = os.path.join(os.path.dirname(sys.executable), "pycdr")
SERVER = os.path.join(HERE, "defect_server.py")
KEY = KeyAddr(defect_server.OBJECT_KEY)


def _seeds():
    echo = encode_message(Request(version=(1, 2), request_id=7, target=KEY,
                                  operation="echo_string", body=b"\0\0\0\x06hello\0"))
    plain = encode_message(LocateRequest(version=(1, 2), request_id=8, target=KEY))
    return [Seed("echo_string", [echo], body_types=[tc.string], source="idl"),
            Seed("locate", [plain], source="catalog")]


def _campaign(plant, cases=60):
    command = f"{sys.executable} {SERVER} --plant {plant}"
    campaign = Campaign(None, seed=3, spawn=command, timeout=0.5, probe_timeout=0.5,
                        seeds=_seeds(), standby=False, coverage="none", callback=True)
    try:
        campaign.run(max_cases=cases)
    finally:
        campaign.close()
    return command, campaign


def _replay(command, folder):
    done = subprocess.run([PYCDR, "fuzz", "--spawn", command, "--timeout", "0.5", "--json",
                           "--replay", folder], capture_output=True, text=True, timeout=60)
    return done.returncode, json.loads(done.stdout)


def test_callout_found_attributed_confirmed_and_replayed(tmp_path):
    command, campaign = _campaign("callback")
    findings = list(campaign.findings.values())
    assert [f.kind for f in findings] == ["callback"]
    finding = findings[0]
    assert finding.confirmed and finding.reproductions == REPRODUCTIONS
    # The first call-out named the case that planted the address: its token.
    first = finding.details["calls"][0]
    assert first["planted_by"] == [finding.case.index]
    assert first["protocol"] in ("giop", "http")
    assert any(m.mutator == "callback" for m in finding.case.mutations)
    assert campaign.listener.address.encode() in b"".join(finding.messages)
    assert len(b"".join(finding.messages)) <= len(b"".join(finding.case.messages))
    folder = save(finding, str(tmp_path), 1, target_text=None, spawn=command)
    code, out = _replay(command, folder)
    assert code == 1 and out["reproduced"] and out["observed"] == "callback"
    # The port the messages name taken: the listener takes another, the messages name it.
    port = planted_port(finding.messages)
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", port))
        taken.listen(1)
        code, out = _replay(command, folder)
    assert code == 1 and out["reproduced"]
    assert out["details"]["listener"] != f"127.0.0.1:{port}"


def test_no_callout_no_finding():
    # The same cases, planted addresses and all, against a target that never calls out.
    _, campaign = _campaign("none")
    assert campaign.findings == {} and campaign.unconfirmed == []
    assert campaign.listener.calls == []
    assert campaign.stats.findings["callback"] == 0
