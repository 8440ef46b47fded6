"""Encoding GIOP messages: ``encode_message`` (with fast paths for the ORB's
common GIOP 1.2 Request and Reply), ``encode_fragments`` (GIOP 1.1/1.2
fragmentation while encoding) and ``fragment_message`` (cutting an encoded
1.2 message)."""

from __future__ import annotations

import dataclasses
import struct

from ...codec.cdr import CDRReader, CDRWriter, FragmentingWriter
from ...errors import EncodeError
from ...codec.ior import write_ior
from .. import service_contexts as sc
from ..header import HEADER_SIZE, MsgType, encode_header, may_fragment, parse_header
from ..sysexc import write_system_exception
from .model import (AddressingDisposition, CancelRequest, Fragment, KeyAddr, LocateReply,
                    LocateRequest, LocateStatus, Message, ProfileAddr, ReferenceAddr, Reply,
                    ReplyStatus, Request, _is_12)


# ----------------------------------------------------------------------------
# Encoding
def encode_message(msg: Message, *, write_body=None) -> bytes:
    """The bytes of ``msg``.  ``write_body(writer)``, if given, writes the body
    (arguments, results) straight into the message's CDR stream, so it is
    aligned as the message requires; otherwise ``msg.body`` (or the typed body
    fields of Reply/LocateReply) is used."""
    v = msg.version
    if msg.more_fragments and not may_fragment(v, msg.msg_type):
        raise EncodeError(f"a GIOP {v[0]}.{v[1]} {msg.msg_type.name} may not be fragmented")
    if msg.msg_type == MsgType.Fragment and v == (1, 0):
        raise EncodeError("GIOP 1.0 has no Fragment message")
    w = CDRWriter(little=msg.little, version=v if v != (1, 3) else (1, 2))
    w.write_raw(bytes(HEADER_SIZE))
    _ENCODERS[msg.msg_type](w, msg, write_body)
    size = len(w) - HEADER_SIZE
    header = encode_header(v, msg.little, msg.msg_type, size,
                           more_fragments=msg.more_fragments, extra_flags=msg.extra_flags)
    w.buf[:HEADER_SIZE] = header
    return w.getvalue()



def _no_body(w) -> None:
    pass


_ULONG = {False: struct.Struct(">I"), True: struct.Struct("<I")}


class MessageTemplate:
    """A Request or Reply encoded once, up to its body, with request id 0: what
    an ORB sends for every call of one operation to one object (or every plain
    reply) differs only in the request id, the message size and the body.

        template = MessageTemplate(Request(version=(1, 2), target=KeyAddr(key),
                                           operation="op", response_flags=3))
        data = template.encode(request_id, write_body)

    ``encode`` gives the bytes ``encode_message`` gives for the message with that
    request id and ``write_body`` (the template is made by ``encode_message``
    itself), as a bytearray, without building and checking the message again."""

    __slots__ = ("message", "prefix", "little", "writer_version", "_ulong",
                 "request_id_at")

    def __init__(self, message: Request | Reply):
        if message.msg_type not in (MsgType.Request, MsgType.Reply) or message.more_fragments:
            raise EncodeError("a template is made of a whole Request or Reply")
        self.message = dataclasses.replace(message, request_id=0)
        self.prefix = encode_message(self.message, write_body=_no_body)
        self.little = message.little
        v = message.version
        self.writer_version = v if v != (1, 3) else (1, 2)
        self._ulong = _ULONG[message.little]
        # 1.2: the id opens the message; 1.0/1.1: it follows the service contexts
        self.request_id_at = HEADER_SIZE if _is_12(v) else \
            _request_id_offset_11(self.prefix, message.little)

    def encode(self, request_id: int, write_body, tail=None) -> bytearray:
        """``tail``: bytes that end the message after what ``write_body`` writes, left
        out of the buffer returned (the caller sends them after it) but counted in
        the message size."""
        w = CDRWriter(little=self.little, version=self.writer_version)
        buf = w.buf = bytearray(self.prefix)
        write_body(w)
        size = len(buf) - HEADER_SIZE
        if tail is not None:
            size += len(tail)
        self._ulong.pack_into(buf, 8, size)     # the message size
        try:
            self._ulong.pack_into(buf, self.request_id_at, request_id)
        except struct.error:
            raise EncodeError(f"request id {request_id} is not a ulong") from None
        return buf

    def message_with(self, request_id: int):
        """The message the template stands for, with ``request_id``."""
        return dataclasses.replace(self.message, request_id=request_id)


