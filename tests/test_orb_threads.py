"""The reference ORB on blocking sockets (issue 21): the blocking client (SyncORB's calls,
pycdr.orb.blocking) and the threaded server (pycdr.orb.threads.ThreadedServer), against
each other, against the asyncio ORB, and against hand-made servers that close mid-call,
close before replying, never reply, or reply with bytes that do not decode.  (omniORBpy as
the peer of both: tests/test_orb_omni.py.)

Every server here listens on 127.0.0.1, on a port it picks, and is stopped by its test."""

import gc
import socket
import threading
import time

import pytest

from orb_echo_values import (ECHO_INTERFACE, ECHO_REPO_ID, WIDE_OPERATIONS, echo_cases,
                             expected_result, load_echo_module)
from pycdr.codec import tc
from pycdr.errors import PycdrError
from pycdr.giop.header import HEADER_SIZE, MsgType, encode_header, parse_header
from pycdr.giop.messages import (CancelRequest, CloseConnection, KeyAddr, LocateRequest, Reply,
                                 ReplyStatus, Request, decode_message, encode_message)
from pycdr.giop.sysexc import (BAD_OPERATION, BAD_PARAM, COMM_FAILURE, MARSHAL, OBJECT_NOT_EXIST,
                               TIMEOUT, TRANSIENT, UNKNOWN, CompletionStatus)
from pycdr.orb import ClassServant, EchoServant, ServerLimits, ThreadedServer
from pycdr.orb.sync import SyncORB
from pycdr.codec.values import UserException
from test_orb_roundtrip import GcWatcher, Implementation

MODULE = load_echo_module()
ECHO = MODULE.interfaces[ECHO_INTERFACE]
VERSIONS = [(1, 0), (1, 1), (1, 2)]
BIG = 3 << 20           # over omniORB's default 2 MiB message limit


def big_octets(n=BIG):
    return bytes(range(256)) * (n // 256)


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"giop{v[0]}.{v[1]}")
@pytest.mark.parametrize("little", [False, True], ids=["big", "little"])
def test_every_type_blocking_client_to_threaded_server(version, little):
    with SyncORB() as orb:
        server = orb.serve(EchoServant(ECHO), "Echo", threads=True)
        assert isinstance(server.server, ThreadedServer)
        echo = orb.string_to_object(server.corbaloc.replace("1.2@", f"{version[0]}."
                                                            f"{version[1]}@"), ECHO,
                                    little=little)
        for op, args in echo_cases(MODULE, server.server.ior(server.key)):
            if version == (1, 0) and op in WIDE_OPERATIONS:
                with pytest.raises(BAD_PARAM):      # GIOP 1.0 has no wchar
                    echo.invoke(op, *args)
                continue
            assert echo.invoke(op, *args) == expected_result(args), op
        echo.note("oneway")
        assert echo.is_a(ECHO_REPO_ID) and not echo.non_existent()
        # Every call went over the blocking client: the loop's ORB made no connection.
        assert not orb.orb._connections and len(orb.blocking._connections) == 1


@pytest.mark.parametrize("threads", [False, True], ids=["asyncio-server", "threaded-server"])
@pytest.mark.parametrize("blocking", [False, True], ids=["loop-client", "blocking-client"])
def test_a_message_over_2_mib_both_ways(threads, blocking):
    data = big_octets()
    with SyncORB(blocking=blocking) as orb:
        server = orb.serve(EchoServant(ECHO), "Echo", threads=threads)
        echo = orb.string_to_object(server.ior, ECHO)
        for _ in range(2):
            assert echo.echo_octets(data) == data
        assert echo.echo_long(7) == 7            # the stream goes on after it


