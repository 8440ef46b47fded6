"""The eight GIOP messages in their 1.0, 1.1 and 1.2 layouts (1.3 = 1.2).

``decode_message(data)`` turns the bytes of one complete message into a
message object and a list of warnings; ``encode_message(msg)`` does the
reverse.  Everything is read with :class:`pycdr.cdr.CDRReader` with the
alignment origin at the first header byte.  Operation arguments and reply
results stay raw (``body``, starting at ``body_offset`` in the message) for
``pycdr.marshal.read_value`` to decode: ``msg.body_reader()`` gives a reader
positioned and aligned correctly.

Layout rules that real ORBs disagree about, and what is done here:

* GIOP 1.2 Request and Reply bodies start 8-aligned, but only when there is a
  body: the encoder never pads an empty body; the decoder aligns only if bytes
  remain after the header (omniORB, JacORB, TAO and Wireshark behave so).
* The GIOP 1.2 LocateReply body is not aligned (OMG urgent-issue resolution
  followed by TAO and omniORB); Wireshark pads it.  The encoder writes it
  unpadded, the decoder accepts both and in lenient mode notes which it saw.

Decoded messages remember where each header field was (``offsets``), the
alignment gaps (``padding``) and the decoder's ``warnings``; ``to_json()``
includes them (``pycdr decode --json`` and the dissector's expected decodings).
"""

from __future__ import annotations

import dataclasses
import enum
import struct
from dataclasses import dataclass, field
from typing import ClassVar

from ..cdr import CDRReader, CDRWriter, DecodeWarning, FragmentingWriter, SegmentedReader
from ..errors import (DecodeError, EncodeError, GIOPError, InvalidValueError,
                      MessageTooLargeError, PycdrError, TruncatedError)
from ..ior import IOR, TaggedProfile, printable_key, read_ior, write_ior
from . import service_contexts as sc
from .header import (FLAG_LITTLE_ENDIAN, FLAG_MORE_FRAGMENTS, FLAG_ZIOP_ENABLED,
                     FLAG_ZIOP_SUPPORTED, GIOP_MAGIC, HEADER_SIZE, MAX_MESSAGE_SIZE, GiopHeader,
                     MsgType, ZiopInfo,
                     decompress_ziop, encode_header, may_fragment, parse_header)
from .sysexc import SystemException, read_system_exception, write_system_exception


class ReplyStatus(enum.IntEnum):
    NO_EXCEPTION = 0
    USER_EXCEPTION = 1
    SYSTEM_EXCEPTION = 2
    LOCATION_FORWARD = 3
    LOCATION_FORWARD_PERM = 4     # GIOP 1.2+
    NEEDS_ADDRESSING_MODE = 5     # GIOP 1.2+


class LocateStatus(enum.IntEnum):
    UNKNOWN_OBJECT = 0
    OBJECT_HERE = 1
    OBJECT_FORWARD = 2
    OBJECT_FORWARD_PERM = 3       # GIOP 1.2+
    LOC_SYSTEM_EXCEPTION = 4      # GIOP 1.2+
    LOC_NEEDS_ADDRESSING_MODE = 5  # GIOP 1.2+


class AddressingDisposition(enum.IntEnum):
    KeyAddr = 0
    ProfileAddr = 1
    ReferenceAddr = 2


# response_flags values (GIOP 1.2; TAO/Wireshark tables).
RESPONSE_FLAG_NAMES = {0: "SYNC_NONE/WITH_TRANSPORT (no reply)", 1: "SYNC_WITH_SERVER",
                       3: "SYNC_WITH_TARGET (reply expected)"}


def _is_12(version) -> bool:
    return version >= (1, 2)


# ----------------------------------------------------------------------------
# Target addresses
@dataclass(frozen=True)
class KeyAddr:
    object_key: bytes

    def to_json(self):
        return {"disposition": "KeyAddr", "object_key": self.object_key.hex(),
                "object_key_text": printable_key(self.object_key)}


@dataclass(frozen=True)
class ProfileAddr:
    profile: TaggedProfile

    def to_json(self):
        return {"disposition": "ProfileAddr", "profile_tag": self.profile.tag,
                "profile_data": self.profile.data.hex()}


