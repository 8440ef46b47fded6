"""Real ORBs: IORs made by omniORBpy, omniNames and JacORB during the test run, and a
recorded omniORBpy client/server exchange, decoded without a warning."""

import socket
import threading

import pytest

from peers.fixtures import start_peer  # noqa: F401 (pytest fixture)
from peers.jacorb import run_jacorb_client, start_jacorb_echo_server
from peers.omni import run_omni_client, start_omni_echo_server, start_omni_names
from peers.process import LOOPBACK, free_port
from test_ior import assert_agrees_with_catior

from pycdr import codesets
from pycdr.giop.connection import NEED_DATA, GiopConnection, Role
from pycdr.giop.events import ConnectionClosed, MessageReceived
from pycdr.giop.service_contexts import CodeSetsContext
from pycdr.giop.messages import KeyAddr, LocateRequest, LocateStatus, ReplyStatus, Request
from pycdr.giop import sysexc
from pycdr.addressing.iiop import AlternateIIOPAddress, CodeSetsComponent, IIOPProfile, ORBTypeComponent, decode_profile
from pycdr.codec.ior import ior_from_string


def iiop_profiles(ior_string):
    ior = ior_from_string(ior_string)
    return ior, [p for p in map(decode_profile, ior.profiles) if isinstance(p, IIOPProfile)]


@pytest.mark.parametrize("giop", [(1, 0), (1, 1), (1, 2)])
def test_omniorbpy_ior_matches_its_configuration(start_peer, giop):  # noqa: F811
    second_port = free_port()
    server = start_peer(start_omni_echo_server, giop=giop, orb_args=[
        "-ORBnativeCharCodeSet", "UTF-8",
        "-ORBendPoint", f"giop:tcp:{LOOPBACK}:{second_port}"])
    ior, profiles = iiop_profiles(server.ior)
    assert ior.type_id == "IDL:PycdrTest/Echo:1.0"
    (p,) = profiles
    assert (p.version, p.host, p.port, p.object_key) == (giop, LOOPBACK, server.port,
                                                         server.object_key)
    if giop == (1, 0):
        assert p.components == ()          # IIOP 1.0 profiles have none
    elif giop == (1, 1):
        # omniORB puts only its ORB type into IIOP 1.1 profiles.
        assert [c.vendor for c in p.components] == ["omniORB"]
    else:
        assert p.component(ORBTypeComponent).vendor == "omniORB"
        code_sets = p.component(CodeSetsComponent)
        assert code_sets.char_native == codesets.UTF_8
        assert code_sets.wchar_native == codesets.UTF_16
        assert p.component(AlternateIIOPAddress) == AlternateIIOPAddress(LOOPBACK, second_port)
        assert p.addresses == [(LOOPBACK, server.port), (LOOPBACK, second_port)]
    assert_agrees_with_catior(server.ior)


def test_omninames_root_context_ior(start_peer):  # noqa: F811
    names = start_peer(start_omni_names)
    ior, (p,) = iiop_profiles(names.ior)
    assert ior.type_id == "IDL:omg.org/CosNaming/NamingContextExt:1.0"
    assert (p.host, p.port, p.object_key) == (LOOPBACK, names.port, b"NameService")
    assert_agrees_with_catior(names.ior)


@pytest.mark.parametrize("giop", [(1, 0), (1, 2)])
def test_jacorb_ior_matches_its_configuration(start_peer, giop):  # noqa: F811
    server = start_peer(start_jacorb_echo_server, giop=giop)
    ior, profiles = iiop_profiles(server.ior)
    assert ior.type_id == "IDL:PycdrTest/Echo:1.0"
    p = profiles[0]
    assert (p.version, p.port, p.object_key) == (giop, server.port, server.object_key)
    assert p.host == server.host
    if giop != (1, 0):
        assert p.component(ORBTypeComponent).vendor == "JacORB"
        code_sets = p.component(CodeSetsComponent)     # JacORB's defaults
        assert (code_sets.char_native, code_sets.wchar_native) == (codesets.UTF_8,
                                                                  codesets.UTF_16)
    assert_agrees_with_catior(server.ior)


# --- a recorded exchange ------------------------------------------------------------
class Relay:
    """A loopback TCP relay that records what each side sends, in order."""

    def __init__(self, target_port, listen_port=0):
        self.target_port = target_port
        self.listener = socket.create_server((LOOPBACK, listen_port))
        self.port = self.listener.getsockname()[1]
        self.recordings = []       # per connection: (bytes to server, bytes to client)
        self.threads = []
        self.sockets = []
        self.accept_thread = threading.Thread(target=self._accept, daemon=True)
        self.accept_thread.start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection((LOOPBACK, self.target_port), timeout=30)
            self.sockets += [client, server]
            recording = (bytearray(), bytearray())
            self.recordings.append(recording)
            for src, dst, record in ((client, server, recording[0]),
                                     (server, client, recording[1])):
                t = threading.Thread(target=self._pump, args=(src, dst, record), daemon=True)
                t.start()
                self.threads.append(t)

    @staticmethod
    def _pump(src, dst, record):
        try:
            while data := src.recv(65536):
                record += data
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def close(self):
        self.listener.close()
        for t in self.threads:
            t.join(timeout=10)
        for s in self.sockets:
            s.close()


