"""The blocking client's short way on an established lane (issue 21): once a call of an
operation has left a lane on its connection, SyncObjectRef's operation function calls the
connection's lane_call (lane_send when oneway) directly, with no BlockingInvocation, route
lookup or conn.call between (blocking.operation_caller).

What is checked: how many Python functions a warm call runs (the point of the short way;
sys.setprofile counts them, in the calling thread only), that every condition the short
way does not handle takes the whole path or goes on from where the lane left it (the first
call, no lane, a Reply that is not the usual one, a closed connection, a LOCATION_FORWARD,
the C path switched off), and that the bytes on the wire -- request ids included -- are
those of the whole path (blocking.invoke, which never takes the short way)."""

import collections
import sys
import threading

import pytest

from orb_echo_values import ECHO_INTERFACE, load_echo_module
from pycdr.codec import marshal
from pycdr.giop.messages import CancelRequest, Request, decode_message
from pycdr.giop.sysexc import OMG_VMCID, CompletionStatus
from pycdr.orb import EchoServant, blocking
from pycdr.orb.sync import SyncORB, _call_in_loop
from test_orb_blocking_lane import (BULK, CASES, echo_octets_reply,
                                    scripted, whole,
                                    with_a_stray_locate_reply)
from test_orb_threads import RawServer, read_raw_message

ECHO = load_echo_module().interfaces[ECHO_INTERFACE]
C_LANES = marshal.IMPLEMENTATION == "c" and blocking.exchange is not None
needs_lanes = pytest.mark.skipif(not C_LANES, reason="no C lanes (PYCDR_PURE=1 or not built)")

# The Python functions a warm call runs: the operation function, the connection's
# lane_call, GiopConnection.next_request_id and took_whole (twoway); before the short way
# it was ten (call_operation, BlockingInvocation.__init__, run, route, call, idle,
# _exchange, next_request_id, _limit_waits, took_whole) and eight oneway.
WARM_TWOWAY = 4
WARM_ONEWAY = 3


def python_calls(function, *args, **kwargs):
    """(what function(*args) gave or raised, a Counter of the Python functions it ran in
    this thread, by name)."""
    calls = collections.Counter()

    def profile(frame, event, arg):
        if event == "call":
            calls[frame.f_code.co_name] += 1
    sys.setprofile(profile)
    try:
        outcome = function(*args, **kwargs)
    except Exception as e:     # (returned: the caller checks it)
        outcome = e
    finally:
        sys.setprofile(None)
    return outcome, calls


def by_operation(request, sock):
    """echo_long's or echo_octets' Reply, as the Request asks."""
    if request.operation == "echo_octets":
        return echo_octets_reply(request, sock)
    return whole(request, sock)


def raw_server(script=()):
    """A RawServer recording every message's bytes (server.raw) and answering the n-th
    twoway Request by ``script[n]``, those after it by_operation."""
    steps = list(script)

    def handle(server, index, sock):
        while True:
            data = read_raw_message(sock)
            if data is None:
                return
            server.raw.append(data)
            msg = decode_message(data)[0]
            if isinstance(msg, Request) and msg.response_expected:
                step = steps.pop(0) if steps else by_operation
                if step(msg, sock) == "close":
                    return
    server = RawServer(handle)
    server.raw = []
    return server


def the_connection(orb):
    (conn,) = [c for c in orb.blocking._connections.values() if not c.closed]
    return conn


@needs_lanes
def test_a_warm_call_runs_few_python_functions():
    with raw_server() as server, SyncORB(timeout=5) as orb:
        echo = orb.string_to_object(server.corbaloc(), ECHO)
        # First calls: the whole path (the CodeSets context; then the lanes made).
        for i in range(3):
            assert echo.echo_long(i) == i
            echo.note("warm")
        value, calls = python_calls(echo.echo_long, 7)
        assert value == 7
        assert calls["lane_call"] == 1 and sum(calls.values()) <= WARM_TWOWAY, calls
        value, calls = python_calls(echo.note, "y")
        assert value is None
        assert calls["lane_send"] == 1 and sum(calls.values()) <= WARM_ONEWAY, calls
        # A tail (a large trailing octet sequence) and a per-call timeout: the same.
        assert echo.echo_octets(BULK) == BULK
        value, calls = python_calls(echo.echo_octets, BULK)
        assert value == BULK
        assert sum(calls.values()) <= WARM_TWOWAY, calls
        # (no timeout: the first such call resets the kernel's limit, _limit_waits)
        assert echo.echo_long(8, timeout=None) == 8
        assert the_connection(orb)._wait_limit is None
        value, calls = python_calls(echo.echo_long, 9, timeout=None)
        assert value == 9 and sum(calls.values()) <= WARM_TWOWAY, calls
        # (back to 5 s: the limit set again)
        assert echo.echo_long(10) == 10
        assert 4 < the_connection(orb)._wait_limit <= 5


