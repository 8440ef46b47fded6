"""CSIv2 in IORs (pycdr.addressing.csiv2): mechanism lists written here field by field from
the CSIIOP IDL with pycdr's CDR writer (each nested component its own encapsulation, in
either byte order), decoded back and checked field by field; OIDs and GSS exported names;
malformed components (one warning line naming the problem, the rest of the IOR shown, no
allocation of what a length claims); `pycdr ior` on them."""

import json
import random
import tracemalloc

import pytest
from click.testing import CliRunner

from pycdr.addressing.csiv2 import ASContextSec, CSISecMechList, GSSUP_OID, NullTag, SASContextSec, SECIOPSecTrans, ServiceConfiguration, TLSSecTrans, association_options, decode_exported_name, decode_oid, encode_exported_name, encode_oid, identity_types, mechanism_requirements
from pycdr.addressing.iiop import ActivityPolicyComponent, AlternateIIOPAddress, CompleteObjectKey, IIOPProfile, MultipleComponentsProfile, ORBTypeComponent, TaggedComponent, client_requirements, decode_profile, encode_profile, make_ior
from pycdr.cli.ior import describe_ior
from pycdr.cli.main import EXIT_OK, main
from pycdr.codec.cdr import CDRWriter
from pycdr.codec.ior import ior_from_string, ior_to_string

# DER OIDs and an exported name written out by hand (X.690; RFC 2743 3.2).
GSSUP_DER = bytes.fromhex("0606678102010101")                 # 2.23.130.1.1.1
SCOPED_USERNAME_DER = bytes.fromhex("0606678102010201")       # 2.23.130.1.2.1
EXPORT_NAME_DER = bytes.fromhex("06062b0601050604")           # 1.3.6.1.5.6.4
KERBEROS_DER = bytes.fromhex("06092a864886f712010202")        # 1.2.840.113554.1.2.2
REALM = b"\x04\x01\x00\x08" + GSSUP_DER + b"\x00\x00\x00\x07default"
AUTHORITY = b"\x04\x01\x00\x08" + GSSUP_DER + (11).to_bytes(4, "big") + "authorit\u00e9y".encode()
KRB_TARGET = b"\x04\x01\x00\x0b" + KERBEROS_DER + (18).to_bytes(4, "big") + b"host/srv@EXAMPLE.C"

SCS_GSS_EXPORTED_NAME = 0x4F4D1        # CSI::OMGVMCID | 1
OMG_VMCID_OTHER = 0x4F4D0              # SCS_GeneralNames


def encapsulation(little, write):
    w = CDRWriter(little=little).encapsulation_writer()
    write(w)
    return w.getvalue()


def addresses(w, pairs):
    w.write_ulong(len(pairs))
    for host, port in pairs:
        w.write_string(host)
        w.write_ushort(port)


def tls_sec_trans(little, supports, requires, pairs):
    def write(w):
        w.write_ushort(supports)
        w.write_ushort(requires)
        addresses(w, pairs)
    return encapsulation(little, write)


def seciop_sec_trans(little):
    def write(w):
        w.write_ushort(0x66)
        w.write_ushort(0x06)
        w.write_octet_sequence(KERBEROS_DER)
        w.write_octet_sequence(KRB_TARGET)
        addresses(w, [("seciop.example", 5000)])
    return encapsulation(little, write)


def compound_sec_mech(w, requires, transport_tag, transport_data, as_ctx, sas_ctx):
    """CSIIOP::CompoundSecMech, member by member."""
    w.write_ushort(requires)
    w.write_ulong(transport_tag)                 # IOP::TaggedComponent
    w.write_octet_sequence(transport_data)
    supports, as_requires, mech, name = as_ctx   # AS_ContextSec
    w.write_ushort(supports)
    w.write_ushort(as_requires)
    w.write_octet_sequence(mech)
    w.write_octet_sequence(name)
    supports, sas_requires, authorities, naming, types = sas_ctx     # SAS_ContextSec
    w.write_ushort(supports)
    w.write_ushort(sas_requires)
    w.write_ulong(len(authorities))
    for syntax, auth in authorities:
        w.write_ulong(syntax)
        w.write_octet_sequence(auth)
    w.write_ulong(len(naming))
    for oid in naming:
        w.write_octet_sequence(oid)
    w.write_ulong(types)


