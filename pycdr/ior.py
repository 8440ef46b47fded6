"""Interoperable Object References: the CDR structure.

``struct IOR { string type_id; sequence<TaggedProfile> profiles; }`` with
``struct TaggedProfile { ProfileId tag; sequence<octet> profile_data; }``.
A nil reference has an empty type_id and no profiles; it maps to ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .cdr import CDRReader, CDRWriter

TAG_INTERNET_IOP = 0
TAG_MULTIPLE_COMPONENTS = 1
TAG_SCCP_IOP = 2
TAG_UIPMC = 3


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
