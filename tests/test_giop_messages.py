"""GIOP messages: hand-written bytes for every type x version x byte order,
round trips, the canonical vectors, and malformed input."""

import json
import struct
import zlib

import pytest

from pycdr.codec import tc
from pycdr.errors import (DecodeError, GIOPError, InvalidValueError, TruncatedError,
                          UnsupportedVersionError)
from pycdr.giop import sysexc
from pycdr.giop.header import compress_to_ziop, parse_header
from pycdr.giop.messages import (CancelRequest, CloseConnection, Fragment, KeyAddr,
                                 LocateReply, LocateRequest, LocateStatus, MessageError,
                                 ProfileAddr, ReferenceAddr, Reply, ReplyStatus, Request,
                                 decode_message, encode_message, fragment_message,
                                 split_messages)
from pycdr.giop.service_contexts import (BiDirIIOPContext, CodeSetsContext,
                                         ExceptionDetailMessage, FTGroupVersion, FTRequest,
                                         InvocationPolicies, RawServiceContext,
                                         RMICustomMaxStreamFormatContext, RTCorbaPriority,
                                         SendingContextRunTime, SunORBVersionContext,
                                         context_name)
from pycdr.codec.ior import IOR, TaggedProfile

VERSIONS = [(1, 0), (1, 1), (1, 2), (1, 3)]


# --- a tiny independent byte builder (not pycdr's writer) -----------------------
class B:
    """Builds expected bytes by hand: explicit padding, explicit byte order."""

    def __init__(self, little):
        self.p = "<" if little else ">"
        self.b = bytearray()

    def pad(self, n):
        while len(self.b) % n:
            self.b.append(0)
        return self

    def ul(self, v):
        self.pad(4)
        self.b += struct.pack(self.p + "I", v)
        return self

    def us(self, v):
        self.pad(2)
        self.b += struct.pack(self.p + "H", v)
        return self

    def o(self, *vals):
        self.b += bytes(vals)
        return self

    def raw(self, data):
        self.b += data
        return self

    def seq(self, data):
        return self.ul(len(data)).raw(data)

    def s(self, text):
        return self.ul(len(text) + 1).raw(text.encode() + b"\0")

    def header(self, version, mtype, flags_extra=0):
        flags = (1 if self.p == "<" else 0) | flags_extra
        self.b += b"GIOP" + bytes([version[0], version[1], flags, mtype]) + b"\0\0\0\0"
        return self

    def done(self):
        struct.pack_into(self.p + "I", self.b, 8, len(self.b) - 12)
        return bytes(self.b)


def request_bytes(v, little, body=b""):
    b = B(little)
    if v >= (1, 2):
        b.header(v, 0).ul(7).o(3, 0, 0, 0).us(0).seq(b"key").s("op").ul(0)
        if body:
            b.pad(8)
    else:
        b.header(v, 0).ul(0).ul(7).o(1)
        if v == (1, 1):
            b.o(0, 0, 0)
        b.seq(b"key").s("op").seq(b"")
    return b.raw(body).done()


def reply_bytes(v, little, body=b""):
    b = B(little).header(v, 1)
    if v >= (1, 2):
        b.ul(7).ul(0).ul(0)
        if body:
            b.pad(8)
    else:
        b.ul(0).ul(7).ul(0)
    return b.raw(body).done()


def cases():
    for v in VERSIONS:
        for little in (False, True):
            kw = dict(version=v, little=little)
            yield (Request(request_id=7, target=KeyAddr(b"key"), operation="op", **kw),
                   request_bytes(v, little))
            yield (Request(request_id=7, target=KeyAddr(b"key"), operation="op",
                           body=b"\x01\x02\x03", **kw),
                   request_bytes(v, little, b"\x01\x02\x03"))
            yield (Reply(request_id=7, **kw), reply_bytes(v, little))
            yield (Reply(request_id=7, body=b"\x09", **kw), reply_bytes(v, little, b"\x09"))
            yield CancelRequest(request_id=9, **kw), B(little).header(v, 2).ul(9).done()
            lr = B(little).header(v, 3).ul(5)
            lr = lr.us(0).seq(b"k").done() if v >= (1, 2) else lr.seq(b"k").done()
            yield LocateRequest(request_id=5, target=KeyAddr(b"k"), **kw), lr
            yield (LocateReply(request_id=5, locate_status=LocateStatus.OBJECT_HERE, **kw),
                   B(little).header(v, 4).ul(5).ul(1).done())
            yield CloseConnection(**kw), B(little).header(v, 5).done()
            yield MessageError(**kw), B(little).header(v, 6).done()
            if v >= (1, 2):
                yield (Fragment(request_id=7, data=b"abcd", **kw),
                       B(little).header(v, 7).ul(7).raw(b"abcd").done())
            elif v == (1, 1):
                yield Fragment(data=b"abcd", **kw), B(little).header(v, 7).raw(b"abcd").done()


