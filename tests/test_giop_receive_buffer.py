"""GiopConnection's buffer API (receive_buffer/received, what asyncio's BufferedProtocol
uses) frames exactly as receive_data does, and decode_message's lean mode
(field_offsets=False, the ORB's) decodes and fails exactly as the detailed one."""

import random

import pytest

from pycdr.errors import PycdrError, TruncatedError
from pycdr.giop import connection as giop_connection
from pycdr.giop.connection import NEED_DATA, GiopConnection, Role
from pycdr.giop.events import ConnectionClosed, MessageReceived, ProtocolViolation
from pycdr.giop.header import MsgType, encode_header, parse_header
from pycdr.giop.messages import KeyAddr, Request, decode_message, encode_message
from pycdr.giop.messages.fast12 import _decode_common_12

from giop_samples import sample_messages, with_size
from test_giop_connection import drain, stream_for_server

# The framing does not depend on the sizes: the tests use small ones (the module's
# are hundreds of KB), so that byte-by-byte reads and growing buffers stay quick.
IN_PLACE_MIN = 16 * 1024
IN_PLACE_START = 4 * 1024
SCRATCH_SIZE = 8 * 1024
LARGE = IN_PLACE_MIN * 3


@pytest.fixture(autouse=True)
def small_buffers(monkeypatch):
    monkeypatch.setattr(giop_connection, "IN_PLACE_MIN", IN_PLACE_MIN)
    monkeypatch.setattr(giop_connection, "IN_PLACE_START", IN_PLACE_START)
    monkeypatch.setattr(giop_connection, "SCRATCH_SIZE", SCRATCH_SIZE)


def large_request(rid, size=LARGE, little=False):
    return encode_message(Request(request_id=rid, operation="send", little=little,
                                  target=KeyAddr(b"TTCP"), response_flags=0,
                                  body=bytes(i & 0xFF for i in range(size))))


def mixed_stream() -> bytes:
    small, _big = stream_for_server()
    return b"".join([large_request(10), small, large_request(11, little=True),
                     large_request(12, size=IN_PLACE_MIN - 100),
                     encode_message(Request(request_id=13, operation="x",
                                            target=KeyAddr(b"k")))])


def summary(events):
    out = []
    for e in events:
        if isinstance(e, MessageReceived):
            out.append(("msg", e.message, e.raw, e.fragments, e.offset))
        elif isinstance(e, ProtocolViolation):
            out.append(("violation", str(e.error), e.answer, e.offset))
        else:
            out.append(("closed", e.reason, e.clean))
    return out


def reference_events(stream: bytes, eof: bool = True, **kw):
    conn = GiopConnection(Role.SERVER, **kw)
    conn.receive_data(stream)
    if eof:
        conn.receive_data(b"")
    return summary(drain(conn))


def feed_by_buffer(stream: bytes, chunk_sizes, poll_every: int, eof: bool = True, **kw):
    """Receive ``stream`` as a transport would: into receive_buffer(), ``chunk_sizes``
    bytes at most per read, next_event() after every ``poll_every`` reads."""
    conn = GiopConnection(Role.SERVER, **kw)
    events, pos, reads = [], 0, 0
    sizes = iter(chunk_sizes)
    while pos < len(stream):
        buf = conn.receive_buffer()
        assert len(buf) > 0
        n = min(len(buf), next(sizes), len(stream) - pos)
        buf[:n] = stream[pos:pos + n]
        conn.received(n)
        del buf
        pos += n
        reads += 1
        if reads % poll_every == 0 and not (events and isinstance(events[-1],
                                                                 ConnectionClosed)):
            events += drain(conn)
    if eof:
        conn.receive_data(b"")
    if not (events and isinstance(events[-1], ConnectionClosed)):
        events += drain(conn)
    return summary(events)


@pytest.mark.parametrize("chunk", [1, 7, 12, 100, 4096, 65536, 1 << 20])
@pytest.mark.parametrize("poll_every", [1, 3, 1000])
def test_buffer_api_frames_as_receive_data(chunk, poll_every):
    stream = mixed_stream()
    if chunk == 1:      # byte by byte: a shorter stream, still with an in-place message
        stream = large_request(20, size=IN_PLACE_MIN + 10) + \
            stream_for_server()[0]
    expected = reference_events(stream)
    assert expected[-1][0] == "closed"
    assert feed_by_buffer(stream, iter(lambda: chunk, None), poll_every) == expected


def test_buffer_api_with_random_reads():
    stream = mixed_stream()
    expected = reference_events(stream)
    rng = random.Random(7)
    for _ in range(20):
        sizes = iter(lambda: rng.choice([1, 13, 500, 9000, 70000, 300000]), None)
        assert feed_by_buffer(stream, sizes, rng.choice([1, 2, 5])) == expected


