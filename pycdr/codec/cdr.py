"""CDR streams: a reader and a writer of primitive types over byte buffers.

Alignment is relative to an *origin* the caller sets: the first byte of a GIOP
message header for message bodies, the byte-order octet for encapsulations.
An encapsulation read or written inside a stream gets its own reader or
writer, with its own byte order and origin, over the same buffer.

The reader never trusts a length: every count is checked against the bytes
left before anything is allocated.  Strict mode raises on the first
violation; lenient mode (for the analyzer) records it as a
:class:`DecodeWarning` with its offset and carries on where it can.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .. import codesets
from ..errors import (BoundExceededError, CodeSetDecodeError, CodeSetEncodeError, DecodeError,
                      EncodeError, InvalidValueError, TruncatedError)

GIOP_1_0 = (1, 0)
GIOP_1_1 = (1, 1)
GIOP_1_2 = (1, 2)
GIOP_1_3 = (1, 3)
DEFAULT_VERSION = GIOP_1_2


@dataclass(frozen=True)
class DecodeWarning:
    """A protocol violation a lenient decoder saw and carried on past."""
    code: str          # stable identifier, shared with the dissector's expert info
    message: str
    offset: int
    severity: str = "warning"   # "warning" (violates the spec) or "note" (legal but odd)

    def __str__(self) -> str:
        return f"{self.message} at offset {self.offset}"

    def to_json(self) -> dict:
        return {"code": self.code, "message": self.message, "offset": self.offset,
                "severity": self.severity}


class _Formats:
    """Precompiled struct.Struct objects for one byte order."""

    def __init__(self, prefix: str):
        S = struct.Struct
        self.prefix = prefix
        self.short = S(prefix + "h")
        self.ushort = S(prefix + "H")
        self.long = S(prefix + "i")
        self.ulong = S(prefix + "I")
        self.longlong = S(prefix + "q")
        self.ulonglong = S(prefix + "Q")
        self.float = S(prefix + "f")
        self.double = S(prefix + "d")


BE = _Formats(">")
LE = _Formats("<")
_OCTET = struct.Struct("B")
_ZEROS = [bytes(n) for n in range(9)]

# Python-visible sizes of primitives: name -> (size, alignment).
PRIMITIVE_LAYOUT = {
    "short": (2, 2), "ushort": (2, 2), "long": (4, 4), "ulong": (4, 4),
    "longlong": (8, 8), "ulonglong": (8, 8), "float": (4, 4), "double": (8, 8),
    "longdouble": (16, 8), "boolean": (1, 1), "char": (1, 1), "octet": (1, 1),
}


class CDRReader:
    """Reads CDR from ``buf[start:end]`` with alignment relative to ``origin``.

    Offsets in errors and warnings are absolute indexes into ``buf``.
    """

    __slots__ = ("buf", "pos", "end", "origin", "little", "fmt", "version",
                 "tcs_c", "tcs_w", "lenient", "warnings", "check_padding",
                 "depth", "context")

    def __init__(self, buf, *, start: int = 0, end: int | None = None,
                 origin: int | None = None, little: bool = False,
                 version: tuple[int, int] = DEFAULT_VERSION,
                 tcs_c: int = codesets.DEFAULT_TCS_C,
                 tcs_w: int = codesets.DEFAULT_TCS_W,
                 lenient: bool = False, warnings: list | None = None,
                 check_padding: bool | None = None):
        if not isinstance(buf, (bytes, bytearray, memoryview)):
            buf = memoryview(buf)
        if isinstance(buf, memoryview) and (buf.ndim != 1 or buf.itemsize != 1):
            buf = buf.cast("B")
        self.buf = buf
        self.pos = start
        self.end = len(buf) if end is None else end
        if not 0 <= start <= self.end <= len(buf):
            raise ValueError("start/end outside the buffer")
        self.origin = start if origin is None else origin
        self.little = little
        self.fmt = LE if little else BE
        self.version = version
        self.tcs_c = tcs_c
        self.tcs_w = tcs_w
        self.lenient = lenient
        self.warnings = [] if warnings is None else warnings
        # Padding is "undefined" in CDR, so non-zero padding is only a note,
        # looked for when analysing (lenient) unless asked for explicitly.
        self.check_padding = lenient if check_padding is None else check_padding
        self.depth = 0
        self.context = None   # per-decode state (TypeCode/value indirection tables)

    # --- bookkeeping -------------------------------------------------------
    @property
    def remaining(self) -> int:
        return self.end - self.pos

    @property
    def limit(self) -> int:
        """Where the data this reader may read ends (a value chunk's end
        while inside one); ``end`` is the same but for a SegmentedReader."""
        return self.end

    def set_limit(self, end: int) -> None:
        self.end = end

    def set_byte_order(self, little: bool) -> None:
        self.little = little
        self.fmt = LE if little else BE

    def violation(self, exc_type, code: str, message: str, offset: int) -> None:
        """Raise in strict mode; record and carry on in lenient mode."""
        if self.lenient:
            self.warnings.append(DecodeWarning(code, message, offset))
        else:
            raise exc_type(message, offset)

    def note(self, code: str, message: str, offset: int) -> None:
        """Something legal but worth showing (only recorded when lenient)."""
        if self.lenient:
            self.warnings.append(DecodeWarning(code, message, offset, "note"))

    def truncated(self, need: int, pos: int, what: str = "value"):
        raise TruncatedError(
            f"{what} needs {need} bytes but only {max(self.end - pos, 0)} remain", pos)

    def align(self, n: int) -> None:
        pos = self.pos
        pad = (self.origin - pos) & (n - 1)
        if pad:
            if pos + pad > self.end:
                # Padding that runs off the end: the value after it cannot exist.
                self.truncated(pad, pos, "alignment padding")
            if self.check_padding:
                self._check_pad(pos, pos + pad)
            self.pos = pos + pad

    def _check_pad(self, start: int, stop: int) -> None:
        if any(self.buf[start:stop]):
            self.note("nonzero-padding",
                      f"non-zero padding bytes {bytes(self.buf[start:stop]).hex()}", start)

    def skip(self, n: int) -> None:
        if self.pos + n > self.end:
            self.truncated(n, self.pos)
        self.pos += n

    # --- primitives ------------------------------------------------------------
    def _read(self, size: int, st: struct.Struct, what: str):
        pos = self.pos
        pad = (self.origin - pos) & (size - 1)
        if pad:
            if self.check_padding and pos + pad <= self.end:
                self._check_pad(pos, pos + pad)
            pos += pad
        if pos + size > self.end:
            self.truncated(size, pos, what)
        self.pos = pos + size
        return st.unpack_from(self.buf, pos)[0]

    def read_octet(self) -> int:
        pos = self.pos
        if pos >= self.end:
            self.truncated(1, pos, "octet")
        self.pos = pos + 1
        return self.buf[pos]

    def read_boolean(self) -> bool:
        pos = self.pos
        if pos >= self.end:
            self.truncated(1, pos, "boolean")
        self.pos = pos + 1
        b = self.buf[pos]
        if b > 1:
            self.violation(InvalidValueError, "bad-boolean",
                           f"boolean octet is {b}, not 0 or 1", pos)
            return True
        return b == 1

    def read_short(self) -> int:
        return self._read(2, self.fmt.short, "short")

    def read_ushort(self) -> int:
        return self._read(2, self.fmt.ushort, "unsigned short")

    def read_long(self) -> int:
        return self._read(4, self.fmt.long, "long")

    def read_ulong(self) -> int:
        return self._read(4, self.fmt.ulong, "unsigned long")

    def read_longlong(self) -> int:
        return self._read(8, self.fmt.longlong, "long long")

    def read_ulonglong(self) -> int:
        return self._read(8, self.fmt.ulonglong, "unsigned long long")

    def read_float(self) -> float:
        return self._read(4, self.fmt.float, "float")

    def read_double(self) -> float:
        return self._read(8, self.fmt.double, "double")

    def read_longdouble_bytes(self) -> bytes:
        """The 16 octets of an IEEE binary128, normalised to big-endian order."""
        self.align(8)
        raw = self.read_raw(16, "long double")
        return raw if not self.little else raw[::-1]

    def read_raw(self, n: int, what: str = "octets") -> bytes:
        pos = self.pos
        if n < 0 or pos + n > self.end:
            self.truncated(n, pos, what)
        self.pos = pos + n
        return bytes(self.buf[pos:pos + n])

    def read_count(self, min_element_size: int, what: str = "sequence") -> int:
        """A ulong count, checked against the bytes left (each element takes at
        least ``min_element_size`` bytes) before the caller allocates anything."""
        n = self.read_ulong()
        if n and n * min_element_size > self.end - self.pos:
            raise TruncatedError(
                f"{what} length {n} needs at least {n * min_element_size} bytes "
                f"but only {self.end - self.pos} remain", self.pos - 4)
        return n

    def read_octet_sequence(self, bound: int = 0) -> bytes:
        return self.read_raw(self._octet_count(bound))

    def read_octet_view(self, bound: int = 0) -> memoryview:
        """read_octet_sequence as a view of the reader's buffer, not a copy (the view
        keeps the whole buffer alive): an ORB's octet_views mapping of bulk data."""
        n = self._octet_count(bound)
        pos = self.pos
        self.pos = pos + n
        return memoryview(self.buf)[pos:pos + n]

    def _octet_count(self, bound: int) -> int:
        """A sequence<octet>'s length, checked against its bound and the bytes left."""
        start = self.pos
        n = self.read_count(1, "sequence<octet>")
        if bound and n > bound:
            self.violation(BoundExceededError, "bound-exceeded",
                           f"sequence length {n} exceeds bound {bound}", start)
        return n

    # --- text ------------------------------------------------------------------
    def char_codec(self) -> str:
        codec = codesets.CHAR_CODECS.get(self.tcs_c)
        if codec is None:
            raise CodeSetDecodeError(f"char code set {codesets.name(self.tcs_c)} is not supported",
                                     self.pos)
        return codec

    def decode_chars(self, raw: bytes, offset: int) -> str:
        codec = self.char_codec()
        try:
            return raw.decode(codec)
        except UnicodeDecodeError as e:
            if self.lenient:
                self.violation(CodeSetDecodeError, "bad-char",
                               f"not valid {codesets.name(self.tcs_c)}: {e.reason}",
                               offset + e.start)
                return raw.decode(codec, "replace")
            raise CodeSetDecodeError(f"not valid {codesets.name(self.tcs_c)}: {e.reason}",
                                     offset + e.start) from None

    def read_char(self) -> str:
        pos = self.pos
        if pos >= self.end:
            self.truncated(1, pos, "char")
        self.pos = pos + 1
        b = self.buf[pos]
        if self.tcs_c == codesets.ISO_8859_1:
            return chr(b)
        return self.decode_chars(bytes((b,)), pos)

    def read_string(self, bound: int = 0) -> str:
        start = self.pos
        n = self.read_count(1, "string")
        pos = self.pos
        if n == 0:
            # Some ORBs (VisiBroker) send an empty string as length 0, no NUL.
            self.violation(InvalidValueError, "string-zero-length",
                           "string length 0 (a string holds at least its NUL)", start)
            return ""
        raw = self.buf[pos:pos + n]
        self.pos = pos + n
        body = raw[:-1]
        if raw[-1] != 0:
            self.violation(InvalidValueError, "string-no-nul",
                           "string is not terminated by NUL", pos + n - 1)
            body = raw
        if bound and len(body) > bound:
            self.violation(BoundExceededError, "bound-exceeded",
                           f"string of {len(body)} chars exceeds bound {bound}", start)
        if self.tcs_c == codesets.ISO_8859_1:
            return bytes(body).decode("latin-1")
        return self.decode_chars(bytes(body), pos)

    def _wide_unit(self, what: str) -> tuple[int, bool]:
        if self.version == GIOP_1_0:
            raise CodeSetDecodeError(f"{what} is not allowed in GIOP 1.0", self.pos)
        unit = codesets.WCHAR_UNITS.get(self.tcs_w)
        if unit is None:
            raise CodeSetDecodeError(f"wchar code set {codesets.name(self.tcs_w)} is not supported",
                                     self.pos)
        return unit

    def _decode_wide(self, raw: bytes, little: bool, unit: tuple[int, bool], offset: int) -> str:
        width, surrogates = unit
        codec = ("utf-16-le" if little else "utf-16-be") if width == 2 else \
                ("utf-32-le" if little else "utf-32-be")
        try:
            text = raw.decode(codec, "surrogatepass" if not surrogates else "strict")
        except UnicodeDecodeError as e:
            if self.lenient:
                self.violation(CodeSetDecodeError, "bad-wchar",
                               f"invalid {codesets.name(self.tcs_w)} data: {e.reason}",
                               offset + e.start)
                return raw.decode(codec, "replace")
            raise CodeSetDecodeError(f"invalid {codesets.name(self.tcs_w)} data: {e.reason}",
                                     offset + e.start) from None
        return text

    def read_wchar(self) -> str:
        unit = self._wide_unit("wchar")
        width = unit[0]
        if self.version == GIOP_1_1:
            # GIOP 1.1: one fixed-width code unit, aligned to its size, stream byte order.
            self.align(width)
            pos = self.pos
            raw = self.read_raw(width, "wchar")
            return self._decode_wide(raw, self.little, unit, pos)
        # GIOP 1.2+: an octet length, then the encoded character.
        start = self.pos
        n = self.read_octet()
        pos = self.pos
        raw = self.read_raw(n, "wchar")
        little = False  # without a BOM, UTF-16 is big-endian (CORBA 3.x 9.3.1.6)
        if width == 2 and n == 4 and raw[:2] in (b"\xfe\xff", b"\xff\xfe"):
            little = raw[:2] == b"\xff\xfe"
            raw = raw[2:]
            pos += 2
        if len(raw) != width:
            self.violation(InvalidValueError, "bad-wchar-length",
                           f"wchar of {n} octets in a {width}-octet code set", start)
            if len(raw) < width:
                return ""
            raw = raw[:width]
        return self._decode_wide(raw, little, unit, pos)

    def read_wstring(self, bound: int = 0) -> str:
        unit = self._wide_unit("wstring")
        width = unit[0]
        start = self.pos
        if self.version == GIOP_1_1:
            # Length in code units, including a terminating wide NUL.
            n = self.read_count(width, "wstring")
            if n == 0:
                self.violation(InvalidValueError, "string-zero-length",
                               "wstring length 0 (GIOP 1.1 wstrings hold their NUL)", start)
                return ""
            self.align(width)
            pos = self.pos
            raw = self.read_raw(n * width, "wstring")
            if raw[-width:] != _ZEROS[width]:
                self.violation(InvalidValueError, "string-no-nul",
                               "GIOP 1.1 wstring is not terminated by a wide NUL",
                               pos + len(raw) - width)
            else:
                raw = raw[:-width]
            text = self._decode_wide(raw, self.little, unit, pos)
        else:
            # GIOP 1.2+: length in octets, no terminator, optional BOM (none = big-endian).
            n = self.read_count(1, "wstring")
            pos = self.pos
            raw = self.read_raw(n, "wstring")
            if n % width:
                self.violation(InvalidValueError, "odd-wstring-length",
                               f"wstring of {n} octets is not a whole number of "
                               f"{width}-octet units", start)
                raw = raw[:n - n % width]
            little = False
            if width == 2 and raw[:2] in (b"\xfe\xff", b"\xff\xfe"):
                little = raw[:2] == b"\xff\xfe"
                raw = raw[2:]
                pos += 2
            elif width == 4 and raw[:4] in (b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00"):
                little = raw[:4] == b"\xff\xfe\x00\x00"
                raw = raw[4:]
                pos += 4
            text = self._decode_wide(raw, little, unit, pos)
        if bound and len(text) > bound:
            self.violation(BoundExceededError, "bound-exceeded",
                           f"wstring of {len(text)} chars exceeds bound {bound}", start)
        return text

    # --- encapsulations ------------------------------------------------------------
    def read_encapsulation(self, what: str = "encapsulation") -> "CDRReader":
        """Read a sequence<octet> holding an encapsulation; return a reader over
        its contents positioned after the byte-order octet. This reader moves
        past the whole encapsulation."""
        start = self.pos
        n = self.read_count(1, what)
        pos = self.pos
        self.pos = pos + n
        sub = self.sub_reader(pos, pos + n)
        if n == 0:
            self.violation(TruncatedError, "empty-encapsulation",
                           f"{what} is empty (no byte-order octet)", start)
            return sub
        sub.read_encapsulation_byte_order()
        return sub

    def sub_reader(self, start: int, end: int) -> "CDRReader":
        cls = self._sub_reader_class()
        sub = cls.__new__(cls)
        sub.buf = self.buf
        sub.pos = start
        sub.end = end
        sub.origin = start
        sub.little = self.little
        sub.fmt = self.fmt
        sub.version = self.version
        sub.tcs_c = self.tcs_c
        sub.tcs_w = self.tcs_w
        sub.lenient = self.lenient
        sub.warnings = self.warnings
        sub.check_padding = self.check_padding
        sub.depth = self.depth
        sub.context = self.context
        return sub

    def _sub_reader_class(self):
        return type(self)          # subclasses (tracing readers) nest too

    def read_encapsulation_byte_order(self) -> None:
        pos = self.pos
        if pos >= self.end:
            self.truncated(1, pos, "byte-order octet")
        b = self.buf[pos]
        self.pos = pos + 1
        if b > 1:
            self.violation(InvalidValueError, "bad-byte-order",
                           f"encapsulation byte-order octet is {b}, not 0 or 1", pos)
        self.set_byte_order(bool(b & 1))


class SegmentedReader(CDRReader):
    """A reader over a message reassembled from GIOP 1.1 fragments.

    In GIOP 1.1 a fragment's data is aligned relative to the fragment's own
    start (CORBA 3.x Part 2, 9.4.9), so each fragment's data is a segment
    with its own alignment origin.  ``segments`` lists ``(start, origin)``
    in buffer positions, the first covering ``start``.  ``end`` stops at the
    current segment's end; a read that begins exactly there moves to the next
    segment.  Primitives never span fragments; a read that would (a sender's
    error) is a DecodeError naming the boundary.  Arrays of primitives cut
    between elements are read element by element (plan.NumberSeqNode); octet
    runs are contiguous in the reassembled buffer.  :class:`FragmentingWriter`
    writes what this reads.
    """

    __slots__ = ("segments", "final_end")

    def __init__(self, buf, segments, **kwargs):
        super().__init__(buf, **kwargs)
        self.final_end = self.end
        self.segments = tuple(segments)
        self._enter_segment()

    def _enter_segment(self) -> None:
        pos = self.pos
        start, origin = self.segments[0]
        nxt = self.final_end
        for i, (s, o) in enumerate(self.segments):
            if s <= pos:
                start, origin = s, o
                nxt = self.segments[i + 1][0] if i + 1 < len(self.segments) else self.final_end
        self.origin = origin
        self.end = min(nxt, self.final_end)

    def _sync(self) -> None:
        if self.pos >= self.end and self.end < self.final_end:
            self._enter_segment()

    def _sync_aligned(self, n: int) -> None:
        """Before an n-aligned read: padding that reaches the fragment's end
        means the value starts in the next fragment (aligned from its origin)."""
        self._sync()        # a run of octets (string text) may have ended in a later fragment
        pos = self.pos
        if pos < self.end < self.final_end:
            pad = (self.origin - pos) & (n - 1)
            if pad and pos + pad >= self.end:
                self.pos = self.end
        self._sync()

    @property
    def remaining(self) -> int:
        return self.final_end - self.pos

    @property
    def limit(self) -> int:
        return self.final_end

    def set_limit(self, end: int) -> None:
        # A value chunk's end: fragments keep their boundaries within it.
        self.final_end = end
        self._enter_segment()

    def truncated(self, need: int, pos: int, what: str = "value"):
        if self.end < self.final_end:
            raise DecodeError(f"{what} crosses the GIOP 1.1 fragment boundary at offset "
                              f"{self.end} (a primitive split between fragments, or an array "
                              f"of primitives cut between elements, which is not joined)", pos)
        super().truncated(need, pos, what)

    def _sub_reader_class(self):
        return CDRReader           # an encapsulation lies within one fragment

    def align(self, n):
        self._sync_aligned(n)
        super().align(n)

    def _read(self, size, st, what):
        self._sync_aligned(size)
        return super()._read(size, st, what)

    def read_octet(self):
        self._sync()
        return super().read_octet()

    def read_boolean(self):
        self._sync()
        return super().read_boolean()

    def read_char(self):
        self._sync()
        return super().read_char()

    def read_raw(self, n, what="octets"):
        # Octets have no alignment: a run of them may continue in the next
        # fragment (senders cut long octet sequences anywhere).
        self._sync()
        pos = self.pos
        if n < 0 or pos + n > self.final_end:
            super().truncated(n, pos, what)
        self.pos = pos + n
        if self.pos > self.end:
            self._enter_segment()
        return bytes(self.buf[pos:pos + n])

    def read_count(self, min_element_size, what="sequence"):
        # Counted against the whole message: the elements may be in later fragments.
        self._sync_aligned(4)
        n = super()._read(4, self.fmt.ulong, "unsigned long")
        if n and n * min_element_size > self.final_end - self.pos:
            raise TruncatedError(
                f"{what} length {n} needs at least {n * min_element_size} bytes "
                f"but only {self.final_end - self.pos} remain", self.pos - 4)
        return n

    def skip(self, n):
        self._sync()
        super().skip(n)


class CDRWriter:
    """Writes CDR into a growing bytearray, aligned relative to ``origin``.

    ``origin`` is the index (within this writer's buffer) that alignment counts
    from; a writer can also start "mid-stream" with ``offset`` (the position
    its first byte has relative to the origin of the stream it will be part of).
    """

    __slots__ = ("buf", "origin", "little", "fmt", "version", "tcs_c", "tcs_w",
                 "wstring_bom", "context")

    #: True for writers that may cut the stream between primitives
    #: (:class:`FragmentingWriter`): plans then write primitive by primitive
    #: instead of packing whole structs or arrays in one piece.
    fragmenting = False

    def __init__(self, *, little: bool = False, version: tuple[int, int] = DEFAULT_VERSION,
                 offset: int = 0, tcs_c: int = codesets.DEFAULT_TCS_C,
                 tcs_w: int = codesets.DEFAULT_TCS_W, wstring_bom: bool = False):
        self.buf = bytearray()
        self.origin = -offset
        self.little = little
        self.fmt = LE if little else BE
        self.version = version
        self.tcs_c = tcs_c
        self.tcs_w = tcs_w
        self.wstring_bom = wstring_bom
        self.context = None

    def getvalue(self) -> bytes:
        return bytes(self.buf)

    @property
    def position(self) -> int:
        """Position relative to the alignment origin."""
        return len(self.buf) - self.origin

    def __len__(self) -> int:
        return len(self.buf)

    def align(self, n: int) -> None:
        pad = (self.origin - len(self.buf)) & (n - 1)
        if pad:
            self.buf += _ZEROS[pad]

    def _write(self, size: int, st: struct.Struct, value, what: str) -> None:
        buf = self.buf
        pad = (self.origin - len(buf)) & (size - 1)
        if pad:
            buf += _ZEROS[pad]
        try:
            buf += st.pack(value)
        except (struct.error, TypeError) as e:
            raise EncodeError(f"{what}: {value!r} does not fit ({e})") from None

    def write_octet(self, value: int) -> None:
        if type(value) is not int or not 0 <= value <= 255:
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 255:
                raise EncodeError(f"octet: {value!r} is not an integer in 0..255")
        self.buf.append(value)

    def write_boolean(self, value) -> None:
        if value is True or value is False or (isinstance(value, int) and value in (0, 1)):
            self.buf.append(1 if value else 0)
        else:
            raise EncodeError(f"boolean: {value!r} is not True or False")

    def write_short(self, v) -> None:
        self._write(2, self.fmt.short, _int(v, "short"), "short")

    def write_ushort(self, v) -> None:
        self._write(2, self.fmt.ushort, _int(v, "unsigned short"), "unsigned short")

    def write_long(self, v) -> None:
        self._write(4, self.fmt.long, _int(v, "long"), "long")

    def write_ulong(self, v) -> None:
        self._write(4, self.fmt.ulong, _int(v, "unsigned long"), "unsigned long")

    def write_longlong(self, v) -> None:
        self._write(8, self.fmt.longlong, _int(v, "long long"), "long long")

    def write_ulonglong(self, v) -> None:
        self._write(8, self.fmt.ulonglong, _int(v, "unsigned long long"), "unsigned long long")

    def write_float(self, v) -> None:
        self._write(4, self.fmt.float, _float(v, "float"), "float")

    def write_double(self, v) -> None:
        self._write(8, self.fmt.double, _float(v, "double"), "double")

    def write_longdouble_bytes(self, big_endian16: bytes) -> None:
        self.align(8)
        self.buf += big_endian16 if not self.little else big_endian16[::-1]

    def write_raw(self, data, unit: int = 1) -> None:
        """Octets as they are.  ``unit``: the smallest piece a fragmenting
        writer may cut them into (2 or 4 for wide-character code units)."""
        self.buf += data

    def write_octet_sequence(self, data, bound: int = 0) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise EncodeError(f"sequence<octet>: expected bytes, not {type(data).__name__}")
        n = len(data)
        if bound and n > bound:
            raise EncodeError(f"sequence<octet> of {n} exceeds bound {bound}")
        self.write_ulong(n)
        self.write_raw(data)

    # --- text ------------------------------------------------------------------
    def encode_chars(self, text: str) -> bytes:
        codec = codesets.CHAR_CODECS.get(self.tcs_c)
        if codec is None:
            raise CodeSetEncodeError(f"char code set {codesets.name(self.tcs_c)} is not supported")
        try:
            return text.encode(codec)
        except UnicodeEncodeError as e:
            raise CodeSetEncodeError(
                f"{text[e.start:e.end]!r} cannot be sent in {codesets.name(self.tcs_c)}") from None
        except AttributeError:
            raise EncodeError(f"expected str, not {type(text).__name__}") from None

    def write_char(self, value) -> None:
        if not isinstance(value, str) or len(value) != 1:
            raise EncodeError(f"char: expected a 1-character str, not {value!r}")
        raw = self.encode_chars(value)
        if len(raw) != 1:
            raise CodeSetEncodeError(f"char {value!r} takes {len(raw)} octets in "
                                     f"{codesets.name(self.tcs_c)}; a char is one octet")
        self.buf += raw

    def write_string(self, value, bound: int = 0) -> None:
        if not isinstance(value, str):
            raise EncodeError(f"string: expected str, not {type(value).__name__}")
        if bound and len(value) > bound:
            raise EncodeError(f"string of {len(value)} chars exceeds bound {bound}")
        if "\0" in value:
            raise EncodeError("string contains NUL, which CDR strings cannot carry")
        raw = value.encode("latin-1") if self.tcs_c == codesets.ISO_8859_1 and value.isascii() \
            else self.encode_chars(value)
        self.write_ulong(len(raw) + 1)
        self.write_raw(raw + b"\0")

    def _wide_unit(self, what: str):
        if self.version == GIOP_1_0:
            raise CodeSetEncodeError(f"{what} is not allowed in GIOP 1.0")
        unit = codesets.WCHAR_UNITS.get(self.tcs_w)
        if unit is None:
            raise CodeSetEncodeError(f"wchar code set {codesets.name(self.tcs_w)} is not supported")
        return unit

    def _encode_wide(self, text: str, little: bool, unit) -> bytes:
        width, surrogates = unit
        if width == 2:
            if not surrogates and any(ord(ch) > 0xFFFF for ch in text):
                raise CodeSetEncodeError(f"{codesets.name(self.tcs_w)} cannot carry characters "
                                         "outside the Basic Multilingual Plane")
            codec = "utf-16-le" if little else "utf-16-be"
        else:
            codec = "utf-32-le" if little else "utf-32-be"
        try:
            return text.encode(codec)
        except UnicodeEncodeError as e:
            raise CodeSetEncodeError(f"cannot encode {text[e.start:e.end]!r} as "
                                     f"{codesets.name(self.tcs_w)}") from None

    def write_wchar(self, value) -> None:
        if not isinstance(value, str) or len(value) != 1:
            raise EncodeError(f"wchar: expected a 1-character str, not {value!r}")
        unit = self._wide_unit("wchar")
        width = unit[0]
        if width == 2 and ord(value) > 0xFFFF:
            raise CodeSetEncodeError(f"wchar {value!r} needs a surrogate pair; "
                                     "a wchar is one UTF-16 code unit")
        if self.version == GIOP_1_1:
            self.align(width)
            self.buf += self._encode_wide(value, self.little, unit)
        else:
            raw = self._encode_wide(value, False, unit)   # big-endian, no BOM
            self.buf.append(len(raw))
            self.buf += raw

    def write_wstring(self, value, bound: int = 0) -> None:
        if not isinstance(value, str):
            raise EncodeError(f"wstring: expected str, not {type(value).__name__}")
        if bound and len(value) > bound:
            raise EncodeError(f"wstring of {len(value)} chars exceeds bound {bound}")
        if "\0" in value:
            raise EncodeError("wstring contains NUL, which CDR wstrings cannot carry")
        unit = self._wide_unit("wstring")
        width = unit[0]
        if self.version == GIOP_1_1:
            raw = self._encode_wide(value, self.little, unit) + _ZEROS[width]
            self.write_ulong(len(raw) // width)
            self.align(width)
            self.write_raw(raw, width)
        else:
            if self.wstring_bom and value:
                bom = "\ufeff"
                raw = self._encode_wide(bom + value, self.little, unit)
            else:
                raw = self._encode_wide(value, False, unit)
            self.write_ulong(len(raw))
            self.write_raw(raw, width)

    # --- encapsulations ------------------------------------------------------------
    def encapsulation_writer(self, little: bool | None = None) -> "CDRWriter":
        """A writer for an encapsulation's contents (byte-order octet written)."""
        sub = CDRWriter(little=self.little if little is None else little,
                        version=self.version, tcs_c=self.tcs_c, tcs_w=self.tcs_w,
                        wstring_bom=self.wstring_bom)
        sub.buf.append(1 if sub.little else 0)
        sub.context = self.context
        return sub

    def write_encapsulation(self, sub: "CDRWriter") -> None:
        self.write_ulong(len(sub.buf))
        self.write_raw(sub.buf)


class FragmentingWriter(CDRWriter):
    """Writes a GIOP 1.1 message that is sent as a first message and Fragment
    messages of at most ``limit`` bytes each, GIOP headers included: the mirror
    of :class:`SegmentedReader`.

    In GIOP 1.1 a fragment's data is aligned relative to the fragment's own
    start and a primitive is never split between fragments (CORBA 3.x Part 2,
    9.4.9), so an encoded message cannot simply be cut afterwards.  Before each
    primitive this writer checks that it fits in the current fragment; if not,
    a new fragment begins there, its data 12 bytes (its header) past its
    alignment origin.  Runs of octets (octet and char sequences, string text,
    encapsulations) are cut anywhere, wide text between code units.  Every
    fragment but the last ends on a multiple of 8 from its own start (or, after
    padding, where the value that did not fit would have been aligned).

    ``buf`` holds the first message's header placeholder and the data, with no
    Fragment headers: positions in it are stream positions, as the reader's
    reassembled buffer has them (value indirections and chunk lengths count
    data only).  ``cuts`` lists where each Fragment's data begins.

    Inside a TypeCode encapsulation written in place the alignment origin is
    the encapsulation's own, so no cut is made there: a fragment may exceed
    the limit by one TypeCode.  A single primitive larger than a fragment's
    room also overruns it rather than loop.
    """

    __slots__ = ("limit", "cuts", "fragment_start", "fragment_end", "fragment_origin")
    fragmenting = True
    HEADER_SIZE = 12

    def __init__(self, limit: int, **kwargs):
        super().__init__(**kwargs)
        if self.version != GIOP_1_1:
            raise EncodeError("FragmentingWriter writes GIOP 1.1 (1.2 fragments are cut "
                              "after encoding)")
        if limit < 2 * self.HEADER_SIZE:
            raise EncodeError(f"fragment size {limit} leaves no room for data "
                              f"(at least {2 * self.HEADER_SIZE})")
        self.limit = limit
        self.cuts: list[int] = []
        self.fragment_start = self.HEADER_SIZE    # the first message's data follows its header
        self.fragment_origin = self.origin
        self.fragment_end = limit & ~7            # the first message starts at buf[0]

    def _cut(self) -> None:
        here = len(self.buf)
        self.cuts.append(here)
        self.fragment_start = here
        self.origin = self.fragment_origin = here - self.HEADER_SIZE
        self.fragment_end = self.origin + (self.limit & ~7)

    def _fit(self, align: int, size: int) -> None:
        """Start a new fragment unless ``size`` bytes aligned to ``align`` fit
        in this one (never inside an in-place encapsulation, never twice in a row).

        The padding before the value stays in the old fragment, which so ends
        where the value would have begun: omniORB rejects a 1.1 fragment that
        ends inside padding ("fragmented at incorrect boundary").  Fragments
        end on multiples of 8 from their start, so that padding always fits."""
        here = len(self.buf)
        pad = (self.origin - here) & (align - 1)
        if here + pad + size > self.fragment_end and self.origin == self.fragment_origin \
                and here > self.fragment_start:
            if pad:
                self.buf += _ZEROS[pad]
            self._cut()

    def _write(self, size, st, value, what) -> None:
        self._fit(size, size)
        super()._write(size, st, value, what)

    def write_octet(self, value) -> None:
        self._fit(1, 1)
        super().write_octet(value)

    def write_boolean(self, value) -> None:
        self._fit(1, 1)
        super().write_boolean(value)

    def write_char(self, value) -> None:
        self._fit(1, 1)
        super().write_char(value)

    def write_wchar(self, value) -> None:
        width = self._wide_unit("wchar")[0]
        self._fit(width, width)
        super().write_wchar(value)

    def write_longdouble_bytes(self, big_endian16: bytes) -> None:
        self._fit(8, 16)
        super().write_longdouble_bytes(big_endian16)

    def write_raw(self, data, unit: int = 1) -> None:
        view = memoryview(data).cast("B")
        buf = self.buf
        while len(view) > self.fragment_end - len(buf) and self.origin == self.fragment_origin:
            room = max(self.fragment_end - len(buf), 0)
            take = room - room % unit
            if take == 0 and len(buf) == self.fragment_start:
                break                  # one unit larger than a whole fragment: overrun
            buf += view[:take]
            view = view[take:]
            self._cut()
        buf += view

    def messages(self, header_for) -> list[bytes]:
        """The first message and its Fragments.  ``header_for(msg_type_is_fragment,
        size, more_fragments)`` gives each one's 12-byte GIOP header."""
        buf = self.buf
        bounds = [0] + self.cuts + [len(buf)]
        out = []
        for i in range(len(bounds) - 1):
            start, stop = bounds[i], bounds[i + 1]
            more = i + 2 < len(bounds)
            if i == 0:
                out.append(header_for(False, stop - self.HEADER_SIZE, more)
                           + bytes(buf[self.HEADER_SIZE:stop]))
            else:
                out.append(header_for(True, stop - start, more) + bytes(buf[start:stop]))
        return out


def _int(v, what):
    if type(v) is int:
        return v
    if isinstance(v, int):
        return int(v)
    try:
        return v.__index__()
    except AttributeError:
        raise EncodeError(f"{what}: expected an integer, not {type(v).__name__}") from None


def _float(v, what):
    if type(v) is float:
        return v
    try:
        return v.__float__()      # not float(v): that would parse strings
    except AttributeError:
        raise EncodeError(f"{what}: expected a number, not {type(v).__name__}") from None