@needs_lanes
def test_a_warm_invoke_runs_few_python_functions():
    """SyncObjectRef.invoke keeps an operation function per operation: one Python
    function more than echo.echo_long(...) (before: twelve)."""
    with raw_server() as server, SyncORB(timeout=5) as orb:
        echo = orb.string_to_object(server.corbaloc(), ECHO)
        op = echo.ref.operation("echo_long")
        for i in range(3):
            assert echo.invoke(op, i) == i
            assert echo.invoke("echo_long", i) == i
            echo.invoke("note", "warm")
        for how in (op, "echo_long"):
            assert echo.invoke(how, 6) == 6     # (the limit back from None to 5 s)
            value, calls = python_calls(echo.invoke, how, 7)
            assert value == 7
            assert calls["lane_call"] == 1 and sum(calls.values()) <= WARM_TWOWAY + 1, calls
            value, calls = python_calls(echo.invoke, how, 8, timeout=None)
            assert value == 8 and calls["lane_call"] == 1, calls
        echo.invoke("note", "x")        # (the kernel's limit back from None to 5 s)
        value, calls = python_calls(echo.invoke, "note", "y")
        assert calls["lane_send"] == 1 and sum(calls.values()) <= WARM_ONEWAY + 1, calls


def test_invoke_keeps_a_bounded_number_of_operation_functions():
    """Operations made per call (DII) each get a function, the whole path for each
    (no lane learnt before its first call); the functions kept stay bounded."""
    from pycdr.codec import tc
    from pycdr.orb import sync
    from pycdr.orb.invocation import dynamic_operation
    with raw_server() as server, SyncORB(timeout=5) as orb:
        echo = orb.string_to_object(server.corbaloc(), ECHO)
        for i in range(sync._MAX_CALLERS + 20):
            op = dynamic_operation("echo_long", [("v", "in", tc.long)], tc.long)
            assert echo.invoke(op, i) == i
            assert len(echo._callers) <= sync._MAX_CALLERS
        with pytest.raises(AttributeError):
            echo.invoke("no_such_operation", 1)


def test_the_first_call_takes_the_whole_path(impl):
    with raw_server() as server, SyncORB(timeout=5) as orb:
        echo = orb.string_to_object(server.corbaloc(), ECHO)
        for i in range(2):      # (the CodeSets call, then the one that makes the lane)
            value, calls = python_calls(echo.echo_long, i)
            assert value == i
            assert calls["run"] == 1 and calls["lane_call"] == 0, calls
        value, calls = python_calls(echo.echo_long, 2)
        assert value == 2
        if not C_LANES:         # (PYCDR_PURE=1: no lanes, the whole path every time)
            assert calls["run"] == 1 and calls["lane_call"] == 0, calls
            return
        assert calls["run"] == 0 and calls["lane_call"] == 1, calls
        # The C path switched off (impl "python"): exchange sends nothing and the lane
        # hands the call to the general path (encode_request), as call does.
        assert calls["encode_request"] == (0 if impl == "c" else 1), calls


@pytest.mark.parametrize("options", [{"octet_views": True}, {"fragment_size": 64}],
                         ids=["octet-views", "fragments"])
def test_without_a_lane_every_call_takes_the_whole_path(options):
    """No plain-socket lane (octet views) or no lane for the operation (fragments): the
    short way is never taken.  (TLS has no lane either: conn._fd stays None.)"""
    with SyncORB(timeout=5, **options) as orb:
        server = orb.serve(EchoServant(ECHO), "Echo", threads=True)
        echo = orb.string_to_object(server.corbaloc, ECHO)
        for i in range(4):
            value, calls = python_calls(echo.echo_long, i)
            assert value == i
            assert calls["run"] == 1 and calls["lane_call"] == 0, calls
            value, calls = python_calls(echo.note, "x")
            assert calls["run"] == 1 and calls["lane_send"] == 0, calls