def test_large_message_is_received_in_place_in_a_buffer_grown_with_the_data():
    message = large_request(1)
    conn = GiopConnection(Role.SERVER)
    first = conn.receive_buffer()
    first[:IN_PLACE_START] = message[:IN_PLACE_START]
    del first
    conn.received(IN_PLACE_START)
    assert conn.incomplete_bytes < IN_PLACE_START + 1024      # what came, not the claim
    pos, sizes = IN_PLACE_START, []
    while pos < len(message):
        rest = conn.receive_buffer()
        sizes.append(len(rest))
        # The message's own buffer, never more than twice the bytes received.
        assert conn.incomplete_bytes <= max(2 * pos, IN_PLACE_START + 1024)
        rest[:] = message[pos:pos + len(rest)]
        pos += len(rest)
        del rest
        conn.received(sizes[-1])
    assert sizes[:3] == [IN_PLACE_START, 2 * IN_PLACE_START, 4 * IN_PLACE_START]
    assert conn.buffered == len(message)
    (event,) = drain(conn)
    assert event.raw == message and event.message.body == decode_message(message)[0].body
    assert conn.buffered == 0 and conn.incomplete_bytes == 0 and not conn.has_partial_message


def test_reader_wakes_once_per_in_place_message_not_per_read():
    from pycdr.orb.aio import GiopStream
    messages = [large_request(1), large_request(2, little=True)]
    conn = GiopConnection(Role.SERVER)
    wakes, received = [], []

    def on_data():
        wakes.append(conn.receiving_in_place)
        received.extend(e for e in drain(conn) if isinstance(e, MessageReceived))
    stream = GiopStream(conn, on_data=on_data)
    for message in messages:
        for start in range(0, len(message), 4000):           # 4000-byte reads
            piece = message[start:start + 4000]
            buffer = stream.get_buffer(-1)
            assert len(buffer) >= len(piece)
            buffer[:len(piece)] = piece
            del buffer
            stream.buffer_updated(len(piece))
    # Per message: the reads before it goes in place (until IN_PLACE_START of it
    # have come) and the last one.
    before_in_place = -(-IN_PLACE_START // 4000)
    assert len(wakes) == 2 * (before_in_place + 1) and not any(wakes)
    assert [e.raw for e in received] == messages


def test_connections_sharing_a_scratch_hold_only_what_they_received():
    # Two connections read through one scratch, their reads interleaved; each holds
    # the bytes of its incomplete message (not a read buffer), and the messages come
    # out as from receive_data.
    scratch = bytearray(SCRATCH_SIZE)
    small, _big = stream_for_server()
    streams = [small + large_request(20, size=IN_PLACE_START // 2),
               large_request(21, size=IN_PLACE_START // 3, little=True) + small]
    conns = [GiopConnection(Role.SERVER, scratch=scratch) for _ in streams]
    events = [[], []]
    positions = [0, 0]
    rng = random.Random(3)
    while positions != [len(s) for s in streams]:
        i = rng.choice([i for i in (0, 1) if positions[i] < len(streams[i])])
        buf = conns[i].receive_buffer()
        assert buf.obj is scratch
        n = min(rng.choice([5, 100, 3000]), len(streams[i]) - positions[i])
        buf[:n] = streams[i][positions[i]:positions[i] + n]
        del buf
        conns[i].received(n)
        positions[i] += n
        events[i] += drain(conns[i])
        assert conns[i].incomplete_bytes <= conns[i].buffered + 16
    for i, conn in enumerate(conns):
        conn.receive_data(b"")
        assert summary(events[i] + drain(conn)) == reference_events(streams[i])


def test_refusing_a_partial_message_releases_it_and_answers_in_its_version():
    claim = encode_header((1, 1), True, MsgType.Request, 1 << 20) + bytes(5000)
    conn = GiopConnection(Role.SERVER)
    conn.receive_data(claim)
    assert drain(conn) == [] and conn.incomplete_bytes >= len(claim)
    event = conn.refuse_partial_message("over the budget")
    assert isinstance(event, ProtocolViolation) and "over the budget" in str(event.error)
    header = parse_header(event.reply)
    assert header.msg_type == MsgType.MessageError and header.version == (1, 1)
    assert conn.incomplete_bytes == 0 and not conn.has_partial_message
    assert isinstance(conn.next_event(), ConnectionClosed)


def test_oversized_header_allocates_nothing_and_is_refused_as_before():
    claim = encode_header((1, 2), False, MsgType.Request, 64 << 20) + b"\0" * 100
    conn = GiopConnection(Role.SERVER, max_message_size=1 << 20)
    buf = conn.receive_buffer()
    buf[:len(claim)] = claim
    del buf
    conn.received(len(claim))
    assert len(conn.receive_buffer()) == SCRATCH_SIZE
    assert conn.buffered == 12          # the header that refuses it, not the read
    got = summary(drain(conn))
    assert got == reference_events(claim, eof=False, max_message_size=1 << 20)
    assert got[0][0] == "violation" and "exceeds the limit" in got[0][1]
    # The same header split across two reads, a message before it in the first.
    before = large_request(7, size=100)
    conn = GiopConnection(Role.SERVER, max_message_size=1 << 20)
    for piece in (before + claim[:5], claim[5:]):
        buf = conn.receive_buffer()
        buf[:len(piece)] = piece
        del buf
        conn.received(len(piece))
    assert conn.buffered == len(before) + 12
    assert summary(drain(conn)) == reference_events(before + claim, eof=False,
                                                    max_message_size=1 << 20)


def test_stream_ending_inside_an_in_place_message():
    message = large_request(1)
    cut = message[:len(message) // 2]
    assert feed_by_buffer(cut, iter(lambda: 4096, None), 1) == reference_events(cut)
    assert "stream ends inside a message" in reference_events(cut)[0][1]


# ----------------------------------------------------------------------------
# decode_message(field_offsets=False)
def outcome(data, **kw):
    try:
        msg, warnings = decode_message(data, **kw)
    except PycdrError as e:
        return ("error", type(e), str(e), e.offset)
    return ("ok", msg, warnings)


def test_lean_decoding_gives_the_same_messages_without_offsets():
    for data in sample_messages():
        detailed, _ = decode_message(data)
        lean, _ = decode_message(data, field_offsets=False)
        assert lean == detailed
        assert getattr(lean, "body_offset", None) == getattr(detailed, "body_offset", None)
        assert detailed.offsets and not lean.offsets and not lean.padding


def test_fast_path_takes_the_common_requests_and_replies():
    # The common 1.2/1.3 messages are decoded by _decode_common_12, also from a
    # bytearray (a message received in place), and equal the detailed decoding.
    taken = 0
    for data in sample_messages():
        header = parse_header(data)
        common = header.version >= (1, 2) and (
            header.msg_type == MsgType.Request or
            (header.msg_type == MsgType.Reply and decode_message(data)[0].reply_status == 0))
        for buffer in (data, bytearray(data)):
            fast = _decode_common_12(buffer, None)
            assert (fast is not None) == common
            if fast is not None:
                taken += 1
                detailed, _ = decode_message(data)
                assert fast == detailed and fast.body_offset == detailed.body_offset
                assert type(fast.body) is bytes
    assert taken >= 40


def test_lean_decoding_fails_as_the_detailed_one():
    kinds = {"ok": 0, "error": 0}
    for data in sample_messages():
        for i in range(12, len(data)):
            for value in (0x00, 0x05, 0x7F, 0xFF):
                mutated = data[:i] + bytes([value]) + data[i + 1:]
                expected = outcome(mutated)
                assert outcome(mutated, field_offsets=False) == expected
                kinds[expected[0]] += 1
    assert kinds["ok"] > 1000 and kinds["error"] > 1000


def test_lean_decoding_of_shortened_messages_fails_as_the_detailed_one():
    # Each message cut after every byte, its message_size saying so: the lean path
    # must meet every end (inside the key, at its padding, inside the operation's
    # length) with the detailed decoder's error, never with an exception of its own.
    kinds = {"ok": 0, "error": 0}
    for data in sample_messages():
        for end in range(12, len(data)):
            cut = with_size(data[:end], end - 12)
            expected = outcome(cut)
            assert outcome(cut, field_offsets=False) == expected, (data.hex(), end)
            kinds[expected[0]] += 1
    assert kinds["error"] > 500


def test_request_ending_inside_the_operation_length_is_a_violation_not_a_crash():
    # The object key ends 3 bytes short of a 4-aligned offset and the message 4 bytes
    # after the key: the operation's length, once aligned, runs past the end.  This
    # once escaped the ORB's connection as struct.error.
    key = b"K"
    data = encode_message(Request(version=(1, 2), request_id=1, operation="x",
                                  target=KeyAddr(key)))
    key_end = 28 + len(key)
    cut = with_size(data[:key_end + 4], key_end + 4 - 12)
    connection = GiopConnection(role=Role.SERVER, field_offsets=False)
    connection.receive_data(cut)
    event = connection.next_event()
    assert isinstance(event, ProtocolViolation)
    assert isinstance(event.error, TruncatedError) and event.error.offset == 32
