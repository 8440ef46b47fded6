"""Writing GIOP 1.1 fragments (pycdr.codec.cdr.FragmentingWriter, giop.messages.encode_fragments).

GIOP 1.1 fragment data is aligned relative to its own fragment's start and no primitive is split
between fragments (CORBA 3.x Part 2, 9.4.9), so a 1.1 message is fragmented while it is written.
What the writer produces is read back through the sans-I/O connection's reassembly and
pycdr.codec.cdr.SegmentedReader, which raises on any primitive crossing a fragment boundary, so a
round trip checks both the cut points and the realignment."""

import struct

import pytest
from hypothesis import given, strategies as st

from pycdr.codec import marshal, tc
from pycdr.codec.cdr import FragmentingWriter
from pycdr.errors import EncodeError
from pycdr.giop.connection import GiopConnection, Role
from pycdr.giop.events import MessageReceived
from pycdr.giop.header import MsgType, parse_header
from pycdr.giop.messages import Reply, Request, KeyAddr, encode_fragments, encode_message
from pycdr.codec.typecode import TCKind, resolve
from pycdr.codec.values import class_for

from strategies import typecodes_and_values
from test_properties import SETTINGS

MIXED = tc.struct("IDL:F11/Mixed:1.0", "Mixed", [("c", tc.char), ("ll", tc.longlong),
                                                ("d", tc.double), ("s", tc.short),
                                                ("name", tc.string)])
BODY = tc.struct("IDL:F11/Body:1.0", "Body", [
    ("doubles", tc.sequence(tc.double)), ("records", tc.sequence(MIXED)),
    ("names", tc.sequence(tc.string)), ("octets", tc.sequence(tc.octet)),
    ("wide", tc.wstring), ("big", tc.longdouble)])


def body_value():
    Mixed, Body = class_for(MIXED), class_for(BODY)
    from pycdr.codec.values import LongDouble
    return Body([i * 1.5 for i in range(200)],
                [Mixed("x", -i, i / 3, i % 100, "r" * (i % 7)) for i in range(60)],
                ["abc" * (i % 5) for i in range(30)], bytes(range(256)) * 2,
                "wide \u20ac text", LongDouble.from_float(2.5))


def round_trip(msg, t, value, limit):
    """The fragments of ``msg`` whose body is ``value`` of type ``t``, and the value read back
    from the reassembled message."""
    def write_body(w):
        marshal.write_value(w, t, value)
    data = encode_message(msg, write_body=write_body)
    parts = encode_fragments(msg, data, limit, write_body=write_body)
    role = Role.CLIENT if isinstance(msg, Reply) else Role.SERVER
    conn = GiopConnection(role, version=(1, 1))
    if role is Role.CLIENT:
        conn.outstanding.add(msg.request_id)
    conn.receive_data(b"".join(parts))
    event = conn.next_event()
    assert isinstance(event, MessageReceived), event
    return parts, marshal.read_value(event.message.body_reader(), t)


@pytest.mark.parametrize("little", [False, True], ids=["big", "little"])
@pytest.mark.parametrize("limit", [24, 40, 100, 1000, 64 * 1024])
def test_reply_round_trip_and_fragment_sizes(little, limit):
    value = body_value()
    msg = Reply(version=(1, 1), little=little, request_id=7)
    parts, back = round_trip(msg, BODY, value, limit)
    assert back == value
    headers = [parse_header(p) for p in parts]
    assert [h.msg_type for h in headers] == [MsgType.Reply] + [MsgType.Fragment] * (len(parts) - 1)
    assert [h.more_fragments for h in headers] == [True] * (len(parts) - 1) + [False]
    assert all(h.version == (1, 1) and h.little == little for h in headers)
    assert all(len(p) == 12 + h.size for p, h in zip(parts, headers))
    if limit == 64 * 1024:
        assert len(parts) == 1                       # it fits: sent whole, not re-encoded
    else:
        # Nothing runs over but a long double that cannot fit even an empty 24-byte fragment.
        over = [len(p) for p in parts if len(p) > limit]
        assert not over or (limit == 24 and over == [32])    # 12 + 4 padding + 16
        assert len(parts) > 1


def test_request_fragments_round_trip():
    msg = Request(version=(1, 1), little=True, request_id=3, operation="echo_body",
                  target=KeyAddr(b"key"))
    parts, back = round_trip(msg, BODY, body_value(), 128)
    assert back == body_value() and len(parts) > 10


