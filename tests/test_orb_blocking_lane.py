"""The blocking client's one-call lane (issue 21: ``_speedups.exchange`` sends a Request
and reads its Reply in one C call) against a scripted raw-socket server on 127.0.0.1.

Whatever the server answers, the call ends as it ends on the general path: each case runs
with the C path on (the lane taken, checked) and off (``impl``), and must give the same
value or exception. The usual Reply is taken whole in C, even when it comes in pieces;
everything else (exceptions, fragments, several messages in one read, a bad header, the
end of the stream, silence, a Reply larger than the lane's buffer) goes back to the
general path as the bytes read, which frames and judges them."""

import socket
import struct
import time

import pytest

from orb_echo_values import ECHO_INTERFACE, load_echo_module
from pycdr.errors import PycdrError
from pycdr.giop.messages import (CancelRequest, CloseConnection, LocateReply, Reply,
                                 ReplyStatus, Request, decode_message, encode_fragments,
                                 encode_message)
from pycdr.giop.sysexc import (BAD_OPERATION, BAD_PARAM, COMM_FAILURE, TIMEOUT,
                               CompletionStatus)
from pycdr.orb import blocking
from pycdr.orb.sync import SyncORB
from test_orb_threads import RawServer, read_raw_message

ECHO = load_echo_module().interfaces[ECHO_INTERFACE]


def long_body(value, little):
    return struct.pack("<i" if little else ">i", value)


def octets_body(data, little):
    return struct.pack("<I" if little else ">I", len(data)) + data


def reply(request, body, status=ReplyStatus.NO_EXCEPTION, **fields):
    return encode_message(Reply(version=request.version, little=request.little,
                                request_id=request.request_id, reply_status=status,
                                body=body, **fields))


def answer_long(request):
    """The Reply to echo_long(v): v, read from the Request's body."""
    (value,) = struct.unpack("<i" if request.little else ">i", request.body[:4])
    return reply(request, long_body(value, request.little))


def scripted(script):
    """A RawServer handler: the n-th Request it reads (over all its connections) is
    answered by ``script[n](request, sock)``; those after the script as echo_long."""
    steps = list(script)

    def handle(server, index, sock):
        while True:
            msg = server.read(sock)
            if msg is None:
                return
            if not isinstance(msg, Request):
                continue
            step = steps.pop(0) if steps else whole
            if step(msg, sock) == "close":
                return
    return handle


# --- what the server does with the call under test --------------------------------------
def whole(request, sock):
    sock.sendall(answer_long(request))


def in_pieces(request, sock):
    data = answer_long(request)
    for start in (0, 5, 14):
        sock.sendall(data[start:start + {0: 5, 5: 9, 14: len(data)}[start]])
        time.sleep(0.02)


def with_a_stray_locate_reply(request, sock):
    stray = encode_message(LocateReply(version=request.version, little=request.little,
                                       request_id=999_999, locate_status=1))
    sock.sendall(answer_long(request) + stray)


def fragmented(request, sock):
    data = answer_long(request)
    msg = decode_message(data)[0]
    sock.sendall(b"".join(encode_fragments(msg, data, 30)))


def wrong_id_first(request, sock):
    stale = Request(version=request.version, little=request.little,
                    request_id=request.request_id + 1000)
    sock.sendall(reply(stale, long_body(-1, request.little)) + answer_long(request))


def system_exception(request, sock):
    sock.sendall(reply(request, b"", ReplyStatus.SYSTEM_EXCEPTION,
                       system_exception=BAD_OPERATION(7, CompletionStatus.COMPLETED_NO)))


def closes(request, sock):
    return "close"


def close_connection(request, sock):
    sock.sendall(encode_message(CloseConnection(version=request.version,
                                                little=request.little)))
    return "close"


def garbage(request, sock):
    sock.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")


def silent(request, sock):
    pass


def bad_body(request, sock):
    # NO_EXCEPTION, but the body ends inside the long: MARSHAL, as the general path says
    sock.sendall(reply(request, b"\0\0"))


