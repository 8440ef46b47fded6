"""The GIOP message types: the status and addressing enums, the target
addresses, the eight messages as dataclasses (1.0, 1.1 and 1.2 fields; 1.3 =
1.2) and their JSON form.  Their wire form is :mod:`.decoding` and
:mod:`.encoding`."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import ClassVar

from ...codec.cdr import CDRReader, SegmentedReader
from ...codec.ior import IOR, TaggedProfile, ior_to_string, printable_key
from ..header import FLAG_LITTLE_ENDIAN, FLAG_MORE_FRAGMENTS, MsgType, ZiopInfo
from ..sysexc import SystemException


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
        out["forward"] = ior_to_string(msg.forward)
    if msg.addressing_disposition is not None:
        out["addressing_disposition"] = _enum_name(AddressingDisposition,
                                                   msg.addressing_disposition)
