"""The threaded server's one-call lane (issue 21: ``_speedups.serve_exchange`` reads a
Request, runs the servant and sends the Reply in one C call), driven by a raw-socket
client on 127.0.0.1.

Whatever the client sends, the server answers with the same bytes as on the general path:
each scenario runs with the C path on (the lane taken, counted) and off, and the replies
must be identical. A whole Request of a learnt operation is served in C; anything else (a
Request in pieces, several messages in one read, an exception, garbage, the end of the
stream, the idle time passing, the server stopping) goes to the general path."""

import socket
import time

import pytest

from orb_echo_values import ECHO_INTERFACE, load_echo_module
from pycdr.codec import _cmarshal, marshal
from pycdr.giop.header import MsgType, parse_header
from pycdr.giop.messages import KeyAddr, Request, encode_message
from pycdr.giop.sysexc import BAD_PARAM, CompletionStatus
from pycdr.orb import ClassServant, ServerLimits, ThreadedServer
from pycdr.orb import threads
from pycdr.orb.invocation import write_arguments
from test_orb_threads import read_raw_message as read_message

ECHO = load_echo_module().interfaces[ECHO_INTERFACE]
C_PATH = marshal.IMPLEMENTATION == "c"


class Implementation:
    def echo_long(self, value):
        if value == 13:
            raise BAD_PARAM(5, CompletionStatus.COMPLETED_YES)
        return value

    def echo_string(self, value):
        return value

    def note(self, text):
        if text == "boom":
            raise ValueError("a oneway call's servant raising: logged, nothing sent")
        self.notes.append(text)


def request(op_name, args, rid, version=(1, 2), little=False, flags=3):
    op = ECHO.all_operations()[op_name]
    return encode_message(Request(version=version, little=little, request_id=rid,
                                  response_flags=flags, target=KeyAddr(b"Echo"),
                                  operation=op_name),
                          write_body=lambda w: write_arguments(w, op, list(args)))


def served_in_c(monkeypatch) -> list:
    """One entry per request serve_exchange served in C, a oneway one or a twoway one
    it answered (a list that grows)."""
    served = []
    real = threads.serve_exchange
    if real is not None:
        def counted(*args):
            out = real(*args)
            if type(out) is int and out > 0:
                served.append(out)
            elif type(out) is tuple and len(out) == 5:
                served.extend([out[0]] * out[1])
            return out
        monkeypatch.setattr(threads, "serve_exchange", counted)
    return served


def run_scenario(scenario, limits=None):
    """What the client read, in order, while ``scenario(sock, server)`` talked to a fresh
    threaded server; the server is stopped at the end."""
    server = ThreadedServer(limits=limits or ServerLimits())
    implementation = Implementation()
    implementation.notes = run_scenario.notes = []
    server.activate(ClassServant(ECHO, implementation), "Echo")
    server.open()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            # Two calls first: the first teaches the server's table (the general path),
            # the second may take the lane.
            for rid in (1, 2):
                sock.sendall(request("echo_long", (rid,), rid))
                read_message(sock)
            return scenario(sock, server)
    finally:
        server.close()


def whole(sock, server):
    out = []
    for rid in range(3, 8):
        sock.sendall(request("echo_long", (rid,), rid))
        out.append(read_message(sock))
    return out


def in_pieces(sock, server):
    data = request("echo_long", (3,), 3)
    sock.sendall(data[:7])
    time.sleep(0.05)
    sock.sendall(data[7:])
    return [read_message(sock)]


def two_in_one_write(sock, server):
    sock.sendall(request("echo_long", (3,), 3) + request("echo_string", ("x",), 4))
    return [read_message(sock), read_message(sock)]


def raises(sock, server):
    sock.sendall(request("echo_long", (13,), 3))
    first = read_message(sock)
    sock.sendall(request("echo_long", (4,), 4))
    return [first, read_message(sock)]


def versions_and_byte_orders(sock, server):
    # GIOP 1.0 little-endian, then 1.1 big-endian: both in C (the table is per key and
    # operation)
    sock.sendall(request("echo_long", (3,), 3, version=(1, 0), little=True))
    first = read_message(sock)
    sock.sendall(request("echo_long", (4,), 4, version=(1, 1), little=False))
    return [first, read_message(sock)]


def garbage(sock, server):
    sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
    return [read_message(sock), sock.recv(1)]


def idles(sock, server):
    return [read_message(sock), sock.recv(1)]


def stopped(sock, server):
    server.close()
    return [read_message(sock), sock.recv(1)]


def note(text, rid, version=(1, 2), little=False):
    return request("note", (text,), rid, version=version, little=little, flags=0)


