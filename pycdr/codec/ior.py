"""Interoperable Object References: the CDR structure and ``IOR:`` strings.

``struct IOR { string type_id; sequence<TaggedProfile> profiles; }`` with
``struct TaggedProfile { ProfileId tag; sequence<octet> profile_data; }``.
A nil reference has an empty type_id and no profiles; it maps to ``None``.
A stringified IOR is ``IOR:`` and the hex of an encapsulation of the IOR.
Profile bodies and components are decoded by :mod:`pycdr.addressing.iiop`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .cdr import CDRReader, CDRWriter
from ..errors import ObjectURLError

TAG_INTERNET_IOP = 0
TAG_MULTIPLE_COMPONENTS = 1
TAG_SCCP_IOP = 2
TAG_UIPMC = 3


# A reader's context key: when it holds a list, each non-nil object reference read by a
# value's TypeCode (pycdr.codec.plan) is added to it as (IOR, start, end, origin): where
# its CDR lies in the reader's buffer and the origin its alignment counted from then.
# (A proxy moves a reference by putting other bytes in its place.)
REFERENCE_SPANS = "reference_spans"


@dataclass(frozen=True)
class TaggedProfile:
    tag: int
    data: bytes     # the profile body (usually an encapsulation), kept verbatim


@dataclass(frozen=True)
class IOR:
    type_id: str
    profiles: tuple = field(default_factory=tuple)

    @property
    def is_nil(self) -> bool:
        return not self.type_id and not self.profiles


def read_ior(r: CDRReader) -> IOR:
    type_id = r.read_string()
    n = r.read_count(8, "IOR profile list")
    profiles = []
    for _ in range(n):
        tag = r.read_ulong()
        profiles.append(TaggedProfile(tag, r.read_octet_sequence()))
    return IOR(type_id, tuple(profiles))


def write_ior(w: CDRWriter, ior: IOR) -> None:
    w.write_string(ior.type_id)
    w.write_ulong(len(ior.profiles))
    for p in ior.profiles:
        w.write_ulong(p.tag)
        w.write_octet_sequence(p.data)


NIL = IOR("", ())


def ior_from_string(text: str, *, lenient: bool = False, warnings: list | None = None) -> IOR:
    """Parse ``IOR:<hex>`` (prefix and hex digits in any case; surrounding
    whitespace ignored).  Bad hex or an odd digit count raise ObjectURLError
    with the index of the offending character."""
    text = text.strip()
    if text[:4].upper() != "IOR:":
        raise ObjectURLError("a stringified IOR starts with 'IOR:'", 0)
    digits = text[4:]
    for i, ch in enumerate(digits):
        if ch not in "0123456789abcdefABCDEF":
            raise ObjectURLError(f"{ch!r} is not a hex digit", 4 + i)
    if len(digits) % 2:
        raise ObjectURLError(f"odd number of hex digits ({len(digits)})", len(text))
    data = bytes.fromhex(digits)
    r = CDRReader(data, lenient=lenient, warnings=warnings)
    if not data:
        raise ObjectURLError("empty IOR (no byte-order octet)", 4)
    r.read_encapsulation_byte_order()
    ior = read_ior(r)
    if r.pos != r.end:
        r.note("ior-trailing-bytes", f"{r.end - r.pos} bytes after the IOR", r.pos)
    return ior


def ior_to_string(ior: IOR, *, little: bool = False) -> str:
    w = CDRWriter(little=little).encapsulation_writer()
    write_ior(w, ior)
    return "IOR:" + w.getvalue().hex()


def printable_key(key: bytes) -> str:
    """An object key as catior shows it: printable ASCII as is, other octets as \\xNN."""
    return "".join(chr(b) if 32 <= b <= 126 else f"\\x{b:02x}" for b in key)