def mech_list(little, inner_little):
    """A CompoundSecMechList of three mechanisms: TLS with GSSUP and identity assertion,
    SECIOP (Kerberos), and none (TAG_NULL_TAG); the transports in ``inner_little`` order."""
    def write(w):
        w.write_boolean(True)
        w.write_ulong(3)
        compound_sec_mech(w, 0x66, 36, tls_sec_trans(inner_little, 0x66, 0x46,
                                                     [("tls.example", 3529), ("::1", 3530)]),
                          (0x40, 0x40, GSSUP_DER, REALM),
                          (0x400, 0x400, [(SCS_GSS_EXPORTED_NAME, AUTHORITY),
                                          (OMG_VMCID_OTHER, b"\x30\x00")],
                           [EXPORT_NAME_DER, SCOPED_USERNAME_DER], 0x0F))
        compound_sec_mech(w, 0x06, 35, seciop_sec_trans(inner_little),
                          (0, 0, b"", b""), (0, 0, [], [], 0))
        compound_sec_mech(w, 0, 34, b"", (0x40, 0, GSSUP_DER, b""), (0, 0, [], [], 0))
    return encapsulation(little, write)


def run(*args, stdin=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=stdin)


def ior_with(*components, port=2809):
    return ior_to_string(make_ior("IDL:Test/Secure:1.0", [
        IIOPProfile((1, 2), "host.example", port, b"key", components)]))


@pytest.mark.parametrize("little,inner_little", [(False, False), (True, False), (False, True),
                                                 (True, True)])
def test_hand_built_mechanism_list_decodes_field_by_field(little, inner_little):
    data = mech_list(little, inner_little)
    profile = decode_profile(ior_from_string(ior_with(TaggedComponent(33, data))).profiles[0])
    [c] = profile.components
    assert isinstance(c, CSISecMechList) and c.stateful is True
    tls_mech, seciop_mech, null_mech = c.mechanisms
    # mechanism 1: TLS, GSSUP, identity assertion
    assert tls_mech.target_requires == 0x66
    t = tls_mech.transport_mech
    assert isinstance(t, TLSSecTrans)
    assert (t.target_supports, t.target_requires) == (0x66, 0x46)
    assert t.addresses == (("tls.example", 3529), ("::1", 3530))
    a = tls_mech.as_context
    assert (a.target_supports, a.target_requires) == (0x40, 0x40)
    assert decode_oid(a.client_authentication_mech) == GSSUP_OID
    realm = decode_exported_name(a.target_name)
    assert (realm.mech, realm.text) == (GSSUP_OID, "default")
    s = tls_mech.sas_context
    assert (s.target_supports, s.target_requires) == (0x400, 0x400)
    assert s.privilege_authorities == (ServiceConfiguration(SCS_GSS_EXPORTED_NAME, AUTHORITY),
                                       ServiceConfiguration(OMG_VMCID_OTHER, b"\x30\x00"))
    assert decode_exported_name(s.privilege_authorities[0].name).text == "authorit\u00e9y"
    assert [decode_oid(o) for o in s.supported_naming_mechanisms] == \
        ["1.3.6.1.5.6.4", "2.23.130.1.2.1"]
    assert identity_types(s.supported_identity_types) == \
        ["ITTAnonymous", "ITTPrincipalName", "ITTX509CertChain", "ITTDistinguishedName"]
    # mechanism 2: SECIOP with Kerberos
    t = seciop_mech.transport_mech
    assert isinstance(t, SECIOPSecTrans) and decode_oid(t.mech_oid) == "1.2.840.113554.1.2.2"
    target = decode_exported_name(t.target_name)
    assert (target.mech, target.name) == ("1.2.840.113554.1.2.2", b"host/srv@EXAMPLE.C")
    assert t.addresses == (("seciop.example", 5000),)
    assert seciop_mech.as_context == ASContextSec() and seciop_mech.sas_context == SASContextSec()
    # mechanism 3: no transport security
    assert isinstance(null_mech.transport_mech, NullTag)
    assert null_mech.as_context == ASContextSec(0x40, 0, GSSUP_DER, b"")
    # written back by pycdr's encoder: the same bytes, in the same byte order
    assert c.encode_data(little) == data or inner_little != little
    again = decode_profile(encode_profile(profile))
    assert again.components == profile.components