@dataclass(frozen=True)
class ReferenceAddr:
    selected_profile_index: int
    ior: IOR

    def to_json(self):
        return {"disposition": "ReferenceAddr",
                "selected_profile_index": self.selected_profile_index,
                "ior_type_id": self.ior.type_id, "profiles": len(self.ior.profiles)}


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
# Messages
@dataclass(kw_only=True)
class Message:
    """Fields common to all messages (from the header)."""
    msg_type: ClassVar[MsgType]
    version: tuple = (1, 2)
    little: bool = False
    more_fragments: bool = False
    # Flag bits other than byte order and more-fragments, as received (ZIOP bits).
    extra_flags: int = 0
    # Filled in by the decoder only.
    offsets: dict = field(default_factory=dict, compare=False, repr=False)
    padding: list = field(default_factory=list, compare=False, repr=False)
    warnings: list = field(default_factory=list, compare=False, repr=False)
    message_size: int | None = field(default=None, compare=False, repr=False)
    ziop: ZiopInfo | None = field(default=None, compare=False, repr=False)
    # GIOP 1.1 reassembly: (start, origin) of each fragment's data in the message.
    segments: tuple | None = field(default=None, compare=False, repr=False)

    @property
    def type_name(self) -> str:
        return self.msg_type.name

    def fields_json(self) -> dict:
        return {}

    def to_json(self) -> dict:
        out = {"type": self.type_name,
               "version": f"{self.version[0]}.{self.version[1]}",
               "little_endian": self.little,
               "more_fragments": self.more_fragments,
               "flags": _flags_byte(self)}
        if self.message_size is not None:
            out["message_size"] = self.message_size
        if self.ziop is not None:
            out["ziop"] = self.ziop.to_json()
        out.update(self.fields_json())
        out["offsets"] = dict(self.offsets)
        out["padding"] = [{"offset": o, "bytes": b.hex()} for o, b in self.padding]
        out["warnings"] = [w.to_json() for w in self.warnings]
        return out


def _flags_byte(msg: Message) -> int:
    flags = FLAG_LITTLE_ENDIAN if msg.little else 0
    if msg.more_fragments:
        flags |= FLAG_MORE_FRAGMENTS
    return flags | msg.extra_flags


class _HasBody:
    """Mixin for messages whose tail is an opaque body (arguments, results)."""

    def body_reader(self, **kwargs) -> CDRReader:
        """A reader over ``body`` aligned as it was in the message (needs
        ``body_offset``, known for decoded messages and for GIOP 1.2 bodies,
        which always start 8-aligned)."""
        offset = self.body_offset
        if offset is None:
            if not _is_12(self.version):
                raise ValueError("body_offset is unknown for a GIOP 1.0/1.1 message "
                                 "that was not decoded")
            offset = 0
        if self.segments:
            # Fragment data after the body's start, in body positions.
            segs = [(max(start - offset, 0), origin - offset) for start, origin in self.segments]
            segs = [seg for i, seg in enumerate(segs)
                    if i + 1 == len(segs) or segs[i + 1][0] > 0]
            return SegmentedReader(self.body, segs, little=self.little,
                                   version=self.version, **kwargs)
        return CDRReader(self.body, origin=-offset, little=self.little,
                         version=self.version, **kwargs)


