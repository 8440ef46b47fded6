"""The sans-I/O GIOP connection: framing, fragments, books, violations, limits."""

import pytest

from pycdr.errors import LocalProtocolError, UnsupportedVersionError
from pycdr.giop import sysexc
from pycdr.giop.connection import NEED_DATA, GiopConnection, Role
from pycdr.giop.events import Answer, ConnectionClosed, MessageReceived, ProtocolViolation
from pycdr.giop.header import encode_header, message_error_bytes
from pycdr.giop.messages import (CancelRequest, CloseConnection, Fragment, KeyAddr,
                                 LocateReply, LocateRequest, Reply, ReplyStatus, Request,
                                 encode_message, fragment_message)


def drain(conn):
    events = []
    while True:
        ev = conn.next_event()
        if ev is NEED_DATA:
            return events
        events.append(ev)
        if isinstance(ev, ConnectionClosed):
            return events


def request(rid, body=b"", version=(1, 2), little=False, **kw):
    return Request(version=version, little=little, request_id=rid, operation="op",
                   target=KeyAddr(b"key"), body=body, **kw)


def stream_for_server():
    """Messages a client sends, including a fragmented 1.2 request."""
    big = encode_message(request(3, bytes(range(256)) * 3))
    msgs = [encode_message(request(1)),
            encode_message(LocateRequest(version=(1, 0), request_id=2, target=KeyAddr(b"k"))),
            *fragment_message(big, 96),
            encode_message(request(4, b"\x01\x02", version=(1, 1), little=True)),
            encode_message(CancelRequest(request_id=4)),
            # A GIOP 1.1 fragmented request: reassembled by stream order.
            first_part(5, version=(1, 1), body=b"abc"),
            encode_message(Fragment(version=(1, 1), data=b"def", more_fragments=True)),
            encode_message(Fragment(version=(1, 1), data=b"g"))]
    return b"".join(msgs), big


def check_server_events(events, big):
    got = [(type(e).__name__, getattr(getattr(e, "message", None), "type_name", None))
           for e in events]
    assert got == [("MessageReceived", "Request"), ("MessageReceived", "LocateRequest"),
                   ("MessageReceived", "Request"), ("MessageReceived", "Request"),
                   ("MessageReceived", "CancelRequest"), ("MessageReceived", "Request")]
    assert events[2].raw == big and events[2].fragments > 3
    assert events[2].message.body == bytes(range(256)) * 3
    assert events[5].message.body == b"abcdefg" and events[5].fragments == 3


def test_every_two_chunk_split_of_a_stream():
    stream, big = stream_for_server()
    for cut in range(len(stream) + 1):
        conn = GiopConnection(Role.SERVER)
        events = []
        for chunk in (stream[:cut], stream[cut:]):
            if chunk:                       # b"" would mean end of stream
                conn.receive_data(chunk)
                events += drain(conn)
        check_server_events(events, big)


def test_byte_by_byte_and_all_at_once():
    stream, big = stream_for_server()
    conn = GiopConnection(Role.SERVER)
    events = []
    for i in range(len(stream)):
        conn.receive_data(stream[i:i + 1])
        events += drain(conn)
    check_server_events(events, big)
    conn.receive_data(b"")
    closed = drain(conn)
    assert isinstance(closed[0], ConnectionClosed) and closed[0].clean
    assert closed[0].pending_requests == (1, 2, 3, 5)   # never answered
    conn = GiopConnection(Role.SERVER)
    conn.receive_data(stream)
    check_server_events(drain(conn), big)


def frag12(rid, data, more, little=False):
    return encode_message(Fragment(request_id=rid, data=data, more_fragments=more,
                                   little=little))


def first_part(rid, version=(1, 2), body=b""):
    """The first message of a fragmented Request whose body continues."""
    m = request(rid, version=version, body=body, more_fragments=True)
    return encode_message(m)