def _request_id_offset_11(prefix: bytes, little: bool) -> int:
    """Where a 1.0/1.1 Request's or Reply's request id is: after its service contexts."""
    r = CDRReader(prefix, start=HEADER_SIZE, origin=0, little=little)
    sc.read_service_contexts(r)
    r.align(4)
    return r.pos


def encode_fragments(msg: Message, data: bytes, max_fragment_size: int, *,
                     write_body=None) -> list[bytes]:
    """``msg`` (already encoded as ``data``) as the messages to send when no
    message may be longer than ``max_fragment_size`` bytes.

    GIOP 1.2/1.3 Request and Reply: the encoded message cut into Fragments
    (:func:`fragment_message`).  GIOP 1.1 Request and Reply: encoded again by
    a :class:`~pycdr.codec.cdr.FragmentingWriter`, since 1.1 fragment data is aligned
    from each fragment's own start (``write_body`` must write the same body
    again).  Anything else (GIOP 1.0 has no fragments; other messages may not
    be fragmented): ``[data]``."""
    if len(data) <= max_fragment_size or msg.more_fragments \
            or not may_fragment(msg.version, msg.msg_type) or msg.msg_type == MsgType.Fragment:
        return [data]
    if _is_12(msg.version):
        return fragment_message(data, max_fragment_size)
    w = FragmentingWriter(max_fragment_size, little=msg.little, version=msg.version)
    w.write_raw(bytes(HEADER_SIZE))
    _ENCODERS[msg.msg_type](w, msg, write_body)

    def header_for(is_fragment: bool, size: int, more: bool) -> bytes:
        return encode_header(msg.version, msg.little,
                             MsgType.Fragment if is_fragment else msg.msg_type, size,
                             more_fragments=more,
                             extra_flags=0 if is_fragment else msg.extra_flags)
    return w.messages(header_for)


def _write_target(w: CDRWriter, target, version) -> None:
    if not _is_12(version):
        if not isinstance(target, KeyAddr):
            raise EncodeError(f"GIOP {version[0]}.{version[1]} can only address "
                              "by object key (KeyAddr)")
        w.write_octet_sequence(target.object_key)
        return
    if isinstance(target, KeyAddr):
        w.write_short(AddressingDisposition.KeyAddr)
        w.write_octet_sequence(target.object_key)
    elif isinstance(target, ProfileAddr):
        w.write_short(AddressingDisposition.ProfileAddr)
        w.write_ulong(target.profile.tag)
        w.write_octet_sequence(target.profile.data)
    elif isinstance(target, ReferenceAddr):
        w.write_short(AddressingDisposition.ReferenceAddr)
        w.write_ulong(target.selected_profile_index)
        write_ior(w, target.ior)
    else:
        raise EncodeError(f"not a TargetAddress: {target!r}")


def _write_body(w: CDRWriter, msg, write_body, align_12: bool) -> None:
    def has_body():
        return write_body is not None or msg.body
    if align_12 and has_body():
        w.align(8)
    if write_body is not None:
        write_body(w)
    else:
        w.write_raw(msg.body)


# The ORB's common case, GIOP 1.2/1.3 with a KeyAddr target and no service
# contexts, packed in one piece (the general writes below give the same bytes and
# report anything out of range).
_REQUEST_12_KEY = {False: struct.Struct(">IB3sHxxI"), True: struct.Struct("<IB3sHxxI")}
_REPLY_12_PLAIN = {False: struct.Struct(">III"), True: struct.Struct("<III")}
_PADDING = (b"", b"\0", b"\0\0", b"\0\0\0")


