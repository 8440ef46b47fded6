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
from pycdr import _cmarshal, marshal
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


def request(op_name, args, rid, version=(1, 2), little=False):
    op = ECHO.all_operations()[op_name]
    return encode_message(Request(version=version, little=little, request_id=rid,
                                  response_flags=3, target=KeyAddr(b"Echo"),
                                  operation=op_name),
                          write_body=lambda w: write_arguments(w, op, list(args)))


def served_in_c(monkeypatch) -> list:
    """The request sizes serve_exchange answered in C (a list that grows)."""
    served = []
    real = threads.serve_exchange
    if real is not None:
        def counted(*args):
            out = real(*args)
            if type(out) is int and out > 0:
                served.append(out)
            return out
        monkeypatch.setattr(threads, "serve_exchange", counted)
    return served


def run_scenario(scenario, limits=None):
    """What the client read, in order, while ``scenario(sock, server)`` talked to a fresh
    threaded server; the server is stopped at the end."""
    server = ThreadedServer(limits=limits or ServerLimits())
    server.activate(ClassServant(ECHO, Implementation()), "Echo")
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


SCENARIOS = {"whole": whole, "in-pieces": in_pieces, "two-in-one-write": two_in_one_write,
             "raises": raises, "versions-and-byte-orders": versions_and_byte_orders,
             "garbage": garbage, "idles": idles, "stopped": stopped}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_lane_answers_as_the_general_path(name, monkeypatch):
    limits = ServerLimits(idle_timeout=0.3) if name == "idles" else None
    answers = {}
    counts = {}
    for enabled in ((True, False) if C_PATH else (False,)):
        monkeypatch.setattr(_cmarshal, "enabled", enabled)
        served = served_in_c(monkeypatch)
        answers[enabled] = run_scenario(SCENARIOS[name], limits)
        counts[enabled] = len(served)
        monkeypatch.undo()
    if C_PATH:
        assert answers[True] == answers[False]
        assert counts[False] == 0
        # (the second warm-up call, and the scenario's whole requests of learnt operations)
        expected = {"whole": 6, "raises": 2, "versions-and-byte-orders": 3}.get(name, 1)
        assert counts[True] == expected, counts
    if name in ("garbage", "idles", "stopped"):
        kind = MsgType.MessageError if name == "garbage" else MsgType.CloseConnection
        assert parse_header(answers[False][0]).msg_type == kind
        assert answers[False][1] == b""
