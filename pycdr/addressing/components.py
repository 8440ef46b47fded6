"""Tagged components in general (CORBA 3.x Part 2, 7.6.6): their names, the raw form a
component keeps when its tag is unknown or its data does not decode, and the encapsulation
that typed components read and write their fields in.  The components themselves are in
:mod:`.csiv2` (security) and :mod:`.iiop` (the rest).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..codec.cdr import CDRReader, CDRWriter
from ..errors import DecodeError, InvalidValueError

# IOP::ComponentId values (CORBA 3.x Part 2 7.6.6, CSIv2, omniORB's own).
COMPONENT_NAMES = {
    0: "TAG_ORB_TYPE", 1: "TAG_CODE_SETS", 2: "TAG_POLICIES", 3: "TAG_ALTERNATE_IIOP_ADDRESS",
    5: "TAG_COMPLETE_OBJECT_KEY", 6: "TAG_ENDPOINT_ID_POSITION", 12: "TAG_LOCATION_POLICY",
    13: "TAG_ASSOCIATION_OPTIONS", 14: "TAG_SEC_NAME", 15: "TAG_SPKM_1_SEC_MECH",
    16: "TAG_SPKM_2_SEC_MECH", 17: "TAG_KerberosV5_SEC_MECH", 18: "TAG_CSI_ECMA_Secret_SEC_MECH",
    19: "TAG_CSI_ECMA_Hybrid_SEC_MECH", 20: "TAG_SSL_SEC_TRANS", 21: "TAG_CSI_ECMA_Public_SEC_MECH",
    22: "TAG_GENERIC_SEC_MECH", 23: "TAG_FIREWALL_TRANS", 24: "TAG_SCCP_CONTACT_INFO",
    25: "TAG_JAVA_CODEBASE", 26: "TAG_TRANSACTION_POLICY", 27: "TAG_FT_GROUP",
    28: "TAG_FT_PRIMARY", 29: "TAG_FT_HEARTBEAT_ENABLED", 30: "TAG_MESSAGE_ROUTERS",
    31: "TAG_OTS_POLICY", 32: "TAG_INV_POLICY", 33: "TAG_CSI_SEC_MECH_LIST", 34: "TAG_NULL_TAG",
    35: "TAG_SECIOP_SEC_TRANS", 36: "TAG_TLS_SEC_TRANS", 37: "TAG_ACTIVITY_POLICY",
    38: "TAG_RMI_CUSTOM_MAX_STREAM_FORMAT", 100: "TAG_DCE_STRING_BINDING",
    101: "TAG_DCE_BINDING_NAME", 102: "TAG_DCE_NO_PIPES", 103: "TAG_DCE_SEC_MECH",
    123: "TAG_INET_SEC_TRANS",
    0x41545401: "TAG_OMNIORB_BIDIR", 0x41545402: "TAG_OMNIORB_UNIX_TRANS",
    0x41545403: "TAG_OMNIORB_PERSISTENT_ID", 0x41545404: "TAG_OMNIORB_RESTRICTED_CONNECTION",
    # TAO's own (tao/corbafwd.h): 0x54414f00 was TAO_TAG_PRIORITY, kept reserved; 01 is SSLIOP's.
    0x54414F00: "TAO_TAG_PRIORITY (obsolete)", 0x54414F02: "TAO_TAG_ENDPOINTS",
}

# ORB_TYPE of pycdr's own ORB's IORs: "PYC\0" (not an OMG-assigned vendor tag).
PYCDR_ORB_TYPE = 0x50594300

# ORB types (OMG vendor tags), by the upper 24 bits as omniORB's catior reads them.
ORB_VENDORS = {
    PYCDR_ORB_TYPE: "pycdr",
    0x41545400: "omniORB", 0x48500000: "HP", 0x4E534400: "HP", 0x49424D00: "IBM",
    0x53554E00: "Sun", 0x4F424200: "BEA", 0x42454100: "BEA", 0x574C5300: "BEA",
    0x494C5500: "Xerox", 0x58505300: "PrismTech", 0x50544300: "PrismTech",
    0x49534900: "AdNovum Informatik", 0x56495300: "Borland", 0x4F495300: "Object Interface Systems",
    0x46420000: "FloorBoard Software", 0x4E4E4E00: "Rogue Wave", 0x4E550000: "Nihon Unisys",
    0x4A424B00: "SilverStream Software", 0x54414F00: "TAO", 0x4C434200: "2AB",
    0x41505800: "Univ. of Erlangen-Nuernberg", 0x4F425400: "ORBit", 0x47534900: "GemStone Systems",
    0x464A0000: "Fujitsu", 0x4F425F00: "TIBCO", 0x4F414B00: "Camros Corporation",
    0x4F4F4300: "IONA (Orbacus)", 0x49545F00: "IONA (Orbix)", 0x4E454300: "NEC",
    0x424C5500: "Berry Software", 0x56495400: "Vitria", 0x444F4700: "Exoffice Technologies",
    0xCB0E0000: "Chicago Board of Exchange", 0x4A414300: "JacORB",
    0x58545200: "Xtradyne Technologies", 0x54475800: "Top Graph'X", 0x41646100: "AdaOS Project",
    0x4E4F4B00: "Nokia", 0x45524900: "Ericsson", 0x52415900: "RayORB",
    0x53414E00: "Sankhya Technologies", 0x414E4400: "Androsoft", 0x42424300: "Bionic Buffalo",
    0x522E4300: "Remoting.Corba", 0x504F0000: "PolyORB", 0x54494400: "Telefonica",
}


def orb_vendor(orb_type: int) -> str | None:
    return ORB_VENDORS.get(orb_type & 0xFFFFFF00)


def vendor_tag_name(tag: int, kind: str) -> str:
    """A tag no table here knows: by its vendor where it lies in a vendor's range (the OMG
    hands vendors tags that start with their ORB type's upper 24 bits)."""
    vendor = orb_vendor(tag)
    return f"{vendor} {kind} 0x{tag:08x}" if vendor else f"{kind} {tag} (0x{tag:08x})"


