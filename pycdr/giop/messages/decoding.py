"""Decoding GIOP messages: ``decode_message`` (the detailed decoder, which
records field offsets and padding, and its lean form for an ORB's hot path),
the decoders of each message's header fields, ``split_messages``."""

from __future__ import annotations

from ...codec.cdr import CDRReader, DecodeWarning, SegmentedReader
from ...errors import (DecodeError, GIOPError, InvalidValueError, MessageTooLargeError, PycdrError,
                       TruncatedError)
from ...codec.ior import TaggedProfile, read_ior
from ...codec.marshal import read_value
from .. import service_contexts as sc
from ..header import (FLAG_LITTLE_ENDIAN, FLAG_MORE_FRAGMENTS, FLAG_ZIOP_ENABLED,
                      FLAG_ZIOP_SUPPORTED, HEADER_SIZE, MAX_MESSAGE_SIZE, GiopHeader, MsgType,
                      decompress_ziop, may_fragment, parse_header)
from ..sysexc import read_system_exception
from .fast12 import _decode_common_12
from .model import (MESSAGE_CLASSES, AddressingDisposition, KeyAddr, LocateStatus, Message,
                    ProfileAddr, ReferenceAddr, Reply, ReplyStatus, _enum_name, _is_12)


# ----------------------------------------------------------------------------
# A reader that records field offsets and alignment gaps as it goes.
class _FieldReader:
    __slots__ = ("r", "offsets", "padding")

    def __init__(self, r: CDRReader):
        self.r = r
        self.offsets: dict[str, int] = {}
        self.padding: list[tuple[int, bytes]] = []

    def align(self, n: int) -> None:
        r = self.r
        pad = (r.origin - r.pos) & (n - 1)
        if pad and r.pos + pad <= r.end:
            self.padding.append((r.pos, bytes(r.buf[r.pos:r.pos + pad])))
        r.align(n)

    def at(self, name: str, alignment: int = 1) -> None:
        """Align for the next field and remember where it starts."""
        r = self.r
        if (r.origin - r.pos) & (alignment - 1):     # (the ORB's hot path: no call)
            self.align(alignment)
        self.offsets[name] = r.pos

    def ulong(self, name):
        self.at(name, 4)
        return self.r.read_ulong()

    def octet(self, name):
        self.at(name)
        return self.r.read_octet()

    def string(self, name):
        self.at(name, 4)
        return self.r.read_string()

    def octets(self, name):
        self.at(name, 4)
        return self.r.read_octet_sequence()

    def contexts(self, name="service_context"):
        self.at(name, 4)
        return sc.read_service_contexts(self.r)

    def target(self, name="target") -> object:
        r = self.r
        self.at(name, 2)
        pos = r.pos
        disposition = r.read_short()
        if disposition == AddressingDisposition.KeyAddr:
            self.at("target.object_key", 4)
            return KeyAddr(r.read_octet_sequence())
        if disposition == AddressingDisposition.ProfileAddr:
            self.at("target.profile", 4)
            tag = r.read_ulong()
            return ProfileAddr(TaggedProfile(tag, r.read_octet_sequence()))
        if disposition == AddressingDisposition.ReferenceAddr:
            self.at("target.selected_profile_index", 4)
            index = r.read_ulong()
            self.at("target.ior", 4)
            ior = read_ior(r)
            if index >= len(ior.profiles):
                r.violation(InvalidValueError, "bad-profile-index",
                            f"selected_profile_index {index} but the IOR has "
                            f"{len(ior.profiles)} profiles", self.offsets["target.selected_profile_index"])
            return ReferenceAddr(index, ior)
        raise InvalidValueError(f"TargetAddress discriminator {disposition} is not "
                                "KeyAddr(0), ProfileAddr(1) or ReferenceAddr(2)", pos)

    def body(self, align_12: bool) -> tuple[bytes, int]:
        """The rest of the message as the body; for 1.2 Request/Reply aligned
        to 8 when (and only when) bytes remain."""
        r = self.r
        if align_12 and r.remaining:
            pad = (r.origin - r.pos) & 7
            if pad > r.remaining:
                r.violation(TruncatedError, "short-body-padding",
                            f"{r.remaining} bytes after the header: too few for the "
                            f"{pad} padding bytes before a GIOP 1.2 body", r.pos)
            else:
                self.align(8)
        self.offsets["body"] = r.pos
        start = r.pos
        end = getattr(r, "final_end", r.end)     # a SegmentedReader's end is its segment's
        buf = r.buf
        # One copy whatever the buffer (slicing a bytearray and then bytes() is two).
        data = buf[start:end] if type(buf) is bytes else bytes(memoryview(buf)[start:end])
        r.pos = end
        return data, start


