"""pycdr.addressing.objectkey: the ORB and POA layout an object key tells (real keys from real ORBs)."""

import random
from pathlib import Path

import pytest

from pycdr.codec.cdr import CDRWriter
from pycdr.addressing.iiop import ORBTypeComponent, decode_profile
from pycdr.codec.ior import ior_from_string
from pycdr.addressing.objectkey import JDK_VENDOR, hex_and_text, identify

VECTORS = Path(__file__).parent / "data" / "objectkeys" / "iors.txt"


def real_keys():
    out = {}
    for line in VECTORS.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        orb, what, ior = line.split()
        profile = decode_profile(ior_from_string(ior).profiles[0])
        orb_type = profile.component(ORBTypeComponent)
        out[orb, what] = (profile.object_key, orb_type.orb_type if orb_type else None)
    return out


KEYS = real_keys()

# (orb, what): (vendor, POA path below the root, object id or None when system-assigned)
EXPECTED = {
    ("openjdk-orb-10.1.3", "root"): (JDK_VENDOR, (), None),
    ("openjdk-orb-10.1.3", "persistent"): (JDK_VENDOR, ("child",), b"myobj"),
    ("openjdk-orb-10.1.3", "transient"): (JDK_VENDOR, ("child", "grand"), None),
    ("glassfish-corba-5.0.0", "root"): (JDK_VENDOR, (), None),
    ("glassfish-corba-5.0.0", "persistent"): (JDK_VENDOR, ("child",), b"myobj"),
    ("glassfish-corba-5.0.0", "transient"): (JDK_VENDOR, ("child", "grand"), None),
    ("jacorb-3.9", "root"): ("JacORB", (), None),
    ("jacorb-3.9", "persistent"): ("JacORB", ("child",), b"myobj"),
    ("jacorb-3.9", "transient"): ("JacORB", ("child", "grand"), None),
    ("omniorbpy-4.2.5", "root-implicit"): ("omniORB", (), b"\0\0\0\0"),
    ("omniorbpy-4.2.5", "root"): ("omniORB", (), b"\0\0\0\1"),
    ("omniorbpy-4.2.5", "persistent"): ("omniORB", ("child",), b"myobj"),
    ("omniorbpy-4.2.5", "transient"): ("omniORB", ("child", "grand"), b"\0\0\0\0"),
}


@pytest.mark.parametrize("which", sorted(EXPECTED))
def test_real_keys(which):
    key, orb_type = KEYS[which]
    vendor, path, object_id = EXPECTED[which]
    info = identify(key, orb_type)
    assert info is not None and info.vendor == vendor and info.poa_path == path
    if object_id is not None:
        assert info.object_id == object_id
    assert info.object_id is not None and key.endswith(info.object_id) or vendor == JDK_VENDOR


def test_jdk_fields_and_lifespans():
    persistent = identify(KEYS["openjdk-orb-10.1.3", "persistent"][0])
    transient = identify(KEYS["openjdk-orb-10.1.3", "transient"][0])
    assert persistent.fields["server_id"] == 7 and persistent.fields["orb_id"] == ""
    assert persistent.fields["magic"].startswith("0xafabcb00")
    assert (persistent.fields["scid"], transient.fields["scid"]) == (34, 32)
    assert "trailing" not in persistent.fields


def test_omniorb_transient_incarnation_and_jacorb_server_id():
    info = identify(KEYS["omniorbpy-4.2.5", "transient"][0])
    assert info.fields == {"lifespan": "transient", "incarnation": "b03e066b010061a9"}
    assert identify(KEYS["omniorbpy-4.2.5", "persistent"][0]).fields == {
        "lifespan": "persistent"}
    jac = identify(*KEYS["jacorb-3.9", "persistent"])
    assert jac.fields["implname_or_server_id"] == "PycdrKeys"
    # Without the IOR's ORB type a JacORB key is plain text: not named.
    assert identify(KEYS["jacorb-3.9", "persistent"][0]) is None


def _jdk_key(magic, scid, body):
    w = CDRWriter()
    w.write_ulong(magic)
    w.write_long(scid)
    body(w)
    return w.getvalue()


def test_jdk_older_layouts_from_source():
    def old_poa(w):
        w.write_long(5)              # server id
        w.write_long(1)              # ORB id
        w.write_long(9)              # POA id
        w.write_octet_sequence(b"oid")
    info = identify(_jdk_key(0xAFABCAFE, 32, old_poa))
    assert info.layout == "old POA key" and info.object_id == b"oid"
    assert (info.fields["orb_id"], info.fields["poa_id"]) == (1, 9)

    def jidl(w):
        w.write_long(5)
        w.write_octet_sequence(b"\x01\x02")
        w.write_octet(0x14)
    info = identify(_jdk_key(0xAFABCB00, 2, jidl))
    assert info.layout.startswith("JIDL") and info.object_id == b"\x01\x02"
    assert info.fields["orb_version"] == 0x14


def test_tao_and_orbit_from_source():
    folded = b"RootPOA\x00child\x00"
    key = b"\x14\x01\x0f\x00NUP" + len(folded).to_bytes(4, "big") + folded + b"myobj"
    info = identify(key)
    assert (info.vendor, info.poa_path, info.object_id) == ("TAO", ("child",), b"myobj")
    info = identify(b"\x14\x01\x0f\x00RST" + bytes(12))
    assert info.vendor == "TAO" and info.fields["lifespan"] == "transient"
    assert info.object_id is None and info.fields["rest"] == "00" * 12
    orbit = bytes(range(28))
    assert identify(orbit) is None
    info = identify(orbit, 0x4F425400)
    assert info.vendor == "ORBit2" and info.object_id == orbit[20:]


def test_unmarked_and_malformed_keys_never_raise():
    assert identify(b"Echo") is None and identify(b"") is None
    assert identify(b"\xffchild") is None          # no 0x00 before an object id
    info = identify(b"\xaf\xab\xcb\x00\x00\x00\x00\x20\xff\xff")
    assert info.vendor == JDK_VENDOR and info.layout == "malformed"
    rng = random.Random(27)
    prefixes = [b"\xaf\xab\xcb\x00\x00\x00\x00\x20", b"\xaf\xab\xca\xfe\x00\x00\x00\x03",
                b"\x14\x01\x0f\x00", b"\xff", b"\xfe", b""]
    for _ in range(3000):
        key = rng.choice(prefixes) + rng.randbytes(rng.randrange(24))
        info = identify(key, rng.choice([None, 0x4A414300, 0x4F425400]))
        if info is not None:
            info.to_json()
            info.summary()


def test_hex_and_text():
    assert hex_and_text(b"\xafAB\x00") == 'af414200 ".AB."'
    assert hex_and_text(b"") == "(empty)"


def test_pycdr_transient_keys():
    from pycdr.conformance.echo import ECHO_INTERFACE, load_echo_module
    from pycdr.orb import EchoServant
    from pycdr.orb.adapter import ObjectAdapter
    adapter = ObjectAdapter()
    key = adapter.activate(EchoServant(load_echo_module().interfaces[ECHO_INTERFACE]))
    info = identify(key)
    assert (info.vendor, info.object_id) == ("pycdr", (1).to_bytes(4, "big"))
    assert identify(key + b"x") is None
