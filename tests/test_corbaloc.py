"""corbaloc and corbaname parsing."""

import pytest

from pycdr.addressing.corbaloc import Corbaloc, Corbaname, IIOPAddress, OtherAddress, RIRAddress, escape_key, parse_corbaloc, parse_corbaname, parse_object_url, parse_string_name
from pycdr.errors import ObjectURLError
from pycdr.addressing.iiop import IIOPProfile, decode_profile
from pycdr.codec.ior import IOR, ior_to_string


@pytest.mark.parametrize("url,addresses,key", [
    ("corbaloc::host.example/NameService", (IIOPAddress("host.example"),), b"NameService"),
    ("corbaloc:iiop:1.2@10.0.0.1:4000/Key", (IIOPAddress("10.0.0.1", 4000, (1, 2)),), b"Key"),
    ("corbaloc:iiop:[::1]:5000/k", (IIOPAddress("::1", 5000),), b"k"),
    ("corbaloc:iiop:1.1@[fe80::1]/k", (IIOPAddress("fe80::1", 2809, (1, 1)),), b"k"),
    ("corbaloc::a:1,:1.2@b,iiop:c:3/x%20y%2Fz%00", (IIOPAddress("a", 1), IIOPAddress(
        "b", 2809, (1, 2)), IIOPAddress("c", 3)), b"x y/z\x00"),
    ("corbaloc:rir:/NameService", (RIRAddress(),), b"NameService"),
    ("corbaloc:rir:/", (RIRAddress(),), b"NameService"),
    ("CORBALOC:IIOP:h/k", (IIOPAddress("h"),), b"k"),
    ("corbaloc:ssliop:h:1,iiop:h2/k", (IIOPAddress("h", 1, tls=True), IIOPAddress("h2")), b"k"),
    ("corbaloc:ssliop:1.2@h:1/k", (IIOPAddress("h", 1, (1, 2), tls=True),), b"k"),
    ("corbaloc:uiop:x,iiop:h2/k", (OtherAddress("uiop", "x"), IIOPAddress("h2")), b"k"),
    ("corbaloc::h:/k", (IIOPAddress("h"),), b"k"),
    # "/"<key_string> is optional in the grammar: no key is the empty key, and for rir: the
    # default initial reference.
    ("corbaloc::host", (IIOPAddress("host"),), b""),
    ("corbaloc::h:7,:h2", (IIOPAddress("h", 7), IIOPAddress("h2")), b""),
    ("corbaloc::h/", (IIOPAddress("h"),), b""),
    ("corbaloc:rir:", (RIRAddress(),), b"NameService"),
])
def test_corbaloc(url, addresses, key):
    loc = parse_corbaloc(url)
    assert loc == Corbaloc(addresses, key)
    assert parse_object_url(url) == loc
    if not any(isinstance(a, OtherAddress) for a in addresses):
        assert parse_corbaloc(loc.to_url()) == loc


@pytest.mark.parametrize("url,offset", [
    ("corbaloc:", 9),                            # nothing at all
    ("corbaloc:/k", 9),                          # no address
    ("corbaloc:host/k", 9),                      # no protocol
    ("corbaloc::h:99999/k", 12),                 # port too big
    ("corbaloc::h:8x/k", 12),                    # bad port
    ("corbaloc::1.x@h/k", 10),                   # bad version
    ("corbaloc::2.0@h/k", 10),                   # no such IIOP version
    ("corbaloc::[::1/k", 10),                    # unclosed bracket
    ("corbaloc::[zz]/k", 11),                    # not IPv6
    ("corbaloc::h/a%2", 13),                     # truncated escape
    ("corbaloc::h/a%zz", 13),                    # bad escape
    ("corbaloc::h/\u00e9", 12),                  # non-ASCII must be escaped
    ("corbaloc:rir:,:h/k", 9),                   # rir mixed with others
    ("corbaloc:rir:x/k", 13),                    # rir with an address
    ("corbaloc::h h/k", 11),                     # space in host
    ("corbaloc::/k", 10),                        # empty host
])
def test_bad_corbaloc(url, offset):
    with pytest.raises(ObjectURLError) as e:
        parse_corbaloc(url)
    assert e.value.offset == offset, str(e.value)


def test_corbaloc_to_ior():
    loc = parse_corbaloc("corbaloc:iiop:1.2@h1:1,iiop:h2/Obj%01")
    ior = loc.to_ior("IDL:X:1.0")
    profiles = [decode_profile(p) for p in ior.profiles]
    assert profiles == [IIOPProfile((1, 2), "h1", 1, b"Obj\x01"),
                        IIOPProfile((1, 0), "h2", 2809, b"Obj\x01")]
    with pytest.raises(ObjectURLError):
        parse_corbaloc("corbaloc:rir:/NameService").to_ior()


def test_corbaname():
    n = parse_corbaname("corbaname::ns.example:2900#a.kind/b%2Fc/d\\/e")
    assert n == Corbaname(Corbaloc((IIOPAddress("ns.example", 2900),), b"NameService"),
                          "a.kind/b/c/d\\/e")
    assert n.name == [("a", "kind"), ("b", ""), ("c", ""), ("d/e", "")]
    n = parse_corbaname("corbaname:rir:/NameService#x")
    assert n.corbaloc.is_rir and n.name == [("x", "")]
    n = parse_corbaname("corbaname::h/Custom")
    assert n.corbaloc.key == b"Custom" and n.name == []
    assert isinstance(parse_object_url("corbaname::h#a"), Corbaname)


def test_string_names():
    assert parse_string_name("a/b.c/.d/e.") == [("a", ""), ("b", "c"), ("", "d"), ("e", "")]
    assert parse_string_name("x\\.y") == [("x.y", "")]
    for bad in ("a//b", "a.b.c", "a\\"):
        with pytest.raises(ObjectURLError):
            parse_string_name(bad)


def test_parse_object_url_dispatch():
    assert parse_object_url(ior_to_string(IOR("IDL:X:1.0", ()))) == IOR("IDL:X:1.0", ())
    with pytest.raises(ObjectURLError):
        parse_object_url("http://x/")


def test_escape_key():
    assert escape_key(b"Name Service/\xff") == "Name%20Service/%ff"