def test_what_each_mechanism_requires():
    data = mech_list(False, False)
    profile = decode_profile(ior_from_string(ior_with(TaggedComponent(33, data))).profiles[0])
    tls, seciop, null = (mechanism_requirements(m) for m in profile.components[0].mechanisms)
    assert (tls["tls"], tls["client_certificate"]) == ("required", "required")
    assert (tls["username_password"], tls["realm"]) == ("required", "default")
    assert tls["identity_assertion"] == "required"
    assert tls["identity_types"][0] == "ITTAnonymous"
    assert (seciop["tls"], seciop["seciop"]) == ("not supported", "required")
    assert (null["tls"], null["username_password"], null["identity_assertion"]) == \
        ("not supported", "supported", "not supported")
    # port 0 in the profile: no plain listener, so a TLS way in that merely supports
    # integrity requires TLS all the same
    only_tls = decode_profile(ior_from_string(ior_with(
        TLSSecTrans(0x66, 0, (("h", 1),)), port=0)).profiles[0])
    assert client_requirements(only_tls)[0]["tls"] == "required"
    plain = decode_profile(ior_from_string(ior_with(
        TLSSecTrans(0x66, 0, (("h", 1),)))).profiles[0])
    [r] = client_requirements(plain)
    assert (r["tls"], r["client_certificate"]) == ("supported", "supported")


def test_ior_command_shows_the_mechanisms_and_requirements():
    ior = ior_with(ORBTypeComponent(0x42454100), TaggedComponent(33, mech_list(False, True)),
                   CompleteObjectKey(b"full/key"), ActivityPolicyComponent(3))
    r = run("ior", ior)
    assert r.exit_code == EXIT_OK, r.output
    out = r.output
    assert "TAG_CSI_SEC_MECH_LIST stateful=True, 3 mechanism(s)" in out
    assert "mechanism 1: requires 0x66 (Integrity, Confidentiality, EstablishTrustInTarget, " \
        "EstablishTrustInClient)" in out
    assert "addresses tls.example:3529, [::1]:3530" in out
    assert 'client_authentication_mech 2.23.130.1.1.1 (GSSUP); target_name "default" (GSSUP)' \
        in out
    assert 'privilege_authorities "authorit\u00e9y" (GSSUP) (SCS_GSSExportedName), 3000 ' \
        "(SCS_GeneralNames)" in out
    assert "supported_naming_mechanisms 1.3.6.1.5.6.4 (GSS_NT_Export_Name), 2.23.130.1.2.1 " \
        "(GSS_NT_Scoped_Username)" in out
    assert "TAG_SECIOP_SEC_TRANS supports 0x66" in out and \
        "mech 1.2.840.113554.1.2.2 (Kerberos V5)" in out
    assert "transport: TAG_NULL_TAG (no data)" in out
    assert 'TAG_COMPLETE_OBJECT_KEY "full/key"' in out and "TAG_ACTIVITY_POLICY ADAPTS (3)" in out
    assert "Addresses: host.example:2809, tls.example:3529 (TLS), [::1]:3530 (TLS)" in out
    assert "profile 1, CSIv2 mechanism 1 over tls.example:3529, [::1]:3530: TLS required; " \
        'client certificate required; username/password required (realm "default"); ' \
        "identity assertion required (ITTAnonymous" in out
    assert "CSIv2 mechanism 2 over seciop.example:5000: SECIOP required; TLS not supported" \
        in out
    assert "CSIv2 mechanism 3 with no transport security: TLS not supported" in out
    j = json.loads(run("ior", "--json", ior).output)
    mech = j["profiles"][0]["components"][1]["mechanisms"][0]
    assert mech["as_context"]["client_authentication_mech"] == {"oid": GSSUP_OID,
                                                                 "name": "GSSUP"}
    assert mech["as_context"]["target_name"]["name"] == "default"
    assert mech["sas_context"]["target_requires_names"] == ["IdentityAssertion"]
    assert mech["transport_mech"]["target_requires_names"] == \
        ["Integrity", "Confidentiality", "EstablishTrustInClient"]
    assert [r["via"] for r in j["client_requirements"]] == [
        "CSIv2 mechanism 1 over tls.example:3529, [::1]:3530",
        "CSIv2 mechanism 2 over seciop.example:5000",
        "CSIv2 mechanism 3 with no transport security"]
    assert j["client_requirements"][0]["username_password"] == "required"
    none = run("ior", ior_with(ORBTypeComponent(0x42454100)))
    assert "Client requirements: none stated" in none.output