def test_12_fragments_of_different_requests_interleaved():
    a1 = first_part(10, body=b"A" * 8)
    b1 = first_part(11, body=b"B" * 8)
    stream = a1 + b1 + frag12(11, b"b" * 8, True) + frag12(10, b"a" * 4, False) + \
        frag12(11, b"bb", False)
    conn = GiopConnection(Role.SERVER)
    conn.receive_data(stream)
    events = drain(conn)
    assert [e.message.request_id for e in events] == [10, 11]
    assert events[0].message.body == b"A" * 8 + b"a" * 4
    assert events[1].message.body == b"B" * 8 + b"b" * 8 + b"bb"
    assert not events[0].message.more_fragments and events[1].fragments == 3


def test_11_fragments_by_stream_order():
    first = first_part(5, version=(1, 1), body=b"xy")
    frag = encode_message(Fragment(version=(1, 1), data=b"zz", more_fragments=True))
    last = encode_message(Fragment(version=(1, 1), data=b"!", more_fragments=False))
    conn = GiopConnection(Role.SERVER)
    conn.receive_data(first + frag + last)
    (ev,) = drain(conn)
    assert ev.message.request_id == 5 and ev.message.body == b"xyzz!" and ev.fragments == 3


def test_11_request_before_last_fragment_is_a_violation():
    conn = GiopConnection(Role.SERVER)
    conn.receive_data(first_part(5, version=(1, 1)) + encode_message(request(6, version=(1, 1))))
    (ev,) = drain(conn)
    assert isinstance(ev, ProtocolViolation) and ev.answer is Answer.SEND_MESSAGE_ERROR
    assert ev.reply == message_error_bytes((1, 1))


def test_cancel_of_a_fragmented_request_drops_it_and_its_later_fragments():
    conn = GiopConnection(Role.SERVER)
    conn.receive_data(first_part(20, body=b"12345678") + encode_message(CancelRequest(request_id=20))
                      + frag12(20, b"late", True) + frag12(20, b"last", False)
                      + encode_message(request(21)))
    events = drain(conn)
    assert [(type(e).__name__, e.message.type_name) for e in events] == [
        ("MessageReceived", "CancelRequest"), ("MessageReceived", "Request")]
    assert events[1].message.request_id == 21
    # GIOP 1.1: the pending message's request id is found after its contexts.
    conn = GiopConnection(Role.SERVER)
    conn.receive_data(first_part(30, version=(1, 1)) +
                      encode_message(CancelRequest(version=(1, 1), request_id=30)) +
                      encode_message(request(31, version=(1, 1))))
    events = drain(conn)
    assert [e.message.type_name for e in events] == ["CancelRequest", "Request"]


@pytest.mark.parametrize("data,fatal", [
    (b"GIOP\x01\x00\x00\x07\x00\x00\x00\x01x", False),                     # 1.0 Fragment
    (encode_header((1, 2), False, 2, 4, more_fragments=True) + bytes(4), False),  # Cancel
    (encode_header((1, 1), False, 3, 4, more_fragments=True) + bytes(4), False),  # 1.1 Locate
    (encode_header((1, 2), False, 5, 0, more_fragments=True), False),      # CloseConnection
    (encode_header((1, 2), False, 6, 0, more_fragments=True), False),      # MessageError
    (frag12(99, b"orphan", False), False),                                 # unknown request
    (encode_message(Fragment(version=(1, 1), data=b"x")), False),          # 1.1 orphan
    (b"GIOX\x01\x02\x00\x00\x00\x00\x00\x00", True),                       # bad magic
])
def test_violations_become_events_and_framing_survives(data, fatal):
    conn = GiopConnection(Role.SERVER)
    conn.receive_data(data + encode_message(request(1)))
    events = drain(conn)
    assert isinstance(events[0], ProtocolViolation)
    if fatal:
        assert events[0].answer is Answer.SEND_MESSAGE_ERROR_AND_CLOSE
        assert isinstance(events[1], ConnectionClosed) and not events[1].clean
    else:
        assert events[0].answer is Answer.SEND_MESSAGE_ERROR
        assert events[0].reply[:4] == b"GIOP" and events[0].reply[7] == 6
        assert isinstance(events[1], MessageReceived)     # the next message still decodes


