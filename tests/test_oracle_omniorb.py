"""pycdr against omniORBpy's C++ marshaler (PyPI salome-omniorb).

For every (TypeCode, value) of a broad catalog, in both byte orders:
1. omniORB decodes pycdr's encapsulation (omniORB accepts our bytes),
2. omniORB re-encodes what it decoded and the bytes equal pycdr's except in
   padding (masked with pycdr's own layout: omniORB leaves padding
   uninitialised),
3. pycdr decodes omniORB's bytes back to the original value.
TypeCodes' own encodings are compared the same way.

Left out, with the reason:
- wchar and wstring: this omniORBpy build aborts the process when it marshals
  a wchar (they are checked against JacORB in the ORB interop tests);
- exception values: cdrMarshal cannot marshal exceptions (their TypeCodes are
  compared below);
- the byte comparison of big-endian streams holding TypeCodes (any,
  TypeCode): omniORB writes nested TypeCode encapsulations in its own byte
  order whatever the stream's, which CDR allows (each encapsulation carries its
  byte order); there both sides decode each other's bytes instead.
"""

from decimal import Decimal

import pytest

import pycdr
from pycdr.codec import tc
from pycdr.codec.tcmarshal import encode_typecode_encapsulation, decode_typecode_encapsulation
from pycdr.codec.values import class_for
from pycdr.codec.ior import IOR, TaggedProfile

import oracle

pytestmark = pytest.mark.oracle

if oracle.omni() is None:  # pragma: no cover - the test extra installs it on 3.10/3.11
    pytest.fail("omniORBpy (salome-omniorb) is required for the oracle tests; "
                "install the test extra on CPython 3.9-3.11", pytrace=False)


def V(t, *args):
    return class_for(t)(*args)


BinStruct = tc.struct("IDL:BinStruct:1.0", "BinStruct", [
    ("s", tc.short), ("c", tc.char), ("l", tc.long), ("o", tc.octet),
    ("d", tc.double), ("pad", tc.array(tc.octet, 8))])
WorstPad = tc.struct("IDL:WorstPad:1.0", "WorstPad", [("c1", tc.char), ("ll", tc.longlong)])
BestPad = tc.struct("IDL:BestPad:1.0", "BestPad", [("ll", tc.longlong), ("c1", tc.char)])
Color = tc.enum("IDL:Color:1.0", "Color", ["red", "green", "blue"])
Inner = tc.struct("IDL:M/Inner:1.0", "Inner", [
    ("name", tc.string), ("vals", tc.sequence(tc.short)), ("flag", tc.boolean)])
Outer = tc.struct("IDL:M/Outer:1.0", "Outer", [
    ("o", tc.octet), ("inner", Inner), ("d", tc.double), ("inners", tc.sequence(Inner, 3)),
    ("color", Color), ("fx", tc.fixed(7, 3))])
Node = tc.struct("IDL:Node:1.0", "Node", [
    ("v", tc.long), ("kids", tc.sequence(tc.recursive("IDL:Node:1.0")))])
Err = tc.exception("IDL:M/Err:1.0", "Err", [("code", tc.long), ("why", tc.string)])
LongSeq = tc.alias("IDL:M/LongSeq:1.0", "LongSeq", tc.sequence(tc.long))


def union_of(disc, labels, rid):
    """A union with two explicit branches (labels[0], labels[1]) and a default."""
    return tc.union(rid, "U", disc, [
        (labels[0], "a", tc.long), (labels[1], "b", tc.string), (tc.DEFAULT, "c", tc.double)])


UNIONS = [
    (tc.short, (-3, 7), -3, 99),
    (tc.long, (-70000, 5), 5, 123456),
    (tc.ushort, (1, 65535), 65535, 2),
    (tc.ulong, (0, 4000000000), 4000000000, 7),
    (tc.longlong, (-2**40, 2**40), -2**40, 1),
    # omniORBpy cannot convert unsigned long long values >= 2**63 inside
    # constructed types (it raises OverflowError), so the labels stay below.
    (tc.ulonglong, (2**62, 1), 2**62, 3),
    (tc.char, ("a", "\xe9"), "\xe9", "z"),
    (Color, ("red", "blue"), 0, 1),
]
NoDefault = tc.union("IDL:M/NoDef:1.0", "NoDef", tc.boolean,
                     [(True, "yes", tc.string)])           # FALSE selects no member
BoolUnion = tc.union("IDL:M/BU:1.0", "BU", tc.boolean,
                     [(True, "t", tc.long), (False, "f", tc.sequence(tc.octet))])
ImplicitDefault = tc.union("IDL:M/ID:1.0", "ID", Color,
                           [("red", "r", tc.long), ("green", "g", tc.short)])