CASES = {
    "whole": (whole, 5, None),
    "in-pieces": (in_pieces, 5, None),
    "with-a-stray-locate-reply": (with_a_stray_locate_reply, 5, None),
    "fragmented": (fragmented, 5, None),
    "wrong-id-first": (wrong_id_first, 5, None),
    "system-exception": (system_exception, None, BAD_OPERATION),
    "closes": (closes, None, COMM_FAILURE),
    "close-connection": (close_connection, 5, None),     # sent again, on a new connection
    "garbage": (garbage, None, COMM_FAILURE),
    "silent": (silent, None, TIMEOUT),
    "bad-body": (bad_body, None, Exception),
}


@pytest.fixture
def lane_calls(monkeypatch):
    """How many calls went through _speedups.exchange (a list that grows)."""
    calls = []
    if blocking.exchange is not None:
        real = blocking.exchange

        def counted(*args):
            out = real(*args)
            if out is not None:         # (None: the C path is off, nothing was sent)
                calls.append(args[3])
            return out
        monkeypatch.setattr(blocking, "exchange", counted)
    return calls


@pytest.mark.parametrize("case", list(CASES))
def test_whatever_the_server_answers_the_call_ends_as_on_the_general_path(case, impl,
                                                                          lane_calls):
    step, expected, raised = CASES[case]
    # The first call carries the CodeSets context (the general path); the second is the
    # one under test; the third shows the client goes on as it should.
    with RawServer(scripted([whole, step])) as server:
        with SyncORB(timeout=0.5) as orb:
            echo = orb.string_to_object(server.corbaloc(), ECHO)
            assert echo.echo_long(4) == 4
            if raised is None:
                assert echo.echo_long(5) == expected
            else:
                with pytest.raises(raised) as caught:
                    echo.echo_long(5)
                if case == "garbage":
                    # the typed error of the general path's framing, with its offset
                    assert isinstance(caught.value.__cause__, PycdrError)
            assert echo.echo_long(6) == 6
    assert bool(lane_calls) == (impl == "c"), lane_calls
    if case == "silent":
        assert any(isinstance(m, CancelRequest) for m in server.seen)
    # (after a TIMEOUT with nothing of a Reply received, the CancelRequest goes on the
    # same connection, which stays)
    if case in ("closes", "close-connection", "garbage"):
        assert server.connections == 2
    else:
        assert server.connections == 1


def test_the_usual_reply_is_taken_whole_in_c_even_in_pieces(impl, lane_calls):
    with RawServer(scripted([whole, in_pieces, whole])) as server:
        with SyncORB(timeout=5) as orb:
            echo = orb.string_to_object(server.corbaloc(), ECHO)
            assert [echo.echo_long(i) for i in range(4)] == [0, 1, 2, 3]
            conn = next(iter(orb.blocking._connections.values()))
            # Every Reply's bytes counted in the stream's offsets, taken in C or not.
            assert conn.giop.stream_offset == sum(
                len(answer_long(m)) for m in server.seen if isinstance(m, Request))
    assert len(lane_calls) == (3 if impl == "c" else 0)


