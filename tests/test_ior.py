"""IOR strings, IIOP profiles, tagged components; agreement with omniORB's catior."""

import re
import shutil
import subprocess

import pytest

from pycdr.codec.cdr import CDRWriter
from pycdr.errors import DecodeError, ObjectURLError, TruncatedError
from pycdr.addressing.csiv2 import ASContextSec, CompoundSecMech, CSISecMechList, SASContextSec, ServiceConfiguration, TLSSecTrans
from pycdr.addressing.iiop import AlternateIIOPAddress, CodeSetsComponent, InvocationPolicyComponent, IIOPProfile, JavaCodebase, MultipleComponentsProfile, OmniORBUnixTransport, ORBTypeComponent, OTSPolicyComponent, PoliciesComponent, RMICustomMaxStreamFormat, SSLSecTrans, TaggedComponent, component_name, decode_iiop_profile, decode_profile, encode_iiop_profile, make_ior, orb_vendor, profile_name
from pycdr.codec.ior import NIL, IOR, TaggedProfile, ior_from_string, ior_to_string


def catior(text):
    """Run omniORB's catior (Debian package omniorb); required, not optional."""
    exe = shutil.which("catior")
    if exe is None:
        pytest.fail("catior not found: install the Debian package 'omniorb' "
                    "(.ci/install.sh does)")
    out = subprocess.run([exe, text], capture_output=True, text=True, timeout=30)
    return out.returncode, out.stdout


def catior_facts(stdout):
    """What catior printed, as comparable facts."""
    facts = {"type_id": None, "profiles": []}
    m = re.search(r'^Type ID: "(.*)"$', stdout, re.M)
    facts["type_id"] = m.group(1) if m else None
    for line in stdout.splitlines():
        m = re.match(r'^\d+\. IIOP (\d+)\.(\d+) (\S+) (\d+) "(.*)"$', line)
        if m:
            facts["profiles"].append({"version": (int(m.group(1)), int(m.group(2))),
                                      "host": m.group(3), "port": int(m.group(4)),
                                      "key": m.group(5), "components": []})
            continue
        if re.match(r"^\d+\. Multiple Component Profile", line):
            facts["profiles"].append({"multiple": True, "components": []})
            line = line.split("Profile", 1)[1]
        m = re.match(r"^\s+(TAG_\w+|Unknown component tag \d+)(.*)$", line)
        if m and facts["profiles"]:
            facts["profiles"][-1]["components"].append((m.group(1), m.group(2).strip()))
    return facts


def catior_key(key: bytes) -> str:
    return "".join(chr(b) if 32 <= b <= 126 else f"\\x{b:02x}" for b in key)


def our_facts(ior: IOR):
    """The same facts from our decoding, in catior's words."""
    facts = {"type_id": ior.type_id, "profiles": []}
    for p in ior.profiles:
        d = decode_profile(p)
        if isinstance(d, IIOPProfile):
            entry = {"version": d.version, "host": d.host, "port": d.port,
                     "key": catior_key(d.object_key), "components": []}
        elif isinstance(d, MultipleComponentsProfile):
            entry = {"multiple": True, "components": []}
        else:
            continue
        for c in d.components:
            if isinstance(c, ORBTypeComponent):
                entry["components"].append(("TAG_ORB_TYPE", f"{c.vendor or '(unknown)'} ("
                                            + catior_key(c.orb_type.to_bytes(4, 'big')) + ")"))
            elif isinstance(c, CodeSetsComponent):
                entry["components"].append(("TAG_CODE_SETS", "char native code set:       "
                                            + _catior_cs(c.char_native)))
            elif isinstance(c, AlternateIIOPAddress):
                entry["components"].append(("TAG_ALTERNATE_IIOP_ADDRESS", f"{c.host} {c.port}"))
            elif isinstance(c, SSLSecTrans):
                entry["components"].append(("TAG_SSL_SEC_TRANS",
                                            f"port = {c.port} supports {c.target_supports} "
                                            f"requires {c.target_requires}"))
            elif isinstance(c, TaggedComponent) and c.tag in (0x41545401, 0x41545403):
                entry["components"].append((
                    {0x41545401: "TAG_OMNIORB_BIDIR",
                     0x41545403: "TAG_OMNIORB_PERSISTENT_ID"}[c.tag], None))
            elif isinstance(c, (CSISecMechList, PoliciesComponent)):
                entry["components"].append(({CSISecMechList: "TAG_CSI_SEC_MECH_LIST",
                                             PoliciesComponent: "TAG_POLICIES"}[type(c)], None))
            else:
                entry["components"].append((f"Unknown component tag {c.tag}", ""))
        facts["profiles"].append(entry)
    return facts