class _LeanFieldReader(_FieldReader):
    """The same fields, read without the analyzer's bookkeeping: no padding kept,
    offsets only where a check needs one.  For strict decoding only, where checks
    raise instead of recording: decode_message decodes again with _FieldReader
    when anything raises, so errors are exactly the detailed decoder's."""
    __slots__ = ()

    def align(self, n: int) -> None:
        self.r.align(n)

    def at(self, name: str, alignment: int = 1) -> None:
        r = self.r
        if (r.origin - r.pos) & (alignment - 1):
            r.align(alignment)
        self.offsets[name] = r.pos

    # The primitives align themselves.  (Offsets recorded here are before the
    # alignment: only checks that raise read them, and decoding then runs again.)
    def ulong(self, name):
        self.offsets[name] = self.r.pos
        return self.r.read_ulong()

    def octet(self, name):
        return self.r.read_octet()

    def string(self, name):
        return self.r.read_string()

    def octets(self, name):
        return self.r.read_octet_sequence()

    def contexts(self, name="service_context"):
        return sc.read_service_contexts(self.r)


# ----------------------------------------------------------------------------
# Decoding
def decode_message(data, *, lenient: bool = False, user_exceptions=None,
                   max_message_size: int = MAX_MESSAGE_SIZE, segments=None,
                   header: GiopHeader | None = None,
                   field_offsets: bool = True,
                   body_view: bool = False) -> tuple[Message, list]:
    """Decode one complete GIOP (or ZIOP) message from the start of ``data``.

    Returns ``(message, warnings)``; the warnings are also in
    ``message.warnings``.  Strict mode raises a :class:`pycdr.errors.DecodeError`
    subclass on the first violation; lenient mode records it and carries on.
    ``user_exceptions`` (TypeCodes, or a mapping repository id -> TypeCode) lets
    USER_EXCEPTION replies decode their exception.  ``max_message_size``: what a
    ZIOP message may inflate to (the limit a plain message's ``message_size`` has
    where it is framed), checked while inflating; beyond it a
    :class:`pycdr.errors.MessageTooLargeError`, lenient or not.  ``segments``: for a message
    reassembled from GIOP 1.1 fragments, ``(start, origin)`` of each fragment's
    data (see :class:`pycdr.codec.cdr.SegmentedReader`).  ``header``: ``parse_header(data)``
    when the caller (a framer) has it already.  ``field_offsets=False`` (strict
    only; an ORB's hot path): ``offsets`` and ``padding`` stay empty, which saves
    a third of the header decoding; errors are the same.  ``body_view`` (with
    ``field_offsets=False``): the body of a common GIOP 1.2/1.3 Request or Reply
    may be a read-only memoryview of ``data`` instead of a copy, for a caller that
    leaves ``data`` unchanged while the message lives (an ORB, which only reads
    the body: a large argument is then copied once, into its value, not twice).
    """
    if not field_offsets and not lenient:
        if segments is None:
            msg = _decode_common_12(data, header, body_view)
            if msg is not None:
                return msg, msg.warnings
        try:
            return _decode_message(data, False, user_exceptions, max_message_size, segments,
                                   header, _LeanFieldReader)
        except MessageTooLargeError:
            raise      # the detailed decoder would say the same, after inflating it again
        except PycdrError:
            pass       # decode again for the detailed decoder's error
    return _decode_message(data, lenient, user_exceptions, max_message_size, segments, header,
                           _FieldReader)


