"""Events a :class:`pycdr.giop.connection.GiopConnection` hands out."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ..errors import PycdrError


class _Sentinel(type):
    def __repr__(cls):
        return cls.__name__


class NEED_DATA(metaclass=_Sentinel):
    """next_event() needs more bytes before it can return anything."""


class TAKEN(metaclass=_Sentinel):
    """next_event() handed a Request or Reply to the connection's ``take_directly``,
    which took it (an ORB's fast path): nothing else to do."""


class Answer(enum.Enum):
    """What the ORB should do about a protocol violation."""
    SEND_MESSAGE_ERROR = "send MessageError"               # framing intact: carry on
    SEND_MESSAGE_ERROR_AND_CLOSE = "send MessageError, then close"   # stream unusable
    CLOSE = "close the connection"                          # nothing can be sent
    DISCARD = "discard the message"                         # nothing to answer
    SEND_SYSTEM_EXCEPTION = "answer the request with a system exception"   # carry on


@dataclass(frozen=True)
class MessageReceived:
    """A complete message (fragments already reassembled)."""
    message: object
    # The message's bytes (reassembled, header rewritten): a bytearray when a large
    # message was received in place (receive_buffer), handed over without a copy.
    raw: bytes
    fragments: int = 1        # how many GIOP messages it came in
    offset: int = 0           # stream offset of its first byte

    @property
    def warnings(self) -> list:
        return self.message.warnings


@dataclass(frozen=True)
class ProtocolViolation:
    """The peer broke the protocol.  ``reply`` holds the bytes to send (a
    MessageError) when ``answer`` asks for one."""
    error: PycdrError
    answer: Answer
    reply: bytes = b""
    request_id: int | None = None
    offset: int | None = None    # stream offset of the offending message

    def __str__(self) -> str:
        return f"{self.error} -> {self.answer.value}"


@dataclass(frozen=True)
class ConnectionClosed:
    """Nothing more will come: the peer closed (EOF or CloseConnection) or the
    stream broke.  Returned by every later next_event()."""
    reason: str
    clean: bool = True
    pending_requests: tuple = field(default_factory=tuple)
