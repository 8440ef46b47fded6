"""CSIv2 in IORs (OMG Common Secure Interoperability v2, CORBA 3.x Part 2; the CSIIOP and
CSI modules), and the association options SSLIOP shares.

``TAG_CSI_SEC_MECH_LIST`` holds ``CSIIOP::CompoundSecMechList { boolean stateful;
sequence<CompoundSecMech> mechanism_list; }``; each ``CompoundSecMech`` is one way in: the
options it requires, a transport mechanism (a tagged component: ``TAG_TLS_SEC_TRANS``,
``TAG_SECIOP_SEC_TRANS`` or ``TAG_NULL_TAG`` for none), the client-authentication layer
(``AS_ContextSec``) and the attribute layer (``SAS_ContextSec``: identity assertion).  A
client may use any one of the mechanisms.

Object identifiers (``CSI::OID``) are ASN.1 DER-encoded; names (``GSS_NT_ExportedName``)
are GSS-API exported names (RFC 2743, 3.2).  Both are kept as their bytes, so a component
encodes back exactly, and read out through :func:`decode_oid` and
:func:`decode_exported_name`; a malformed one is a warning (lenient mode), not a failure of
the component.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..codec.cdr import CDRReader
from ..errors import InvalidValueError
from .components import TypedComponent, decode_component

TAG_CSI_SEC_MECH_LIST = 33
TAG_NULL_TAG = 34
TAG_SECIOP_SEC_TRANS = 35
TAG_TLS_SEC_TRANS = 36

# CSIIOP::AssociationOptions (also the target_supports/target_requires of SSLIOP::SSL).
NO_PROTECTION = 0x0001
INTEGRITY = 0x0002
CONFIDENTIALITY = 0x0004
DETECT_REPLAY = 0x0008
DETECT_MISORDERING = 0x0010
ESTABLISH_TRUST_IN_TARGET = 0x0020
ESTABLISH_TRUST_IN_CLIENT = 0x0040
NO_DELEGATION = 0x0080
SIMPLE_DELEGATION = 0x0100
COMPOSITE_DELEGATION = 0x0200
IDENTITY_ASSERTION = 0x0400
DELEGATION_BY_CLIENT = 0x0800
ASSOCIATION_OPTION_NAMES = {
    NO_PROTECTION: "NoProtection", INTEGRITY: "Integrity", CONFIDENTIALITY: "Confidentiality",
    DETECT_REPLAY: "DetectReplay", DETECT_MISORDERING: "DetectMisordering",
    ESTABLISH_TRUST_IN_TARGET: "EstablishTrustInTarget",
    ESTABLISH_TRUST_IN_CLIENT: "EstablishTrustInClient", NO_DELEGATION: "NoDelegation",
    SIMPLE_DELEGATION: "SimpleDelegation", COMPOSITE_DELEGATION: "CompositeDelegation",
    IDENTITY_ASSERTION: "IdentityAssertion", DELEGATION_BY_CLIENT: "DelegationByClient"}

# CSI::IdentityTokenType bits of SAS_ContextSec.supported_identity_types (ITTAbsent is 0).
IDENTITY_TYPE_NAMES = {0x1: "ITTAnonymous", 0x2: "ITTPrincipalName", 0x4: "ITTX509CertChain",
                       0x8: "ITTDistinguishedName"}

# CSIIOP::ServiceConfigurationSyntax: the OMG's VMCID (CSI::OMGVMCID, 20 bits) or'ed with 0/1.
OMG_VMCID = 0x4F4D0
SCS_GENERAL_NAMES = OMG_VMCID | 0
SCS_GSS_EXPORTED_NAME = OMG_VMCID | 1
SERVICE_CONFIGURATION_SYNTAXES = {SCS_GENERAL_NAMES: "SCS_GeneralNames",
                                  SCS_GSS_EXPORTED_NAME: "SCS_GSSExportedName"}

GSSUP_OID = "2.23.130.1.1.1"
OID_NAMES = {
    GSSUP_OID: "GSSUP",
    "2.23.130.1.2.1": "GSS_NT_Scoped_Username",
    "1.3.6.1.5.6.4": "GSS_NT_Export_Name",
    "1.3.6.1.5.6.2": "GSS_NT_HOSTBASED_SERVICE",
    "1.2.840.113554.1.2.2": "Kerberos V5",
}


def _bit_names(bits: int, names: dict) -> list:
    """The names of the bits set in ``bits``; a bit no table names as its hex value."""
    out = [name for bit, name in names.items() if bits & bit]
    rest = bits & ~sum(names)
    out += [f"0x{1 << i:x}" for i in range(rest.bit_length()) if rest >> i & 1]
    return out


def association_options(bits: int) -> list:
    """The names of the AssociationOptions set in ``bits``."""
    return _bit_names(bits, ASSOCIATION_OPTION_NAMES)


def identity_types(bits: int) -> list:
    """The names of the IdentityTokenTypes set in ``bits`` (none: no identity assertion)."""
    return _bit_names(bits, IDENTITY_TYPE_NAMES)


# ----------------------------------------------------------------------------
# Object identifiers and GSS exported names
def decode_oid(der: bytes) -> str:
    """The dotted form of a DER-encoded OBJECT IDENTIFIER (tag 6, definite length);
    ValueError naming what is wrong."""
    if len(der) < 2 or der[0] != 0x06:
        raise ValueError("not a DER OBJECT IDENTIFIER (tag 0x06)")
    length, pos = der[1], 2
    if length & 0x80:
        raise ValueError("an OBJECT IDENTIFIER this long is not a mechanism OID")
    if length == 0 or pos + length != len(der):
        raise ValueError(f"its length octet says {length} bytes, {len(der) - pos} follow")
    arcs, value = [], 0
    for i, octet in enumerate(der[pos:]):
        if value == 0 and octet == 0x80:
            raise ValueError(f"arc at byte {pos + i} has a leading 0x80 octet")
        value = value << 7 | octet & 0x7F
        if not octet & 0x80:
            arcs.append(value)
            value = 0
    if der[-1] & 0x80:
        raise ValueError("its last arc is cut short")
    first = min(arcs[0] // 40, 2)
    return ".".join(map(str, [first, arcs[0] - 40 * first] + arcs[1:]))


def encode_oid(dotted: str) -> bytes:
    """The DER encoding of a dotted OID."""
    try:
        arcs = [int(a) for a in dotted.split(".")]
    except ValueError:
        arcs = []
    if len(arcs) < 2 or arcs[0] > 2 or (arcs[0] < 2 and arcs[1] >= 40) or min(arcs) < 0:
        raise ValueError(f"{dotted!r} is not an OBJECT IDENTIFIER")
    body = bytearray()
    for arc in [arcs[0] * 40 + arcs[1]] + arcs[2:]:
        chunk = [arc & 0x7F]
        arc >>= 7
        while arc:
            chunk.append(arc & 0x7F | 0x80)
            arc >>= 7
        body += bytes(reversed(chunk))
    if len(body) > 127:
        raise ValueError(f"{dotted!r} is too long for a mechanism OID")
    return bytes([0x06, len(body)]) + bytes(body)


def oid_name(dotted: str) -> str | None:
    return OID_NAMES.get(dotted)


@dataclass(frozen=True)
class ExportedName:
    """A GSS-API exported name: the mechanism's OID (dotted) and the name's octets."""
    mech: str
    name: bytes

    @property
    def text(self) -> str | None:
        """The name as text where it is UTF-8 (GSSUP's scoped user names and realms are)."""
        try:
            return self.name.decode("utf-8")
        except UnicodeDecodeError:
            return None


def decode_exported_name(data: bytes) -> ExportedName:
    """RFC 2743 3.2: ``04 01``, the mechanism OID's DER length (2 octets, big-endian), the
    OID, the name's length (4 octets, big-endian), the name.  ValueError naming what is
    wrong."""
    if len(data) < 4 or data[:2] != b"\x04\x01":
        raise ValueError("not a GSS exported name (it does not start 04 01)")
    oid_len = int.from_bytes(data[2:4], "big")
    if 4 + oid_len + 4 > len(data):
        raise ValueError(f"its mechanism OID length {oid_len} runs past its {len(data)} bytes")
    mech = decode_oid(data[4:4 + oid_len])
    at = 4 + oid_len
    name_len = int.from_bytes(data[at:at + 4], "big")
    if at + 4 + name_len != len(data):
        raise ValueError(f"its name length says {name_len} bytes, {len(data) - at - 4} follow")
    return ExportedName(mech, data[at + 4:])


def encode_exported_name(mech: str, name: bytes) -> bytes:
    oid = encode_oid(mech)
    return b"\x04\x01" + len(oid).to_bytes(2, "big") + oid + len(name).to_bytes(4, "big") + name


def oid_json(der: bytes):
    """An OID field as JSON: None when empty, else its dotted form and name, or its bytes
    and what is wrong with them."""
    if not der:
        return None
    try:
        dotted = decode_oid(der)
    except ValueError as e:
        return {"der": der.hex(), "problem": str(e)}
    return {"oid": dotted, "name": oid_name(dotted)}


def oid_text(der: bytes) -> str:
    j = oid_json(der)
    if j is None:
        return "none"
    if "problem" in j:
        return f"{j['der']} ({j['problem']})"
    return f"{j['oid']} ({j['name']})" if j["name"] else j["oid"]


def name_json(data: bytes):
    """A GSS_NT_ExportedName field as JSON: None when empty, else the mechanism and the
    name (text where it is UTF-8), or its bytes and what is wrong with them."""
    if not data:
        return None
    try:
        name = decode_exported_name(data)
    except ValueError as e:
        return {"hex": data.hex(), "problem": str(e)}
    return {"mech": name.mech, "mech_name": oid_name(name.mech), "name": name.text,
            "name_hex": name.name.hex()}


def name_text(data: bytes) -> str:
    j = name_json(data)
    if j is None:
        return "none"
    if "problem" in j:
        return f"{j['hex']} ({j['problem']})"
    shown = f'"{j["name"]}"' if j["name"] is not None else j["name_hex"]
    return f"{shown} ({j['mech_name'] or j['mech']})"


def _check(r: CDRReader, decode, data: bytes, offset: int, code: str, what: str) -> None:
    """A warning (lenient mode) when ``data`` does not decode.  Never an error, even in
    strict mode: the structure around it decoded, the bytes are kept, and a client that
    only wants the TLS address of a reference must not lose it over a realm's name."""
    if data and r.lenient:
        try:
            decode(data)
        except ValueError as e:
            r.violation(InvalidValueError, code, f"{what} is malformed: {e}", offset)


def _check_oid(r: CDRReader, der: bytes, offset: int, what: str) -> None:
    _check(r, decode_oid, der, offset, "bad-csiv2-oid", what)


def _check_name(r: CDRReader, data: bytes, offset: int, what: str) -> None:
    _check(r, decode_exported_name, data, offset, "bad-csiv2-name", what)


def _read_oid(r: CDRReader, what: str) -> bytes:
    offset = r.pos
    der = r.read_octet_sequence()
    _check_oid(r, der, offset, what)
    return der


def _read_name(r: CDRReader, what: str) -> bytes:
    offset = r.pos
    data = r.read_octet_sequence()
    _check_name(r, data, offset, what)
    return data


def _read_addresses(r: CDRReader) -> tuple:
    """CSIIOP::TransportAddressList: ``sequence<struct {string host_name; ushort port;}>``."""
    n = r.read_count(6, "transport address list")
    return tuple((r.read_string(), r.read_ushort()) for _ in range(n))


def _write_addresses(w, addresses) -> None:
    w.write_ulong(len(addresses))
    for host, port in addresses:
        w.write_string(host)
        w.write_ushort(port)


def _addresses_json(addresses) -> list:
    return [{"host": h, "port": p} for h, p in addresses]


def _options_json(supports: int, requires: int) -> dict:
    return {"target_supports": supports, "target_supports_names": association_options(supports),
            "target_requires": requires, "target_requires_names": association_options(requires)}


# ----------------------------------------------------------------------------
# Transport mechanisms
@dataclass(frozen=True)
class TLSSecTrans(TypedComponent):
    """CSIIOP::TLS_SEC_TRANS { target_supports; target_requires; TransportAddressList
    addresses; }: where the target listens for TLS."""
    tag = TAG_TLS_SEC_TRANS
    target_supports: int
    target_requires: int
    addresses: tuple

    @classmethod
    def read_fields(cls, r):
        supports, requires = r.read_ushort(), r.read_ushort()
        return cls(supports, requires, _read_addresses(r))

    def write_fields(self, w):
        w.write_ushort(self.target_supports)
        w.write_ushort(self.target_requires)
        _write_addresses(w, self.addresses)

    def fields_json(self):
        return {**_options_json(self.target_supports, self.target_requires),
                "addresses": _addresses_json(self.addresses)}


@dataclass(frozen=True)
class SECIOPSecTrans(TypedComponent):
    """CSIIOP::SECIOP_SEC_TRANS { target_supports; target_requires; CSI::OID mech_oid;
    CSI::GSS_NT_ExportedName target_name; TransportAddressList addresses; }"""
    tag = TAG_SECIOP_SEC_TRANS
    target_supports: int
    target_requires: int
    mech_oid: bytes
    target_name: bytes
    addresses: tuple

    @classmethod
    def read_fields(cls, r):
        supports, requires = r.read_ushort(), r.read_ushort()
        mech = _read_oid(r, "the SECIOP mech_oid")
        name = _read_name(r, "the SECIOP target_name")
        return cls(supports, requires, mech, name, _read_addresses(r))

    def write_fields(self, w):
        w.write_ushort(self.target_supports)
        w.write_ushort(self.target_requires)
        w.write_octet_sequence(self.mech_oid)
        w.write_octet_sequence(self.target_name)
        _write_addresses(w, self.addresses)

    def fields_json(self):
        return {**_options_json(self.target_supports, self.target_requires),
                "mech_oid": oid_json(self.mech_oid), "target_name": name_json(self.target_name),
                "addresses": _addresses_json(self.addresses)}


@dataclass(frozen=True)
class NullTag(TypedComponent):
    """TAG_NULL_TAG: no data; as a CompoundSecMech's transport_mech, no transport security."""
    tag = TAG_NULL_TAG

    @classmethod
    def decode_data(cls, data: bytes, offset: int, parent: CDRReader):
        if data:
            parent.violation(InvalidValueError, "bad-encapsulation",
                             f"malformed TAG_NULL_TAG ({len(data)} bytes of data where it has "
                             "none); kept raw", offset)
            return None
        return cls()

    def encode_data(self, little: bool = False) -> bytes:
        return b""

    def fields_json(self):
        return {}


TRANSPORT_MECHANISMS = {cls.tag: cls for cls in (TLSSecTrans, SECIOPSecTrans, NullTag)}


# ----------------------------------------------------------------------------
# The mechanism list
@dataclass(frozen=True)
class ServiceConfiguration:
    """CSIIOP::ServiceConfiguration: a privilege authority's name in ``syntax``."""
    syntax: int
    name: bytes

    def to_json(self):
        out = {"syntax": self.syntax,
               "syntax_name": SERVICE_CONFIGURATION_SYNTAXES.get(self.syntax)}
        if self.syntax == SCS_GSS_EXPORTED_NAME:
            out["name"] = name_json(self.name)
        else:      # SCS_GeneralNames: an ASN.1 GeneralNames, or a vendor's syntax
            out["name_hex"] = self.name.hex()
        return out


@dataclass(frozen=True)
class ASContextSec:
    """CSIIOP::AS_ContextSec: client authentication (the mechanism, GSSUP for
    username/password, and the target's realm as an exported name)."""
    target_supports: int = 0
    target_requires: int = 0
    client_authentication_mech: bytes = b""
    target_name: bytes = b""

    def to_json(self):
        return {**_options_json(self.target_supports, self.target_requires),
                "client_authentication_mech": oid_json(self.client_authentication_mech),
                "target_name": name_json(self.target_name)}


@dataclass(frozen=True)
class SASContextSec:
    """CSIIOP::SAS_ContextSec: what the target accepts in the attribute layer (identity
    assertion)."""
    target_supports: int = 0
    target_requires: int = 0
    privilege_authorities: tuple = ()         # ServiceConfiguration, ...
    supported_naming_mechanisms: tuple = ()   # DER OIDs
    supported_identity_types: int = 0

    def to_json(self):
        return {**_options_json(self.target_supports, self.target_requires),
                "privilege_authorities": [p.to_json() for p in self.privilege_authorities],
                "supported_naming_mechanisms": [oid_json(m) for m in
                                                self.supported_naming_mechanisms],
                "supported_identity_types": self.supported_identity_types,
                "supported_identity_type_names": identity_types(self.supported_identity_types)}


@dataclass(frozen=True)
class CompoundSecMech:
    """CSIIOP::CompoundSecMech: one way in (transport_mech a component: TLSSecTrans,
    SECIOPSecTrans, NullTag, or raw)."""
    target_requires: int
    transport_mech: object
    as_context: ASContextSec = ASContextSec()
    sas_context: SASContextSec = SASContextSec()

    def to_json(self):
        return {"target_requires": self.target_requires,
                "target_requires_names": association_options(self.target_requires),
                "transport_mech": self.transport_mech.to_json(),
                "as_context": self.as_context.to_json(),
                "sas_context": self.sas_context.to_json(),
                "client_requirements": mechanism_requirements(self)}


def _read_mechanism(r: CDRReader) -> CompoundSecMech:
    target_requires = r.read_ushort()
    tag = r.read_ulong()
    start = r.pos
    data = r.read_octet_sequence()
    transport = decode_component(tag, data, start + 4, r, TRANSPORT_MECHANISMS)
    as_context = ASContextSec(r.read_ushort(), r.read_ushort(),
                              _read_oid(r, "the AS context's client_authentication_mech"),
                              _read_name(r, "the AS context's target_name"))
    sas_supports, sas_requires = r.read_ushort(), r.read_ushort()
    n = r.read_count(8, "privilege authority list")
    authorities = []
    for _ in range(n):
        syntax = r.read_ulong()
        offset = r.pos
        name = r.read_octet_sequence()
        if syntax == SCS_GSS_EXPORTED_NAME:
            _check_name(r, name, offset, "a privilege authority's name")
        authorities.append(ServiceConfiguration(syntax, name))
    n = r.read_count(4, "naming mechanism list")
    naming = tuple(_read_oid(r, "a supported naming mechanism") for _ in range(n))
    sas_context = SASContextSec(sas_supports, sas_requires, tuple(authorities), naming,
                                r.read_ulong())
    return CompoundSecMech(target_requires, transport, as_context, sas_context)


@dataclass(frozen=True)
class CSISecMechList(TypedComponent):
    """CSIIOP::CompoundSecMechList."""
    tag = TAG_CSI_SEC_MECH_LIST
    stateful: bool
    mechanisms: tuple

    @classmethod
    def read_fields(cls, r):
        stateful = r.read_boolean()
        # A CompoundSecMech takes 40 bytes at least (its counts and empty sequences).
        n = r.read_count(40, "CompoundSecMech list")
        return cls(stateful, tuple(_read_mechanism(r) for _ in range(n)))

    def write_fields(self, w):
        w.write_boolean(self.stateful)
        w.write_ulong(len(self.mechanisms))
        for m in self.mechanisms:
            w.write_ushort(m.target_requires)
            w.write_ulong(m.transport_mech.tag)
            w.write_octet_sequence(m.transport_mech.encode_data(w.little))
            a, s = m.as_context, m.sas_context
            w.write_ushort(a.target_supports)
            w.write_ushort(a.target_requires)
            w.write_octet_sequence(a.client_authentication_mech)
            w.write_octet_sequence(a.target_name)
            w.write_ushort(s.target_supports)
            w.write_ushort(s.target_requires)
            w.write_ulong(len(s.privilege_authorities))
            for p in s.privilege_authorities:
                w.write_ulong(p.syntax)
                w.write_octet_sequence(p.name)
            w.write_ulong(len(s.supported_naming_mechanisms))
            for mech in s.supported_naming_mechanisms:
                w.write_octet_sequence(mech)
            w.write_ulong(s.supported_identity_types)

    def fields_json(self):
        return {"stateful": self.stateful, "mechanisms": [m.to_json() for m in self.mechanisms]}


TYPED_COMPONENTS = {cls.tag: cls for cls in (CSISecMechList, NullTag, SECIOPSecTrans,
                                             TLSSecTrans)}


def tls_transports(components):
    """(where, TLSSecTrans) for every TLS transport in a component list: a bare
    TAG_TLS_SEC_TRANS (as some ORBs put it beside the list), or a CompoundSecMech's."""
    for c in components:
        if isinstance(c, TLSSecTrans):
            yield "TAG_TLS_SEC_TRANS", c
        elif isinstance(c, CSISecMechList):
            for m in c.mechanisms:
                if isinstance(m.transport_mech, TLSSecTrans):
                    yield "CSIv2 TAG_TLS_SEC_TRANS", m.transport_mech


# ----------------------------------------------------------------------------
# What a target asks of a client
REQUIRED, SUPPORTED, NOT_SUPPORTED = "required", "supported", "not supported"


def _level(supports: int, requires: int, bits: int) -> str:
    if requires & bits:
        return REQUIRED
    return SUPPORTED if supports & bits else NOT_SUPPORTED


def transport_requirements(supports: int, requires: int, secure: bool) -> dict:
    """TLS and a client certificate, from a transport's association options (``secure``:
    it is a TLS/SSL transport at all)."""
    if not secure:
        return {"tls": NOT_SUPPORTED, "client_certificate": NOT_SUPPORTED}
    protection = INTEGRITY | CONFIDENTIALITY | ESTABLISH_TRUST_IN_TARGET | \
        ESTABLISH_TRUST_IN_CLIENT
    tls = REQUIRED if requires & protection else SUPPORTED
    return {"tls": tls,
            "client_certificate": _level(supports, requires, ESTABLISH_TRUST_IN_CLIENT)}


def mechanism_requirements(m: CompoundSecMech) -> dict:
    """What one CompoundSecMech asks of a client: TLS, a client certificate, client
    authentication (username/password where the mechanism is GSSUP) and identity
    assertion, each "required", "supported" or "not supported"."""
    t = m.transport_mech
    if isinstance(t, (TLSSecTrans, SECIOPSecTrans)):
        out = transport_requirements(t.target_supports, t.target_requires,
                                     isinstance(t, TLSSecTrans))
        if isinstance(t, SECIOPSecTrans):
            out["seciop"] = REQUIRED
    elif isinstance(t, NullTag):
        out = transport_requirements(0, 0, False)
    else:
        out = {"tls": "unknown", "client_certificate": "unknown"}
    a, s = m.as_context, m.sas_context
    auth = _level(a.target_supports, a.target_requires, ESTABLISH_TRUST_IN_CLIENT)
    mech = oid_json(a.client_authentication_mech)
    out["client_authentication"] = auth
    out["client_authentication_mech"] = mech
    out["username_password"] = auth if mech and mech.get("oid") == GSSUP_OID else NOT_SUPPORTED
    realm = name_json(a.target_name)
    out["realm"] = realm.get("name") if realm else None
    out["identity_assertion"] = _level(s.target_supports, s.target_requires,
                                       IDENTITY_ASSERTION)
    out["identity_types"] = identity_types(s.supported_identity_types)
    return out


def requirements_text(req: dict) -> str:
    """One line from a :func:`mechanism_requirements` (or transport-only) dict."""
    parts = [f"TLS {req['tls']}", f"client certificate {req['client_certificate']}"]
    if "seciop" in req:
        parts.insert(0, f"SECIOP {req['seciop']}")
    if "client_authentication" in req:
        if req["username_password"] != NOT_SUPPORTED:
            realm = f' (realm "{req["realm"]}")' if req.get("realm") else ""
            parts.append(f"username/password {req['username_password']}{realm}")
        elif req["client_authentication"] != NOT_SUPPORTED:
            mech = req["client_authentication_mech"]
            how = (mech.get("name") or mech.get("oid") or "malformed OID") if mech else \
                "no mechanism named"
            parts.append(f"client authentication {req['client_authentication']} ({how})")
        else:
            parts.append("username/password not supported")
        types = ", ".join(req["identity_types"])
        parts.append(f"identity assertion {req['identity_assertion']}"
                     + (f" ({types})" if types and req["identity_assertion"] != NOT_SUPPORTED
                        else ""))
    return "; ".join(parts)
