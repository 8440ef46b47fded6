"""GIOP: messages (``messages``), the 12-byte header and ZIOP (``header``),
service contexts, system exceptions and a sans-I/O connection (``connection``)."""

from .header import HEADER_SIZE, GiopHeader, MsgType, parse_header  # noqa: F401
from .messages import (AddressingDisposition, CancelRequest, CloseConnection,  # noqa: F401
                       Fragment, KeyAddr, LocateReply, LocateRequest, LocateStatus,
                       Message, MessageError, ProfileAddr, ReferenceAddr, Reply,
                       ReplyStatus, Request, decode_message, encode_fragments,
                       encode_message, fragment_message, split_messages)
from .connection import GiopConnection, Role  # noqa: F401,E402
from .events import (NEED_DATA, Answer, ConnectionClosed, MessageReceived,  # noqa: F401,E402
                     ProtocolViolation)