def _pack_request_12(w, msg: Request) -> bool:
    """Write a common 1.2 request header at the writer's 12; False: not common."""
    buf = w.buf
    operation = msg.operation
    if type(w) is not CDRWriter or w.origin != 0 or len(buf) != HEADER_SIZE \
            or type(msg.target) is not KeyAddr or msg.service_contexts \
            or type(operation) is not str or not operation.isascii() or "\0" in operation \
            or type(msg.request_id) is not int or type(msg.response_flags) is not int \
            or type(msg.target.object_key) not in (bytes, bytearray):
        return False
    key = msg.target.object_key
    try:
        buf += _REQUEST_12_KEY[w.little].pack(msg.request_id, msg.response_flags,
                                              _reserved(msg.reserved), 0, len(key))
    except (struct.error, TypeError, EncodeError):
        del buf[HEADER_SIZE:]
        return False
    buf += key
    buf += _PADDING[-len(buf) & 3]
    name = operation.encode("ascii")
    buf += w.fmt.ulong.pack(len(name) + 1)
    buf += name
    buf += b"\0"
    buf += _PADDING[-len(buf) & 3]
    buf += b"\0\0\0\0"               # no service contexts
    return True


def _pack_reply_12(w, msg: Reply) -> bool:
    """Write a common 1.2 reply header (no contexts) at the writer's 12; False: not common."""
    if type(w) is not CDRWriter or len(w.buf) != HEADER_SIZE or w.origin != 0 \
            or msg.service_contexts or type(msg.request_id) is not int \
            or type(msg.reply_status) not in (int, ReplyStatus) \
            or not 0 <= msg.request_id <= 0xFFFFFFFF or not 0 <= msg.reply_status <= 5:
        return False
    w.buf += _REPLY_12_PLAIN[w.little].pack(msg.request_id, msg.reply_status, 0)
    return True


def encode_request(w, msg: Request, write_body):
    v = msg.version
    if _is_12(v) and _pack_request_12(w, msg):
        pass
    elif _is_12(v):
        w.write_ulong(msg.request_id)
        w.write_octet(msg.response_flags)
        w.write_raw(_reserved(msg.reserved))
        _write_target(w, msg.target, v)
        w.write_string(msg.operation)
        sc.write_service_contexts(w, msg.service_contexts)
    else:
        sc.write_service_contexts(w, msg.service_contexts)
        w.write_ulong(msg.request_id)
        w.write_boolean(msg.response_flags != 0)
        if v == (1, 1):
            w.write_raw(_reserved(msg.reserved))
        _write_target(w, msg.target, v)
        w.write_string(msg.operation)
        w.write_octet_sequence(msg.requesting_principal)
    _write_body(w, msg, write_body, _is_12(v))


def _reserved(reserved: bytes) -> bytes:
    if len(reserved) != 3:
        raise EncodeError(f"reserved must be 3 octets, not {len(reserved)}")
    return reserved


def _typed_body_writer(msg, sys_status, forward_statuses, addressing_status, status):
    """A write_body function for a status whose typed field is set, else None."""
    if status == sys_status and msg.system_exception is not None:
        return lambda w: write_system_exception(w, msg.system_exception)
    if status in forward_statuses and msg.forward is not None:
        return lambda w: write_ior(w, msg.forward)
    if status == addressing_status and msg.addressing_disposition is not None:
        return lambda w: w.write_short(msg.addressing_disposition)
    return None