def test_complete_object_key_in_a_multiple_components_profile():
    """TAG_COMPLETE_OBJECT_KEY's data is the key itself (no encapsulation)."""
    profile = MultipleComponentsProfile((CompleteObjectKey(b"\x00key"),))
    ior = make_ior("IDL:X:1.0", [profile])
    raw = ior.profiles[0].data
    assert raw.endswith(b"\x00\x00\x00\x05\x00\x00\x00\x04\x00key")
    assert decode_profile(ior.profiles[0]) == profile


@pytest.mark.parametrize("dotted,der", [
    (GSSUP_OID, GSSUP_DER), ("2.23.130.1.2.1", SCOPED_USERNAME_DER),
    ("1.3.6.1.5.6.4", EXPORT_NAME_DER), ("1.2.840.113554.1.2.2", KERBEROS_DER),
    ("2.999.3", bytes.fromhex("0603883703")), ("0.0", bytes.fromhex("060100"))])
def test_oids(dotted, der):
    assert decode_oid(der) == dotted and encode_oid(dotted) == der


@pytest.mark.parametrize("der,problem", [
    (b"", "not a DER OBJECT IDENTIFIER"), (b"\x04\x01\x00", "not a DER OBJECT IDENTIFIER"),
    (b"\x06\x05\x67\x81", "its length octet says 5 bytes, 2 follow"),
    (b"\x06\x00", "its length octet says 0 bytes"),
    (b"\x06\x02\x67\x81", "its last arc is cut short"),
    (b"\x06\x02\x80\x01", "leading 0x80"),
    (b"\x06\x81\x01\x01", "this long")])
def test_bad_oids(der, problem):
    with pytest.raises(ValueError, match=problem):
        decode_oid(der)


@pytest.mark.parametrize("dotted", ["1", "3.1", "1.40", "1.-2.3", "1.x", ""])
def test_not_oids(dotted):
    with pytest.raises(ValueError, match="is not an OBJECT IDENTIFIER"):
        encode_oid(dotted)


def test_exported_names():
    assert encode_exported_name(GSSUP_OID, b"default") == REALM
    for data, problem in ((b"\x04\x02" + REALM[2:], "does not start 04 01"),
                          (REALM[:10], "runs past"),
                          (REALM + b"x", "name length says 7 bytes, 8 follow"),
                          (b"\x04\x01\x00\x02\x05\x00\x00\x00\x00\x00", "tag 0x06")):
        with pytest.raises(ValueError, match=problem):
            decode_exported_name(data)