def test_threaded_server_exceptions_forwarding_and_coroutine_servants():
    impl = Implementation()
    with SyncORB() as orb:
        target = orb.serve(EchoServant(ECHO), "Echo", threads=True)
        classy = target.activate(ClassServant(ECHO, impl), "Cls")
        front = orb.serve(threads=True)
        front.server.adapter.forward(b"Moved", target.server.ior(target.key))
        front.server.adapter.forward(b"Gone", target.server.ior(target.key), permanent=True)
        front.server.adapter.forward(b"Loop", front.server.ior(b"Loop"))

        missing = orb.string_to_object(target.server.corbaloc(b"NoSuchKey"), ECHO)
        with pytest.raises(OBJECT_NOT_EXIST) as info:
            missing.echo_long(1)
        assert info.value.completed == CompletionStatus.COMPLETED_NO
        assert missing.non_existent() is True
        echo = orb.string_to_object(target.ior, ECHO)
        with pytest.raises(BAD_OPERATION):
            echo.invoke_dynamic("no_such_operation", [], tc.void, [])
        with pytest.raises(MARSHAL):        # a long where a string is expected
            echo.invoke_dynamic("echo_string", [("v", "in", tc.long)], tc.string, [5])
        cls = orb.string_to_object(target.server.ior_string(classy), ECHO)
        with pytest.raises(UserException) as info:
            cls.echo_raise(7)
        assert (info.value.code, info.value.why) == (7, "asked to")
        with pytest.raises(UNKNOWN):
            cls.echo_raise(0)
        assert cls.echo_long(13) == 13      # a coroutine method: on the connection's loop
        cls._set_counter(41)
        assert cls._get_counter() == 41 and impl.counter == 41

        moved = orb.string_to_object(front.server.corbaloc(b"Moved"), ECHO)
        before = moved.ref.ior
        assert moved.echo_long(5) == 5 and moved.ref.ior == before
        gone = orb.string_to_object(front.server.corbaloc(b"Gone"), ECHO)
        assert gone.echo_long(6) == 6 and gone.ref.ior == target.server.ior(target.key)
        loop = orb.string_to_object(front.server.corbaloc(b"Loop"), ECHO)
        with pytest.raises(TRANSIENT):
            loop.echo_long(1)


def test_blocking_timeout_sends_cancel_and_drops_the_late_reply():
    with SyncORB() as orb:
        server = orb.serve(ClassServant(ECHO, Implementation()), "Cls", threads=True)
        hurried = orb.string_to_object(server.ior, ECHO, timeout=0.1)
        started = time.monotonic()
        with pytest.raises(TIMEOUT) as info:
            hurried.echo_long(13)              # the servant takes 0.5 s
        assert time.monotonic() - started < 0.45
        assert info.value.completed == CompletionStatus.COMPLETED_MAYBE
        (connection,) = orb.blocking._connections.values()
        patient = hurried.with_options(timeout=5)
        assert patient.echo_long(2) == 2       # after the late reply to 13, dropped
        assert orb.blocking._connections == {next(iter(orb.blocking._connections)):
                                             connection} and not connection.closed


# ---------------------------------------------------------------------------------
# Hand-made servers
def read_raw_message(sock):
    """The bytes of the next message ``sock`` receives; None at the end of the stream."""
    head = b""
    while len(head) < HEADER_SIZE:
        chunk = sock.recv(HEADER_SIZE - len(head))
        if not chunk:
            return None
        head += chunk
    body = b""
    size = parse_header(head).size
    while len(body) < size:
        chunk = sock.recv(size - len(body))
        if not chunk:
            return None
        body += chunk
    return head + body


def read_message(sock):
    data = read_raw_message(sock)
    return None if data is None else decode_message(data)[0]