def component_name(tag: int) -> str:
    return COMPONENT_NAMES.get(tag) or vendor_tag_name(tag, "component")


@dataclass(frozen=True)
class TaggedComponent:
    """A component kept raw: unknown tag, or data that did not decode."""
    tag: int
    data: bytes

    def encode_data(self, little: bool = False) -> bytes:
        return self.data

    def to_json(self) -> dict:
        return {"tag": self.tag, "name": component_name(self.tag), "data": self.data.hex()}


class TypedComponent:
    """Mixin: typed components read and write their fields in an encapsulation."""
    tag: int

    @classmethod
    def decode_data(cls, data: bytes, offset: int, parent: CDRReader):
        """The component from its data (at ``offset`` in the parent's buffer); None when the
        data is malformed and the parent lenient (a warning is recorded)."""
        return decode_encapsulated(cls.read_fields, data, offset, parent, component_name(cls.tag))

    def encode_data(self, little: bool = False) -> bytes:
        w = CDRWriter(little=little).encapsulation_writer()
        self.write_fields(w)
        return w.getvalue()

    def to_json(self) -> dict:
        out = {"tag": self.tag, "name": component_name(self.tag)}
        out.update(self.fields_json())
        return out


def decode_encapsulated(read_fields, data: bytes, offset: int, parent: CDRReader,
                        what: str, version=None):
    """Decode the encapsulation ``data`` (at ``offset`` in the parent's buffer,
    so offsets stay absolute) with ``read_fields(reader)``.  Returns None when
    it is malformed and the parent is lenient (a warning is recorded: the
    caller keeps the raw bytes); raises in strict mode."""
    r = parent.sub_reader(offset, offset + len(data))
    if version is not None:
        r.version = version
    try:
        if not data:
            raise DecodeError(f"{what} has no data", offset)
        r.read_encapsulation_byte_order()
        result = read_fields(r)
        if r.pos != r.end:
            r.note("encapsulation-trailing-bytes", f"{r.end - r.pos} bytes after the {what}",
                   r.pos)
        return result
    except DecodeError as e:
        if not parent.lenient:
            raise
        parent.violation(InvalidValueError, "bad-encapsulation",
                         f"malformed {what} ({e.message}); kept raw",
                         e.offset if e.offset is not None else offset)
        return None


def decode_component(tag: int, data: bytes, offset: int, parent: CDRReader, typed: dict):
    """The component of class ``typed[tag]`` decoded from ``data``; a TaggedComponent when
    the tag is not in ``typed`` or the data is malformed (lenient mode)."""
    cls = typed.get(tag)
    comp = None if cls is None else cls.decode_data(data, offset, parent)
    return TaggedComponent(tag, data) if comp is None else comp
