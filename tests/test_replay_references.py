"""pycdr replay: object references passed as arguments. A reference to a recorded server
is sent to that server's replay target, with the replay's key mapping (found by the IDL,
and inside an any by its TypeCode); a reference to another host is sent as recorded; the
replies holding the references sent compare the same; --json names each one moved.
(A bind in a real naming service: tests/test_replay_peers.py.)"""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from pycdr import idl
from pycdr.addressing.iiop import IIOPProfile, decode_profile, make_ior
from pycdr.capture.write import TcpSession, write_pcap
from pycdr.cli.main import main
from pycdr.codec.cdr import CDRWriter
from pycdr.codec.ior import ior_from_string
from pycdr.codec.marshal import write_value
from pycdr.codec.values import Any
from pycdr.giop.messages import KeyAddr, Reply, ReplyStatus, Request, encode_message
from pycdr.orb import DynamicServant
from pycdr.orb.sync import SyncORB

REFS_IDL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "idl", "replay",
                        "refs.idl")
MODULE = idl.load(REFS_IDL, register=False)
HUB = MODULE.interfaces["RefsTest::Hub"]
OPS = HUB.all_operations()
REGISTRATION = MODULE.classes["RefsTest::Registration"]
HUB_ID, LISTENER_ID = HUB.repo_id, "IDL:RefsTest/Listener:1.0"
RECORDED_SERVER, RECORDED_CLIENT = ("10.0.0.2", 2809), ("10.0.0.1", 5000)


def ref(type_id, address, key):
    return make_ior(type_id, [IIOPProfile((1, 2), address[0], address[1], key)])


def body(types, values):
    w = CDRWriter(version=(1, 2))
    for t, v in zip(types, values):
        write_value(w, t, v)
    return w.getvalue()


def recorded_capture(path):
    """A client's calls to the recorded hub (10.0.0.2:2809, key OldHub), each answered as
    the hub answers: echoes, and the listener it was last given."""
    hub = ref(HUB_ID, RECORDED_SERVER, b"OldHub")
    own = ref(LISTENER_ID, RECORDED_SERVER, b"OldListener")      # an object of the server
    callback = ref(LISTENER_ID, RECORDED_CLIENT, b"cb")         # the client's own object
    calls = [("echo", [hub], hub),
             ("echo_any", [Any(OPS["echo"].result, hub)], Any(OPS["echo"].result, hub)),
             ("subscribe", [REGISTRATION(name="client", who=callback)], None),
             ("last", [], callback),
             ("subscribe", [REGISTRATION(name="own", who=own)], None),
             ("last", [], own)]
    packets = []
    session = TcpSession(packets, RECORDED_SERVER[1], client_ip=RECORDED_CLIENT[0],
                         server_ip=RECORDED_SERVER[0])
    for rid, (op, args, result) in enumerate(calls, 1):
        types = [p.type for p in OPS[op].in_params]
        session.client_sends(encode_message(Request(
            version=(1, 2), request_id=rid, operation=op, target=KeyAddr(b"OldHub"),
            response_flags=3, body=body(types, args))))
        result_types = [] if result is None else [OPS[op].result]
        session.server_sends(encode_message(Reply(
            version=(1, 2), request_id=rid, reply_status=ReplyStatus.NO_EXCEPTION,
            body=body(result_types, [] if result is None else [result]))))
    session.close()
    write_pcap(path, packets)


class HubServant:
    """The hub as a target: echoes, and keeps every listener it is given."""

    def __init__(self):
        self.given: list = []

    def __call__(self, name, args):
        if name in ("echo", "echo_any"):
            return args[0]
        if name == "subscribe":
            self.given.append(args[0].who)
            return None
        return self.given[-1]


@pytest.fixture
def hub():
    servant = HubServant()
    with SyncORB() as orb:
        server = orb.serve(DynamicServant(HUB, servant), "NewHub")
        yield server, servant


def replay(capture, target, *extra):
    return CliRunner().invoke(main, ["replay", capture, "--target", target, *extra],
                              catch_exceptions=False)


def address(ior):
    p = decode_profile(ior.profiles[0])
    return (p.host, p.port, p.object_key)