def test_association_option_and_identity_type_names():
    assert association_options(0x0C02) == ["Integrity", "IdentityAssertion",
                                           "DelegationByClient"]
    assert association_options(0x8000) == ["0x8000"]          # a bit no table names
    assert identity_types(0) == [] and identity_types(0x12) == ["ITTPrincipalName", "0x10"]


# --- malformed components ------------------------------------------------------------------
def _be(write):
    return encapsulation(False, write)


def _mechanism_with(as_mech=GSSUP_DER, as_name=REALM, transport=(36, None), count=1):
    tag, data = transport
    if data is None:
        data = tls_sec_trans(False, 0x66, 0x66, [("h", 1)])

    def write(w):
        w.write_boolean(False)
        w.write_ulong(count)
        compound_sec_mech(w, 0x66, tag, data, (0x40, 0x40, as_mech, as_name),
                          (0, 0, [], [], 0))
    return _be(write)


def _huge_count(w):
    w.write_boolean(False)
    w.write_ulong(0xFFFFFFFF)


def _tls_huge_addresses(w):
    w.write_ushort(0x66)
    w.write_ushort(0x66)
    w.write_ulong(0x7FFFFFFF)


def _as_mech_huge_length(w):
    w.write_boolean(False)
    w.write_ulong(1)
    w.write_ushort(0)
    w.write_ulong(34)
    w.write_ulong(0)
    w.write_ushort(0)
    w.write_ushort(0)
    w.write_ulong(0xFFFFFFF0)              # client_authentication_mech's claimed length
    w.write_raw(bytes(40))              # (enough left for one mechanism's minimum)


MALFORMED = [
    # (what, tag, component data, text the one warning line holds, code)
    ("mechanism count far beyond the data", 33, _be(_huge_count),
     "CompoundSecMech list length 4294967295 needs", "bad-encapsulation"),
    ("mechanism list cut inside a mechanism", 33, _mechanism_with()[:40],
     "malformed TAG_CSI_SEC_MECH_LIST", "bad-encapsulation"),
    ("no data at all", 33, b"", "TAG_CSI_SEC_MECH_LIST has no data", "bad-encapsulation"),
    ("AS mechanism OID length beyond the data", 33, _be(_as_mech_huge_length),
     "length 4294967280 needs at least 4294967280 bytes but only 40 remain",
     "bad-encapsulation"),
    ("TLS address count far beyond the data", 36, _be(_tls_huge_addresses),
     "transport address list length 2147483647 needs", "bad-encapsulation"),
    ("TLS_SEC_TRANS without data", 36, b"", "TAG_TLS_SEC_TRANS has no data",
     "bad-encapsulation"),
    ("SECIOP cut short", 35, seciop_sec_trans(False)[:20], "malformed TAG_SECIOP_SEC_TRANS",
     "bad-encapsulation"),
    ("TAG_NULL_TAG with data", 34, b"\x00\x00\x00", "TAG_NULL_TAG (3 bytes of data where it "
     "has none)", "bad-encapsulation"),
    ("activity policy of one octet", 37, b"\x00", "malformed TAG_ACTIVITY_POLICY",
     "bad-encapsulation"),
    ("AS mechanism not an OID", 33, _mechanism_with(as_mech=b"\x04\x03abc"),
     "the AS context's client_authentication_mech is malformed: not a DER OBJECT IDENTIFIER",
     "bad-csiv2-oid"),
    ("AS mechanism OID with a lying length", 33,
     _mechanism_with(as_mech=b"\x06\x09\x67\x81\x02\x01\x01\x01"),
     "its length octet says 9 bytes, 6 follow", "bad-csiv2-oid"),
    ("AS target name not an exported name", 33, _mechanism_with(as_name=b"default"),
     "the AS context's target_name is malformed: not a GSS exported name", "bad-csiv2-name"),
    ("transport in the list malformed", 33, _mechanism_with(transport=(
        36, _be(_tls_huge_addresses))), "transport address list length 2147483647",
     "bad-encapsulation"),
    ("transport NULL_TAG with data", 33, _mechanism_with(transport=(34, b"\x01")),
     "TAG_NULL_TAG (1 bytes of data", "bad-encapsulation"),
]


