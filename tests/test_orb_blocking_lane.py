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
from pycdr.giop.sysexc import BAD_OPERATION, COMM_FAILURE, TIMEOUT, CompletionStatus
from pycdr.orb import blocking
from pycdr.orb.sync import SyncORB
from test_orb_threads import RawServer

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