def test_references_to_the_recorded_server_go_to_its_target(tmp_path, hub):
    server, servant = hub
    capture = str(tmp_path / "refs.pcap")
    recorded_capture(capture)
    out = tmp_path / "calls.json"
    result = replay(capture, server.ior, "--idl", REFS_IDL, "--json", str(out))
    calls = [json.loads(line) for line in out.read_text().splitlines()]
    assert result.exit_code == 0, (result.output, calls)
    assert [c["outcome"] for c in calls] == ["same"] * 6

    # The target was handed the client's callback as recorded (another host), and its own
    # listener at its own address, under the key the recorded hub key maps to.
    callback, own = servant.given
    assert address(callback) == (*RECORDED_CLIENT, b"cb")
    assert address(own) == ("127.0.0.1", server.port, b"OldListener")

    moved = {c["operation"] + str(c["recorded_request_id"]): c["rewritten_references"]
             for c in calls}
    target = f"127.0.0.1:{server.port}"
    assert moved["echo1"] == [{"path": "args.o", "from": "10.0.0.2:2809", "to": target,
                               "from_key": b"OldHub".hex(), "to_key": b"NewHub".hex()}]
    assert moved["echo_any2"] == [dict(moved["echo1"][0], path="args.a")]
    assert moved["subscribe3"] == []                    # the client's own object: kept
    assert moved["subscribe5"] == [{"path": "args.r.who", "from": "10.0.0.2:2809",
                                    "to": target, "from_key": b"OldListener".hex(),
                                    "to_key": b"OldListener".hex()}]


def test_without_the_idl_references_are_sent_as_recorded(tmp_path, hub):
    """Without the types nothing says where a reference sits: the bodies go as recorded
    (and their echoes compare as the same bytes), the target handed the old address."""
    server, servant = hub
    capture = str(tmp_path / "refs.pcap")
    recorded_capture(capture)
    out = tmp_path / "calls.json"
    result = replay(capture, server.ior, "--json", str(out))
    calls = [json.loads(line) for line in out.read_text().splitlines()]
    assert result.exit_code == 0
    assert all(c["rewritten_references"] == [] for c in calls)
    callback, own = servant.given
    assert address(own) == (*RECORDED_SERVER, b"OldListener")      # still the old server


def test_a_host_port_target_moves_the_address_and_keeps_the_keys(tmp_path, hub):
    server, servant = hub
    capture = str(tmp_path / "refs.pcap")
    recorded_capture(capture)
    out = tmp_path / "calls.json"
    # host:port: the recorded keys are sent unchanged, so the target must know OldHub.
    server.activate(DynamicServant(HUB, servant), "OldHub")
    result = replay(capture, f"127.0.0.1:{server.port}", "--idl", REFS_IDL, "--json", str(out))
    calls = [json.loads(line) for line in out.read_text().splitlines()]
    assert result.exit_code == 0, (result.output, calls)
    assert calls[0]["rewritten_references"][0]["to_key"] == b"OldHub".hex()
    assert address(servant.given[1]) == ("127.0.0.1", server.port, b"OldListener")


def test_a_bind_in_a_real_naming_service_binds_the_target(tmp_path, hub):
    """A recorded bind of the recorded hub in a recorded naming service, replayed to
    omniNames with the hub's target: omniNames then resolves the name to the target."""
    from peers.omni import start_omni_names
    from pycdr.orb.naming import make_name
    server, _servant = hub
    naming = idl.load(idl.standard_idl("CosNaming.idl"), register=False)
    bind = naming.interfaces["CosNaming::NamingContext"].all_operations()["bind"]
    recorded_ns = ("10.0.0.3", 2809)
    packets = []
    session = TcpSession(packets, recorded_ns[1], client_ip=RECORDED_CLIENT[0],
                         server_ip=recorded_ns[0])
    session.client_sends(encode_message(Request(
        version=(1, 2), request_id=1, operation="bind", target=KeyAddr(b"NameService"),
        response_flags=3, body=body([p.type for p in bind.in_params],
                                    [make_name([("hub", "obj")]),
                                     ref(HUB_ID, RECORDED_SERVER, b"OldHub")]))))
    session.server_sends(encode_message(Reply(version=(1, 2), request_id=1,
                                               reply_status=ReplyStatus.NO_EXCEPTION)))
    session.close()
    capture = str(tmp_path / "bind.pcap")
    write_pcap(capture, packets)
    with start_omni_names() as names:
        out = tmp_path / "calls.json"
        result = CliRunner().invoke(main, [
            "replay", capture, "--target", f"10.0.0.3:2809={names.corbaloc}",
            "--target", f"10.0.0.2:2809={server.ior}",
            "--idl", idl.standard_idl("CosNaming.idl"), "--idl", REFS_IDL,
            "--json", str(out)], catch_exceptions=False)
        (call,) = [json.loads(line) for line in out.read_text().splitlines()]
        assert result.exit_code == 0, (result.output, call)
        assert call["rewritten_references"][0]["path"] == "args.obj"
        resolved = CliRunner().invoke(main, ["names", "resolve", "hub.obj", "--ns",
                                             names.corbaloc, "--json"])
        assert resolved.exit_code == 0, resolved.output
    bound = ior_from_string(json.loads(resolved.output)["ior"])
    assert address(bound) == ("127.0.0.1", server.port, b"NewHub")
