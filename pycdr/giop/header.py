"""The 12-byte GIOP message header, its flags and versions, and ZIOP.

``magic(4) major(1) minor(1) flags(1) message_type(1) message_size(4)``.
Only ``message_size`` depends on byte order; it counts the bytes after the
header.  In GIOP 1.0 the flags octet is a boolean ``byte_order``; from 1.1 on
bit 0 is the byte order and bit 1 "more fragments follow".  Bits 2 and 3 are
used by ZIOP (0x04 "compression supported", 0x08 "compression enabled").

A ZIOP message has the same header with magic ``ZIOP``; its body is a
``Compression::CompressionData { ushort compressor_id; ulong original_length;
sequence<octet> data; }`` whose data, decompressed, is the body of the GIOP
message (OMG ZIOP 1.0, as Wireshark's packet-ziop dissects it).
"""

from __future__ import annotations

import enum
import struct
import zlib
from dataclasses import dataclass
from typing import NamedTuple

from ..codec.cdr import CDRReader, CDRWriter, DecodeWarning
from ..errors import (GIOPError, MessageTooLargeError, NotSupportedError, TruncatedError,
                      UnsupportedVersionError)

HEADER_SIZE = 12
GIOP_MAGIC = b"GIOP"
ZIOP_MAGIC = b"ZIOP"

FLAG_LITTLE_ENDIAN = 0x01
FLAG_MORE_FRAGMENTS = 0x02
FLAG_ZIOP_SUPPORTED = 0x04
FLAG_ZIOP_ENABLED = 0x08
KNOWN_FLAGS = FLAG_LITTLE_ENDIAN | FLAG_MORE_FRAGMENTS | FLAG_ZIOP_SUPPORTED | FLAG_ZIOP_ENABLED

# The largest message_size (bytes after the header) a receiver takes unless told
# otherwise, compressed or not: GiopConnection's and the server's limit, the
# analyzers' (pycdr decode, pycdr pcap) and the dissector's default.
MAX_MESSAGE_SIZE = 16 << 20

SUPPORTED_VERSIONS = ((1, 0), (1, 1), (1, 2), (1, 3))
HIGHEST_VERSION = (1, 3)

# Compression::CompressorId values (ZIOP); only zlib is decompressed here.
COMPRESSOR_NAMES = {0: "NONE", 1: "GZIP", 2: "PKZIP", 3: "BZIP2", 4: "ZLIB", 5: "LZMA",
                    6: "LZO", 7: "RZIP", 8: "7X", 9: "XAR"}
COMPRESSOR_ZLIB = 4


class MsgType(enum.IntEnum):
    Request = 0
    Reply = 1
    CancelRequest = 2
    LocateRequest = 3
    LocateReply = 4
    CloseConnection = 5
    MessageError = 6
    Fragment = 7


# Which message types may carry the more-fragments bit (CORBA 3.x 9.4.9 / 15.4.9).
FRAGMENTABLE = {
    (1, 1): frozenset({MsgType.Request, MsgType.Reply, MsgType.Fragment}),
    (1, 2): frozenset({MsgType.Request, MsgType.Reply, MsgType.LocateRequest,
                       MsgType.LocateReply, MsgType.Fragment}),
}
FRAGMENTABLE[(1, 3)] = FRAGMENTABLE[(1, 2)]


def may_fragment(version: tuple[int, int], msg_type: int) -> bool:
    return msg_type in FRAGMENTABLE.get(version, ())


class GiopHeader(NamedTuple):
    """The 12 header bytes, parsed.  (A NamedTuple: immutable, and made several
    times faster than a frozen dataclass, once or twice per message received.)"""
    version: tuple[int, int]
    flags: int
    msg_type: int            # a MsgType value, or the raw octet if unknown
    size: int                # message_size: bytes after the header
    magic: bytes = GIOP_MAGIC

    @property
    def little(self) -> bool:
        return bool(self.flags & FLAG_LITTLE_ENDIAN)

    @property
    def more_fragments(self) -> bool:
        return self.version != (1, 0) and bool(self.flags & FLAG_MORE_FRAGMENTS)

    @property
    def is_ziop(self) -> bool:
        return self.magic == ZIOP_MAGIC

    @property
    def unknown_flags(self) -> int:
        """Flag bits this version does not define (1.0: anything but 0/1)."""
        if self.version == (1, 0):
            return self.flags & ~FLAG_LITTLE_ENDIAN
        return self.flags & ~KNOWN_FLAGS

    @property
    def total_size(self) -> int:
        return HEADER_SIZE + self.size

    def to_json(self) -> dict:
        name = MsgType(self.msg_type).name if self.msg_type in MsgType._value2member_map_ \
            else f"unknown({self.msg_type})"
        return {"magic": self.magic.decode("latin-1"),
                "version": f"{self.version[0]}.{self.version[1]}",
                "flags": self.flags, "little_endian": self.little,
                "more_fragments": self.more_fragments, "message_type": name,
                "message_size": self.size}