_CATIOR_CS = {0x00010001: "ISO-8859-1", 0x05010001: "UTF-8", 0x00010109: "UTF-16",
              0x00010100: "UCS-2-level-1", 0x00010106: "UCS-4", 0x00010020: "ISO-646"}


def _catior_cs(cs):
    return _CATIOR_CS.get(cs, f"(0x{cs:08x})")


def assert_agrees_with_catior(ior_string):
    code, out = catior(ior_string)
    assert code == 0, out
    theirs = catior_facts(out)
    ours = our_facts(ior_from_string(ior_string))
    assert theirs["type_id"] == ours["type_id"]
    assert len(theirs["profiles"]) == len(ours["profiles"])
    for t, o in zip(theirs["profiles"], ours["profiles"]):
        assert {k: v for k, v in t.items() if k != "components"} == \
            {k: v for k, v in o.items() if k != "components"}
        assert [name for name, _ in t["components"]] == [name for name, _ in o["components"]]
        for (tn, tv), (on, ov) in zip(t["components"], o["components"]):
            if ov is not None:
                assert tv == ov, (tn, tv, ov)


# ---------------------------------------------------------------------------------
ALL_COMPONENTS = (
    ORBTypeComponent(0x4A414300),
    CodeSetsComponent(0x05010001, (0x00010001, 0x00010020), 0x00010109, (0x00010100,)),
    AlternateIIOPAddress("10.0.0.2", 2810),
    SSLSecTrans(0x66, 0x06, 2811),
    CSISecMechList(False, (CompoundSecMech(
        0x06, TLSSecTrans(0x66, 0x06, (("127.0.0.1", 2812),)), ASContextSec(),
        SASContextSec(0, 0, (ServiceConfiguration(1, b"auth"),),
                      (b"\x06\x06g\x81\x02\x01\x01\x01",), 0x0F)),)),
    PoliciesComponent(((64, b"\x00\x01"),)),
    JavaCodebase("http://example/codebase"),
    TaggedComponent(0x41545401, b"\x00\x00\x00\x00\x04abc\x00"),
    TaggedComponent(999, b"\x01\x02"),
)


@pytest.mark.parametrize("little", [False, True])
def test_profile_versions_and_components_round_trip(little):
    for version in ((1, 0), (1, 1), (1, 2)):
        comps = ALL_COMPONENTS if version >= (1, 1) else ()
        p = IIOPProfile(version, "host.example", 2809, b"\x00\xffkey", comps, little)
        data = encode_iiop_profile(p)
        d = decode_iiop_profile(data)
        assert d == p and d.little == little
        assert encode_iiop_profile(d) == data


def test_ior_string_round_trip_and_case():
    p = IIOPProfile((1, 2), "127.0.0.1", 1234, b"key", ALL_COMPONENTS)
    ior = make_ior("IDL:Test/Echo:1.0", [p, MultipleComponentsProfile(ALL_COMPONENTS[:2]),
                                         TaggedProfile(0x54414F00, b"\x00raw")])
    for little in (False, True):
        s = ior_to_string(ior, little=little)
        assert ior_from_string(s) == ior
        assert ior_from_string(s.upper()) == ior
        assert ior_from_string("ior:" + s[4:].upper()) == ior
        assert ior_from_string("  " + s + "\n") == ior
    decoded = [decode_profile(p) for p in ior.profiles]
    assert decoded[0] == p
    assert decoded[1] == MultipleComponentsProfile(ALL_COMPONENTS[:2])
    assert decoded[2] == TaggedProfile(0x54414F00, b"\x00raw")     # unknown profile: raw
    assert decoded[0].addresses == [("127.0.0.1", 1234), ("10.0.0.2", 2810)]
    assert decoded[0].component(ORBTypeComponent).vendor == "JacORB"


def test_bad_ior_strings():
    good = ior_to_string(NIL)
    with pytest.raises(ObjectURLError) as e:
        ior_from_string(good + "0")
    assert "odd" in str(e.value)
    with pytest.raises(ObjectURLError) as e:
        ior_from_string(good[:10] + "zz" + good[12:])
    assert e.value.offset == 10
    with pytest.raises(ObjectURLError):
        ior_from_string("IOX:00")
    with pytest.raises(ObjectURLError):
        ior_from_string("IOR:")
    with pytest.raises(TruncatedError):
        ior_from_string("IOR:00000000ff")          # type_id length runs off the end
    with pytest.raises(TruncatedError):            # profile count claims too much
        ior_from_string("IOR:0000000001000000ffffffff")


