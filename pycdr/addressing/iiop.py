"""IIOP profile bodies and tagged components (CORBA 3.x Part 2, 7.6 and 9.7).

``IIOP::ProfileBody_1_0 { Version iiop_version; string host; ushort port;
sequence<octet> object_key; }``, plus ``sequence<IOP::TaggedComponent>
components`` from IIOP 1.1 on, all in an encapsulation.  A
TAG_MULTIPLE_COMPONENTS profile is an encapsulated component list.

Components decode to their own class where known; any other component, and
a known one whose data is malformed (with a warning, lenient mode), stays a
:class:`TaggedComponent` with its raw bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import codesets
from ..codec.cdr import CDRReader, CDRWriter
from ..errors import DecodeError, InvalidValueError
from ..codec.ior import IOR, TAG_INTERNET_IOP, TAG_MULTIPLE_COMPONENTS, TaggedProfile

# IOP::ComponentId values (CORBA 3.x Part 2 7.6.6, CSIv2, omniORB's own).
TAG_ORB_TYPE = 0
TAG_CODE_SETS = 1
TAG_POLICIES = 2
TAG_ALTERNATE_IIOP_ADDRESS = 3
TAG_SSL_SEC_TRANS = 20
TAG_JAVA_CODEBASE = 25
TAG_CSI_SEC_MECH_LIST = 33
TAG_OTS_POLICY = 31
TAG_INV_POLICY = 32
TAG_NULL_TAG = 34
TAG_TLS_SEC_TRANS = 36
TAG_RMI_CUSTOM_MAX_STREAM_FORMAT = 38
TAG_OMNIORB_UNIX_TRANS = 0x41545402

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

PROFILE_NAMES = {TAG_INTERNET_IOP: "TAG_INTERNET_IOP", TAG_MULTIPLE_COMPONENTS:
                 "TAG_MULTIPLE_COMPONENTS", 2: "TAG_SCCP_IOP", 3: "TAG_UIPMC",
                 4: "TAG_MOBILE_TERMINAL_IOP",
                 # Vendors' own profiles: TAO's (tao/corbafwd.h), ORBit2's (its iop
                 # headers), and those only seen in the field, named by their vendor tag.
                 0x54414F00: "TAO UIOP (local IPC)", 0x54414F02: "TAO SHMIOP (shared memory)",
                 0x54414F04: "TAO DIOP (GIOP over UDP)", 0x54414F0F: "TAO BIOP",
                 0x4F425400: "ORBit generic IOP", 0xBADFAECA: "ORBit specific (local socket)",
                 0x56495301: "VisiBroker profile",
                 20: "Orbacus SSL profile (tag 20)"}

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


def profile_name(tag: int) -> str:
    return PROFILE_NAMES.get(tag) or vendor_tag_name(tag, "profile")


# ----------------------------------------------------------------------------
# Components
@dataclass(frozen=True)
class TaggedComponent:
    """A component kept raw: unknown tag, or data that did not decode."""
    tag: int
    data: bytes

    def encode_data(self, little: bool = False) -> bytes:
        return self.data

    def to_json(self) -> dict:
        return {"tag": self.tag, "name": component_name(self.tag), "data": self.data.hex()}


class _TypedComponent:
    """Mixin: typed components encode their fields in an encapsulation."""
    tag: int

    def encode_data(self, little: bool = False) -> bytes:
        w = CDRWriter(little=little).encapsulation_writer()
        self.write_fields(w)
        return w.getvalue()

    def to_json(self) -> dict:
        out = {"tag": self.tag, "name": component_name(self.tag)}
        out.update(self.fields_json())
        return out


@dataclass(frozen=True)
class ORBTypeComponent(_TypedComponent):
    tag = TAG_ORB_TYPE
    orb_type: int

    @property
    def vendor(self) -> str | None:
        return orb_vendor(self.orb_type)

    @classmethod
    def read_fields(cls, r):
        return cls(r.read_ulong())

    def write_fields(self, w):
        w.write_ulong(self.orb_type)

    def fields_json(self):
        return {"orb_type": self.orb_type, "vendor": self.vendor}


@dataclass(frozen=True)
class CodeSetsComponent(_TypedComponent):
    """CONV_FRAME::CodeSetComponentInfo: native and conversion code sets."""
    tag = TAG_CODE_SETS
    char_native: int
    char_conversion: tuple
    wchar_native: int
    wchar_conversion: tuple

    @classmethod
    def read_fields(cls, r):
        def one():
            native = r.read_ulong()
            n = r.read_count(4, "conversion code sets")
            return native, tuple(r.read_ulong() for _ in range(n))
        c, cc = one()
        wc, wcc = one()
        return cls(c, cc, wc, wcc)

    def write_fields(self, w):
        for native, conv in ((self.char_native, self.char_conversion),
                             (self.wchar_native, self.wchar_conversion)):
            w.write_ulong(native)
            w.write_ulong(len(conv))
            for c in conv:
                w.write_ulong(c)

    def fields_json(self):
        name = codesets.name
        return {"char_native": name(self.char_native),
                "char_conversion": [name(c) for c in self.char_conversion],
                "wchar_native": name(self.wchar_native),
                "wchar_conversion": [name(c) for c in self.wchar_conversion]}


@dataclass(frozen=True)
class AlternateIIOPAddress(_TypedComponent):
    tag = TAG_ALTERNATE_IIOP_ADDRESS
    host: str
    port: int

    @classmethod
    def read_fields(cls, r):
        return cls(r.read_string(), r.read_ushort())

    def write_fields(self, w):
        w.write_string(self.host)
        w.write_ushort(self.port)

    def fields_json(self):
        return {"host": self.host, "port": self.port}


# Security::AssociationOptions bits, the target_supports/target_requires of the SSL and TLS
# components (CORBA Security Service; CSIv2, CORBA 3.x Part 2, 24).
NO_PROTECTION = 0x0001
INTEGRITY = 0x0002
CONFIDENTIALITY = 0x0004
DETECT_REPLAY = 0x0008
DETECT_MISORDERING = 0x0010
ESTABLISH_TRUST_IN_TARGET = 0x0020
ESTABLISH_TRUST_IN_CLIENT = 0x0040
ASSOCIATION_OPTION_NAMES = {
    NO_PROTECTION: "NoProtection", INTEGRITY: "Integrity", CONFIDENTIALITY: "Confidentiality",
    DETECT_REPLAY: "DetectReplay", DETECT_MISORDERING: "DetectMisordering",
    ESTABLISH_TRUST_IN_TARGET: "EstablishTrustInTarget",
    ESTABLISH_TRUST_IN_CLIENT: "EstablishTrustInClient",
    0x0080: "NoDelegation", 0x0100: "SimpleDelegation", 0x0200: "CompositeDelegation",
    0x0400: "IdentityAssertion", 0x0800: "DelegationByClient"}


def association_options(bits: int) -> list:
    """The names of the AssociationOptions set in ``bits``."""
    return [name for bit, name in ASSOCIATION_OPTION_NAMES.items() if bits & bit]


@dataclass(frozen=True)
class SSLSecTrans(_TypedComponent):
    """SSLIOP::SSL { AssociationOptions target_supports, target_requires; ushort port; }"""
    tag = TAG_SSL_SEC_TRANS
    target_supports: int
    target_requires: int
    port: int

    @classmethod
    def read_fields(cls, r):
        return cls(r.read_ushort(), r.read_ushort(), r.read_ushort())

    def write_fields(self, w):
        w.write_ushort(self.target_supports)
        w.write_ushort(self.target_requires)
        w.write_ushort(self.port)

    def fields_json(self):
        return {"target_supports": self.target_supports,
                "target_requires": self.target_requires, "port": self.port}


@dataclass(frozen=True)
class TLSSecTrans(_TypedComponent):
    """CSIIOP::TLS_SEC_TRANS { target_supports; target_requires;
    sequence<TransportAddress{string host; ushort port;}> addresses; }"""
    tag = TAG_TLS_SEC_TRANS
    target_supports: int
    target_requires: int
    addresses: tuple

    @classmethod
    def read_fields(cls, r):
        supports, requires = r.read_ushort(), r.read_ushort()
        n = r.read_count(6, "TLS address list")
        return cls(supports, requires, tuple((r.read_string(), r.read_ushort()) for _ in range(n)))

    def write_fields(self, w):
        w.write_ushort(self.target_supports)
        w.write_ushort(self.target_requires)
        w.write_ulong(len(self.addresses))
        for host, port in self.addresses:
            w.write_string(host)
            w.write_ushort(port)

    def fields_json(self):
        return {"target_supports": self.target_supports, "target_requires": self.target_requires,
                "addresses": [{"host": h, "port": p} for h, p in self.addresses]}


@dataclass(frozen=True)
class CompoundSecMech:
    """CSIIOP::CompoundSecMech, kept structurally (names and OIDs as bytes)."""
    target_requires: int
    transport_mech: object              # a component (TLSSecTrans, or raw)
    as_target_supports: int
    as_target_requires: int
    as_client_authentication_mech: bytes
    as_target_name: bytes
    sas_target_supports: int
    sas_target_requires: int
    sas_privilege_authorities: tuple    # ((syntax, name bytes), ...)
    sas_supported_naming_mechanisms: tuple
    sas_supported_identity_types: int

    def to_json(self):
        return {"target_requires": self.target_requires,
                "transport_mech": self.transport_mech.to_json(),
                "as_context": {"target_supports": self.as_target_supports,
                               "target_requires": self.as_target_requires,
                               "client_authentication_mech":
                                   self.as_client_authentication_mech.hex(),
                               "target_name": self.as_target_name.hex()},
                "sas_context": {"target_supports": self.sas_target_supports,
                                "target_requires": self.sas_target_requires,
                                "privilege_authorities": [
                                    {"syntax": s, "name": n.hex()}
                                    for s, n in self.sas_privilege_authorities],
                                "supported_naming_mechanisms": [
                                    m.hex() for m in self.sas_supported_naming_mechanisms],
                                "supported_identity_types": self.sas_supported_identity_types}}


@dataclass(frozen=True)
class CSISecMechList(_TypedComponent):
    tag = TAG_CSI_SEC_MECH_LIST
    stateful: bool
    mechanisms: tuple

    @classmethod
    def read_fields(cls, r):
        stateful = r.read_boolean()
        n = r.read_count(16, "CompoundSecMech list")
        mechs = []
        for _ in range(n):
            target_requires = r.read_ushort()
            tag = r.read_ulong()
            start = r.pos
            data = r.read_octet_sequence()
            transport = _decode_component(tag, data, start + 4, r)
            as_sup, as_req = r.read_ushort(), r.read_ushort()
            as_mech, as_name = r.read_octet_sequence(), r.read_octet_sequence()
            sas_sup, sas_req = r.read_ushort(), r.read_ushort()
            k = r.read_count(8, "privilege authorities")
            authorities = tuple((r.read_ulong(), r.read_octet_sequence()) for _ in range(k))
            k = r.read_count(4, "naming mechanisms")
            naming = tuple(r.read_octet_sequence() for _ in range(k))
            mechs.append(CompoundSecMech(target_requires, transport, as_sup, as_req, as_mech,
                                         as_name, sas_sup, sas_req, authorities, naming,
                                         r.read_ulong()))
        return cls(stateful, tuple(mechs))

    def write_fields(self, w):
        w.write_boolean(self.stateful)
        w.write_ulong(len(self.mechanisms))
        for m in self.mechanisms:
            w.write_ushort(m.target_requires)
            w.write_ulong(m.transport_mech.tag)
            w.write_octet_sequence(m.transport_mech.encode_data(w.little))
            w.write_ushort(m.as_target_supports)
            w.write_ushort(m.as_target_requires)
            w.write_octet_sequence(m.as_client_authentication_mech)
            w.write_octet_sequence(m.as_target_name)
            w.write_ushort(m.sas_target_supports)
            w.write_ushort(m.sas_target_requires)
            w.write_ulong(len(m.sas_privilege_authorities))
            for syntax, name in m.sas_privilege_authorities:
                w.write_ulong(syntax)
                w.write_octet_sequence(name)
            w.write_ulong(len(m.sas_supported_naming_mechanisms))
            for mech in m.sas_supported_naming_mechanisms:
                w.write_octet_sequence(mech)
            w.write_ulong(m.sas_supported_identity_types)

    def fields_json(self):
        return {"stateful": self.stateful, "mechanisms": [m.to_json() for m in self.mechanisms]}


@dataclass(frozen=True)
class PoliciesComponent(_TypedComponent):
    """Messaging::PolicyValueSeq."""
    tag = TAG_POLICIES
    policies: tuple          # ((ptype, pvalue bytes), ...)

    @classmethod
    def read_fields(cls, r):
        return cls(read_policy_values(r))

    def write_fields(self, w):
        write_policy_values(w, self.policies)

    def fields_json(self):
        return {"policies": [{"ptype": t, "pvalue": v.hex()} for t, v in self.policies]}


@dataclass(frozen=True)
class JavaCodebase(_TypedComponent):
    """RMI-IIOP: the codebase URL(s), space separated, as a string."""
    tag = TAG_JAVA_CODEBASE
    codebase: str

    @classmethod
    def read_fields(cls, r):
        return cls(r.read_string())

    def write_fields(self, w):
        w.write_string(self.codebase)

    def fields_json(self):
        return {"codebase": self.codebase}


@dataclass(frozen=True)
class RMICustomMaxStreamFormat(_TypedComponent):
    """Java to IDL: the highest RMI custom value stream format the server reads (one octet)."""
    tag = TAG_RMI_CUSTOM_MAX_STREAM_FORMAT
    max_stream_format_version: int

    @classmethod
    def read_fields(cls, r):
        return cls(r.read_octet())

    def write_fields(self, w):
        w.write_octet(self.max_stream_format_version)

    def fields_json(self):
        return {"max_stream_format_version": self.max_stream_format_version}


class _UShortPolicyComponent(_TypedComponent):
    """A component holding one policy value, an encapsulated unsigned short."""
    VALUES: dict = {}
    value: int

    @property
    def value_name(self) -> str:
        return self.VALUES.get(self.value, f"unknown value {self.value}")

    @classmethod
    def read_fields(cls, r):
        return cls(r.read_ushort())

    def write_fields(self, w):
        w.write_ushort(self.value)

    def fields_json(self):
        return {"value": self.value, "value_name": self.value_name}


@dataclass(frozen=True)
class OTSPolicyComponent(_UShortPolicyComponent):
    """CosTransactions::OTSPolicyValue: whether the target takes part in transactions."""
    tag = TAG_OTS_POLICY
    VALUES = {1: "REQUIRES", 2: "FORBIDS", 3: "ADAPTS"}
    value: int


@dataclass(frozen=True)
class InvocationPolicyComponent(_UShortPolicyComponent):
    """CosTransactions::InvocationPolicyValue: shared or unshared transactions."""
    tag = TAG_INV_POLICY
    VALUES = {0: "EITHER", 1: "SHARED", 2: "UNSHARED"}
    value: int


@dataclass(frozen=True)
class OmniORBUnixTransport(_TypedComponent):
    """omniORB's local transport: the host and the Unix socket's file name, two strings
    (omniORB's ior.cc, unmarshal_TAG_OMNIORB_UNIX_TRANS)."""
    tag = TAG_OMNIORB_UNIX_TRANS
    host: str
    filename: str

    @classmethod
    def read_fields(cls, r):
        return cls(r.read_string(), r.read_string())

    def write_fields(self, w):
        w.write_string(self.host)
        w.write_string(self.filename)

    def fields_json(self):
        return {"host": self.host, "filename": self.filename}


TYPED_COMPONENTS = {cls.tag: cls for cls in (
    ORBTypeComponent, CodeSetsComponent, AlternateIIOPAddress, SSLSecTrans, TLSSecTrans,
    CSISecMechList, PoliciesComponent, JavaCodebase, RMICustomMaxStreamFormat,
    OTSPolicyComponent, InvocationPolicyComponent, OmniORBUnixTransport)}


def read_policy_values(r: CDRReader) -> tuple:
    """Messaging::PolicyValueSeq: ``sequence<struct {ulong ptype; sequence<octet> pvalue;}>``."""
    n = r.read_count(8, "policy value list")
    return tuple((r.read_ulong(), r.read_octet_sequence()) for _ in range(n))


def write_policy_values(w: CDRWriter, policies) -> None:
    w.write_ulong(len(policies))
    for ptype, pvalue in policies:
        w.write_ulong(ptype)
        w.write_octet_sequence(pvalue)


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


def _decode_component(tag: int, data: bytes, offset: int, parent: CDRReader):
    cls = TYPED_COMPONENTS.get(tag)
    comp = None if cls is None else \
        decode_encapsulated(cls.read_fields, data, offset, parent, component_name(tag))
    return TaggedComponent(tag, data) if comp is None else comp


def read_components(r: CDRReader) -> tuple:
    n = r.read_count(8, "component list")
    out = []
    for _ in range(n):
        tag = r.read_ulong()
        start = r.pos
        data = r.read_octet_sequence()
        out.append(_decode_component(tag, data, start + 4, r))
    return tuple(out)


def write_components(w: CDRWriter, components) -> None:
    w.write_ulong(len(components))
    for c in components:
        w.write_ulong(c.tag)
        w.write_octet_sequence(c.encode_data(w.little))


# ----------------------------------------------------------------------------
# Profiles
@dataclass(frozen=True)
class IIOPProfile:
    version: tuple
    host: str
    port: int
    object_key: bytes
    components: tuple = ()
    little: bool = field(default=False, compare=False)

    tag = TAG_INTERNET_IOP

    @property
    def addresses(self) -> list:
        """The profile's address and every TAG_ALTERNATE_IIOP_ADDRESS."""
        return [(self.host, self.port)] + [(c.host, c.port) for c in self.components
                                           if isinstance(c, AlternateIIOPAddress)]

    def component(self, cls):
        return next((c for c in self.components if isinstance(c, cls)), None)

    def to_json(self):
        return {"tag": "TAG_INTERNET_IOP", "iiop_version": f"{self.version[0]}.{self.version[1]}",
                "host": self.host, "port": self.port, "object_key": self.object_key.hex(),
                "components": [c.to_json() for c in self.components]}


@dataclass(frozen=True)
class MultipleComponentsProfile:
    components: tuple
    tag = TAG_MULTIPLE_COMPONENTS

    def to_json(self):
        return {"tag": "TAG_MULTIPLE_COMPONENTS",
                "components": [c.to_json() for c in self.components]}


def decode_iiop_profile(data: bytes, *, lenient: bool = False,
                        warnings: list | None = None) -> IIOPProfile:
    r = CDRReader(data, lenient=lenient, warnings=warnings)
    r.read_encapsulation_byte_order()
    major, minor = r.read_octet(), r.read_octet()
    if major != 1:
        r.violation(InvalidValueError, "bad-iiop-version",
                    f"IIOP version {major}.{minor} (only 1.x exists)", 1)
    host = r.read_string()
    port = r.read_ushort()
    key = r.read_octet_sequence()
    components = read_components(r) if minor >= 1 else ()
    if r.pos != r.end:
        r.note("profile-trailing-bytes", f"{r.end - r.pos} bytes after the profile body", r.pos)
    return IIOPProfile((major, minor), host, port, key, components, r.little)


def encode_iiop_profile(p: IIOPProfile, little: bool | None = None) -> bytes:
    w = CDRWriter(little=p.little if little is None else little).encapsulation_writer()
    w.write_octet(p.version[0])
    w.write_octet(p.version[1])
    w.write_string(p.host)
    w.write_ushort(p.port)
    w.write_octet_sequence(p.object_key)
    if p.version[1] >= 1:
        write_components(w, p.components)
    elif p.components:
        raise ValueError("an IIOP 1.0 profile has no components")
    return w.getvalue()


def decode_multiple_components(data: bytes, *, lenient: bool = False,
                               warnings: list | None = None) -> MultipleComponentsProfile:
    r = CDRReader(data, lenient=lenient, warnings=warnings)
    r.read_encapsulation_byte_order()
    return MultipleComponentsProfile(read_components(r))


def decode_profile(p: TaggedProfile, *, lenient: bool = False, warnings: list | None = None):
    """An IIOPProfile, a MultipleComponentsProfile, or the TaggedProfile itself."""
    if p.tag == TAG_INTERNET_IOP:
        return decode_iiop_profile(p.data, lenient=lenient, warnings=warnings)
    if p.tag == TAG_MULTIPLE_COMPONENTS:
        return decode_multiple_components(p.data, lenient=lenient, warnings=warnings)
    return p


def encode_profile(p) -> TaggedProfile:
    if isinstance(p, IIOPProfile):
        return TaggedProfile(TAG_INTERNET_IOP, encode_iiop_profile(p))
    if isinstance(p, MultipleComponentsProfile):
        w = CDRWriter().encapsulation_writer()
        write_components(w, p.components)
        return TaggedProfile(TAG_MULTIPLE_COMPONENTS, w.getvalue())
    return p


@dataclass(frozen=True)
class Endpoint:
    """Where a profile says the object can be reached: ``transport`` is "iiop" (plain TCP) or
    "tls" (SSLIOP's TAG_SSL_SEC_TRANS port, or a CSIv2 TLS_SEC_TRANS address)."""
    host: str
    port: int
    transport: str = "iiop"

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}" + (" (TLS)" if self.transport == "tls" else "")

    def to_json(self) -> dict:
        return {"host": self.host, "port": self.port, "transport": self.transport}


