"""The scapy layer frames GIOP and hands bodies to pycdr's codec."""

from __future__ import annotations

import pytest

pytest.importorskip("scapy")

from scapy.layers.inet import IP, TCP  # noqa: E402

from pycdr.giop.messages import CloseConnection, KeyAddr, Request, encode_message  # noqa: E402
from pycdr.capture.scapy_layer import GIOP  # noqa: E402


@pytest.mark.parametrize("little", [False, True])
def test_build_and_dissect_two_messages_in_one_segment(little):
    req = Request(request_id=7, little=little, target=KeyAddr(b"obj"), operation="ping")
    pkt = IP() / TCP(sport=40000, dport=2809) / GIOP.from_message(req) / \
        GIOP.from_message(CloseConnection(little=little))
    again = IP(bytes(pkt))
    first = again[GIOP]
    assert first.message_size == len(encode_message(req)) - 12
    assert first.message() == req
    second = first.payload
    assert isinstance(second, GIOP) and second.msg_type == 5
    assert "Request id=7 op=ping" in first.mysummary()


def test_size_is_filled_in_the_flagged_byte_order():
    raw = bytes(GIOP(flags="little_endian", msg_type=5, body=b"abcd"))
    assert raw[8:12] == (4).to_bytes(4, "little")


def test_malformed_body_is_reported_by_pycdr_not_by_scapy():
    bad = GIOP(msg_type=0, body=b"\x00\x00\x00\x01")
    msg = GIOP(bytes(bad))
    assert "undecodable" in msg.mysummary()
