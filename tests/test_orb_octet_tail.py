"""A large octet sequence that ends a Request's or Reply's body is sent after the encoded
message instead of being copied into it (issue 21, per byte): the message is then
``[bytearray, bytes]`` (GiopConnection.send_templated's tail), written with one
sendmsg/writelines.  The bytes on the wire are the same as without the tail, in every GIOP
version and byte order; values that may change or do not fit the type are copied as
before; both transports send the list whole, partial sends included.

Every server here listens on 127.0.0.1, on a port it picks, and is stopped by its test."""

import itertools
import ssl

import pytest

from orb_echo_values import ECHO_INTERFACE, load_echo_module
from pycdr.codec import tc
from pycdr.codec.cdr import CDRWriter
from pycdr.errors import EncodeError
from pycdr.giop.connection import GiopConnection, Role
from pycdr.giop.messages import KeyAddr, Reply, ReplyStatus, Request, decode_message
from pycdr.orb import EchoServant, aio, blocking, threads
from pycdr.orb.invocation import (TAIL_MIN, arguments_tail, dynamic_operation, serve_request,
                                  read_arguments, results_tail, write_arguments,
                                  write_results)
from pycdr.orb.sync import SyncORB

VERSIONS = ((1, 0), (1, 1), (1, 2), (1, 3))
OCTETS = tc.sequence(tc.octet, 0)
BOUNDED = tc.sequence(tc.octet, TAIL_MIN + 10)
BIG = bytes(range(256)) * (TAIL_MIN // 256 + 3) + b"xyz"      # not a multiple of 4 or 8


def operations():
    """(operation, arguments) whose last argument may be a tail, after other values
    whose padding depends on where the body starts."""
    yield dynamic_operation("alone", [("v", "in", OCTETS)]), (BIG,)
    yield dynamic_operation("after", [("a", "in", tc.octet), ("b", "in", tc.double),
                                      ("s", "in", tc.string), ("v", "in", OCTETS)]), \
        (7, 2.5, "abc", BIG)
    yield dynamic_operation("bounded", [("a", "in", tc.short), ("v", "in", BOUNDED)],
                            result=OCTETS), (3, BIG[:TAIL_MIN + 10])
    yield dynamic_operation("aliased", [("v", "in", tc.alias("IDL:T/Big:1.0", "Big",
                                                             OCTETS))]), (BIG,)


def joined(data) -> bytes:
    return b"".join(bytes(part) for part in data) if type(data) is list else bytes(data)


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"giop{v[0]}.{v[1]}")
@pytest.mark.parametrize("little", [False, True], ids=["big", "little"])
def test_a_request_with_a_tail_is_the_bytes_of_the_whole_request(version, little):
    for (op, args), request_id in itertools.product(operations(), (1, 0xFFFFFFFF)):
        tail = arguments_tail(op, args)
        assert tail is args[-1]
        sent = []
        for with_tail in (None, tail):
            client = GiopConnection(Role.CLIENT, version=(1, 3))
            template = client.template(Request(version=version, little=little,
                                               response_flags=3, target=KeyAddr(b"key"),
                                               operation=op.name))
            data = client.send_templated(template, request_id,
                                         lambda w, t=with_tail: write_arguments(w, op, args, t),
                                         tail=with_tail)
            assert (type(data) is list) == (with_tail is not None)
            if with_tail is not None:
                assert data[1] is tail          # the caller's object itself: no copy
            sent.append(joined(data))
        assert sent[0] == sent[1], (op.name, version, little)
        msg, _ = decode_message(sent[1])
        assert msg.request_id == request_id
        assert read_arguments(msg.body_reader(), op) == list(args)


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"giop{v[0]}.{v[1]}")
@pytest.mark.parametrize("little", [False, True], ids=["big", "little"])
def test_a_reply_with_a_tail_is_the_bytes_of_the_whole_reply(version, little):
    op = dynamic_operation("results", [("a", "in", tc.long), ("b", "inout", tc.double),
                                       ("v", "out", OCTETS)], result=tc.string)
    values = ["result", 0.5, BIG]
    tail = results_tail(op, values)
    assert tail is BIG
    sent = []
    for with_tail in (None, tail):
        server = GiopConnection(Role.SERVER, version=(1, 3))
        server.outstanding.add(9)
        template = server.template(Reply(version=version, little=little,
                                         reply_status=ReplyStatus.NO_EXCEPTION))
        sent.append(joined(server.send_templated(
            template, 9, lambda w, t=with_tail: write_results(w, op, values, t), tail=with_tail)))
    assert sent[0] == sent[1]