def catalog():
    items = [
        ("short", tc.short, -32768), ("ushort", tc.ushort, 65535),
        ("long", tc.long, -2**31), ("ulong", tc.ulong, 2**32 - 1),
        ("longlong", tc.longlong, -2**63), ("ulonglong", tc.ulonglong, 2**64 - 1),
        ("float", tc.float, 1.5), ("double", tc.double, -2.25e300),
        ("boolean", tc.boolean, True), ("char", tc.char, "\xe9"), ("octet", tc.octet, 255),
        ("string", tc.string, "hello, world"), ("empty string", tc.string, ""),
        ("bounded string", tc.bounded_string(5), "abcde"),
        ("fixed", tc.fixed(5, 2), Decimal("-123.45")),
        ("fixed even", tc.fixed(4, 0), Decimal("1234")),
        ("fixed zero", tc.fixed(3, 1), Decimal("0.0")),
        ("enum", Color, class_for(Color).blue),
        ("BinStruct", BinStruct, V(BinStruct, 1, "x", 3, 4, 5.5, bytes(range(8)))),
        ("worst padding", WorstPad, V(WorstPad, "c", -1)),
        ("best padding", BestPad, V(BestPad, -1, "c")),
        ("seq BinStruct", tc.sequence(BinStruct),
         [V(BinStruct, i, chr(65 + i), -i, i, i / 3, bytes([i] * 8)) for i in range(5)]),
        ("seq worst padding", tc.sequence(WorstPad), [V(WorstPad, "a", i) for i in range(4)]),
        ("nested", Outer, V(Outer, 7, V(Inner, "in", [1, -2, 3], True), 2.5,
                            [V(Inner, "", [], False), V(Inner, "x" * 40, [9] * 9, True)],
                            class_for(Color).green, Decimal("1234.567"))),
        ("recursive", Node, V(Node, 1, [V(Node, 2, []), V(Node, 3, [V(Node, 4, [])])])),
        ("alias", LongSeq, [1, 2, 3]),
        ("seq long bounded", tc.sequence(tc.long, 10), list(range(10))),
        ("seq octet", tc.sequence(tc.octet), bytes(range(256))),
        ("seq char", tc.sequence(tc.char), "chars\xff"),
        ("seq boolean", tc.sequence(tc.boolean), [True, False, True]),
        ("seq double", tc.sequence(tc.double), [0.5, -1e-300, 3.0]),
        ("seq short", tc.sequence(tc.short), [1, -1, 32767]),
        ("seq ulonglong", tc.sequence(tc.ulonglong), [0, 2**63 - 1]),  # (see UNIONS)
        ("seq float", tc.sequence(tc.float), [0.25, -8.0]),
        ("seq string", tc.sequence(tc.string), ["a", "", "bcd" * 30]),
        ("seq seq short", tc.sequence(tc.sequence(tc.short)), [[1], [], [2, 3, 4]]),
        ("array 2x3", tc.array(tc.long, 2, 3), [[1, 2, 3], [4, 5, 6]]),
        ("array char", tc.array(tc.char, 4), "abcd"),
        ("array octet", tc.array(tc.octet, 3), b"\x01\x02\x03"),
        ("array struct", tc.array(WorstPad, 2), [V(WorstPad, "a", 1), V(WorstPad, "b", 2)]),
        ("array string", tc.array(tc.string, 2, 2), [["a", "b"], ["c", "d"]]),
        ("no-default union FALSE", NoDefault, class_for(NoDefault)(False, None)),
        ("no-default union TRUE", NoDefault, class_for(NoDefault)(True, "yes!")),
        ("boolean union", BoolUnion, class_for(BoolUnion)(False, b"\x00\xff")),
        ("implicit default union", ImplicitDefault, class_for(ImplicitDefault)(2, None)),
        ("any long", tc.any, pycdr.Any(tc.long, 5)),
        ("any struct", tc.any, pycdr.Any(BinStruct, V(BinStruct, 1, "x", 3, 4, 5.5, bytes(8)))),
        ("any recursive", tc.any, pycdr.Any(Node, V(Node, 1, [V(Node, 2, [])]))),
        ("any any", tc.any, pycdr.Any(tc.any, pycdr.Any(tc.string, "inner"))),
        ("any TypeCode", tc.any, pycdr.Any(tc.TypeCode, Outer)),
        ("any null", tc.any, pycdr.Any(tc.null, None)),
        ("TypeCode value", tc.TypeCode, Node),
        ("seq any", tc.sequence(tc.any), [pycdr.Any(tc.short, 1), pycdr.Any(Color, 2)]),
        ("nil objref", tc.Object, None),
    ]
    for disc, labels, d1, d_default in UNIONS:
        rid = f"IDL:M/U_{disc.kind().name}:1.0"
        u = union_of(disc, labels, rid)
        U = class_for(u)
        first = labels[0]
        if disc.kind() == tc.TCKind.tk_enum:
            first = 0
        items.append((f"union {disc.kind().name} a", u, U(first, 17)))
        items.append((f"union {disc.kind().name} default", u, U(d_default, 2.5)))
    return items