class RawServer:
    """Accepts connections on 127.0.0.1 and runs ``handle(index, sock)`` for each in a
    thread; records the messages handlers read in ``seen``."""

    def __init__(self, handle):
        self.handle = handle
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.seen = []
        self.connections = 0
        self.threads = []
        self.acceptor = threading.Thread(target=self._accept, daemon=True)
        self.acceptor.start()

    def _accept(self):
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            index = self.connections
            self.connections += 1
            thread = threading.Thread(target=self._run, args=(index, sock), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _run(self, index, sock):
        with sock:
            try:
                self.handle(self, index, sock)
            except OSError:
                pass

    def read(self, sock):
        msg = read_message(sock)
        if msg is not None:
            self.seen.append(msg)
        return msg

    def corbaloc(self):
        return f"corbaloc:iiop:1.2@127.0.0.1:{self.port}/Echo"

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.acceptor.join(5)
        for thread in self.threads:
            thread.join(5)


def reply_to(request, body=b"", status=ReplyStatus.NO_EXCEPTION):
    return encode_message(Reply(version=request.version, little=request.little,
                                request_id=request.request_id, reply_status=status,
                                body=body))


def long_body(value):
    return value.to_bytes(4, "big", signed=True)


def echo_long_after(first_connection):
    """A handler: the first connection is given to ``first_connection(server, sock)``, the
    later ones get their echo_long answered."""
    def handle(server, index, sock):
        request = server.read(sock)
        if index == 0:
            first_connection(server, sock)
            return
        sock.sendall(reply_to(request, long_body(request.body_reader().read_long())))
        server.read(sock)
    return handle


def close_connection(server, sock):
    sock.sendall(encode_message(CloseConnection(version=(1, 2))))
    server.read(sock)          # until the client closes


def test_blocking_client_peer_closes_mid_call():
    # the request is read, the connection closed
    with RawServer(echo_long_after(lambda server, sock: None)) as raw, SyncORB() as orb:
        echo = orb.string_to_object(raw.corbaloc(), ECHO)
        with pytest.raises(COMM_FAILURE) as info:
            echo.echo_long(1)
        assert info.value.completed == CompletionStatus.COMPLETED_MAYBE
        assert echo.echo_long(2) == 2          # on a new connection
        assert raw.connections == 2
        orb.blocking.close()


def test_blocking_client_retries_after_close_connection_before_the_reply():
    with RawServer(echo_long_after(close_connection)) as raw, SyncORB() as orb:
        echo = orb.string_to_object(raw.corbaloc(), ECHO)
        assert echo.echo_long(3) == 3
        assert raw.connections == 2
        assert [type(m) for m in raw.seen] == [Request, Request]
        orb.blocking.close()


def test_blocking_client_closes_after_close_connection_three_times():
    def handle(server, index, sock):
        server.read(sock)
        close_connection(server, sock)
    with RawServer(handle) as raw, SyncORB() as orb:
        echo = orb.string_to_object(raw.corbaloc(), ECHO)
        with pytest.raises(TRANSIENT) as info:
            echo.echo_long(3)
        assert info.value.completed == CompletionStatus.COMPLETED_NO
        assert raw.connections == 3
        orb.blocking.close()


def test_blocking_client_timeout_against_a_server_that_never_replies():
    def handle(server, index, sock):
        while server.read(sock) is not None:
            pass
    with RawServer(handle) as raw, SyncORB(timeout=0.2) as orb:
        echo = orb.string_to_object(raw.corbaloc(), ECHO)
        with pytest.raises(TIMEOUT):
            echo.echo_long(4)
        orb.blocking.close()
    cancel = raw.seen[-1]
    assert isinstance(cancel, CancelRequest) and cancel.request_id == raw.seen[0].request_id


def test_blocking_client_malformed_replies_are_typed_errors_with_offsets():
    def handle(server, index, sock):
        request = server.read(sock)
        if index == 0:       # not GIOP: a bad magic
            sock.sendall(b"GIOX" + reply_to(request, long_body(1))[4:])
        else:                # a Reply whose body is too short for the long it returns
            sock.sendall(reply_to(request, b"\x00\x01"))
        server.read(sock)
    with RawServer(handle) as raw, SyncORB() as orb:
        echo = orb.string_to_object(raw.corbaloc(), ECHO)
        with pytest.raises(COMM_FAILURE) as info:
            echo.echo_long(5)
        cause = info.value.__cause__
        assert isinstance(cause, PycdrError) and cause.offset == 0
        with pytest.raises(MARSHAL) as info:
            echo.echo_long(6)
        assert info.value.completed == CompletionStatus.COMPLETED_YES
        cause = info.value.__cause__
        assert isinstance(cause, PycdrError) and cause.offset is not None
        orb.blocking.close()


def test_blocking_client_refuses_a_reply_over_its_message_size_limit():
    def handle(server, index, sock):
        request = server.read(sock)
        sock.sendall(encode_header((1, 2), False, MsgType.Reply, 3 << 30) +
                     reply_to(request)[HEADER_SIZE:])
        server.read(sock)
    with RawServer(handle) as raw, SyncORB(timeout=5) as orb:
        echo = orb.string_to_object(raw.corbaloc(), ECHO)
        with pytest.raises(COMM_FAILURE):
            echo.echo_long(1)
        assert not orb.blocking._connections       # dropped at the header


# ---------------------------------------------------------------------------------
# The threaded server against bad input
def connect(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    return sock


def test_threaded_server_answers_garbage_and_oversized_claims_with_message_error():
    server = ThreadedServer(limits=ServerLimits(max_message_size=1 << 20,
                                                max_incomplete_bytes=1 << 20))
    server.activate(EchoServant(ECHO), "Echo")
    server.open()
    try:
        for bad in (b"NOT GIOP AT ALL!",
                    encode_header((1, 2), False, MsgType.Request, 3 << 30)):
            with connect(server.port) as sock:
                sock.sendall(bad)
                answer = read_message(sock)
                assert answer.msg_type == MsgType.MessageError
                assert sock.recv(1) == b""           # then closed
    finally:
        server.close()
    assert not server.connections


def test_threaded_server_idle_timeout_limit_and_stop_send_close_connection():
    server = ThreadedServer(limits=ServerLimits(idle_timeout=0.3,
                                                incomplete_message_timeout=0.3))
    server.activate(EchoServant(ECHO), "Echo")
    server.open()
    try:
        with connect(server.port) as idle:
            assert read_message(idle).msg_type == MsgType.CloseConnection
            assert idle.recv(1) == b""
        with connect(server.port) as partial:
            partial.sendall(encode_header((1, 2), False, MsgType.Request, 100) + b"\0" * 10)
            assert partial.recv(1) == b""            # incomplete too long: closed
    finally:
        server.close()
    # The connection limit on a server of its own, whose idle timeout no loaded machine
    # reaches while the test runs (on the one above, 0.3 s: once the first two connections
    # idled out before the third came, and the third was served).
    server = ThreadedServer(limits=ServerLimits(idle_timeout=60, max_connections=2))
    server.activate(EchoServant(ECHO), "Echo")
    server.open()
    try:
        first, second = connect(server.port), connect(server.port)
        for sock in (first, second):                # both served before the third comes
            sock.sendall(encode_message(LocateRequest(version=(1, 2), little=False,
                                                      request_id=1, target=KeyAddr(b"Echo"))))
            assert read_message(sock).msg_type == MsgType.LocateReply
        with connect(server.port) as third:         # over max_connections
            assert third.recv(1) == b""
        server.close()
        for sock in (first, second):
            assert read_message(sock).msg_type == MsgType.CloseConnection
            sock.close()
    finally:
        server.close()


def test_threaded_server_refuses_tls():
    with pytest.raises(ValueError, match="plain IIOP"):
        ThreadedServer(tls=object())


# ---------------------------------------------------------------------------------
# octet_views: bulk octets handed out as views of the message, not copies
class OctetViewsServant(EchoServant):
    octet_views = True

    def __init__(self, interface):
        super().__init__(interface)
        self.got = []
        echo = self.handler

        def handle(name, args):
            self.got.append(args)
            return echo(name, args)
        self.handler = handle


@pytest.mark.parametrize("threads", [False, True], ids=["asyncio-server", "threaded-server"])
def test_octet_views_to_a_servant_and_back_to_the_caller(threads):
    data = big_octets(1 << 20)
    with SyncORB(octet_views=True) as orb:
        servant = OctetViewsServant(ECHO)
        server = orb.serve(servant, "Echo", threads=threads)
        echo = orb.string_to_object(server.ior, ECHO)
        got = echo.echo_octets(data)
        assert isinstance(got, memoryview) and got == data
        (received,) = servant.got[-1]
        assert isinstance(received, memoryview) and received.nbytes == len(data)
        # Only a sequence<octet> of its own is a view: other values are as ever.
        assert echo.echo_string("x") == "x" and echo.echo_long(3) == 3
    with SyncORB() as orb:          # the default mapping: bytes
        server = orb.serve(OctetViewsServant(ECHO), "Echo", threads=threads)
        assert type(orb.string_to_object(server.ior, ECHO).echo_octets(b"ab")) is bytes


def test_octet_view_reads_are_checked_as_copies_are():
    from pycdr.codec.cdr import CDRReader
    from pycdr.errors import BoundExceededError, TruncatedError
    body = (5).to_bytes(4, "big") + b"hello" + b"\0\0\0"
    r = CDRReader(body)
    view = r.read_octet_view()
    assert view == b"hello" and r.pos == 9
    with pytest.raises(BoundExceededError) as info:
        CDRReader(body).read_octet_view(4)
    assert info.value.offset == 0
    with pytest.raises(TruncatedError) as info:
        CDRReader((50).to_bytes(4, "big") + b"short").read_octet_view()
    assert info.value.offset is not None


def test_threaded_server_pauses_the_gc_only_while_a_synchronous_method_runs():
    # As the asyncio server (test_orb_roundtrip): a method that cannot yield runs with the
    # cyclic GC paused, which is given back as it was; a coroutine method runs with it as is.
    was = gc.isenabled()
    watcher = GcWatcher()
    try:
        with SyncORB() as orb:
            server = orb.serve(ClassServant(ECHO, watcher), "Gc", threads=True)
            ref = orb.string_to_object(server.ior, ECHO)
            for enabled in (True, False):
                (gc.enable if enabled else gc.disable)()
                watcher.seen.clear()
                assert ref.echo_short(3) == 3
                assert gc.isenabled() == enabled
                assert ref.echo_long(4) == 4
                assert gc.isenabled() == enabled
                assert watcher.seen == [("sync", False), ("async", enabled)]
    finally:
        (gc.enable if was else gc.disable)()