@dataclass(kw_only=True)
class Request(_HasBody, Message):
    msg_type: ClassVar[MsgType] = MsgType.Request
    request_id: int = 0
    # 1.2 response_flags; for 1.0/1.1 response_expected maps to 3 (true) or 0.
    response_flags: int = 3
    reserved: bytes = b"\0\0\0"           # 1.1 and 1.2
    target: object = KeyAddr(b"")         # 1.0/1.1: always a KeyAddr (the object_key)
    operation: str = ""
    service_contexts: list = field(default_factory=list)
    requesting_principal: bytes = b""     # 1.0/1.1 only
    body: bytes = b""
    body_offset: int | None = field(default=None, compare=False)

    @property
    def response_expected(self) -> bool:
        return self.response_flags != 0

    @property
    def object_key(self) -> bytes | None:
        return self.target.object_key if isinstance(self.target, KeyAddr) else None

    def fields_json(self):
        out = {"request_id": self.request_id}
        if _is_12(self.version):
            out["response_flags"] = self.response_flags
            out["response_flags_name"] = RESPONSE_FLAG_NAMES.get(self.response_flags, "reserved")
        else:
            out["response_expected"] = self.response_expected
        if self.version != (1, 0):
            out["reserved"] = self.reserved.hex()
        out["target"] = self.target.to_json()
        out["operation"] = self.operation
        out["service_contexts"] = [c.to_json() for c in self.service_contexts]
        if not _is_12(self.version):
            out["requesting_principal"] = self.requesting_principal.hex()
        out["body_offset"] = self.body_offset
        out["body"] = self.body.hex()
        return out


@dataclass(kw_only=True)
class Reply(_HasBody, Message):
    msg_type: ClassVar[MsgType] = MsgType.Reply
    request_id: int = 0
    reply_status: int = ReplyStatus.NO_EXCEPTION
    service_contexts: list = field(default_factory=list)
    # The body.  For the statuses below it is derived from (encoding) or decoded
    # into (decoding) the typed field when that is set.
    body: bytes = b""
    body_offset: int | None = field(default=None, compare=False)
    system_exception: SystemException | None = None      # SYSTEM_EXCEPTION
    forward: IOR | None = None                            # LOCATION_FORWARD(_PERM)
    addressing_disposition: int | None = None             # NEEDS_ADDRESSING_MODE
    # USER_EXCEPTION: the repository id at the start of the body, and the
    # exception decoded by TypeCode when the decoder was given one.
    exception_id: str | None = field(default=None, compare=False)
    user_exception: object = field(default=None, compare=False)

    def fields_json(self):
        out = {"request_id": self.request_id, "reply_status": _enum_name(ReplyStatus,
                                                                        self.reply_status)}
        out["service_contexts"] = [c.to_json() for c in self.service_contexts]
        _typed_body_json(self, out)
        if self.exception_id is not None:
            out["exception_id"] = self.exception_id
        if self.user_exception is not None:
            out["user_exception"] = repr(self.user_exception)
        out["body_offset"] = self.body_offset
        out["body"] = self.body.hex()
        return out


@dataclass(kw_only=True)
class CancelRequest(Message):
    msg_type: ClassVar[MsgType] = MsgType.CancelRequest
    request_id: int = 0

    def fields_json(self):
        return {"request_id": self.request_id}


@dataclass(kw_only=True)
class LocateRequest(Message):
    msg_type: ClassVar[MsgType] = MsgType.LocateRequest
    request_id: int = 0
    target: object = KeyAddr(b"")

    @property
    def object_key(self) -> bytes | None:
        return self.target.object_key if isinstance(self.target, KeyAddr) else None

    def fields_json(self):
        return {"request_id": self.request_id, "target": self.target.to_json()}


@dataclass(kw_only=True)
class LocateReply(Message):
    msg_type: ClassVar[MsgType] = MsgType.LocateReply
    request_id: int = 0
    locate_status: int = LocateStatus.OBJECT_HERE
    body: bytes = b""
    system_exception: SystemException | None = None      # LOC_SYSTEM_EXCEPTION
    forward: IOR | None = None                            # OBJECT_FORWARD(_PERM)
    addressing_disposition: int | None = None             # LOC_NEEDS_ADDRESSING_MODE
    # Decoder only: pad bytes seen before a 1.2 body (0 = the standard layout).
    body_padding: int | None = field(default=None, compare=False)

    def fields_json(self):
        out = {"request_id": self.request_id,
               "locate_status": _enum_name(LocateStatus, self.locate_status)}
        _typed_body_json(self, out)
        if self.body_padding is not None:
            out["body_padding"] = self.body_padding
        out["body"] = self.body.hex()
        return out


@dataclass(kw_only=True)
class CloseConnection(Message):
    msg_type: ClassVar[MsgType] = MsgType.CloseConnection