def test_what_is_not_a_tail():
    op = dynamic_operation("op", [("a", "in", tc.short), ("v", "in", OCTETS)])
    assert arguments_tail(op, (1, BIG)) is BIG
    assert arguments_tail(op, (1, BIG[:TAIL_MIN - 1])) is None     # small: copied
    assert arguments_tail(op, (1, bytearray(BIG))) is None         # may change after the call
    assert arguments_tail(op, (1, memoryview(BIG))) is None
    assert arguments_tail(op, (BIG,)) is None                      # wrong argument count
    bounded = dynamic_operation("op", [("v", "in", tc.sequence(tc.octet, TAIL_MIN))])
    assert arguments_tail(bounded, (BIG,)) is None                 # over its bound: the
    with pytest.raises(EncodeError):                               # writer says so
        write_arguments(CDRWriter(), bounded, (BIG,))
    longs = dynamic_operation("op", [("v", "in", tc.sequence(tc.long, 0))])
    assert arguments_tail(longs, (BIG,)) is None
    first = dynamic_operation("op", [("v", "in", OCTETS), ("a", "in", tc.short)])
    assert arguments_tail(first, (BIG, 1)) is None                 # not last
    assert arguments_tail(dynamic_operation("op", []), ()) is None
    returns = dynamic_operation("op", [("v", "out", tc.short)], result=OCTETS)
    assert results_tail(returns, [BIG, 1]) is None
    assert results_tail(dynamic_operation("op", [], result=OCTETS), [BIG]) is BIG


def test_a_tail_is_not_fragmented():
    client = GiopConnection(Role.CLIENT)
    template = client.template(Request(version=(1, 2), response_flags=3,
                                       target=KeyAddr(b"k"), operation="op"))
    with pytest.raises(ValueError):
        client.send_templated(template, 1, lambda w: w.write_ulong(len(BIG)),
                              fragment_size=1024, tail=BIG)


class TrickleSocket:
    """A socket whose sendmsg takes at most ``step`` bytes a call."""

    def __init__(self, step):
        self.step = step
        self.sent = bytearray()
        self.calls = 0

    def sendmsg(self, buffers):
        self.calls += 1
        room = self.step
        for buf in buffers:
            part = bytes(buf)[:room]
            self.sent += part
            room -= len(part)
            if not room:
                break
        return self.step - room


@pytest.mark.parametrize("step", [1, 7, 4096, 1 << 20])
def test_send_message_sends_every_byte_in_order_over_partial_sends(step):
    head = bytearray(b"head" * 5)
    data = [head, b"", BIG[:5000]]
    sock = TrickleSocket(step)
    blocking.send_message(sock, data)
    assert bytes(sock.sent) == bytes(head) + BIG[:5000]
    assert sock.calls == -(-len(sock.sent) // step)


def test_send_message_joins_the_list_for_an_ssl_socket():
    class RecordingTLSSocket(ssl.SSLSocket):      # (no sendmsg over TLS)
        def sendall(self, data):
            self.data = data

        def sendmsg(self, buffers):
            raise AssertionError("an SSL socket has no sendmsg")
    sock = RecordingTLSSocket.__new__(RecordingTLSSocket)
    blocking.send_message(sock, [bytearray(b"head"), BIG])
    assert sock.data == b"head" + BIG


def test_send_message_sends_plain_bytes_with_sendall():
    class Plain:
        def sendall(self, data):
            self.data = data
    sock = Plain()
    blocking.send_message(sock, b"abc")
    assert sock.data == b"abc"


@pytest.mark.parametrize("threaded", [False, True], ids=["asyncio-server", "threaded-server"])
@pytest.mark.parametrize("blocking_client", [False, True], ids=["loop-client", "blocking-client"])
def test_a_large_octet_sequence_goes_as_a_tail_both_ways(monkeypatch, threaded,
                                                         blocking_client):
    """The Request of an echo of bulk octets leaves as [message, tail] on every transport,
    and so does the Reply where the server's general path answers it (PYCDR_PURE=1); the
    C path (serve_request) answers in one call, its Reply a whole message. The echo comes
    back whole (the first call carries the CodeSets context, which goes through the
    general encoder without a tail)."""
    written = []

    def recording(write):
        def record(*args):
            data = args[-1]
            written.append(type(data) is list and bytes(data[-1]) == payload)
            return write(*args)
        return record
    monkeypatch.setattr(aio.GiopStream, "write", recording(aio.GiopStream.write))
    monkeypatch.setattr(blocking, "send_message", recording(blocking.send_message))
    monkeypatch.setattr(threads, "send_message", recording(threads.send_message))
    if blocking.exchange is not None:
        # The blocking client's lane (one C call) sends the tail with sendmsg too.
        real_exchange = blocking.exchange

        def exchange(*args):
            out = real_exchange(*args)
            if out is not None:
                written.append(len(args) >= 11 and args[10] is payload)
            return out
        monkeypatch.setattr(blocking, "exchange", exchange)
    module = load_echo_module()
    echo_interface = module.interfaces[ECHO_INTERFACE]
    payload = bytes(BIG)
    with SyncORB(blocking=blocking_client) as orb:
        served = orb.serve(EchoServant(echo_interface), "Echo", threads=threaded)
        echo = orb.string_to_object(served.ior, echo_interface)
        assert echo.echo_octets(b"small") == b"small"
        written.clear()
        for _ in range(3):
            assert echo.echo_octets(payload) == payload
        assert echo.echo_long(5) == 5                 # the stream goes on after them
    # Three Requests, and three Replies unless the C path answered them.
    assert written.count(True) == (3 if serve_request is not None else 6), written