CASES = list(cases())


@pytest.mark.parametrize("msg,data", CASES,
                         ids=[f"{m.type_name}-{m.version}-{'LE' if m.little else 'BE'}-{i}"
                              for i, (m, _) in enumerate(CASES)])
def test_hand_written_bytes(msg, data):
    assert encode_message(msg) == data
    decoded, warnings = decode_message(data)
    assert decoded == msg
    assert warnings == []
    json.dumps(decoded.to_json())


def test_canonical_scanner_probe():
    probe = bytes.fromhex("47494f50010200030000001700000002000000000000000b"
                          "4e616d6553657276696365")
    msg, warnings = decode_message(probe)
    assert msg == LocateRequest(version=(1, 2), request_id=2, target=KeyAddr(b"NameService"))
    assert msg.offsets == {"request_id": 12, "target": 16, "target.object_key": 20}
    assert msg.padding == [(18, b"\0\0")]
    assert encode_message(msg) == probe
    assert warnings == []


@pytest.mark.parametrize("hexdata,version,little", [
    ("47494f500100000300000013000000010000000b4e616d6553657276696365", (1, 0), False),
    ("47494f500101010313000000020000000b0000004e616d6553657276696365", (1, 1), True),
    ("47494f50010301031700000004000000000000000b0000004e616d6553657276696365", (1, 3), True),
])
def test_locate_request_vectors(hexdata, version, little):
    data = bytes.fromhex(hexdata)
    msg, _ = decode_message(data)
    assert (msg.version, msg.little, msg.object_key) == (version, little, b"NameService")
    assert encode_message(msg) == data


def test_empty_body_12_request_and_reply_have_no_padding():
    req = bytes.fromhex("47494f50010200000000002000000001030000000000000000000000000000065f"
                        "69735f6100000000000000")
    msg, _ = decode_message(req)
    assert msg.operation == "_is_a" and msg.body == b"" and msg.body_offset == 44
    assert encode_message(msg) == req
    assert len(req) == 44          # 44 is not a multiple of 8: no pad was added
    rep = bytes.fromhex("47494f50010201010c000000010000000000000000000000")
    msg, _ = decode_message(rep)
    assert msg.reply_status == ReplyStatus.NO_EXCEPTION and msg.body == b""
    assert encode_message(msg) == rep


def test_12_body_is_aligned_to_8_and_body_reader_works():
    msg = Request(request_id=1, operation="echo", target=KeyAddr(b"k"))
    data = encode_message(msg, write_body=lambda w: (w.write_double(1.5), w.write_string("x")))
    decoded, _ = decode_message(data)
    assert decoded.body_offset % 8 == 0
    r = decoded.body_reader()
    assert r.read_double() == 1.5 and r.read_string() == "x"


def test_11_body_reader_keeps_message_alignment():
    msg = Request(version=(1, 1), request_id=1, operation="ech", target=KeyAddr(b"k"))
    data = encode_message(msg, write_body=lambda w: w.write_double(2.25))
    decoded, _ = decode_message(data)
    assert decoded.body_offset % 8 != 0       # pad bytes are part of the body
    assert decoded.body_reader().read_double() == 2.25


def test_header_claims_more_bytes_than_exist():
    data = request_bytes((1, 2), False, b"12345")
    with pytest.raises(TruncatedError) as e:
        decode_message(data[:-3])
    assert e.value.offset == 8
    msg, warnings = decode_message(data[:-3], lenient=True)
    assert msg.operation == "op" and warnings[0].code == "message-truncated"
    with pytest.raises(TruncatedError):
        decode_message(bytes.fromhex("47494f5001000000000000ff"))
    with pytest.raises(TruncatedError):
        decode_message(b"GIOP\x01\x02")


def test_bad_magic_and_versions():
    with pytest.raises(GIOPError) as e:
        decode_message(b"GIOX\x01\x02\x00\x05\x00\x00\x00\x00")
    assert "magic" in str(e.value)
    for major, minor in ((1, 4), (1, 9), (2, 0), (0, 9)):
        with pytest.raises(UnsupportedVersionError) as e:
            decode_message(b"GIOP" + bytes([major, minor, 0, 5]) + bytes(4))
        assert e.value.offset == 4