def _tls_addresses(components):
    for c in components:
        if isinstance(c, TLSSecTrans):
            yield from c.addresses
        elif isinstance(c, CSISecMechList):
            for m in c.mechanisms:
                if isinstance(m.transport_mech, TLSSecTrans):
                    yield from m.transport_mech.addresses


def profile_endpoints(profiles) -> list:
    """Every distinct endpoint of decoded profiles, in the order they appear.

    An IIOP profile whose port is 0 has no plain-TCP listener: SSLIOP and CSIv2 servers that
    accept only TLS write port 0 there and put the real port in TAG_SSL_SEC_TRANS (on the
    profile's host) or in TAG_TLS_SEC_TRANS/TAG_CSI_SEC_MECH_LIST addresses."""
    seen: list = []

    def add(host, port, transport):
        e = Endpoint(host, port, transport)
        if port and e not in seen:
            seen.append(e)

    for p in profiles:
        components = getattr(p, "components", ())
        if isinstance(p, IIOPProfile):
            for host, port in p.addresses:
                add(host, port, "iiop")
            for c in components:
                if isinstance(c, SSLSecTrans):
                    add(p.host, c.port, "tls")
        for host, port in _tls_addresses(components):
            add(host, port, "tls")
    return seen


def make_ior(type_id: str, profiles) -> IOR:
    """An IOR from decoded (or raw) profiles."""
    return IOR(type_id, tuple(encode_profile(p) for p in profiles))