def _decode_message(data, lenient, user_exceptions, max_message_size, segments, header,
                    field_reader) -> tuple[Message, list]:
    warnings: list = []
    if header is None:
        header = parse_header(data)
    end = header.total_size
    if end > len(data):
        message = (f"header claims {header.size} bytes after the header but only "
                   f"{len(data) - HEADER_SIZE} are there")
        if not lenient:
            raise TruncatedError(message, 8)
        warnings.append(DecodeWarning("message-truncated", message, len(data)))
        end = len(data)
    elif end < len(data):
        message = f"{len(data) - end} bytes after the end of the message"
        if not lenient:
            raise GIOPError(message, end)
        warnings.append(DecodeWarning("bytes-after-message", message, end))
    ziop = None
    if header.is_ziop:
        data, ziop = decompress_ziop(data, header, warnings, max_message_size=max_message_size)
        header = parse_header(data)
        end = len(data)
    options = dict(start=HEADER_SIZE, end=end, origin=0, little=header.little,
                   version=header.version, lenient=lenient, warnings=warnings)
    r = SegmentedReader(data, segments, **options) if segments else CDRReader(data, **options)
    _check_header(header, r)
    cls = MESSAGE_CLASSES.get(header.msg_type)
    if cls is None:
        raise GIOPError(f"unknown message type {header.msg_type}", 7)
    fr = field_reader(r)
    fields = _DECODERS[header.msg_type](fr, header)
    # Bits beyond byte order and more-fragments are kept so the message re-encodes alike.
    extra = header.flags & ~(FLAG_LITTLE_ENDIAN | FLAG_MORE_FRAGMENTS) & 0xFF \
        if header.version != (1, 0) else 0
    msg = cls(version=header.version, little=header.little,
              more_fragments=header.more_fragments, extra_flags=extra, **fields)
    if r.pos != end:
        r.violation(GIOPError, "trailing-bytes",
                    f"{end - r.pos} bytes after the {cls.msg_type.name} header", r.pos)
    if isinstance(msg, Reply) and msg.reply_status == ReplyStatus.USER_EXCEPTION:
        _decode_user_exception(msg, r, user_exceptions)
    if field_reader is _FieldReader:
        msg.offsets = fr.offsets
        msg.padding = fr.padding
    msg.warnings = warnings
    msg.message_size = header.size
    msg.ziop = ziop
    msg.segments = tuple(segments) if segments else None
    return msg, warnings


def _check_header(header: GiopHeader, r: CDRReader) -> None:
    if header.version == (1, 0):
        if header.flags > 1:
            r.violation(GIOPError, "bad-byte-order",
                        f"GIOP 1.0 byte_order octet is {header.flags}, not 0 or 1", 6)
    else:
        if header.flags & FLAG_ZIOP_SUPPORTED:
            r.note("ziop-supported", "flag 0x04: the sender supports ZIOP compression", 6)
        if header.flags & FLAG_ZIOP_ENABLED:
            r.note("ziop-enabled", "flag 0x08: ZIOP compression enabled", 6)
        if header.flags & 0xF0:
            r.violation(GIOPError, "reserved-flags",
                        f"reserved flag bits 0x{header.flags & 0xF0:02x} are set", 6)
    if header.msg_type == MsgType.Fragment and header.version == (1, 0):
        r.violation(GIOPError, "fragment-in-1.0", "GIOP 1.0 has no Fragment message", 7)
    if header.more_fragments and header.msg_type in MESSAGE_CLASSES and \
            not may_fragment(header.version, header.msg_type):
        r.violation(GIOPError, "may-not-fragment",
                    f"more-fragments bit on a GIOP {header.version[0]}.{header.version[1]} "
                    f"{MsgType(header.msg_type).name}, which may not be fragmented", 6)


def decode_request_header(fr: _FieldReader, header: GiopHeader) -> dict:
    r = fr.r
    v = header.version
    if _is_12(v):
        out = {"request_id": fr.ulong("request_id"),
               "response_flags": fr.octet("response_flags")}
        fr.at("reserved")
        out["reserved"] = r.read_raw(3, "reserved octets")
        _note_reserved(r, out["reserved"], fr.offsets["reserved"])
        out["target"] = fr.target()
        out["operation"] = fr.string("operation")
        out["service_contexts"] = fr.contexts()
    else:
        out = {"service_contexts": fr.contexts(), "request_id": fr.ulong("request_id")}
        fr.at("response_expected")
        out["response_flags"] = 3 if r.read_boolean() else 0
        if v == (1, 1):
            fr.at("reserved")
            out["reserved"] = r.read_raw(3, "reserved octets")
            _note_reserved(r, out["reserved"], fr.offsets["reserved"])
        fr.at("target.object_key", 4)
        out["target"] = KeyAddr(r.read_octet_sequence())
        out["operation"] = fr.string("operation")
        out["requesting_principal"] = fr.octets("requesting_principal")
    out["body"], out["body_offset"] = fr.body(_is_12(v))
    return out