def drain(conn):
    events = []
    while (ev := conn.next_event()) is not NEED_DATA:
        events.append(ev)
        if isinstance(ev, ConnectionClosed):
            break
    return events


def decode_recording(data, role):
    """Every message of one direction, through a connection in lenient mode."""
    conn = GiopConnection(role, lenient=True, check_request_ids=False)
    conn.receive_data(bytes(data))
    conn.receive_data(b"")
    events = drain(conn)
    assert isinstance(events[-1], ConnectionClosed) and events[-1].clean, events[-1]
    received = events[:-1]
    assert all(isinstance(e, MessageReceived) for e in received), received
    for e in received:
        assert [w for w in e.warnings if w.severity == "warning"] == [], e.message
    return [e.message for e in received]


def probe_with_our_client(port, object_key, giop):
    """Send a LocateRequest and a Request for an operation the server lacks; return
    the decoded answers (our own client, through the relay)."""
    conn = GiopConnection(Role.CLIENT)
    out = conn.send(LocateRequest(version=giop, request_id=conn.next_request_id(),
                                  target=KeyAddr(object_key)))
    out += conn.send(Request(version=giop, request_id=conn.next_request_id(),
                             operation="no_such_op", target=KeyAddr(object_key)))
    answers = []
    with socket.create_connection((LOOPBACK, port), timeout=30) as s:
        s.sendall(out)
        while len(answers) < 2:
            data = s.recv(65536)
            conn.receive_data(data)
            if not data:
                break
            answers += drain(conn)
    return answers


@pytest.mark.parametrize("client", ["omniORBpy", "JacORB"])
@pytest.mark.parametrize("giop", [(1, 0), (1, 1), (1, 2)])
def test_recorded_omniorbpy_exchange_decodes_without_warnings(start_peer, giop,  # noqa: F811
                                                              client):
    relay_port = free_port()
    server = start_peer(start_omni_echo_server, giop=giop, orb_args=[
        "-ORBendPointPublish", f"giop:tcp:{LOOPBACK}:{relay_port}"])
    ior, (profile,) = iiop_profiles(server.ior)
    assert profile.port == relay_port          # clients come through the relay
    relay = Relay(server.port, relay_port)
    try:
        calls = [("echo_long", -42), ("echo_double", 2.5), ("echo_string", "h\u00e9llo"),
                 ("echo_octets", bytes(range(20)))]
        if client == "omniORBpy":
            results = run_omni_client(server.ior, calls, giop=giop)
        else:
            results = run_jacorb_client(server.ior, calls)
        assert [r["result"] for r in results] == [v for _, v in calls]
        answers = probe_with_our_client(relay_port, server.object_key, giop)
    finally:
        server.stop()
        relay.close()

    assert len(relay.recordings) == 2          # the peer client's connection, then ours
    requests, replies = [], []
    for to_server, to_client in relay.recordings:
        sent = decode_recording(to_server, Role.SERVER)
        answered = decode_recording(to_client, Role.CLIENT)
        # Every reply answers a request of its own connection.
        asked = {m.request_id for m in sent if m.type_name in ("Request", "LocateRequest")}
        assert {m.request_id for m in answered if hasattr(m, "request_id")} <= asked
        requests += sent
        replies += answered
    ops = [m.operation for m in requests if m.type_name == "Request"]
    # (A client may add operations of its own, such as _is_a or _non_existent.)
    assert [op for op in ops if not op.startswith("_")] == [op for op, _ in calls] + \
        ["no_such_op"]
    assert all(m.version == giop for m in requests + replies)
    # The echo_long request's argument and its reply's result, read from the bodies.
    echo_long = next(m for m in requests if getattr(m, "operation", "") == "echo_long")
    assert echo_long.body_reader().read_long() == -42
    reply = next(m for m in replies if getattr(m, "request_id", None) == echo_long.request_id
                 and m.type_name == "Reply")
    assert reply.reply_status == ReplyStatus.NO_EXCEPTION
    assert reply.body_reader().read_long() == -42
    echo_string = next(m for m in requests if getattr(m, "operation", "") == "echo_string")
    reader = echo_string.body_reader()
    # The char code set: from the CodeSets context the client sent on its connection
    # (first request only), else ISO-8859-1, the spec's fallback.  JacORB sends UTF-8
    # at GIOP 1.0/1.1 without negotiating it (omniORB echoes the bytes unchanged).
    negotiated = [c for m in requests for c in getattr(m, "service_contexts", ())
                  if isinstance(c, CodeSetsContext)]
    if negotiated:
        reader.tcs_c = negotiated[0].char_data
    elif client == "JacORB":
        reader.tcs_c = codesets.UTF_8
    assert reader.read_string() == "h\u00e9llo"
    # Our probe: omniORB's own answers (in either order: a multi-threaded server may
    # answer the Request before the LocateRequest).
    by_type = {e.message.type_name: e.message for e in answers}
    assert sorted(by_type) == ["LocateReply", "Reply"]
    locate, bad_op = by_type["LocateReply"], by_type["Reply"]
    assert locate.locate_status == LocateStatus.OBJECT_HERE
    assert bad_op.reply_status == ReplyStatus.SYSTEM_EXCEPTION
    assert isinstance(bad_op.system_exception, sysexc.BAD_OPERATION)
    assert bad_op.system_exception.vendor in ("OMG", "omniORB")