def test_a_reply_larger_than_the_lane_buffer_goes_through_the_general_path(impl,
                                                                          lane_calls):
    big = bytes(range(256)) * (blocking.CLIENT_SCRATCH // 256 + 100)

    def answer_big(request, sock):
        sock.sendall(reply(request, octets_body(big, request.little)))
    with RawServer(scripted([whole, answer_big])) as server:
        with SyncORB(timeout=5) as orb:
            echo = orb.string_to_object(server.corbaloc(), ECHO)
            assert echo.echo_long(1) == 1
            assert echo.echo_octets(b"x") == big
            assert echo.echo_long(2) == 2
    assert len(lane_calls) == (2 if impl == "c" else 0)


def test_a_reply_over_the_size_limit_is_refused_at_its_header(impl, lane_calls):
    def answer_big(request, sock):
        sock.sendall(reply(request, octets_body(bytes(5000), request.little)))
    with RawServer(scripted([whole, answer_big])) as server:
        with SyncORB(timeout=5, max_message_size=4096) as orb:
            echo = orb.string_to_object(server.corbaloc(), ECHO)
            assert echo.echo_long(1) == 1
            with pytest.raises(COMM_FAILURE):
                echo.echo_octets(b"x")


def test_a_send_that_fails_is_comm_failure(impl, lane_calls):
    with RawServer(scripted([whole])) as server:
        with SyncORB(timeout=5) as orb:
            echo = orb.string_to_object(server.corbaloc(), ECHO)
            assert echo.echo_long(1) == 1
            conn = next(iter(orb.blocking._connections.values()))
            # The socket's sending side shut: the next send fails (EPIPE), whichever path.
            conn.sock.shutdown(socket.SHUT_WR)
            with pytest.raises(COMM_FAILURE) as caught:
                echo.echo_long(2)
            assert isinstance(caught.value.__cause__, OSError)
            assert conn.closed


# --- oneway calls and large octet tails (send_request; exchange's tail) ------------------
BULK = bytes(range(256)) * 160             # 40 KiB: over TAIL_MIN, sent as a tail
HUGE = bytes(range(256)) * (3 << 12)       # 3 MiB: more than a socket buffer takes at once


def recording_raw(script=()):
    """A RawServer handler recording every message's bytes (server.raw) and answering the
    twoway ones: ``script[n](request, sock)`` for the n-th, echo_long's Reply after."""
    steps = list(script)

    def handle(server, index, sock):
        while True:
            data = read_raw_message(sock)
            if data is None:
                return
            server.raw.append(data)
            msg = decode_message(data)[0]
            if isinstance(msg, Request) and msg.response_expected:
                step = steps.pop(0) if steps else whole
                if step(msg, sock) == "close":
                    return
    return handle


def echo_octets_reply(request, sock):
    sock.sendall(reply(request, octets_body(request.body[4:], request.little)))


@pytest.fixture
def counted_lanes(monkeypatch):
    """{"send_request": [request ids], "tails": [tail sizes]}: the oneway calls sent in
    one C call, and the lanes' calls (either kind) whose last argument went as a tail."""
    seen = {"send_request": [], "tails": []}
    if blocking.send_request is not None:
        real_send, real_exchange = blocking.send_request, blocking.exchange

        def send_request(*args):
            out = real_send(*args)
            if out is not None:
                seen["send_request"].append(args[3])
                if args[7] is not None:
                    seen["tails"].append(len(args[7]))
            return out

        def exchange(*args):
            out = real_exchange(*args)
            if out is not None and len(args) >= 11 and args[10] is not None:
                seen["tails"].append(len(args[10]))
            return out
        monkeypatch.setattr(blocking, "send_request", send_request)
        monkeypatch.setattr(blocking, "exchange", exchange)
    return seen


def oneway_calls(echo, orb):
    """The calls whose bytes are compared: oneway ones (small, a tail, a tail larger than
    the socket's buffers: partial sends), twoway ones with a tail, and a mix."""
    echo.note("first")
    echo.note("é" * 100)
    assert echo.echo_octets(BULK) == BULK
    echo.send_oneway("echo_octets", BULK)
    echo.send_oneway("echo_octets", HUGE)
    echo.send_oneway("echo_octets", b"short")
    assert echo.echo_long(7) == 7
    echo.note("last")
    assert echo.echo_octets(HUGE) == HUGE


def test_oneway_and_tail_calls_send_the_general_paths_bytes(monkeypatch, counted_lanes):
    """The same calls with the C path on and off (pure: off only) put the same bytes on
    the wire, message for message; with it on, the oneway calls and tails took the lanes.
    (Off, the lanes are gone too: a lane that finds the C path off has drawn a request id
    the general path then does not use, and the ids would differ.)"""
    from pycdr.codec import _cmarshal, marshal
    c_path = marshal.IMPLEMENTATION == "c"
    wires = {}
    lanes = blocking.exchange, blocking.send_request
    for enabled in ((True, False) if c_path else (False,)):
        monkeypatch.setattr(_cmarshal, "enabled", enabled)
        if not enabled:
            monkeypatch.setattr(blocking, "exchange", None)
            monkeypatch.setattr(blocking, "send_request", None)
        counted_lanes["send_request"].clear()
        counted_lanes["tails"].clear()
        script = [whole, echo_octets_reply, whole, echo_octets_reply]
        server = RawServer(recording_raw(script))
        server.raw = []
        with server:
            with SyncORB(timeout=10) as orb:
                echo = orb.string_to_object(server.corbaloc(), ECHO)
                assert echo.echo_long(1) == 1          # (the CodeSets context)
                oneway_calls(echo, orb)
        wires[enabled] = server.raw
        if enabled and lanes[1] is not None:
            # note x3 and the three oneway echo_octets; the tails: BULK twice, HUGE twice
            assert len(counted_lanes["send_request"]) == 6, counted_lanes
            assert sorted(counted_lanes["tails"]) == [len(BULK)] * 2 + [len(HUGE)] * 2
        else:
            assert counted_lanes == {"send_request": [], "tails": []}
    if c_path:
        assert len(wires[True]) == len(wires[False]) == 10
        for sent_c, sent_python in zip(wires[True], wires[False]):
            assert sent_c == sent_python


def test_a_oneway_argument_the_plans_refuse_is_bad_param_as_on_the_general_path(
        impl, counted_lanes):
    server = RawServer(recording_raw())
    server.raw = []
    with server:
        with SyncORB(timeout=5) as orb:
            echo = orb.string_to_object(server.corbaloc(), ECHO)
            assert echo.echo_long(1) == 1
            with pytest.raises(BAD_PARAM):
                echo.note(12)                  # (not a string: nothing sent)
            echo.note("after")
            assert echo.echo_long(2) == 2
    # The CodeSets call, the note and the last call: nothing of the refused one.
    assert len(server.raw) == 3
    assert len(counted_lanes["send_request"]) == (1 if impl == "c" else 0)


def test_a_oneway_send_that_fails_is_comm_failure(impl, counted_lanes):
    with RawServer(scripted([whole])) as server:
        with SyncORB(timeout=5) as orb:
            echo = orb.string_to_object(server.corbaloc(), ECHO)
            assert echo.echo_long(1) == 1
            conn = next(iter(orb.blocking._connections.values()))
            conn.sock.shutdown(socket.SHUT_WR)
            with pytest.raises(COMM_FAILURE) as caught:
                echo.note("x")
            assert isinstance(caught.value.__cause__, OSError)
            assert conn.closed


def test_a_oneway_tail_the_peer_does_not_read_ends_at_the_deadline(impl):
    """A peer that stops reading: the send of a large tail waits up to the call's
    deadline (SO_SNDTIMEO, EAGAIN), then COMM_FAILURE from BlockingIOError, both paths."""
    def handle(server, index, sock):
        data = read_raw_message(sock)          # the first call: answered
        if data is None:
            return
        sock.sendall(answer_long(decode_message(data)[0]))
        time.sleep(3)                          # then reads nothing
    with RawServer(handle) as server:
        with SyncORB(timeout=0.5) as orb:
            echo = orb.string_to_object(server.corbaloc(), ECHO)
            assert echo.echo_long(1) == 1
            started = time.monotonic()
            with pytest.raises(COMM_FAILURE) as caught:
                for _ in range(8):
                    blocking.invoke(orb.blocking, echo.ref, "echo_octets", (HUGE,),
                                    timeout=0.5, oneway=True)
            assert isinstance(caught.value.__cause__, BlockingIOError)
            assert time.monotonic() - started < 3


def test_a_lanes_tail_is_what_arguments_tail_gives():
    """_Lane.tail (the bound looked up once) against arguments_tail, for the last
    parameter unbounded, bounded, not octets, out, and values around TAIL_MIN."""
    from types import SimpleNamespace
    from pycdr.codec import tc
    from pycdr.orb.invocation import TAIL_MIN, arguments_tail, dynamic_operation
    template = SimpleNamespace(prefix=b"", request_id_at=0)
    ops = [dynamic_operation("a", [("x", "in", tc.sequence(tc.octet))]),
           dynamic_operation("b", [("x", "in", tc.long),
                                   ("y", "in", tc.sequence(tc.octet, TAIL_MIN + 10))]),
           dynamic_operation("c", [("x", "in", tc.sequence(tc.char))]),
           dynamic_operation("d", [("x", "in", tc.sequence(tc.octet)),
                                   ("y", "out", tc.long)]),
           dynamic_operation("e", [])]
    values = [b"", bytes(TAIL_MIN - 1), bytes(TAIL_MIN), bytes(TAIL_MIN + 10),
              bytes(TAIL_MIN + 11), bytearray(TAIL_MIN), "x" * TAIL_MIN]
    for op in ops:
        lane = blocking._Lane(op, template)
        for value in values:
            args = tuple([1] * (len(op.in_params) - 1) + [value]) if op.in_params else ()
            want = arguments_tail(op, args)
            got = lane.tail(args) if lane.tail_bound is not None else None
            assert got is want, (op.name, len(value))