def _note_reserved(r: CDRReader, reserved: bytes, offset: int) -> None:
    if any(reserved):
        r.note("nonzero-reserved", f"reserved octets are {reserved.hex()}, not zero", offset)


def _check_status(r: CDRReader, enum_cls, status: int, version, offset: int) -> None:
    highest = 5 if _is_12(version) else 2 + (enum_cls is ReplyStatus)
    if status > highest:
        r.violation(InvalidValueError, "bad-status",
                    f"{enum_cls.__name__} {status} is not defined in GIOP "
                    f"{version[0]}.{version[1]}", offset)


def decode_reply_header(fr: _FieldReader, header: GiopHeader) -> dict:
    r = fr.r
    v = header.version
    if _is_12(v):
        out = {"request_id": fr.ulong("request_id"), "reply_status": fr.ulong("reply_status"),
               "service_contexts": fr.contexts()}
    else:
        out = {"service_contexts": fr.contexts(), "request_id": fr.ulong("request_id"),
               "reply_status": fr.ulong("reply_status")}
    status = out["reply_status"]
    _check_status(r, ReplyStatus, status, v, fr.offsets["reply_status"])
    out["body"], out["body_offset"] = fr.body(_is_12(v))
    body_reader = r.sub_reader(out["body_offset"], r.end)
    body_reader.origin = 0
    try:
        _decode_typed_body(body_reader, status, out, ReplyStatus.SYSTEM_EXCEPTION,
                           (ReplyStatus.LOCATION_FORWARD, ReplyStatus.LOCATION_FORWARD_PERM),
                           ReplyStatus.NEEDS_ADDRESSING_MODE)
    except DecodeError as e:
        if not r.lenient:
            raise
        r.violation(type(e), "bad-reply-body",
                    f"{_enum_name(ReplyStatus, status)} body: {e.message}",
                    e.offset if e.offset is not None else out["body_offset"])
    return out


def _decode_typed_body(r: CDRReader, status: int, out: dict, sys_status: int,
                       forward_statuses: tuple, addressing_status: int) -> None:
    """Decode the body of the statuses that have a fixed body type."""
    if status == sys_status:
        out["system_exception"] = read_system_exception(r)
    elif status in forward_statuses:
        out["forward"] = read_ior(r)
    elif status == addressing_status:
        out["addressing_disposition"] = r.read_short()
    else:
        return
    if r.pos != r.end:
        r.note("bytes-after-body", f"{r.end - r.pos} bytes after the reply body", r.pos)


def _decode_user_exception(msg: Reply, r: CDRReader, user_exceptions) -> None:
    br = r.sub_reader(msg.body_offset, r.end)
    br.origin = 0
    try:
        msg.exception_id = br.read_string()
        br.pos = msg.body_offset          # the exception's encoding starts with the id
    except DecodeError as e:
        r.violation(type(e), "bad-exception-id", f"user exception id: {e.message}",
                    e.offset if e.offset is not None else msg.body_offset)
        return
    if not user_exceptions:
        return
    if isinstance(user_exceptions, dict):
        tc = user_exceptions.get(msg.exception_id)
    else:
        tc = next((t for t in user_exceptions if t.id() == msg.exception_id), None)
    if tc is None:
        return
    msg.user_exception = read_value(br, tc)


def decode_cancel_request(fr, header):
    return {"request_id": fr.ulong("request_id")}


def decode_locate_request(fr, header):
    out = {"request_id": fr.ulong("request_id")}
    if _is_12(header.version):
        out["target"] = fr.target()
    else:
        fr.at("target.object_key", 4)
        out["target"] = KeyAddr(fr.r.read_octet_sequence())
    return out