@pytest.mark.parametrize("what,tag,data,problem,code", MALFORMED,
                         ids=[m[0] for m in MALFORMED])
def test_malformed_component(what, tag, data, problem, code):
    ior = ior_with(ORBTypeComponent(0x42454100), TaggedComponent(tag, data),
                   AlternateIIOPAddress("10.0.0.9", 4243))
    tracemalloc.start()
    r = run("ior", ior)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 4 << 20, f"{peak} bytes for {what}"
    assert r.exit_code == EXIT_OK, r.output
    warning_lines = [line for line in r.output.splitlines() if line.startswith("warning:")]
    assert len(warning_lines) == 1, r.output
    assert f"[{code}]" in warning_lines[0] and problem in warning_lines[0], warning_lines
    assert "Traceback" not in r.output and "b'" not in r.output
    # the rest of the IOR is still shown
    assert "TAG_ORB_TYPE BEA" in r.output and "TAG_ALTERNATE_IIOP_ADDRESS 10.0.0.9 4243" in r.output
    assert "Addresses: host.example:2809, 10.0.0.9:4243" in r.output
    j = json.loads(run("ior", "--json", ior).output)
    assert [w["code"] for w in j["warnings"]] == [code]


def test_malformed_oid_is_shown_with_its_problem():
    ior = ior_with(TaggedComponent(33, _mechanism_with(as_mech=b"\x04\x03abc")))
    r = run("ior", ior)
    assert "client_authentication_mech 040361626" in r.output and \
        "(not a DER OBJECT IDENTIFIER (tag 0x06))" in r.output
    j = json.loads(run("ior", "--json", ior).output)
    mech = j["profiles"][0]["components"][0]["mechanisms"][0]
    assert mech["as_context"]["client_authentication_mech"]["problem"].startswith("not a DER")


def test_a_malformed_oid_does_not_fail_a_strict_decode():
    """Strict decoding (the conformance target's) keeps the TLS address of a reference whose
    CSIv2 realm or OID is malformed: the structure decoded, the bytes are kept as they are."""
    ior = ior_with(TaggedComponent(33, _mechanism_with(as_mech=b"\x04\x03abc",
                                                       as_name=b"default")))
    profile = decode_profile(ior_from_string(ior).profiles[0])
    [mech] = profile.components[0].mechanisms
    assert mech.as_context.client_authentication_mech == b"\x04\x03abc"
    assert mech.as_context.target_name == b"default"
    assert mech.transport_mech.addresses == (("h", 1),)


def test_mutated_mechanism_lists_never_crash_the_lenient_decoder():
    """Seeded byte flips, truncations and insertions of a real mechanism list: a lenient
    decode always ends with a profile (the component typed or kept raw), never an exception,
    and the text and JSON forms of the result are made without one."""
    rng = random.Random(47)
    base = bytearray(mech_list(False, True))
    kinds = set()
    for _ in range(400):
        data = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            kind = rng.random()
            at = rng.randrange(len(data))
            if kind < 0.6:
                data[at] = rng.randrange(256)
            elif kind < 0.8:
                del data[at:]
                if not data:
                    break
            else:
                data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        warnings = []
        ior = ior_with(TaggedComponent(33, bytes(data)))
        profile = decode_profile(ior_from_string(ior).profiles[0], lenient=True,
                                 warnings=warnings)
        [component] = profile.components
        assert isinstance(component, (CSISecMechList, TaggedComponent))
        kinds.add(type(component))
        json.dumps(component.to_json())
        describe_ior(ior_from_string(ior), [profile])
    assert kinds == {CSISecMechList, TaggedComponent}
