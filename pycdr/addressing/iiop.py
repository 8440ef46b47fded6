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
from ..codec.ior import IOR, TAG_INTERNET_IOP, TAG_MULTIPLE_COMPONENTS, TaggedProfile
from . import csiv2
from .components import (COMPONENT_NAMES, ORB_VENDORS, PYCDR_ORB_TYPE,  # noqa: F401 (this
                         TaggedComponent, TypedComponent, component_name,  # module's API)
                         decode_component, decode_encapsulated, orb_vendor, vendor_tag_name)
from .csiv2 import CONFIDENTIALITY, ESTABLISH_TRUST_IN_CLIENT, ESTABLISH_TRUST_IN_TARGET, INTEGRITY, CompoundSecMech, CSISecMechList, TLSSecTrans, association_options  # noqa: F401 (as above)

# IOP::ComponentId values (CORBA 3.x Part 2 7.6.6, omniORB's own); CSIv2's are in .csiv2.
TAG_ORB_TYPE = 0
TAG_CODE_SETS = 1
TAG_POLICIES = 2
TAG_ALTERNATE_IIOP_ADDRESS = 3
TAG_COMPLETE_OBJECT_KEY = 5
TAG_SSL_SEC_TRANS = 20
TAG_JAVA_CODEBASE = 25
TAG_OTS_POLICY = 31
TAG_INV_POLICY = 32
TAG_ACTIVITY_POLICY = 37
TAG_RMI_CUSTOM_MAX_STREAM_FORMAT = 38
TAG_OMNIORB_UNIX_TRANS = 0x41545402

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

def profile_name(tag: int) -> str:
    return PROFILE_NAMES.get(tag) or vendor_tag_name(tag, "profile")


@dataclass(frozen=True)
class ORBTypeComponent(TypedComponent):
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
class CodeSetsComponent(TypedComponent):
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
class AlternateIIOPAddress(TypedComponent):
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


@dataclass(frozen=True)
class SSLSecTrans(TypedComponent):
    """SSLIOP::SSL { AssociationOptions target_supports, target_requires; ushort port; }:
    the TLS port on the profile's host (the options are CSIv2's, :mod:`.csiv2`)."""
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
                "target_supports_names": association_options(self.target_supports),
                "target_requires": self.target_requires,
                "target_requires_names": association_options(self.target_requires),
                "port": self.port}


@dataclass(frozen=True)
class PoliciesComponent(TypedComponent):
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
class JavaCodebase(TypedComponent):
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
class RMICustomMaxStreamFormat(TypedComponent):
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


class _UShortPolicyComponent(TypedComponent):
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
class ActivityPolicyComponent(_UShortPolicyComponent):
    """The Activity Service's ActivityPolicyValue (after OMG issue 4345, which aligned them
    with OTSPolicyValue): whether the target takes part in activities."""
    tag = TAG_ACTIVITY_POLICY
    VALUES = {1: "REQUIRES", 2: "FORBIDS", 3: "ADAPTS", 4: "INTERNAL"}
    value: int


@dataclass(frozen=True)
class CompleteObjectKey(TypedComponent):
    """TAG_COMPLETE_OBJECT_KEY: the object key of a TAG_MULTIPLE_COMPONENTS profile (or of
    a transport whose profile has none); the component's data is the key itself, not an
    encapsulation."""
    tag = TAG_COMPLETE_OBJECT_KEY
    object_key: bytes

    @classmethod
    def decode_data(cls, data: bytes, offset: int, parent: CDRReader):
        return cls(data)

    def encode_data(self, little: bool = False) -> bytes:
        return self.object_key

    def fields_json(self):
        return {"object_key": self.object_key.hex()}


@dataclass(frozen=True)
class OmniORBUnixTransport(TypedComponent):
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


TYPED_COMPONENTS = {**csiv2.TYPED_COMPONENTS, **{cls.tag: cls for cls in (
    ORBTypeComponent, CodeSetsComponent, AlternateIIOPAddress, CompleteObjectKey, SSLSecTrans,
    PoliciesComponent, JavaCodebase, RMICustomMaxStreamFormat, OTSPolicyComponent,
    InvocationPolicyComponent, ActivityPolicyComponent, OmniORBUnixTransport)}}


def read_policy_values(r: CDRReader) -> tuple:
    """Messaging::PolicyValueSeq: ``sequence<struct {ulong ptype; sequence<octet> pvalue;}>``."""
    n = r.read_count(8, "policy value list")
    return tuple((r.read_ulong(), r.read_octet_sequence()) for _ in range(n))


def write_policy_values(w: CDRWriter, policies) -> None:
    w.write_ulong(len(policies))
    for ptype, pvalue in policies:
        w.write_ulong(ptype)
        w.write_octet_sequence(pvalue)


def read_components(r: CDRReader) -> tuple:
    n = r.read_count(8, "component list")
    out = []
    for _ in range(n):
        tag = r.read_ulong()
        start = r.pos
        data = r.read_octet_sequence()
        out.append(decode_component(tag, data, start + 4, r, TYPED_COMPONENTS))
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
        for _, trans in csiv2.tls_transports(components):
            for host, port in trans.addresses:
                add(host, port, "tls")
    return seen


def client_requirements(profile) -> list:
    """What a target asks of a client, one dict per way in that its profile offers: each
    TAG_SSL_SEC_TRANS, each bare TAG_TLS_SEC_TRANS and each CSIv2 mechanism (a client uses
    any one of them), with "via" naming it (see csiv2.mechanism_requirements).  A profile
    whose port is 0 has no plain listener, so its TLS ways in require TLS whatever their
    options say."""
    components = getattr(profile, "components", ())
    out = []
    for c in components:
        if isinstance(c, SSLSecTrans):
            out.append({"via": f"TAG_SSL_SEC_TRANS port {c.port}",
                        **csiv2.transport_requirements(c.target_supports, c.target_requires,
                                                       True)})
        elif isinstance(c, TLSSecTrans):
            out.append({"via": "TAG_TLS_SEC_TRANS " + addresses_text(c.addresses),
                        **csiv2.transport_requirements(c.target_supports, c.target_requires,
                                                       True)})
        elif isinstance(c, CSISecMechList):
            for i, m in enumerate(c.mechanisms, 1):
                t = m.transport_mech
                how = f"over {addresses_text(t.addresses)}" \
                    if isinstance(t, (TLSSecTrans, csiv2.SECIOPSecTrans)) else \
                    "with no transport security" if isinstance(t, csiv2.NullTag) else \
                    f"over {component_name(t.tag)}"
                out.append({"via": f"CSIv2 mechanism {i} {how}",
                            **csiv2.mechanism_requirements(m)})
    if isinstance(profile, IIOPProfile) and profile.port == 0:
        for r in out:
            if r["tls"] == csiv2.SUPPORTED:
                r["tls"] = csiv2.REQUIRED
    return out


def addresses_text(addresses) -> str:
    """host:port pairs as text (an IPv6 host in brackets)."""
    return ", ".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in addresses) or \
        "(no address)"


def make_ior(type_id: str, profiles) -> IOR:
    """An IOR from decoded (or raw) profiles."""
    return IOR(type_id, tuple(encode_profile(p) for p in profiles))