def test_violations_strict_and_lenient():
    # A GIOP 1.0 Fragment.
    frag10 = b"GIOP\x01\x00\x00\x07\x00\x00\x00\x02ab"
    with pytest.raises(GIOPError):
        decode_message(frag10)
    msg, warnings = decode_message(frag10, lenient=True)
    assert [w.code for w in warnings] == ["fragment-in-1.0"]
    # more-fragments on a CancelRequest; on a 1.1 LocateRequest.
    cancel = B(False).header((1, 2), 2, 0x02).ul(1).done()
    with pytest.raises(GIOPError, match="may not be fragmented"):
        decode_message(cancel)
    locate11 = B(False).header((1, 1), 3, 0x02).ul(1).seq(b"k").done()
    with pytest.raises(GIOPError):
        decode_message(locate11)
    # 1.2 LocateRequest may fragment.
    locate12 = B(False).header((1, 2), 3, 0x02).ul(1).us(0).seq(b"k").done()
    assert decode_message(locate12)[0].more_fragments
    # Reserved flag bits; 1.0 byte_order octet 2.
    with pytest.raises(GIOPError, match="reserved flag"):
        decode_message(B(False).header((1, 2), 5, 0x20).done())
    with pytest.raises(GIOPError, match="byte_order"):
        decode_message(b"GIOP\x01\x00\x02\x05\x00\x00\x00\x00")
    # Unknown message type; trailing bytes after a CancelRequest.
    with pytest.raises(GIOPError, match="unknown message type"):
        decode_message(B(False).header((1, 2), 8).done())
    trailing = B(False).header((1, 2), 2).ul(1).raw(b"zz").done()
    with pytest.raises(GIOPError):
        decode_message(trailing)
    msg, warnings = decode_message(trailing, lenient=True)
    assert msg.request_id == 1 and warnings[0].code == "trailing-bytes"
    # Reply status 4 in GIOP 1.1; bad TargetAddress discriminator.
    with pytest.raises(InvalidValueError):
        decode_message(B(False).header((1, 1), 1).ul(0).ul(1).ul(4).done())
    with pytest.raises(InvalidValueError, match="TargetAddress"):
        decode_message(B(False).header((1, 2), 3).ul(1).us(7).done())


def test_hostile_lengths_do_not_allocate():
    # A service context count of 2**32-1 with no data behind it.
    data = B(False).header((1, 2), 1).ul(1).ul(0).ul(0xFFFFFFFF).done()
    with pytest.raises(TruncatedError):
        decode_message(data)
    data = B(False).header((1, 0), 0).ul(0).ul(1).o(1).ul(0xFFFFFFF0).done()
    with pytest.raises(TruncatedError):
        decode_message(data)


def test_reply_statuses_round_trip():
    ior = IOR("IDL:X:1.0", (TaggedProfile(0, b"\x00\x01\x02\x00\x00"),))
    for v in VERSIONS:
        for little in (False, True):
            kw = dict(version=v, little=little, request_id=3)
            msgs = [
                Reply(reply_status=ReplyStatus.SYSTEM_EXCEPTION,
                      system_exception=sysexc.OBJECT_NOT_EXIST(0x4F4D0001, 1), **kw),
                Reply(reply_status=ReplyStatus.LOCATION_FORWARD, forward=ior, **kw),
            ]
            if v >= (1, 2):
                msgs += [
                    Reply(reply_status=ReplyStatus.LOCATION_FORWARD_PERM, forward=ior, **kw),
                    Reply(reply_status=ReplyStatus.NEEDS_ADDRESSING_MODE,
                          addressing_disposition=1, **kw),
                    LocateReply(locate_status=LocateStatus.OBJECT_FORWARD_PERM, forward=ior, **kw),
                    LocateReply(locate_status=LocateStatus.LOC_SYSTEM_EXCEPTION,
                                system_exception=sysexc.TRANSIENT(0x41540002, 2), **kw),
                    LocateReply(locate_status=LocateStatus.LOC_NEEDS_ADDRESSING_MODE,
                                addressing_disposition=2, **kw),
                ]
            msgs.append(LocateReply(locate_status=LocateStatus.OBJECT_FORWARD, forward=ior, **kw))
            for m in msgs:
                data = encode_message(m)
                d, warnings = decode_message(data)
                assert (d.system_exception, d.forward, d.addressing_disposition) == \
                    (m.system_exception, m.forward, m.addressing_disposition)
                assert encode_message(d) == data