@dataclass(kw_only=True)
class MessageError(Message):
    msg_type: ClassVar[MsgType] = MsgType.MessageError


@dataclass(kw_only=True)
class Fragment(Message):
    msg_type: ClassVar[MsgType] = MsgType.Fragment
    request_id: int | None = None     # GIOP 1.2+ FragmentHeader; None in 1.1
    data: bytes = b""

    def fields_json(self):
        out = {}
        if self.request_id is not None:
            out["request_id"] = self.request_id
        out["data"] = self.data.hex()
        return out


MESSAGE_CLASSES = {cls.msg_type: cls for cls in (
    Request, Reply, CancelRequest, LocateRequest, LocateReply, CloseConnection,
    MessageError, Fragment)}


def _enum_name(enum_cls, value) -> str:
    return enum_cls(value).name if value in enum_cls._value2member_map_ else f"invalid({value})"


def _typed_body_json(msg, out: dict) -> None:
    if msg.system_exception is not None:
        out["system_exception"] = msg.system_exception.to_json()
    if msg.forward is not None:
        from ..ior import ior_to_string
        out["forward"] = ior_to_string(msg.forward)
    if msg.addressing_disposition is not None:
        out["addressing_disposition"] = _enum_name(AddressingDisposition,
                                                   msg.addressing_disposition)


