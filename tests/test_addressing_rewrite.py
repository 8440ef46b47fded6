"""pycdr.addressing.rewrite: references moved from one server to another, every place an
IOR names an address (profiles, alternate addresses, SSL and TLS transports), the rest kept."""

from pycdr.addressing.csiv2 import CompoundSecMech, CSISecMechList, TLSSecTrans
from pycdr.addressing.iiop import (AlternateIIOPAddress, CodeSetsComponent, IIOPProfile,
                                   SSLSecTrans, decode_profile, make_ior)
from pycdr.addressing.rewrite import ReferenceRewriter, Rewritten
from pycdr.codec.ior import IOR, TaggedProfile, ior_from_string, ior_to_string


def profiles(ior):
    return [decode_profile(p) for p in ior.profiles]


def test_profile_alternate_and_tls_addresses_move_and_the_rest_stays():
    codesets = CodeSetsComponent(0x00010001, (0x05010001,), 0x00010109, ())
    tls_mech = CompoundSecMech(0x66, TLSSecTrans(0x66, 0x66, (("old.example", 3529),
                                                             ("elsewhere", 9))))
    original = make_ior("IDL:Echo:1.0", [
        IIOPProfile((1, 2), "OLD.example", 2809, b"key", (
            codesets, AlternateIIOPAddress("old.example", 2810),
            AlternateIIOPAddress("elsewhere", 1), SSLSecTrans(0x66, 0x66, 3529),
            TLSSecTrans(0x66, 0x66, (("old.example", 3529),)),
            CSISecMechList(False, (tls_mech,)))),
        IIOPProfile((1, 2), "other.example", 2809, b"other"),
        TaggedProfile(0x12345678, b"\x00opaque"),
    ])
    rewriter = ReferenceRewriter({("old.example", 2809): ("new", 4000),
                                  ("old.example", 2810): ("new", 4001),
                                  ("old.example", 3529): ("new", 4443)},
                                 key_for=lambda key, server: b"new-" + key)
    moved, changes = rewriter.rewrite(original)
    assert changes == [Rewritten("OLD.example:2809", "new:4000", b"key", b"new-key")]
    first, second = profiles(moved)[:2]
    assert (first.host, first.port, first.object_key) == ("new", 4000, b"new-key")
    c = first.components
    assert c[0] == codesets
    assert c[1] == AlternateIIOPAddress("new", 4001)
    assert c[2] == AlternateIIOPAddress("elsewhere", 1)          # not routed: kept
    assert c[3] == SSLSecTrans(0x66, 0x66, 4443)
    assert c[4].addresses == (("new", 4443),)
    assert c[5].mechanisms[0].transport_mech.addresses == (("new", 4443), ("elsewhere", 9))
    assert second == profiles(original)[1]                        # another server: kept
    assert moved.profiles[2] == original.profiles[2]              # an unknown profile: kept
    assert moved.type_id == "IDL:Echo:1.0"
    # Through the stringified form and back: the same reference.
    assert ior_from_string(ior_to_string(moved)) == moved


def test_nothing_routed_is_the_same_object():
    ior = make_ior("IDL:Echo:1.0", [IIOPProfile((1, 0), "a", 1, b"k")])
    rewriter = ReferenceRewriter({("b", 1): ("c", 2)})
    assert rewriter.rewrite(ior) == (ior, [])
    assert rewriter.rewrite(None) == (None, [])
    nil = IOR("", ())
    assert rewriter.rewrite(nil) == (nil, [])


def test_a_little_endian_profile_stays_little_endian_and_keeps_its_key_without_key_for():
    ior = make_ior("IDL:Echo:1.0", [IIOPProfile((1, 2), "a", 1, b"k", little=True)])
    moved, changes = ReferenceRewriter({("a", 1): ("b", 2)}).rewrite(ior)
    assert moved.profiles[0].data[0] == 1                          # the byte-order octet
    assert profiles(moved)[0].object_key == b"k" and changes[0].new_key == b"k"


def test_a_rewriting_seen_before_is_remembered_while_the_routes_stay():
    ior = make_ior("IDL:Echo:1.0", [IIOPProfile((1, 2), "old.example", 2809, b"key")])
    again = make_ior("IDL:Echo:1.0", [IIOPProfile((1, 2), "old.example", 2809, b"key")])
    rewriter = ReferenceRewriter({("old.example", 2809): ("new", 4000)})
    first, changes = rewriter.rewrite(ior)
    second, changes_again = rewriter.rewrite(again)
    assert second == first and profiles(first)[0].port == 4000
    assert changes_again == changes and changes_again is not changes
    changes_again.clear()                   # (each caller gets its own list)
    assert rewriter.rewrite(ior)[1] == changes
    # a route changed or added: rewritten by the routes as they are now
    rewriter.routes[("old.example", 2809)] = ("newer", 5000)
    assert profiles(rewriter.rewrite(again)[0])[0].port == 5000
    del rewriter.routes[("old.example", 2809)]
    unchanged, none = rewriter.rewrite(again)
    assert unchanged is again and none == []
    assert rewriter.rewrite(ior) == (ior, [])
    # with keys given by key_for, nothing is remembered (they may change)
    keys = iter([b"k1", b"k2"])
    keyed = ReferenceRewriter({("old.example", 2809): ("new", 4000)},
                              key_for=lambda key, address: next(keys))
    assert [profiles(keyed.rewrite(ior)[0])[0].object_key for _ in range(2)] == [b"k1", b"k2"]


def test_an_encoded_reference_seen_before_is_one_look_up_while_the_routes_stay(monkeypatch):
    from pycdr.codec.cdr import CDRReader, CDRWriter
    from pycdr.codec.ior import read_ior, write_ior
    ior = make_ior("IDL:Echo:1.0", [IIOPProfile((1, 2), "old.example", 2809, b"key")])
    elsewhere = make_ior("IDL:Echo:1.0", [IIOPProfile((1, 2), "other", 2809, b"key")])

    def cdr(reference, little):
        w = CDRWriter(little=little)
        write_ior(w, reference)
        return w.getvalue()
    rewriter = ReferenceRewriter({("old.example", 2809): ("new", 4000)})
    decoded = []                            # the IORs rewrite() was asked to move

    def rewrite(reference):
        decoded.append(reference)
        return ReferenceRewriter.rewrite(rewriter, reference)
    monkeypatch.setattr(rewriter, "rewrite", rewrite)
    for little in (False, True):
        data = cdr(ior, little)
        got = rewriter.rewrite_encoded(data, little)
        new_cdr, moved, changes = got
        assert moved == rewriter.rewrite(ior)[0] and new_cdr == cdr(moved, little)
        assert read_ior(CDRReader(new_cdr, little=little)) == moved
        assert [c.new_address for c in changes] == ["new:4000"]
        decoded.clear()
        assert rewriter.rewrite_encoded(bytes(data), little) is got and decoded == []
        assert rewriter.rewrite_encoded(cdr(elsewhere, little), little) is None
    # a route changed: moved by the routes as they are now
    rewriter.routes[("old.example", 2809)] = ("newer", 5000)
    moved = rewriter.rewrite_encoded(cdr(ior, False), False)[1]
    assert profiles(moved)[0].port == 5000
    del rewriter.routes[("old.example", 2809)]
    assert rewriter.rewrite_encoded(cdr(ior, False), False) is None