def encode_reply(w, msg: Reply, write_body):
    v = msg.version
    if _is_12(v) and _pack_reply_12(w, msg):
        pass
    elif _is_12(v):
        w.write_ulong(msg.request_id)
        w.write_ulong(msg.reply_status)
        sc.write_service_contexts(w, msg.service_contexts)
    else:
        sc.write_service_contexts(w, msg.service_contexts)
        w.write_ulong(msg.request_id)
        w.write_ulong(msg.reply_status)
    if write_body is None and not msg.body:
        write_body = _typed_body_writer(
            msg, ReplyStatus.SYSTEM_EXCEPTION,
            (ReplyStatus.LOCATION_FORWARD, ReplyStatus.LOCATION_FORWARD_PERM),
            ReplyStatus.NEEDS_ADDRESSING_MODE, msg.reply_status)
    _write_body(w, msg, write_body, _is_12(v))


def encode_cancel_request(w, msg: CancelRequest, write_body):
    w.write_ulong(msg.request_id)


def encode_locate_request(w, msg: LocateRequest, write_body):
    w.write_ulong(msg.request_id)
    _write_target(w, msg.target, msg.version)


def encode_locate_reply(w, msg: LocateReply, write_body):
    w.write_ulong(msg.request_id)
    w.write_ulong(msg.locate_status)
    if write_body is None and not msg.body:
        write_body = _typed_body_writer(
            msg, LocateStatus.LOC_SYSTEM_EXCEPTION,
            (LocateStatus.OBJECT_FORWARD, LocateStatus.OBJECT_FORWARD_PERM),
            LocateStatus.LOC_NEEDS_ADDRESSING_MODE, msg.locate_status)
    _write_body(w, msg, write_body, False)    # never padded (see module docstring)


def encode_no_body(w, msg, write_body):
    pass


def encode_fragment(w, msg: Fragment, write_body):
    if _is_12(msg.version):
        if msg.request_id is None:
            raise EncodeError("a GIOP 1.2 Fragment needs its request_id")
        w.write_ulong(msg.request_id)
    elif msg.request_id is not None:
        raise EncodeError("a GIOP 1.1 Fragment has no request_id")
    w.write_raw(msg.data)


_ENCODERS = {
    MsgType.Request: encode_request,
    MsgType.Reply: encode_reply,
    MsgType.CancelRequest: encode_cancel_request,
    MsgType.LocateRequest: encode_locate_request,
    MsgType.LocateReply: encode_locate_reply,
    MsgType.CloseConnection: encode_no_body,
    MsgType.MessageError: encode_no_body,
    MsgType.Fragment: encode_fragment,
}


def fragment_message(data: bytes, max_fragment_size: int) -> list[bytes]:
    """Split an encoded GIOP 1.2/1.3 message into a first message and Fragment
    messages, none longer than ``max_fragment_size`` (header included).

    Every message but the last ends on a multiple of 8, so data keeps its
    alignment (12-byte header + 4-byte fragment header = 16).  GIOP 1.1 is
    refused: its fragments are aligned relative to their own start, so an
    already-encoded body cannot simply be cut."""
    header = parse_header(data)
    if not _is_12(header.version):
        raise EncodeError("only GIOP 1.2/1.3 messages can be fragmented after encoding")
    if not may_fragment(header.version, header.msg_type) or header.msg_type == MsgType.Fragment:
        raise EncodeError(f"a {MsgType(header.msg_type).name} may not be fragmented")
    if max_fragment_size < 24:
        raise EncodeError("max_fragment_size must be at least 24")
    chunk = max_fragment_size & ~7
    if len(data) <= max_fragment_size:
        return [bytes(data)]
    little = header.little
    request_id = CDRReader(data, start=HEADER_SIZE, little=little).read_ulong()
    first_body = data[HEADER_SIZE:chunk]
    out = [encode_header(header.version, little, header.msg_type, len(first_body),
                         more_fragments=True) + first_body]
    rest = data[chunk:]
    per_fragment = chunk - 16
    for i in range(0, len(rest), per_fragment):
        piece = rest[i:i + per_fragment]
        more = i + per_fragment < len(rest)
        w = CDRWriter(little=little)
        w.write_ulong(request_id)
        payload = w.getvalue() + piece
        out.append(encode_header(header.version, little, MsgType.Fragment, len(payload),
                                 more_fragments=more) + payload)
    return out