def test_system_exception_fields():
    b = B(False).header((1, 2), 1).ul(4).ul(2).ul(0).pad(8)
    b.s("IDL:omg.org/CORBA/BAD_OPERATION:1.0").ul(0x4F4D0002).ul(1)
    msg, _ = decode_message(b.done())
    exc = msg.system_exception
    assert isinstance(exc, sysexc.BAD_OPERATION) and isinstance(exc, sysexc.SystemException)
    assert exc.minor == 0x4F4D0002 and exc.vmcid == sysexc.OMG_VMCID and exc.minor_code == 2
    assert exc.vendor == "OMG" and exc.completed == sysexc.CompletionStatus.COMPLETED_NO
    assert msg.to_json()["system_exception"]["name"] == "BAD_OPERATION"
    # A non-standard id and a bad completion status.
    b = B(False).header((1, 2), 1).ul(4).ul(2).ul(0).pad(8)
    b.s("IDL:acme/WEIRD:1.0").ul(0x41540063).ul(7)
    with pytest.raises(InvalidValueError):
        decode_message(b.done())
    msg, warnings = decode_message(b.done(), lenient=True)
    assert msg.system_exception.repo_id == "IDL:acme/WEIRD:1.0"
    assert msg.system_exception.vendor == "omniORB" and warnings[0].code == "bad-completion-status"


def test_every_standard_exception_has_its_repository_id():
    assert len(sysexc.STANDARD_EXCEPTIONS) >= 39
    assert sysexc.MARSHAL.repo_id == "IDL:omg.org/CORBA/MARSHAL:1.0"
    for rid, cls in sysexc.STANDARD_EXCEPTIONS.items():
        assert rid == f"IDL:omg.org/CORBA/{cls.__name__}:1.0"
        assert type(sysexc.system_exception(rid, 1, 0)) is cls


def test_user_exception_decoded_by_typecode():
    exc_tc = tc.exception("IDL:Test/Oops:1.0", "Oops", [("code", tc.long), ("why", tc.string)])
    b = B(True).header((1, 2), 1).ul(4).ul(1).ul(0).pad(8)
    b.s("IDL:Test/Oops:1.0").ul(42).s("bad")
    data = b.done()
    msg, _ = decode_message(data)
    assert msg.exception_id == "IDL:Test/Oops:1.0" and msg.user_exception is None
    msg, _ = decode_message(data, user_exceptions=[exc_tc])
    assert msg.user_exception.code == 42 and msg.user_exception.why == "bad"
    msg, _ = decode_message(data, user_exceptions={"IDL:Test/Oops:1.0": exc_tc})
    assert msg.user_exception.code == 42


def test_locate_reply_12_body_unpadded_and_padded():
    ior = IOR("IDL:weblogic/corba/cos/naming/NamingContextAny:1.0",
              (TaggedProfile(0, b"\x00\x01\x02\x00" + bytes(8)),))
    msg = LocateReply(request_id=2, locate_status=LocateStatus.OBJECT_FORWARD, forward=ior)
    data = encode_message(msg)
    assert data[20:24] == struct.pack(">I", len(ior.type_id) + 1)   # IOR starts at 20
    d, warnings = decode_message(data, lenient=True)
    assert d.forward == ior and d.body_padding == 0
    assert [w.code for w in warnings] == ["locate-reply-body-unaligned"]
    assert all(w.severity == "note" for w in warnings)
    # Wireshark's padded layout: accepted in both modes, reported when lenient.
    padded = bytearray(data[:20] + bytes(4) + data[20:])
    struct.pack_into(">I", padded, 8, len(padded) - 12)
    d, warnings = decode_message(bytes(padded))
    assert d.forward == ior and d.body_padding == 4
    d, warnings = decode_message(bytes(padded), lenient=True)
    assert [w.code for w in warnings] == ["locate-reply-body-aligned"]
    # A body on a status that has none.
    bad = B(False).header((1, 2), 4).ul(1).ul(1).ul(0).done()
    with pytest.raises(GIOPError):
        decode_message(bad)


def test_target_addresses_12():
    ior = IOR("IDL:X:1.0", (TaggedProfile(0, b"\x00abc"), TaggedProfile(1, b"\x00")))
    for target in (KeyAddr(b"\x00\xffkey"), ProfileAddr(TaggedProfile(0, b"\x00\x01")),
                   ReferenceAddr(1, ior)):
        for cls in (Request, LocateRequest):
            m = cls(request_id=1, target=target)
            d, _ = decode_message(encode_message(m))
            assert d.target == target
    bad = encode_message(LocateRequest(request_id=1, target=ReferenceAddr(5, ior)))
    with pytest.raises(InvalidValueError, match="selected_profile_index"):
        decode_message(bad)
    with pytest.raises(Exception):
        encode_message(Request(version=(1, 1), target=ProfileAddr(TaggedProfile(0, b""))))