def test_unsupported_version_is_answered_at_our_highest_and_closes():
    conn = GiopConnection(Role.SERVER)
    conn.receive_data(b"GIOP\x01\x09\x00\x00\x00\x00\x00\x00")
    ev, closed = drain(conn)
    assert isinstance(ev.error, UnsupportedVersionError)
    assert ev.answer is Answer.SEND_MESSAGE_ERROR_AND_CLOSE
    assert ev.reply == message_error_bytes((1, 2))
    assert isinstance(closed, ConnectionClosed)
    assert conn.next_event() is closed
    # A 1.3 message on a connection that speaks up to 1.2 gets the same answer;
    # one that speaks 1.3 decodes it.
    msg13 = encode_message(request(1, version=(1, 3)))
    conn = GiopConnection(Role.SERVER)
    conn.receive_data(msg13)
    assert drain(conn)[0].reply == message_error_bytes((1, 2))
    conn = GiopConnection(Role.SERVER, version=(1, 3))
    conn.receive_data(msg13)
    assert drain(conn)[0].message.version == (1, 3)


def test_limits():
    conn = GiopConnection(Role.SERVER, max_message_size=1000)
    conn.receive_data(encode_header((1, 2), False, 0, 0xFFFFFFF0))
    ev = drain(conn)[0]
    assert isinstance(ev, ProtocolViolation) and "exceeds the limit" in str(ev.error)
    # Reassembly size: the request is refused and its later fragments dropped.
    # (lenient: these fragments are not multiples of 8, which is another test's subject)
    conn = GiopConnection(Role.SERVER, max_reassembly_size=40, lenient=True)
    conn.receive_data(first_part(1, body=b"x" * 8) + frag12(1, b"y" * 40, True) +
                      frag12(1, b"z", False) + encode_message(request(2)))
    events = drain(conn)
    assert isinstance(events[0], ProtocolViolation) and "exceeds 40" in str(events[0].error)
    assert [e.message.request_id for e in events[1:]] == [2]
    # Count of pending fragmented messages.
    conn = GiopConnection(Role.SERVER, max_pending_fragmented=2, lenient=True)
    conn.receive_data(first_part(1) + first_part(2) + first_part(3) + frag12(3, b"", False))
    events = drain(conn)
    assert len(events) == 1 and isinstance(events[0], ProtocolViolation)
    assert events[0].request_id == 3


def test_12_fragment_not_multiple_of_8():
    # Every 1.2 fragment but the last is a multiple of 8 bytes (9.4.9): strict
    # refuses the message (and drops its later fragments quietly), lenient warns.
    data = first_part(1, body=b"x" * 5) + frag12(1, b"y", False) + encode_message(request(2))
    conn = GiopConnection(Role.SERVER)
    conn.receive_data(data)
    events = drain(conn)
    assert isinstance(events[0], ProtocolViolation) and "multiple of 8" in str(events[0].error)
    assert events[0].reply and [e.message.request_id for e in events[1:]] == [2]
    conn = GiopConnection(Role.SERVER, lenient=True)
    conn.receive_data(data)
    events = drain(conn)
    assert [e.message.request_id for e in events] == [1, 2]
    assert any(w.code == "fragment-not-multiple-of-8" for w in events[0].warnings)


def test_eof_inside_a_message():
    conn = GiopConnection(Role.CLIENT)
    conn.receive_data(encode_message(Reply(request_id=1))[:15])
    assert conn.next_event() is NEED_DATA
    conn.receive_data(b"")
    ev, closed = drain(conn)
    assert ev.answer is Answer.CLOSE and not closed.clean