@pytest.fixture
def lane_outcomes(monkeypatch):
    """[(first argument, what lane_call gave or raised)] for each lane_call."""
    seen = []
    real = blocking.BlockingConnection.lane_call

    def lane_call(self, lane, args, deadline):
        try:
            out = real(self, lane, args, deadline)
        except Exception as e:
            seen.append((args[0], e))
            raise
        seen.append((args[0], out))
        return out
    monkeypatch.setattr(blocking.BlockingConnection, "lane_call", lane_call)
    return seen


@pytest.mark.parametrize("case", list(CASES))
def test_whatever_the_server_answers_a_warm_call_ends_as_on_the_whole_path(case, impl,
                                                                           lane_outcomes):
    """test_orb_blocking_lane's cases, with the call under test made on the short way:
    the same value or typed exception (minor code, completion status), the same
    connections, the CancelRequest after a TIMEOUT."""
    step, expected, raised = CASES[case]
    with RawServer(scripted([whole, whole, step])) as server:
        with SyncORB(timeout=0.5) as orb:
            echo = orb.string_to_object(server.corbaloc(), ECHO)
            assert echo.echo_long(3) == 3
            assert echo.echo_long(4) == 4
            if raised is None:
                assert echo.echo_long(5) == expected
            else:
                with pytest.raises(raised) as caught:
                    echo.echo_long(5)
                if case in ("closes", "garbage", "silent"):     # COMM_FAILURE, TIMEOUT
                    assert caught.value.minor == OMG_VMCID | 0
                    assert caught.value.completed == CompletionStatus.COMPLETED_MAYBE
                elif case == "system-exception":               # the server's own
                    assert caught.value.minor == 7
                    assert caught.value.completed == CompletionStatus.COMPLETED_NO
            for i in (6, 7, 8):
                assert echo.echo_long(i) == i
    taken = [arg for arg, out in lane_outcomes if out is not blocking._NOT_TAKEN]
    # The call under test went in by the short way (with the C path off, impl "python",
    # on to the general path from lane_call); so did the last one (on a new connection
    # after a close, the CodeSets call and the one that makes the lane come first).
    # (PYCDR_PURE=1: no lanes)
    if C_LANES:
        assert 5 in taken and 8 in taken, lane_outcomes
    else:
        assert lane_outcomes == []
    if case == "silent":
        assert any(isinstance(m, CancelRequest) for m in server.seen)
    if case in ("closes", "close-connection", "garbage"):
        assert server.connections == 2
    else:
        assert server.connections == 1


@needs_lanes
def test_after_a_reply_the_lane_did_not_take_the_next_call_checks_the_whole_path():
    """A Reply read with more after it (here a stray LocateReply) goes through the
    GiopConnection: the short way is closed until a call on the whole path has found
    the GiopConnection idle again and taken its Reply whole."""
    with RawServer(scripted([whole, whole, with_a_stray_locate_reply])) as server:
        with SyncORB(timeout=5) as orb:
            echo = orb.string_to_object(server.corbaloc(), ECHO)
            assert echo.echo_long(1) == 1
            assert echo.echo_long(2) == 2
            value, calls = python_calls(echo.echo_long, 3)      # the stray one
            assert value == 3 and calls["lane_call"] == 1 and calls["_exchanged"] == 1
            conn = the_connection(orb)
            assert not conn._lane_ready
            value, calls = python_calls(echo.echo_long, 4)
            assert value == 4
            assert calls["call"] == 1 and calls["idle"] >= 1, calls    # the whole path
            assert conn._lane_ready
            value, calls = python_calls(echo.echo_long, 5)
            assert value == 5 and calls["call"] == 0 and calls["lane_call"] == 1, calls


def test_a_closed_connection_sends_the_next_call_the_whole_way(impl):
    with raw_server() as server, SyncORB(timeout=5) as orb:
        echo = orb.string_to_object(server.corbaloc(), ECHO)
        for i in range(3):
            assert echo.echo_long(i) == i
            echo.note("x")
        conn = the_connection(orb)
        conn.close()
        for call in (lambda: echo.echo_long(5), lambda: echo.note("y")):
            value, calls = python_calls(call)
            assert value in (5, None)
            assert calls["run"] == 1 and calls["lane_call"] == calls["lane_send"] == 0
        assert the_connection(orb) is not conn
        assert echo.echo_long(6) == 6
        value, calls = python_calls(echo.echo_long, 7)
        assert value == 7
        assert calls["lane_call"] == calls["run"] ^ 1 == int(C_LANES), calls
    assert server.connections == 2