def test_service_contexts_typed_and_raw():
    ior = IOR("IDL:omg.org/SendingContext/CodeBase:1.0", ())
    contexts = [CodeSetsContext(char_data=0x05010001, wchar_data=0x00010109),
                BiDirIIOPContext(listen_points=[("127.0.0.1", 2809)]),
                SendingContextRunTime(ior=ior),
                InvocationPolicies(policies=[(40, b"\x00\x01")]),
                RTCorbaPriority(priority=-3),
                FTGroupVersion(object_group_ref_version=9),
                FTRequest(client_id="c", retention_id=4, expiration_time=2 ** 40),
                ExceptionDetailMessage(message="oops \u00e9"),
                RMICustomMaxStreamFormatContext(max_stream_format_version=2),
                SunORBVersionContext(orb_version=20),
                RawServiceContext(id=0x4A414301, data=b"\x00\x01\x02")]
    for v in ((1, 1), (1, 2)):
        for little in (False, True):
            m = Request(version=v, little=little, request_id=1, operation="op",
                        service_contexts=contexts, target=KeyAddr(b"k"))
            data = encode_message(m)
            d, warnings = decode_message(data)
            assert d.service_contexts == contexts and warnings == []
            assert encode_message(d) == data
            json.dumps(d.to_json())
    assert context_name(0x4E454F00) == "Sun ORB version (NEO)"
    assert context_name(17) == "RMICustomMaxStreamFormat"
    # A malformed typed context: strict raises, lenient keeps it raw.
    m = Request(request_id=1, operation="op", target=KeyAddr(b""),
                service_contexts=[RawServiceContext(id=1, data=b"\x00\x00")])
    data = encode_message(m)
    with pytest.raises(DecodeError):
        decode_message(data)
    d, warnings = decode_message(data, lenient=True)
    assert d.service_contexts == [RawServiceContext(id=1, data=b"\x00\x00")]
    assert warnings[0].code == "bad-encapsulation"


def test_to_json_has_offsets_padding_and_warnings():
    data = request_bytes((1, 2), False, b"\x01")
    nonzero = bytearray(data)
    pad_at = decode_message(data)[0].offsets["body"] - 1
    nonzero[pad_at] = 0xAA
    d, warnings = decode_message(bytes(nonzero), lenient=True)
    j = json.loads(json.dumps(d.to_json()))
    assert j["type"] == "Request" and j["version"] == "1.2"
    assert j["offsets"]["operation"] == 32 and j["offsets"]["body"] == pad_at + 1
    assert any(p["bytes"].endswith("aa") for p in j["padding"])
    assert [w["code"] for w in j["warnings"]] == ["nonzero-padding"]


def test_ziop_is_decompressed():
    body = bytes(range(200)) * 3
    plain = encode_message(Request(request_id=5, operation="big", target=KeyAddr(b"k"),
                                   body=body))
    z = compress_to_ziop(plain)
    assert z[:4] == b"ZIOP" and len(z) < len(plain)
    d, warnings = decode_message(z)
    assert d.body == body and d.ziop.original_length == len(plain) - 12
    assert parse_header(z).is_ziop
    # A ZIOP message whose data is not zlib.
    bad = bytearray(z)
    bad[-5:] = b"\xff" * 5
    with pytest.raises(DecodeError):
        decode_message(bytes(bad[:24]) + zlib.compress(b"")[:1])


def test_split_messages_and_fragment_message():
    stream = request_bytes((1, 2), False) + reply_bytes((1, 0), True) + \
        B(False).header((1, 2), 5).done()
    assert [h.msg_type for _, h in split_messages(stream)] == [0, 1, 5]
    with pytest.raises(TruncatedError):
        list(split_messages(stream[:-1]))
    big = encode_message(Request(request_id=77, operation="x", target=KeyAddr(b"k"),
                                 body=bytes(range(256)) * 2))
    parts = fragment_message(big, 100)
    assert len(parts) > 3 and all(len(p) <= 100 for p in parts)
    assert all(len(p) % 8 == 0 for p in parts[:-1])
    first, _ = decode_message(parts[0])
    assert first.more_fragments
    frags = [decode_message(p)[0] for p in parts[1:]]
    assert all(f.request_id == 77 for f in frags)
    assert [f.more_fragments for f in frags] == [True] * (len(frags) - 1) + [False]
    assert parts[0][12:] + b"".join(f.data for f in frags) == big[12:]
