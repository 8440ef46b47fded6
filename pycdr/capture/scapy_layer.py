"""A scapy layer for GIOP, built on pycdr's codec (needs the ``pcap`` extra).

    from scapy.all import IP, TCP
    from pycdr.capture.scapy_layer import GIOP
    from pycdr.giop.messages import Request, KeyAddr

    pkt = IP() / TCP(dport=2809) / GIOP.from_message(
        Request(request_id=1, target=KeyAddr(b"obj"), operation="ping"))
    GIOP(raw_bytes).message()      # -> pycdr.giop.messages.Request
    pkt.show()                     # the 12-byte header fields, then the body

The layer only frames: the 12-byte header is scapy fields (``message_size``
in the byte order the flags say, filled in when left None), the body is the
``body`` field, and what follows the body (several messages in one segment)
is dissected as the next GIOP layer.  Everything about the body -- request
and reply headers, service contexts, IORs, arguments -- is pycdr's
:func:`~pycdr.giop.messages.decode_message`, never a second decoder.
Bound to TCP ports 2809 and 683 (the IANA corbaloc and IIOP ports).
"""

from __future__ import annotations

import struct

from scapy.fields import (ByteEnumField, ByteField, FlagsField, IntField, StrFixedLenField,
                          StrLenField)
from scapy.layers.inet import TCP
from scapy.packet import Packet, Raw, bind_layers

from ..giop.header import FLAG_LITTLE_ENDIAN, HEADER_SIZE, MsgType
from ..giop.messages import Message, decode_message, encode_message

MSG_TYPE_NAMES = {t.value: t.name for t in MsgType}


class _MessageSizeField(IntField):
    """A ulong whose byte order is the packet's flags bit 0 (as GIOP's)."""

    def _fmt(self, pkt) -> str:
        return "<I" if (pkt.flags or 0) & FLAG_LITTLE_ENDIAN else ">I"

    def addfield(self, pkt, s, val):
        return s + struct.pack(self._fmt(pkt), self.i2m(pkt, val))

    def getfield(self, pkt, s):
        if len(s) < 4:
            return b"", self.m2i(pkt, 0)
        return s[4:], self.m2i(pkt, struct.unpack(self._fmt(pkt), s[:4])[0])


class GIOP(Packet):
    name = "GIOP"
    fields_desc = [
        StrFixedLenField("magic", b"GIOP", 4),
        ByteField("major", 1),
        ByteField("minor", 2),
        FlagsField("flags", 0, 8, ["little_endian", "more_fragments", "ziop_supported",
                                   "ziop_enabled", "res4", "res5", "res6", "res7"]),
        ByteEnumField("msg_type", 0, MSG_TYPE_NAMES),
        _MessageSizeField("message_size", None),
        StrLenField("body", b"", length_from=lambda p: p.message_size or 0),
    ]

    def post_build(self, pkt, pay):
        if self.message_size is None:
            size = len(pkt) - HEADER_SIZE
            fmt = "<I" if int(self.flags) & FLAG_LITTLE_ENDIAN else ">I"
            pkt = pkt[:8] + struct.pack(fmt, size) + pkt[12:]
        return pkt + pay

    def guess_payload_class(self, payload):
        if payload[:4] in (b"GIOP", b"ZIOP"):
            return GIOP
        return Raw

    @classmethod
    def from_message(cls, msg: Message, **kwargs) -> "GIOP":
        """The layer for a pycdr message (encoded by pycdr)."""
        return cls(encode_message(msg, **kwargs))

    def giop_bytes(self) -> bytes:
        """This message's bytes (header and body, without what follows)."""
        return bytes(self)[:HEADER_SIZE + len(self.body)]

    def message(self, **kwargs):
        """The pycdr message object of this layer (lenient decoding unless
        ``lenient=False`` is passed); its ``warnings`` list the violations."""
        kwargs.setdefault("lenient", True)
        return decode_message(self.giop_bytes(), **kwargs)[0]

    def mysummary(self):
        try:
            msg = self.message()
        except Exception as e:   # a summary line must not raise; show why it failed
            return f"GIOP {self.major}.{self.minor} undecodable: {e}"
        rid = getattr(msg, "request_id", None)
        op = getattr(msg, "operation", None)
        text = f"GIOP {self.major}.{self.minor} {msg.type_name}"
        if rid is not None:
            text += f" id={rid}"
        if op:
            text += f" op={op}"
        return text


for _port in (2809, 683):
    bind_layers(TCP, GIOP, dport=_port)
    bind_layers(TCP, GIOP, sport=_port)