def test_a_location_forward_on_a_warm_call_is_followed(impl):
    """The front server forwards the object once the client's lane to it is warm: the
    warm call follows the LOCATION_FORWARD; later calls go to the target by its lane."""
    with SyncORB(timeout=5) as orb:
        target = orb.serve(EchoServant(ECHO), "Echo", threads=True)
        front = orb.serve(EchoServant(ECHO), "Echo", threads=True)
        echo = orb.string_to_object(front.corbaloc, ECHO)
        for i in range(3):
            assert echo.echo_long(i) == i
        orb.run(_call_in_loop(front.server.adapter.forward, front.key,
                              target.server.ior(target.key)))
        value, calls = python_calls(echo.echo_long, 5)
        assert value == 5
        assert echo.ref._forward is not None
        assert calls["_follow"] == 1
        # (the LOCATION_FORWARD came back from the lane; the call went on from there)
        assert calls["lane_call"] == calls["resume"] == int(C_LANES), calls
        for i in (6, 7):
            assert echo.echo_long(i) == i
        offsets = {conn.endpoint.port: conn.giop.stream_offset
                   for conn in orb.blocking._connections.values()}
        value, calls = python_calls(echo.echo_long, 8)
        assert value == 8
        assert calls["lane_call"] == calls["run"] ^ 1 == int(C_LANES), calls
        # (the Reply came on the target's connection; nothing more on the front's)
        moved = {conn.endpoint.port for conn in orb.blocking._connections.values()
                 if conn.giop.stream_offset != offsets[conn.endpoint.port]}
        assert moved == {target.port}

def request_ids(raw):
    return [decode_message(data)[0].request_id for data in raw]


def test_the_short_way_puts_the_whole_paths_bytes_on_the_wire(monkeypatch):
    """The same calls made through the operation functions (the short way once warm) and
    through blocking.invoke (always the whole path) send the same bytes, request ids
    included: with a Reply the lane hands back, an exception, and the C path switched
    off for some calls (the lane draws an id it does not use, as the whole path's does)."""
    from pycdr.codec import _cmarshal
    wires = {}
    for way in ("short", "whole"):
        script = [whole] * 4 + [with_a_stray_locate_reply]
        with raw_server(script) as server, SyncORB(timeout=5) as orb:
            echo = orb.string_to_object(server.corbaloc(), ECHO)
            if way == "short":
                def call(name, *args):
                    return getattr(echo, name)(*args)
            else:
                def call(name, *args):
                    return blocking.invoke(orb.blocking, echo.ref, name, args)
            for i in range(4):
                assert call("echo_long", i) == i
                call("note", f"n{i}")
            assert call("echo_long", 4) == 4           # the stray LocateReply after it
            monkeypatch.setattr(_cmarshal, "enabled", False)
            assert call("echo_long", 5) == 5
            call("note", "off")
            monkeypatch.setattr(_cmarshal, "enabled", True)
            assert call("echo_octets", BULK) == BULK
            call("note", "last")
            assert call("echo_long", 6) == 6
        wires[way] = server.raw
    assert request_ids(wires["short"]) == request_ids(wires["whole"])
    assert wires["short"] == wires["whole"]


def test_threads_sharing_an_operation_function_get_their_own_answers():
    """The short way keeps call's lock: threads calling one operation function on one
    connection each get the Reply to their own Request."""
    with SyncORB(timeout=10) as orb:
        server = orb.serve(EchoServant(ECHO), "Echo", threads=True)
        echo = orb.string_to_object(server.corbaloc, ECHO)
        echo_long = echo.echo_long
        assert echo_long(-1) == -1
        wrong = []

        def work(base):
            for i in range(base, base + 300):
                if echo_long(i) != i:
                    wrong.append(i)
                if i % 50 == 0:
                    echo.note("t")
        threads = [threading.Thread(target=work, args=(k * 1000,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert wrong == []
        assert len([c for c in orb.blocking._connections.values() if not c.closed]) == 1