def test_nil_ior():
    assert ior_from_string(ior_to_string(NIL)) == NIL and NIL.is_nil
    code, out = catior(ior_to_string(NIL))
    assert "nil object reference" in out


def test_malformed_component_strict_and_lenient():
    bad = TaggedComponent(1, b"\x00\x00\x00")        # CODE_SETS, truncated
    p = IIOPProfile((1, 2), "h", 1, b"k", (bad,))
    data = encode_iiop_profile(p)
    with pytest.raises(DecodeError):
        decode_iiop_profile(data)
    warnings = []
    d = decode_iiop_profile(data, lenient=True, warnings=warnings)
    assert d.components == (bad,) and warnings[0].code == "bad-encapsulation"


def test_orb_vendor_names():
    assert orb_vendor(0x41545400) == "omniORB"
    assert orb_vendor(0x54414F00) == "TAO"
    assert orb_vendor(0x4A414300) == "JacORB"
    assert orb_vendor(0x12345600) is None


def test_catior_agrees_on_synthetic_iors():
    comps = (ORBTypeComponent(0x54414F00),
             CodeSetsComponent(0x00010001, (0x05010001,), 0x00010109, ()),
             AlternateIIOPAddress("192.168.1.1", 9999), SSLSecTrans(0x66, 0x06, 4433),
             TaggedComponent(4242, b"\x00"))
    profiles = [IIOPProfile((1, 2), "example.org", 2809, b"\x00\x01PO\xffA", comps),
                IIOPProfile((1, 0), "10.1.2.3", 65535, b"NameService"),
                MultipleComponentsProfile((ORBTypeComponent(0x41545400),))]
    for little in (False, True):
        assert_agrees_with_catior(ior_to_string(make_ior("IDL:a/b:1.0", profiles),
                                                little=little))


def test_nested_encapsulation_byte_orders():
    # A little-endian profile inside a big-endian IOR, with a big-endian component.
    comp = CDRWriter(little=False).encapsulation_writer()
    comp.write_ulong(0x41545400)
    w = CDRWriter(little=True).encapsulation_writer()
    w.write_octet(1), w.write_octet(1), w.write_string("h"), w.write_ushort(7)
    w.write_octet_sequence(b"k"), w.write_ulong(1), w.write_ulong(0)
    w.write_octet_sequence(comp.getvalue())
    d = decode_iiop_profile(w.getvalue())
    assert d.port == 7 and d.components == (ORBTypeComponent(0x41545400),)


NEW_COMPONENTS = (
    RMICustomMaxStreamFormat(2), OTSPolicyComponent(3), InvocationPolicyComponent(1),
    OmniORBUnixTransport("host.example", "/tmp/omni-sock"),
)


@pytest.mark.parametrize("little", [False, True])
def test_vendor_and_service_components_round_trip(little):
    p = IIOPProfile((1, 2), "h", 1, b"k", NEW_COMPONENTS, little)
    data = encode_iiop_profile(p)
    assert decode_iiop_profile(data) == p and encode_iiop_profile(decode_iiop_profile(data)) == data
    assert OTSPolicyComponent(3).value_name == "ADAPTS"
    assert InvocationPolicyComponent(2).value_name == "UNSHARED"
    assert OTSPolicyComponent(9).value_name == "unknown value 9"


def test_real_openjdk_ior_max_stream_format():
    """The OpenJDK ORB's IOR (tests/data/objectkeys) carries TAG_RMI_CUSTOM_MAX_STREAM_FORMAT 2."""
    line = next(l for l in open("tests/data/objectkeys/iors.txt") if l.startswith("openjdk"))
    p = decode_profile(ior_from_string(line.split()[2]).profiles[0])
    assert p.component(RMICustomMaxStreamFormat) == RMICustomMaxStreamFormat(2)


def test_vendor_tag_names():
    assert component_name(0x49424D0A) == "IBM component 0x49424d0a"
    assert component_name(0x54414F00) == "TAO_TAG_PRIORITY (obsolete)"
    assert component_name(34) == "TAG_NULL_TAG" and component_name(5) == "TAG_COMPLETE_OBJECT_KEY"
    assert component_name(0x41545403) == "TAG_OMNIORB_PERSISTENT_ID"
    assert component_name(0x12345678) == "component 305419896 (0x12345678)"
    assert profile_name(0x54414F04) == "TAO DIOP (GIOP over UDP)"
    assert profile_name(0xBADFAECA).startswith("ORBit") and profile_name(0x4F425400).startswith(
        "ORBit")
    assert profile_name(0x56495301) == "VisiBroker profile"
    assert profile_name(0x14) == "Orbacus SSL profile (tag 20)"
    assert profile_name(0x49424D07) == "IBM profile 0x49424d07"
