"""pycdr replay with ORBs that share no code with pycdr: an omniORBpy client's calls to an
omniORBpy server, recorded on the loopback interface by dumpcap, replayed against

- a restarted omniORBpy server: every call the same (with the IDL and without);
- JacORB serving the same IDL: the same with the IDL; without it exactly the replies
  whose bodies hold values differ, because the ORBs legitimately choose different byte
  orders (omniORB marshals in its host's, little-endian here; JacORB always big-endian)
  and bytes cannot be normalized without the types;
- an omniORBpy server whose servant differs in one operation: exactly that operation
  reported, with the path of the difference.

Recording needs dumpcap and capture rights (root): skipped without.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from conftest import REPLAY_WINDOW
from peers.jacorb import start_jacorb_echo_server
from peers.omni import start_omni_echo_server, start_omni_factory_server
from peers.process import PEERS_DIR
from peers.recording import CAN_RECORD, WHY_NOT, record_loopback
from pycdr import idl
from pycdr.capture.giop import decode_capture

# Every replay runs as recorded (--window 1) and pipelined (--window 8).
pytestmark = [pytest.mark.skipif(not CAN_RECORD, reason=WHY_NOT),
              pytest.mark.usefixtures("replay_window")]

IDL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "idl", "replay",
                   "echo_items.idl")
INTERFACE = "ReplayEcho::Echo"
ROUNDS = 3
# Per round: five two-way calls and a oneway; the omniORBpy client first asks where the
# object is (a LocateRequest, once per connection).
OPERATIONS = {"echo_long": ROUNDS, "echo_double": ROUNDS, "echo_string": ROUNDS,
              "echo_octets": ROUNDS, "echo_items": ROUNDS, "note": ROUNDS,
              "(LocateRequest)": 1}
PYCDR = [sys.executable, "-c", "from pycdr.cli.main import main; main()", "replay"]


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """A capture of the omniORBpy client calling the omniORBpy server."""
    path = str(tmp_path_factory.mktemp("replay") / "omniorbpy.pcapng")
    with start_omni_echo_server(idl=IDL, interface=INTERFACE) as server:
        with record_loopback(path, server.port):
            done = subprocess.run([sys.executable, os.path.join(PEERS_DIR, "replay_client.py"),
                                   IDL, server.ior, str(ROUNDS)],
                                  capture_output=True, text=True, timeout=120)
        assert done.stdout.strip() == "done", done.stderr
    return path


def replay(capture, target, tmp_path, *args):
    out = str(tmp_path / "calls.jsonl")
    done = subprocess.run(PYCDR + [capture, "--target", target, "--json", out, *args,
                                   *REPLAY_WINDOW],
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    with open(out) as f:
        calls = [json.loads(line) for line in f]
    return done, calls


def test_the_recording_holds_the_calls_and_fragments(recording):
    entries = decode_capture(recording, heuristic=True)
    kinds = Counter(e.get("type") for e in entries if "reassembled" not in e)
    assert kinds["Request"] == sum(OPERATIONS.values()) - 1
    assert kinds["Fragment"] >= 2           # the 20 KB echo_octets, both ways
    assert not [e for e in entries if "error" in e]


@pytest.mark.parametrize("with_idl", [True, False], ids=["idl", "bytes"])
def test_a_restarted_omniorbpy_answers_every_call_the_same(recording, tmp_path, with_idl):
    with start_omni_echo_server(idl=IDL, interface=INTERFACE) as server:
        done, calls = replay(recording, server.ior, tmp_path, *(["--idl", IDL] if with_idl
                                                                else []))
    not_same = [(c["operation"], c["outcome"], c["reason"], c["differences"]) for c in calls
                if c["outcome"] != "same"]
    if not with_idl:
        # omniORB does not clear the padding it skips (between a string and the next long
        # of an Item): those bytes hold whatever its buffer held, so echo_items' bodies may
        # differ as bytes (seen: 'item0\0' then 0a0b instead of 0000).  Only the IDL can
        # tell padding from values: with it (the other case) every call is the same.
        not_same = [n for n in not_same if n[0] != "echo_items" or
                    [d["path"] for d in n[3]] != ["body"]]
        assert not not_same, not_same
    else:
        assert done.returncode == 0, (not_same, done.stderr)
    assert Counter(c["operation"] for c in calls) == OPERATIONS
    # Replies compared, not only sent: each two-way call has both.
    assert all(c["recorded_reply"] and c["replayed_reply"] for c in calls
               if c["kind"] != "oneway")


def test_jacorb_answers_the_same_values_in_its_own_byte_order(recording, tmp_path):
    interface = idl.load(IDL, register=False).interfaces[INTERFACE]
    with start_jacorb_echo_server(interface=interface) as server:
        # JacORB's object key (PycdrEcho/EchoPOA/Echo) comes from its IOR: the key mapping.
        with_idl, calls = replay(recording, server.ior, tmp_path, "--idl", IDL)
        assert with_idl.returncode == 0, with_idl.stdout + with_idl.stderr
        assert Counter(c["operation"] for c in calls) == OPERATIONS
        assert {c["outcome"] for c in calls} == {"same"}
        without, calls = replay(recording, server.ior, tmp_path)
    assert without.returncode == 1
    for c in calls:
        # A GIOP 1.2 Reply without service contexts: its body from byte 24 on.
        body = bytes.fromhex(c["recorded_reply"])[24:]
        if c["kind"] == "request" and any(body):
            # The legitimate difference: little-endian omniORB, big-endian JacORB.
            assert c["outcome"] == "different", c
            (diff,) = c["differences"]
            assert diff["path"] == "body" and "byte orders differ" in diff["replayed"]
            assert diff["recorded"].startswith("little-endian")
        else:
            # A oneway has no reply, a LocateReply no body, and echo_double(0.0) answers
            # eight zero bytes, the same in either byte order: nothing differs.
            assert c["outcome"] == "same", c


def test_a_servant_that_differs_in_one_operation_is_reported_with_the_path(recording,
                                                                            tmp_path):
    with start_omni_echo_server(idl=IDL, interface=INTERFACE, differ="echo_items") as server:
        done, calls = replay(recording, server.ior, tmp_path, "--idl", IDL)
    assert done.returncode == 1
    different = [c for c in calls if c["outcome"] != "same"]
    assert {c["operation"] for c in different} == {"echo_items"}
    assert len(different) == ROUNDS
    for c in different:
        assert c["outcome"] == "different"
        assert c["differences"] == [{"path": "result[3].name", "recorded": "item3",
                                     "replayed": "item3!"}]
    assert "result[3].name: recorded item3, replayed item3!" in done.stdout


def test_over_tls_to_the_reference_orb(recording, tmp_path):
    """The omniORBpy recording replayed to `pycdr serve --tls` of the same IDL: the
    reference's IOR advertises its TLS port, the shared TLS options verify it."""
    from tls_certs import make_certificates
    certs = make_certificates(tmp_path / "certs")
    serve = subprocess.Popen([sys.executable, "-c", "from pycdr.cli.main import main; main()",
                              "serve", IDL, "--interface", INTERFACE, "--tls",
                              str(certs.server.cert), str(certs.server.key)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ior = serve.stdout.readline().strip()
        assert ior.startswith("IOR:"), serve.stderr.read() if serve.poll() is not None else ior
        done, calls = replay(recording, ior, tmp_path, "--idl", IDL, "--tls-ca",
                             str(certs.ca))
        assert done.returncode == 0, done.stdout + done.stderr
        assert Counter(c["operation"] for c in calls) == OPERATIONS
        assert {c["outcome"] for c in calls} == {"same"}
        unverified, _ = replay(recording, ior, tmp_path, "--idl", IDL)
        assert unverified.returncode == 6 and "certificate" in unverified.stderr  # TLS failed
    finally:
        serve.kill()
        serve.wait(10)


FACTORY_IDL = os.path.join(os.path.dirname(IDL), "factory.idl")


@pytest.fixture(scope="module")
def factory_recording(tmp_path_factory):
    """A capture of the omniORBpy client making counters with an omniORBpy factory (whose
    counters' keys start with "old-") and calling them."""
    path = str(tmp_path_factory.mktemp("replay") / "factory.pcapng")
    with start_omni_factory_server(prefix="old-", idl=FACTORY_IDL) as server:
        with record_loopback(path, server.port):
            done = subprocess.run([sys.executable, os.path.join(PEERS_DIR,
                                                                "replay_factory_client.py"),
                                   FACTORY_IDL, server.ior],
                                  capture_output=True, text=True, timeout=120)
        assert done.stdout.strip() == "done", done.stderr
    return path


def _keys_sent(calls):
    return [(c["operation"], _decoded_key(c["sent"])) for c in calls if c["sent"]]


def _decoded_key(sent_hex: str):
    from pycdr.giop.messages import decode_message
    return decode_message(bytes.fromhex(sent_hex), lenient=True)[0].object_key


def test_keys_learned_from_references_an_omniorbpy_factory_returns(factory_recording,
                                                                    tmp_path):
    # Replayed to a factory whose counters have other keys ("new-a" where the recording has
    # "old-a"): each make() reply teaches its key, and the calls on the counters go there.
    with start_omni_factory_server(prefix="new-", idl=FACTORY_IDL) as server:
        done, calls = replay(factory_recording, server.ior, tmp_path, "--idl", FACTORY_IDL)
    assert done.returncode == 0, done.stdout + done.stderr
    assert {c["outcome"] for c in calls} == {"same"}, calls
    requests = [(op, key) for op, key in _keys_sent(calls) if op != "(LocateRequest)"]
    # (omniORBpy's client asks each returned reference _is_a Counter before its first call.)
    assert requests == [("make", b"Maker"), ("_is_a", b"new-a"), ("name", b"new-a"),
                        ("twice", b"new-a"), ("make", b"Maker"), ("_is_a", b"new-b"),
                        ("name", b"new-b"), ("twice", b"new-b"), ("twice", b"new-a")], requests
    # Without the learned key (a --key that sends old-a elsewhere) the counter's calls
    # fail at the target and the make() result is reported as not mapping to it.
    with start_omni_factory_server(prefix="new-", idl=FACTORY_IDL) as server:
        done, calls = replay(factory_recording, server.ior, tmp_path, "--idl", FACTORY_IDL,
                             "--key", "old-a=elsewhere")
    assert done.returncode == 1
    different = {(c["operation"], d["path"], d["recorded"], d["replayed"])
                 for c in calls if c["outcome"] == "different" for d in c["differences"]}
    assert ("make", "result.object_key", "old-a (maps to elsewhere)", "new-a") in different
    assert ("name", "status", "NO_EXCEPTION", "SYSTEM_EXCEPTION") in different, different
    assert {c["operation"] for c in calls if c["outcome"] != "same"} == {
        "make", "_is_a", "name", "twice"}