CATALOG = catalog()


def _holds_typecode(t) -> bool:
    from pycdr.codec.typecode import resolve
    seen, stack = set(), [t]
    while stack:
        x = resolve(stack.pop())
        if id(x) in seen:
            continue
        seen.add(id(x))
        if x.kind() in (tc.TCKind.tk_any, tc.TCKind.tk_TypeCode):
            return True
        stack.extend(x._member_types)
        stack.extend(s for s in (x._content, x._disc) if s is not None)
    return False


@pytest.mark.parametrize("name,t,value", CATALOG, ids=[c[0] for c in CATALOG])
def test_value_bytes_equal_omniorb(name, t, value):
    omniORB = oracle.omni()
    otc = oracle.omni_typecode(t)
    for little in (False, True):
        ours = pycdr.encode_encapsulation(t, value, little=little)
        omni_value = omniORB.cdrUnmarshal(otc, ours)        # 1. omniORB accepts our bytes
        # The encapsulation omniORB makes (in its host byte order) ...
        theirs = omniORB.cdrMarshal(otc, omni_value)
        ours_native = pycdr.encode_encapsulation(t, value, little=theirs[0] == 1)
        pads = oracle.padding_positions(ours_native, t)
        assert oracle.masked(theirs, pads).hex() == oracle.masked(ours_native, pads).hex()  # 2.
        assert pycdr.decode_encapsulation(t, theirs) == value                               # 3.
        # ... and the bare stream in either byte order (no byte-order octet, aligned from 0).
        stream = omniORB.cdrMarshal(otc, omni_value, 1 if little else 0)
        ours_stream = pycdr.encode(t, value, little=little)
        if little == (theirs[0] == 1) or not _holds_typecode(t):
            pads = oracle.padding_positions(ours_stream, t, stream_little=little)
            assert oracle.masked(stream, pads).hex() == oracle.masked(ours_stream, pads).hex()
        assert pycdr.decode(t, stream, little=little) == value
        omniORB.cdrUnmarshal(otc, ours_stream, 1 if little else 0)  # raises if rejected


def test_objref_with_profile_equals_omniorb():
    """A real omniORB object reference (from its own ORB) marshals identically."""
    omniORB = oracle.omni()
    from omniORB import CORBA
    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
    ref = orb.string_to_object("corbaloc::127.0.0.1:2809/NameService")
    omni_bytes = omniORB.cdrMarshal(CORBA.TC_Object, ref)
    ior = pycdr.decode_encapsulation(tc.Object, omni_bytes)
    assert isinstance(ior, IOR) and ior.type_id == "" or isinstance(ior, IOR)
    assert ior.profiles and ior.profiles[0].tag == 0
    ours = pycdr.encode_encapsulation(tc.Object, ior, little=omni_bytes[0] == 1)
    pads = oracle.padding_positions(ours, tc.Object)
    assert oracle.masked(omni_bytes, pads) == oracle.masked(ours, pads)
    back = omniORB.cdrUnmarshal(CORBA.TC_Object, ours)
    assert orb.object_to_string(back) == orb.object_to_string(ref)


TYPECODES = [c for c in CATALOG if c[0] in (
    "BinStruct", "nested", "recursive", "exception", "alias", "array 2x3", "enum",
    "fixed", "bounded string")] + [
    ("union " + d.kind().name, union_of(d, labels, f"IDL:M/U_{d.kind().name}:1.0"), None)
    for d, labels, _a, _b in UNIONS] + [
    ("no default union", NoDefault, None), ("implicit default union", ImplicitDefault, None),
    ("objref", tc.objref("IDL:M/Thing:1.0", "Thing"), None),
    ("seq recursive", tc.sequence(Node), None),
]


@pytest.mark.parametrize("name,t,_v", TYPECODES, ids=[c[0] for c in TYPECODES])
def test_typecode_bytes_equal_omniorb(name, t, _v):
    omniORB = oracle.omni()
    from omniORB import CORBA
    for little in (False, True):
        ours = encode_typecode_encapsulation(t, little=little)
        otc = omniORB.cdrUnmarshal(CORBA.TC_TypeCode, ours)
        theirs = omniORB.cdrMarshal(CORBA.TC_TypeCode, otc)
        ours_native = encode_typecode_encapsulation(t, little=theirs[0] == 1)
        pads = oracle.padding_positions(ours_native, typecode=True)
        assert oracle.masked(theirs, pads).hex() == oracle.masked(ours_native, pads).hex()
        assert decode_typecode_encapsulation(theirs).equal(t)