def test_doubles_are_realigned_in_each_fragment():
    """A 40-byte limit: the first message holds the 1.1 reply header (12 bytes after the GIOP
    header), the count and one double at 32; each Fragment then holds 4 bytes of padding (data
    starts at 12, a double needs 16) and three doubles."""
    t = tc.sequence(tc.double)
    msg = Reply(version=(1, 1), request_id=1)
    parts, back = round_trip(msg, t, [1.0, 2.0, 3.0, 4.0, 5.0], 40)
    assert back == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert [len(p) for p in parts] == [40, 40, 24]
    assert parts[0][24:28] == struct.pack(">I", 5) and parts[0][28:32] == bytes(4)
    assert parts[0][32:40] == struct.pack(">d", 1.0)
    assert parts[1][12:16] == bytes(4) and parts[1][16:40] == struct.pack(">3d", 2.0, 3.0, 4.0)
    assert parts[2][12:16] == bytes(4) and parts[2][16:] == struct.pack(">d", 5.0)


def test_octets_are_cut_anywhere_and_wide_text_between_units():
    octets = tc.sequence(tc.octet)
    parts, back = round_trip(Reply(version=(1, 1), request_id=1), octets, bytes(100), 37)
    assert back == bytes(100) and [len(p) for p in parts] == [32] * 5 + [28]   # 8-multiples
    msg = Reply(version=(1, 1), request_id=2, little=True)
    parts, back = round_trip(msg, tc.wstring, "\u20ac" * 20, 31)
    assert back == "\u20ac" * 20
    assert all((len(p) - 12) % 2 == 0 for p in parts[1:])   # UTF-16 units are never split


BASE = tc.value("IDL:F11/Base:1.0", "Base", tc.VM_NONE, None, [("a", tc.long)])
DERIVED = tc.value("IDL:F11/Derived:1.0", "Derived", tc.VM_TRUNCATABLE, BASE,
                   [("b", tc.double), ("text", tc.string)])


@pytest.mark.parametrize("limit", [24, 48, 90])
def test_chunked_values_and_anys_across_fragments(limit):
    """Chunk lengths and value indirections count stream bytes, not Fragment headers; a
    TypeCode written in place (inside an any) is never cut, its alignment being its own."""
    t = tc.struct("IDL:F11/Holder:1.0", "Holder", [
        ("values", tc.sequence(DERIVED)), ("anys", tc.sequence(tc.any))])
    Derived = class_for(DERIVED)
    shared = Derived(1, 0.5, "shared")
    from pycdr.codec.values import Any
    value = class_for(t)([shared, Derived(2, 1.5, "x" * 30), shared, None],
                         [Any(MIXED, class_for(MIXED)("q", 1, 2.0, 3, "any")),
                          Any(tc.sequence(tc.double), [1.0, 2.0, 3.0])])
    parts, back = round_trip(Reply(version=(1, 1), request_id=5), t, value, limit)
    assert back == value and back.values[0] is back.values[2]
    assert len(parts) > 3


@SETTINGS
@given(typecodes_and_values(), st.booleans(), st.integers(24, 120))
def test_any_type_round_trips_through_11_fragments(tv, little, limit):
    t, value = tv
    parts, back = round_trip(Reply(version=(1, 1), little=little, request_id=9), t, value, limit)
    assert back == value
    if not _holds_typecodes(t) and limit >= 36:
        assert all(len(p) <= limit for p in parts)


def _holds_typecodes(t, seen=None) -> bool:
    seen = set() if seen is None else seen
    t = resolve(t)
    if id(t) in seen:
        return False
    seen.add(id(t))
    k = t.kind()
    if k in (TCKind.tk_any, TCKind.tk_TypeCode):
        return True
    if k in (TCKind.tk_struct, TCKind.tk_union, TCKind.tk_except):
        return any(_holds_typecodes(t.member_type(i), seen) for i in range(t.member_count()))
    if k in (TCKind.tk_sequence, TCKind.tk_array, TCKind.tk_alias):
        return _holds_typecodes(t.content_type(), seen)
    return False


def test_versions_and_messages_that_are_not_cut():
    request = Request(version=(1, 0), request_id=1, operation="op", target=KeyAddr(b"k"),
                      body=bytes(200))
    data = encode_message(request)
    assert encode_fragments(request, data, 64) == [data]      # GIOP 1.0 has no fragments
    with pytest.raises(EncodeError):
        FragmentingWriter(64, version=(1, 2))
    with pytest.raises(EncodeError):
        FragmentingWriter(20, version=(1, 1))