# ----------------------------------------------------------------------------
# Decoding
def decode_message(data, *, lenient: bool = False, user_exceptions=None,
                   max_message_size: int = MAX_MESSAGE_SIZE, segments=None,
                   header: GiopHeader | None = None,
                   field_offsets: bool = True) -> tuple[Message, list]:
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
    data (see :class:`pycdr.cdr.SegmentedReader`).  ``header``: ``parse_header(data)``
    when the caller (a framer) has it already.  ``field_offsets=False`` (strict
    only; an ORB's hot path): ``offsets`` and ``padding`` stay empty, which saves
    a third of the header decoding; errors are the same.
    """
    if not field_offsets and not lenient:
        if segments is None:
            msg = _decode_common_12(data, header)
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


# --- The ORB's hot path: GIOP 1.2/1.3 Requests with a KeyAddr target and
# NO_EXCEPTION Replies, as struct calls over the bytes instead of a reader and
# a field reader (a third of a small call's server time went to the general
# decoder).  Anything else -- another version, target or status, a note-worthy
# flag or reserved octet, a bound crossed -- returns None and takes the general
# path, which judges it and gives the detailed decoder's errors.
# pycdr._speedups.decode_common_12 is _decode_common_12 in C, used on the C path
# (see _c_decode_common_12 below): a change here is a change there too, and
# tests/test_giop_fast_decode.py and .ci/fuzz_speedups.py compare the two.
_REQUEST_12_START = {False: struct.Struct(">IB3sH"), True: struct.Struct("<IB3sH")}
_REPLY_12_START = {False: struct.Struct(">II"), True: struct.Struct("<II")}
_ULONG = {False: struct.Struct(">I"), True: struct.Struct("<I")}
_FAST_VERSIONS = ((1, 2), (1, 3))


def _decode_common_12(data, header: GiopHeader | None) -> Message | None:
    if header is None:
        header = parse_header(data)
    end = header.total_size
    if end != len(data) or header.version not in _FAST_VERSIONS or header.flags > 1 \
            or header.magic != GIOP_MAGIC:
        return None
    little = header.flags == 1
    if header.msg_type == MsgType.Request:
        if end < 28:
            return None
        request_id, response_flags, reserved, disposition = \
            _REQUEST_12_START[little].unpack_from(data, 12)
        if disposition != AddressingDisposition.KeyAddr or reserved != b"\0\0\0":
            return None
        ulong = _ULONG[little].unpack_from
        key_end = 28 + ulong(data, 24)[0]
        pos = key_end + (-key_end & 3)          # the operation's length, 4-aligned
        if pos + 4 > end:
            return None
        object_key = bytes(data[28:key_end])
        n = ulong(data, pos)[0]
        pos += 4
        if n == 0 or pos + n > end or data[pos + n - 1] != 0:
            return None
        cls = Request
        fields = {"request_id": request_id, "response_flags": response_flags,
                  "target": KeyAddr(object_key),
                  "operation": bytes(data[pos:pos + n - 1]).decode("latin-1")}
        pos += n
    elif header.msg_type == MsgType.Reply:
        if end < 24:
            return None
        request_id, reply_status = _REPLY_12_START[little].unpack_from(data, 12)
        if reply_status != ReplyStatus.NO_EXCEPTION:
            return None
        cls = Reply
        fields = {"request_id": request_id, "reply_status": reply_status}
        pos = 20
    else:
        return None
    contexts, pos = _fast_service_contexts(data, pos, end, little, header.version)
    if contexts is None:
        return None
    body, body_offset = _fast_body(data, pos, end)
    if body is None:
        return None
    msg = cls(version=header.version, little=little, service_contexts=contexts, body=body,
              body_offset=body_offset, **fields)
    msg.message_size = header.size
    return msg


def _fast_service_contexts(data, pos: int, end: int, little: bool, version):
    """(contexts, position after them) at the 4-aligned ``pos``; (None, 0) when the
    general decoder must look (an error there is its to report)."""
    pos += -pos & 3
    if pos + 4 > end:
        return None, 0
    if _ULONG[little].unpack_from(data, pos)[0] == 0:
        return [], pos + 4
    r = CDRReader(data, start=pos, end=end, origin=0, little=little, version=version)
    try:
        contexts = sc.read_service_contexts(r)
    except PycdrError:
        return None, 0
    if r.warnings:
        return None, 0
    return contexts, r.pos


def _fast_body(data, pos: int, end: int):
    """(body, body_offset): the 8-aligned rest of a 1.2 message (no padding when
    nothing follows the header); (None, 0) when the padding does not fit."""
    if pos < end:
        pos += -pos & 7
        if pos > end:
            return None, 0
    # One copy whatever the buffer (a bytearray when received in place).
    body = data[pos:end] if type(data) is bytes else bytes(memoryview(data)[pos:end])
    return body, pos


def _field_template(cls) -> tuple[dict, tuple]:
    """A dataclass's field defaults in field order (None where a default_factory
    makes the value) and its ((field, default_factory), ...): what the C decoder
    copies instead of calling __init__."""
    defaults, factories = {}, []
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING:
            defaults[f.name] = None
            factories.append((f.name, f.default_factory))
        elif f.default is not dataclasses.MISSING:
            defaults[f.name] = f.default
        else:
            raise TypeError(f"{cls.__name__}.{f.name} has no default")
    return defaults, tuple(factories)


def _c_decode_common_12():
    """_decode_common_12 run by pycdr._speedups when pycdr runs its C path (the same
    messages, or None, for the same bytes: tests/test_giop_fast_decode.py); None
    on the pure-Python path."""
    from .. import marshal
    if marshal.IMPLEMENTATION != "c":
        return None
    from .. import _speedups
    _speedups.configure_giop(Request, *_field_template(Request), Reply,
                             *_field_template(Reply), KeyAddr, _fast_service_contexts,
                             parse_header, _decode_common_12)
    return _speedups.decode_common_12


_decode_common_12_python = _decode_common_12
_decode_common_12 = _c_decode_common_12() or _decode_common_12


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
    from ..marshal import read_value   # the marshaler imports ior; import late
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


def encode_fragments(msg: Message, data: bytes, max_fragment_size: int, *,
                     write_body=None) -> list[bytes]:
    """``msg`` (already encoded as ``data``) as the messages to send when no
    message may be longer than ``max_fragment_size`` bytes.

    GIOP 1.2/1.3 Request and Reply: the encoded message cut into Fragments
    (:func:`fragment_message`).  GIOP 1.1 Request and Reply: encoded again by
    a :class:`~pycdr.cdr.FragmentingWriter`, since 1.1 fragment data is aligned
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
    buf += _ULONG[w.little].pack(len(name) + 1)
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