def parse_header(data, offset: int = 0) -> GiopHeader:
    """Parse the 12 header bytes at ``data[offset:]``.

    Raises TruncatedError if fewer than 12 bytes are there, GIOPError for a bad
    magic, UnsupportedVersionError for a version outside 1.0-1.3.  Everything
    else (unknown flag bits, unknown message type) is left to the caller to
    judge, so an analyzer can still show the header."""
    if len(data) - offset < HEADER_SIZE:
        raise TruncatedError(f"GIOP header needs {HEADER_SIZE} bytes but only "
                             f"{max(len(data) - offset, 0)} remain", offset)
    # (the flags byte says the size's byte order: one unpack in that order)
    layout = _HEADER_LITTLE if data[offset + 6] & FLAG_LITTLE_ENDIAN else _HEADER_BIG
    magic, major, minor, flags, msg_type, size = layout.unpack_from(data, offset)
    if magic not in (GIOP_MAGIC, ZIOP_MAGIC):
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in magic)
        raise GIOPError(f"bad magic {magic.hex()} ({text}; expected GIOP)", offset)
    version = (major, minor)
    if version not in SUPPORTED_VERSIONS:
        raise UnsupportedVersionError(
            f"GIOP version {version[0]}.{version[1]} is not supported (1.0 to 1.3)", offset + 4)
    return GiopHeader(version, flags, msg_type, size, magic)


_HEADER_BIG = struct.Struct(">4sBBBBI")
_HEADER_LITTLE = struct.Struct("<4sBBBBI")


def encode_header(version: tuple[int, int], little: bool, msg_type: int, size: int,
                  *, more_fragments: bool = False, extra_flags: int = 0,
                  magic: bytes = GIOP_MAGIC) -> bytes:
    if version not in SUPPORTED_VERSIONS:
        raise UnsupportedVersionError(f"cannot encode GIOP {version[0]}.{version[1]}")
    flags = (FLAG_LITTLE_ENDIAN if little else 0) | extra_flags
    if more_fragments:
        if version == (1, 0):
            raise GIOPError("GIOP 1.0 has no fragments")
        flags |= FLAG_MORE_FRAGMENTS
    return magic + bytes((version[0], version[1], flags, int(msg_type))) + \
        struct.pack("<I" if little else ">I", size)


def message_error_bytes(version: tuple[int, int] = (1, 2)) -> bytes:
    """A complete MessageError message (it has no body)."""
    return encode_header(version, False, MsgType.MessageError, 0)


# --- ZIOP -------------------------------------------------------------------------
@dataclass(frozen=True)
class ZiopInfo:
    compressor_id: int
    original_length: int
    compressed_length: int

    def to_json(self) -> dict:
        return {"compressor": COMPRESSOR_NAMES.get(self.compressor_id, self.compressor_id),
                "original_length": self.original_length,
                "compressed_length": self.compressed_length}


# ZIOP data is inflated this many bytes at a time, so the limit is checked as the
# output grows and never more than a step past it is held.
INFLATE_STEP = 256 * 1024
# MessageTooLargeError.head: this much of the refused message's body is inflated,
# enough for any usual Request or Reply header (whose request it was).
ZIOP_HEAD_SIZE = 64 * 1024