def test_client_books_and_roles():
    client = GiopConnection(Role.CLIENT)
    server = GiopConnection(Role.SERVER)
    rid = client.next_request_id()
    server.receive_data(client.send(request(rid)))
    server.receive_data(client.send(LocateRequest(request_id=rid + 1, target=KeyAddr(b"k"))))
    received = drain(server)
    assert [e.message.request_id for e in received] == [rid, rid + 1]
    with pytest.raises(LocalProtocolError):
        client.send(request(rid))                       # still outstanding
    with pytest.raises(LocalProtocolError):
        server.send(Reply(request_id=999))              # never received
    with pytest.raises(LocalProtocolError):
        client.send(Reply(request_id=rid))              # clients do not reply
    reply = server.send(Reply(request_id=rid, reply_status=ReplyStatus.SYSTEM_EXCEPTION,
                              system_exception=sysexc.BAD_OPERATION(0x4F4D0001, 1)))
    client.receive_data(reply + server.send(LocateReply(request_id=rid + 1)))
    events = drain(client)
    assert isinstance(events[0].message.system_exception, sysexc.BAD_OPERATION)
    assert not client.outstanding and not client.outstanding_locates
    # A duplicate reply is to be discarded; a Request to a client is refused.
    client.receive_data(reply + encode_message(request(5)))
    dup, wrong = drain(client)
    assert dup.answer is Answer.DISCARD and wrong.answer is Answer.SEND_MESSAGE_ERROR
    # Bidirectional GIOP lets a client receive requests.
    bidir = GiopConnection(Role.CLIENT, bidirectional=True)
    bidir.receive_data(encode_message(request(5)))
    assert isinstance(drain(bidir)[0], MessageReceived)
    # CloseConnection ends the stream.
    client.receive_data(server.send(CloseConnection()))
    assert isinstance(drain(client)[0], MessageReceived)
    assert isinstance(client.next_event(), ConnectionClosed)
    with pytest.raises(LocalProtocolError):
        client.send(request(77))


def test_server_duplicate_outstanding_request_id():
    conn = GiopConnection(Role.SERVER)
    conn.receive_data(encode_message(request(1)) + encode_message(request(1)))
    ok, dup = drain(conn)
    assert isinstance(ok, MessageReceived) and dup.answer is Answer.SEND_MESSAGE_ERROR


def test_send_fragments_and_receive_them():
    client = GiopConnection(Role.CLIENT)
    server = GiopConnection(Role.SERVER)
    body = bytes(range(200)) * 5
    data = client.send(request(8, body), fragment_size=128)
    server.receive_data(data)
    (ev,) = drain(server)
    assert ev.message.body == body and ev.fragments > 5


def test_fragment_byte_order_change_is_reported():
    conn = GiopConnection(Role.SERVER)
    conn.receive_data(first_part(1, body=b"12345678") + frag12(1, b"tail", False, little=True))
    (ev,) = drain(conn)
    assert [w.code for w in ev.warnings] == ["fragment-byte-order"]


@pytest.mark.parametrize("little", [False, True])
def test_11_fragment_data_is_aligned_from_its_own_fragment(little):
    # GIOP 1.1 (9.4.9): "the data in a fragment is marshaled with alignment
    # relative to its position in the fragment". Arguments: octet 7, double 2.5,
    # octet 9, long long -3, built by hand across three messages.
    import struct
    from pycdr.codec import tc
    from pycdr.codec.marshal import read_value
    end = "<" if little else ">"
    first = encode_message(request(5, version=(1, 1), little=little, body=b"\x07",
                                   more_fragments=True))
    # Fragment 1: data starts at 12; the double is 8-aligned from this fragment's
    # start (4 pad bytes), then the octet; the fragment ends there.
    f1 = encode_header((1, 1), little, 7, 13, more_fragments=True) + \
        b"\xaa" * 4 + struct.pack(end + "d", 2.5) + b"\x09"
    # Fragment 2: the long long at 16 (4 pad bytes after the 12-byte header).
    f2 = encode_header((1, 1), little, 7, 12) + bytes(4) + struct.pack(end + "q", -3)
    for chunks in ([first + f1 + f2], [first, f1, f2]):
        conn = GiopConnection(Role.SERVER)
        for c in chunks:
            conn.receive_data(c)
        (event,) = drain(conn)
        assert event.fragments == 3
        r = event.message.body_reader()
        assert [read_value(r, t) for t in (tc.octet, tc.double, tc.octet, tc.longlong)] == \
            [7, 2.5, 9, -3]
        assert r.pos == len(event.message.body)