def decode_locate_reply(fr: _FieldReader, header: GiopHeader) -> dict:
    r = fr.r
    out = {"request_id": fr.ulong("request_id"), "locate_status": fr.ulong("locate_status")}
    status = out["locate_status"]
    _check_status(r, LocateStatus, status, header.version, fr.offsets["locate_status"])
    start = r.pos
    out["body"] = bytes(r.buf[start:r.end])
    fr.offsets["body"] = start
    r.pos = r.end
    if start == r.end:
        return out
    has_typed_body = status in (LocateStatus.OBJECT_FORWARD, LocateStatus.OBJECT_FORWARD_PERM,
                                LocateStatus.LOC_SYSTEM_EXCEPTION,
                                LocateStatus.LOC_NEEDS_ADDRESSING_MODE)
    if not has_typed_body:
        r.violation(GIOPError, "unexpected-body",
                    f"{r.end - start} bytes after a {_enum_name(LocateStatus, status)} "
                    "LocateReply, which has no body", start)
        return out

    def decode_at(pos: int, lenient: bool) -> dict:
        br = r.sub_reader(pos, r.end)
        br.origin = 0
        br.lenient = lenient
        if not lenient:
            br.warnings = []
        typed: dict = {}
        _decode_typed_body(br, status, typed, LocateStatus.LOC_SYSTEM_EXCEPTION,
                           (LocateStatus.OBJECT_FORWARD, LocateStatus.OBJECT_FORWARD_PERM),
                           LocateStatus.LOC_NEEDS_ADDRESSING_MODE)
        if br.pos != br.end:
            raise GIOPError("body does not end where the message does", br.pos)
        return typed

    pad = (-start) & 7
    padded = False
    if _is_12(header.version) and pad:
        # The standard layout is unpadded; try it strictly first, and fall back
        # to Wireshark's padded layout only if that is what the bytes are.
        try:
            typed = decode_at(start, False)
        except DecodeError:
            if r.end - start > pad and not any(r.buf[start:start + pad]):
                try:
                    typed = decode_at(start + pad, False)
                    padded = True
                except DecodeError:
                    typed = None
            else:
                typed = None
            if typed is None:
                typed = decode_at(start, r.lenient)   # strict: raises the real error
    else:
        typed = decode_at(start, r.lenient)
    out.update(typed)
    if _is_12(header.version):
        out["body_padding"] = pad if padded else 0
        if padded:
            fr.padding.append((start, bytes(r.buf[start:start + pad])))
            fr.offsets["body"] = start + pad
            out["body"] = bytes(r.buf[start + pad:r.end])
            r.note("locate-reply-body-aligned",
                   f"LocateReply 1.2 body padded to 8 ({pad} bytes), as Wireshark "
                   "expects; TAO and omniORB send it unaligned", start)
        elif pad:
            r.note("locate-reply-body-unaligned",
                   "LocateReply 1.2 body not padded (the OMG-resolved layout TAO and "
                   "omniORB use)", start)
    return out


def decode_no_body(fr, header):
    return {}


def decode_fragment(fr: _FieldReader, header: GiopHeader) -> dict:
    out = {}
    if _is_12(header.version):
        out["request_id"] = fr.ulong("request_id")
    r = fr.r
    fr.offsets["data"] = r.pos
    out["data"] = bytes(r.buf[r.pos:r.end])
    r.pos = r.end
    return out


_DECODERS = {
    MsgType.Request: decode_request_header,
    MsgType.Reply: decode_reply_header,
    MsgType.CancelRequest: decode_cancel_request,
    MsgType.LocateRequest: decode_locate_request,
    MsgType.LocateReply: decode_locate_reply,
    MsgType.CloseConnection: decode_no_body,
    MsgType.MessageError: decode_no_body,
    MsgType.Fragment: decode_fragment,
}


def split_messages(data, offset: int = 0):
    """Yield ``(offset, header)`` for each message of a byte stream, without
    decoding bodies.  Raises TruncatedError for an incomplete last message."""
    while offset < len(data):
        header = parse_header(data, offset)
        if offset + header.total_size > len(data):
            raise TruncatedError(f"message at offset {offset} claims {header.size} bytes "
                                 f"after its header but only "
                                 f"{len(data) - offset - HEADER_SIZE} remain", offset + 8)
        yield offset, header
        offset += header.total_size
