"""The ORB's fast paths for common GIOP 1.2/1.3 Request and Reply headers write the
same bytes as the general encoder, and step aside for anything uncommon."""

import itertools

import pytest

from pycdr.errors import EncodeError
from pycdr.giop.messages import encoding
from pycdr.giop.messages import (KeyAddr, ProfileAddr, Reply, ReplyStatus, Request,
                                 decode_message, encode_message)
from pycdr.giop.service_contexts import CodeSetsContext
from pycdr.codec.ior import TaggedProfile


def general_encoding(monkeypatch, msg, **kwargs):
    with monkeypatch.context() as m:
        m.setattr(encoding, "_pack_request_12", lambda w, msg: False)
        m.setattr(encoding, "_pack_reply_12", lambda w, msg: False)
        return encode_message(msg, **kwargs)


def requests():
    for version, little, key, operation, body, flags in itertools.product(
            ((1, 2), (1, 3)), (False, True), (b"", b"k", b"ke", b"key", b"TTCP"),
            ("x", "ab", "abc", "echo_long"), (b"", b"\1\2\3"), (0, 3)):
        yield Request(version=version, little=little, request_id=0xFFFFFFFF,
                      response_flags=flags, target=KeyAddr(key), operation=operation,
                      body=body)


def replies():
    for version, little, status, body in itertools.product(
            ((1, 2), (1, 3)), (False, True), (0, ReplyStatus.NO_EXCEPTION, 1), (b"", b"\1")):
        yield Reply(version=version, little=little, request_id=9, reply_status=status,
                    body=body)


def test_common_headers_are_packed_as_the_general_encoder_writes_them(monkeypatch):
    packed = []
    real_request, real_reply = encoding._pack_request_12, encoding._pack_reply_12

    def recording(real):
        def pack(w, msg):
            packed.append(real(w, msg))
            return packed[-1]
        return pack
    monkeypatch.setattr(encoding, "_pack_request_12", recording(real_request))
    monkeypatch.setattr(encoding, "_pack_reply_12", recording(real_reply))
    count = 0
    for msg in itertools.chain(requests(), replies()):
        data = encode_message(msg)
        assert data == general_encoding(monkeypatch, msg)
        if msg.msg_type == Request.msg_type or msg.reply_status == 0:
            decoded, _ = decode_message(data)      # (a USER_EXCEPTION body needs an id)
            assert decoded == msg
        count += 1
    assert packed == [True] * count and count == 344


@pytest.mark.parametrize("uncommon", [
    Request(request_id=1, target=KeyAddr(b"k"), operation="op",
            service_contexts=[CodeSetsContext(char_data=0x05010001, wchar_data=0x00010109)]),
    Request(request_id=1, target=ProfileAddr(TaggedProfile(0, b"\0\1\2")), operation="op"),
    Request(request_id=1, target=KeyAddr(b"k"), operation="\u00e9t\u00e9"),
    Request(request_id=1, target=KeyAddr(memoryview(b"key")), operation="op"),
    Reply(request_id=3, service_contexts=[CodeSetsContext(char_data=0x05010001,
                                                          wchar_data=0x00010109)]),
    Reply(request_id=3, reply_status=7),
])
def test_uncommon_headers_take_the_general_encoder(monkeypatch, uncommon):
    assert encode_message(uncommon) == general_encoding(monkeypatch, uncommon)


@pytest.mark.parametrize("bad", [
    Request(request_id=1 << 32, target=KeyAddr(b"k"), operation="op"),
    Request(request_id=-1, target=KeyAddr(b"k"), operation="op"),
    Request(request_id=1, response_flags=256, target=KeyAddr(b"k"), operation="op"),
    Request(request_id=1, reserved=b"\0", target=KeyAddr(b"k"), operation="op"),
    Request(request_id=1, target=KeyAddr(b"k"), operation="a\0b"),
    Request(request_id=1, target=KeyAddr("k"), operation="op"),
    Reply(request_id=1 << 32),
])
def test_values_out_of_range_get_the_general_encoders_error(monkeypatch, bad):
    with pytest.raises(EncodeError) as general:
        general_encoding(monkeypatch, bad)
    with pytest.raises(EncodeError) as fast:
        encode_message(bad)
    assert str(fast.value) == str(general.value)
