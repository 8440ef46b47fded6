"""One error hierarchy for all of pycdr.

Decoding errors carry the byte offset (absolute, in the buffer handed to the
decoder) and the path of the value being decoded (``args[0].items[3].name``).
The path is built while the exception unwinds: each compound decoder prepends
its own segment, so the hot path pays nothing for it.
"""

from __future__ import annotations


class PycdrError(Exception):
    """Base of every error pycdr raises on purpose."""


class NotSupportedError(PycdrError):
    """A legal construct that pycdr does not handle (named in the message)."""


class BadTypeCodeError(PycdrError):
    """A TypeCode built in code is inconsistent (duplicate labels, bad bounds...)."""


class CDRError(PycdrError):
    """Base of marshaling errors (CORBA's MARSHAL)."""

    def __init__(self, message: str, offset: int | None = None, path: str = ""):
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.path = path

    def add_path(self, segment: str) -> None:
        """Prepend a path segment: ``.name`` or ``[3]``."""
        if self.path and not self.path.startswith(("[", ".")):
            self.path = "." + self.path
        self.path = segment + self.path

    def __str__(self) -> str:
        text = self.message
        if self.offset is not None:
            text += f" at offset {self.offset}"
        if self.path:
            path = self.path[1:] if self.path.startswith(".") else self.path
            text += f" (in {path})"
        return text


class EncodeError(CDRError):
    """A value does not fit its TypeCode (wrong type, out of range, over bound)."""


class DecodeError(CDRError):
    """Bytes that are not a valid CDR encoding of the TypeCode."""


class TruncatedError(DecodeError):
    """The data ends before the value does (or a length claims more than is left)."""


class InvalidValueError(DecodeError):
    """A field holds a value its type does not allow (boolean 2, enum out of range, ...)."""


class BoundExceededError(DecodeError):
    """A bounded string or sequence is longer than its bound."""


class InvalidTypeCodeError(DecodeError):
    """An encoded TypeCode is malformed: unknown kind, bad indirection, bad parameters."""


class CodeSetError(CDRError):
    """Text that cannot be converted in the negotiated transmission code set,
    or wide characters where the GIOP version has none (GIOP 1.0)."""


class CodeSetDecodeError(CodeSetError, DecodeError):
    pass


class CodeSetEncodeError(CodeSetError, EncodeError):
    pass


class RecursionLimitError(DecodeError):
    """Nesting deeper than the decoder allows (a hostile TypeCode or value)."""


class GIOPError(DecodeError):
    """A GIOP message or stream that breaks the protocol: bad magic, a header
    that does not fit, a message type that may not be fragmented, ..."""


class MessageTooLargeError(GIOPError):
    """A message larger than the receiver's limit on a message: its header's
    ``message_size``, or what a ZIOP message inflates to (one budget for a
    message, compressed or not).  ``head``: for a ZIOP message, the start of the
    GIOP message it inflates to (header and at most the first 64 KiB of its body),
    from which a receiver can read whose request it was; else None."""

    def __init__(self, message: str, offset: int | None = None, path: str = "",
                 head: bytes | None = None):
        super().__init__(message, offset, path)
        self.head = head


class UnsupportedVersionError(GIOPError):
    """A GIOP version other than 1.0-1.3.  The spec's answer: a MessageError at
    the highest version the receiver supports, then close the connection."""


class ObjectURLError(DecodeError):
    """A stringified object reference (``IOR:``, ``corbaloc:``, ``corbaname:``)
    that cannot be parsed; ``offset`` is the index of the bad character."""


class LocalProtocolError(PycdrError):
    """This side was asked to do something GIOP forbids (send a Reply to a
    request it never received, reuse an outstanding request id, ...)."""


# At most this many undecodable bytes are put into an analyzer's error entry (as hex).
MAX_ERROR_BYTES = 4096


def undecodable_bytes_json(data, start: int, end: int) -> dict:
    """The ``bytes`` of an analyzer's error entry (hex, at most MAX_ERROR_BYTES of
    ``data[start:end]``) and their whole length, ``bytes_length``."""
    return {"bytes": bytes(data[start:min(end, start + MAX_ERROR_BYTES)]).hex(),
            "bytes_length": end - start}


def error_json(e: PycdrError) -> dict:
    """An error as the analyzers report it (``pycdr pcap --json``, ``pycdr decode
    --json``): its class, whether the data ended early, its message and offset."""
    kind = "truncated" if isinstance(e, TruncatedError) else "malformed"
    return {"type": type(e).__name__, "kind": kind, "message": getattr(e, "message", str(e)),
            "offset": getattr(e, "offset", None)}


class CaptureError(PycdrError):
    """A pcap/pcapng file that cannot be read on: not a capture, a record or
    block whose length does not fit the file, an unknown interface.  ``offset``
    is the file offset of the record or block, ``frame`` the 1-based number
    the packet would have had (None for a block that holds no packet)."""

    def __init__(self, message: str, offset: int | None = None, frame: int | None = None):
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.frame = frame

    def __reduce__(self):
        # Whole through pickle (pycdr.capture.shard's workers send it to their parent).
        return type(self), (self.message, self.offset, self.frame)

    def __str__(self) -> str:
        where = []
        if self.frame is not None:
            where.append(f"frame {self.frame}")
        if self.offset is not None:
            where.append(f"file offset {self.offset}")
        return f"{', '.join(where)}: {self.message}" if where else self.message


class CaptureTruncatedError(CaptureError):
    """The file ends inside a record or block (a capture cut short)."""