def oneways(sock, server):
    """A stream of oneway calls (one read takes many): served in C in one call, then the
    twoway call after them."""
    sock.sendall(note("learn", 3))           # (the general path enters note in the table)
    sock.sendall(request("echo_long", (4,), 4))
    first = read_message(sock)
    batch = b"".join(note(f"n{i}", 10 + i, version=(1, i % 3), little=bool(i % 2))
                     for i in range(30))
    sock.sendall(batch + request("echo_long", (5,), 5))
    return [first, read_message(sock)]


def oneway_raises(sock, server):
    """A oneway call whose servant raises amid others: the general path judges it (no
    reply), the calls after it in the same read are served in order."""
    sock.sendall(note("learn", 3))
    sock.sendall(request("echo_long", (4,), 4))
    first = read_message(sock)
    sock.sendall(note("a", 5) + note("boom", 6) + note("b", 7) + request("echo_long", (8,), 8))
    return [first, read_message(sock)]


def twoways_in_one_write(sock, server):
    """Several twoway calls of learnt operations in one write (a pipelining client): each
    answered in C, in order, from one read."""
    sock.sendall(b"".join(request("echo_long", (rid,), rid) for rid in range(3, 9)))
    return [read_message(sock) for _ in range(3, 9)]


def whole_then_a_part(sock, server):
    """Whole oneway calls, then the first part of a twoway one: the part goes to the
    general path, which reads the rest."""
    sock.sendall(note("learn", 3))
    sock.sendall(request("echo_long", (4,), 4))
    first = read_message(sock)
    last = request("echo_long", (9,), 9)
    sock.sendall(note("a", 5) + note("b", 6) + last[:10])
    time.sleep(0.05)
    sock.sendall(last[10:])
    return [first, read_message(sock)]


def a_part_then_the_rest(sock, server):
    """A read that ends inside a Request (past its header): its rest is read in the same
    C call, and it is served there."""
    data = request("echo_string", ("x" * 5000,), 3)
    sock.sendall(request("echo_string", ("learn",), 4))
    first = read_message(sock)
    sock.sendall(data[:100])
    time.sleep(0.05)
    sock.sendall(data[100:3000])
    time.sleep(0.05)
    sock.sendall(data[3000:])
    return [first, read_message(sock)]


def stalls_inside_a_request(sock, server):
    """A Request's rest that does not come within incomplete_message_timeout: the
    connection closes (no CloseConnection: a message is incomplete), as on the general
    path."""
    data = request("echo_long", (3,), 3)
    sock.sendall(data[:20])
    return [sock.recv(1)]


SCENARIOS = {"whole": whole, "in-pieces": in_pieces, "two-in-one-write": two_in_one_write,
             "raises": raises, "versions-and-byte-orders": versions_and_byte_orders,
             "garbage": garbage, "idles": idles, "stopped": stopped, "oneways": oneways,
             "oneway-raises": oneway_raises, "twoways-in-one-write": twoways_in_one_write,
             "whole-then-a-part": whole_then_a_part,
             "a-part-then-the-rest": a_part_then_the_rest,
             "stalls-inside-a-request": stalls_inside_a_request}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_lane_answers_as_the_general_path(name, monkeypatch):
    limits = ServerLimits(idle_timeout=0.3) if name == "idles" else \
        ServerLimits(incomplete_message_timeout=0.3) if name.startswith("stalls") else None
    answers = {}
    counts = {}
    notes = {}
    for enabled in ((True, False) if C_PATH else (False,)):
        monkeypatch.setattr(_cmarshal, "enabled", enabled)
        served = served_in_c(monkeypatch)
        answers[enabled] = run_scenario(SCENARIOS[name], limits)
        counts[enabled] = len(served)
        notes[enabled] = run_scenario.notes
        monkeypatch.undo()
    if C_PATH:
        assert answers[True] == answers[False]
        assert notes[True] == notes[False]          # (the oneway calls ran, in order)
        assert counts[False] == 0
        # (the second warm-up call, and the scenario's whole requests of learnt operations;
        # a stream of oneway calls: all in C when one read takes them, as it does here)
        expected = {"whole": 6, "raises": 2, "versions-and-byte-orders": 3,
                    "two-in-one-write": 2, "oneways": 33, "oneway-raises": 3,
                    "twoways-in-one-write": 7, "whole-then-a-part": 4,
                    "a-part-then-the-rest": 2}.get(name, 1)
        assert counts[True] == expected, counts
    if name == "oneways":
        assert notes[False] == ["learn"] + [f"n{i}" for i in range(30)]
    if name == "oneway-raises":
        assert notes[False] == ["learn", "a", "b"]
    if name in ("garbage", "idles", "stopped"):
        kind = MsgType.MessageError if name == "garbage" else MsgType.CloseConnection
        assert parse_header(answers[False][0]).msg_type == kind
        assert answers[False][1] == b""