def decompress_ziop(data, header: GiopHeader, warnings: list, *,
                    max_message_size: int = MAX_MESSAGE_SIZE) -> tuple[bytearray, ZiopInfo]:
    """The equivalent GIOP message (header + decompressed body) of a complete
    ZIOP message in ``data[:header.total_size]``.

    The body may inflate to at most ``max_message_size`` bytes, the limit a plain
    message's ``message_size`` has: checked while inflating, in steps of
    INFLATE_STEP, whatever ``original_length`` claims.  Beyond it:
    :class:`MessageTooLargeError` (offset: ``original_length`` when that claims
    too much, else the compressed byte where the output passed the limit), with
    the message's first bytes inflated in ``head``."""
    # (a lenient decoder hands over a message cut short: read what is there, and the reads
    # past it fail as truncated)
    r = CDRReader(data, start=HEADER_SIZE, end=min(header.total_size, len(data)), origin=0,
                  little=header.little, version=header.version)
    compressor_id = r.read_ushort()
    original_length = r.read_ulong()
    compressed = r.read_octet_sequence()
    data_start = r.pos - len(compressed)
    info = ZiopInfo(compressor_id, original_length, len(compressed))
    if compressor_id != COMPRESSOR_ZLIB:
        raise NotSupportedError(f"ZIOP compressor {COMPRESSOR_NAMES.get(compressor_id, compressor_id)}"
                                " is not supported (only ZLIB)")

    def giop_header(size):
        flags = header.flags & ~(FLAG_ZIOP_ENABLED | FLAG_LITTLE_ENDIAN)
        return encode_header(header.version, header.little, header.msg_type, size,
                             extra_flags=flags)

    def too_large(message, offset):
        head = giop_header(original_length) + _inflate(compressed, ZIOP_HEAD_SIZE, strict=False)[0]
        return MessageTooLargeError(message, offset, head=head)

    if original_length > max_message_size:
        raise too_large(f"ZIOP original length {original_length} exceeds the limit of "
                        f"{max_message_size} bytes", HEADER_SIZE + 4)
    out = bytearray(HEADER_SIZE)         # the header goes in front once the size is known
    body, consumed = _inflate(compressed, max_message_size + 1, out)
    if len(body) - HEADER_SIZE > max_message_size:
        raise too_large(f"ZIOP data inflates past the limit of {max_message_size} bytes "
                        f"(original length {original_length})", data_start + consumed)
    size = len(body) - HEADER_SIZE
    if size != original_length:
        warnings.append(DecodeWarning("ziop-length",
                                      f"ZIOP data decompresses to {size} bytes, header says "
                                      f"{original_length}", HEADER_SIZE + 4))
    body[:HEADER_SIZE] = giop_header(size)
    return body, info


def _inflate(compressed: bytes, limit: int, out: bytearray | None = None, strict: bool = True):
    """``(out + at most limit inflated bytes, compressed bytes consumed)``.  Data
    that is not zlib: GIOPError, or (``strict=False``) what inflated before it."""
    if out is None:
        out = bytearray()
    start = len(out)
    d = zlib.decompressobj()
    data = memoryview(compressed)
    fed = 0
    tail = b""
    try:
        while not d.eof and len(out) - start < limit:
            # The input goes in steps too: zlib copies what a step leaves unconsumed,
            # and that copy must not be the rest of a large message each time.
            if not tail and fed < len(data):
                tail = data[fed:fed + INFLATE_STEP]
                fed += len(tail)
            before = len(tail)
            step = d.decompress(tail, min(INFLATE_STEP, limit - (len(out) - start)))
            tail = d.unconsumed_tail
            if not step and len(tail) == before:
                break               # the data ends before the stream does
            out += step
    except zlib.error as e:
        if strict:
            raise GIOPError(f"ZIOP data does not decompress: {e}", HEADER_SIZE + 8) from None
    return out, fed - len(tail)


def compress_to_ziop(message: bytes, level: int = 6) -> bytes:
    """Wrap an encoded GIOP message as a ZIOP message (zlib)."""
    header = parse_header(message)
    body = message[HEADER_SIZE:header.total_size]
    w = CDRWriter(little=header.little, offset=HEADER_SIZE)
    w.write_ushort(COMPRESSOR_ZLIB)
    w.write_ulong(len(body))
    w.write_octet_sequence(zlib.compress(body, level))
    payload = w.getvalue()
    return encode_header(header.version, header.little, header.msg_type, len(payload),
                         extra_flags=header.flags & ~(FLAG_LITTLE_ENDIAN | FLAG_MORE_FRAGMENTS),
                         more_fragments=header.more_fragments, magic=ZIOP_MAGIC) + payload
