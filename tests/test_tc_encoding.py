"""The CDR encoding of TypeCodes (CORBA 3.x Part 2, 9.3.5 "TypeCode", table
9-2 "TypeCode enum values, parameter list types, and parameters"), by hand.

A TypeCode is its TCKind (ulong); "empty" kinds stop there, "simple" ones
(string, wstring, fixed) have their parameters inline, "complex" ones an
encapsulation (ulong length, byte-order octet, parameters aligned from that
octet).  An indirection is 0xffffffff then a long offset measured from the
offset field itself to the kind of an earlier TypeCode (9.3.5.1; GIOP-NOTES 3.9).
"""

import pytest

import pycdr
from pycdr.codec import tc
from pycdr.codec.cdr import CDRReader, CDRWriter
from pycdr.codec.tcmarshal import (decode_typecode_encapsulation,
                                   encode_typecode_encapsulation, read_typecode,
                                   write_typecode)
from pycdr.codec.typecode import TCKind
from test_cdr_types import Color, h


def check_tc(typecode, be_hex, le_hex):
    """Encode to exactly the hand-written bytes in both byte orders; decode back to an equal TypeCode."""
    be, le = h(be_hex), h(le_hex)
    assert pycdr.encode(tc.TypeCode, typecode).hex() == be.hex()
    assert pycdr.encode(tc.TypeCode, typecode, little=True).hex() == le.hex()
    for data, little in ((be, False), (le, True)):
        decoded = pycdr.decode(tc.TypeCode, data, little=little)
        assert decoded.equal(typecode)
        assert typecode.equal(decoded)


EMPTY_KINDS = [
    ("null", tc.null, 0), ("void", tc.void, 1), ("short", tc.short, 2), ("long", tc.long, 3),
    ("ushort", tc.ushort, 4), ("ulong", tc.ulong, 5), ("float", tc.float, 6),
    ("double", tc.double, 7), ("boolean", tc.boolean, 8), ("char", tc.char, 9),
    ("octet", tc.octet, 10), ("any", tc.any, 11), ("TypeCode", tc.TypeCode, 12),
    ("Principal", tc.Principal, 13), ("longlong", tc.longlong, 23),
    ("ulonglong", tc.ulonglong, 24), ("longdouble", tc.longdouble, 25), ("wchar", tc.wchar, 26),
]


@pytest.mark.parametrize("typecode,kind", [k[1:] for k in EMPTY_KINDS], ids=[k[0] for k in EMPTY_KINDS])
def test_empty_parameter_kinds(typecode, kind):
    check_tc(typecode, f"{kind:08x}", f"{kind:02x}000000")
    assert pycdr.decode(tc.TypeCode, h(f"{kind:08x}")) is typecode or \
        pycdr.decode(tc.TypeCode, h(f"{kind:08x}")).kind() == kind


def test_simple_parameter_kinds():
    check_tc(tc.string, "00000012|00000000", "12000000|00000000")
    check_tc(tc.bounded_string(10), "00000012|0000000a", "12000000|0a000000")
    check_tc(tc.wstring, "0000001b|00000000", "1b000000|00000000")
    check_tc(tc.bounded_wstring(3), "0000001b|00000003", "1b000000|03000000")
    # fixed: ushort digits, short scale
    check_tc(tc.fixed(5, 2), "0000001c|0005|0002", "1c000000|0500|0200")


Pt = tc.struct("IDL:Pt:1.0", "Pt", [("c", tc.char), ("x", tc.long)])
PT_BE = ("0000000f|00000038|00|.000000|0000000b|49444c3a50743a312e3000|.00"
         "|00000003|507400|.00|00000002|00000002|6300|.0000|00000009|00000002|7800|.0000|00000003")
PT_LE = ("0f000000|38000000|01|.000000|0b000000|49444c3a50743a312e3000|.00"
         "|03000000|507400|.00|02000000|02000000|6300|.0000|09000000|02000000|7800|.0000|03000000")


def test_struct():
    check_tc(Pt, PT_BE, PT_LE)


def test_exception():
    E = tc.exception("IDL:Pt:1.0", "Pt", [("c", tc.char), ("x", tc.long)])
    check_tc(E, "00000016" + PT_BE[8:], "16000000" + PT_LE[8:])


def test_enum():
    check_tc(Color,
             "00000011|00000045|00|.000000|0000000e|49444c3a436f6c6f723a312e3000|.0000"
             "|00000006|436f6c6f7200|.0000|00000003|00000004|72656400|00000006|677265656e00|.0000"
             "|00000005|626c756500",
             "11000000|45000000|01|.000000|0e000000|49444c3a436f6c6f723a312e3000|.0000"
             "|06000000|436f6c6f7200|.0000|03000000|04000000|72656400|06000000|677265656e00|.0000"
             "|05000000|626c756500")


def test_union_default_label():
    # 9.3.5.1 table 9-2: every label is a value of the discriminator type; the
    # default member's label value is ignored (default_used says which member
    # is the default). pycdr writes what omniidl gives it: for a signed
    # discriminator the lowest value no label uses (here -2**31).
    Shape = tc.union("IDL:Shape:1.0", "Shape", tc.long, [
        (1, "radius", tc.double), (2, "side", tc.short), (tc.DEFAULT, "name", tc.string)])
    check_tc(Shape,
             "00000010|00000070|00|.000000|0000000e|49444c3a53686170653a312e3000|.0000"
             "|00000006|536861706500|.0000|00000003|00000002|00000003"
             "|00000001|00000007|72616469757300|.00|00000007"
             "|00000002|00000005|7369646500|.000000|00000002"
             "|80000000|00000005|6e616d6500|.000000|00000012|00000000",
             "10000000|70000000|01|.000000|0e000000|49444c3a53686170653a312e3000|.0000"
             "|06000000|536861706500|.0000|03000000|02000000|03000000"
             "|01000000|07000000|72616469757300|.00|07000000"
             "|02000000|05000000|7369646500|.000000|02000000"
             "|00000080|05000000|6e616d6500|.000000|12000000|00000000")
    # a receiver ignores the default member's label value
    decoded = pycdr.decode(tc.TypeCode, h(
        "00000010|00000070|00|.000000|0000000e|49444c3a53686170653a312e3000|.0000"
        "|00000006|536861706500|.0000|00000003|00000002|00000003"
        "|00000001|00000007|72616469757300|.00|00000007"
        "|00000002|00000005|7369646500|.000000|00000002"
        "|00000063|00000005|6e616d6500|.000000|00000012|00000000"))
    assert decoded.equal(Shape)
    assert decoded.default_index() == 2 and decoded.member_label(2) is tc.DEFAULT


def test_union_labels_take_the_discriminator_type():
    # switch (short): labels are shorts (2 octets, then padding before the name)
    U = tc.union("", "", tc.short, [(3, "a", tc.long)])
    check_tc(U,
             "00000010|00000030|00|.000000|00000001|00|.000000|00000001|00|.000000"
             "|00000002|ffffffff|00000001|0003|.0000|00000002|6100|.0000|00000003",
             "10000000|30000000|01|.000000|01000000|00|.000000|01000000|00|.000000"
             "|02000000|ffffffff|01000000|0300|.0000|02000000|6100|.0000|03000000")


def test_sequence_array_alias():
    check_tc(tc.sequence(tc.long, 5), "00000013|0000000c|00|.000000|00000003|00000005",
             "13000000|0c000000|01|.000000|03000000|05000000")
    # long[2][3]: an array of 2 arrays of 3; the inner TypeCode is nested in place
    check_tc(tc.array(tc.long, 2, 3),
             "00000014|0000001c|00|.000000|00000014|0000000c|00|.000000|00000003|00000003|00000002",
             "14000000|1c000000|01|.000000|14000000|0c000000|01|.000000|03000000|03000000|02000000")
    Count = tc.alias("IDL:Count:1.0", "Count", tc.ulong)
    check_tc(Count,
             "00000015|00000028|00|.000000|0000000e|49444c3a436f756e743a312e3000|.0000"
             "|00000006|436f756e7400|.0000|00000005",
             "15000000|28000000|01|.000000|0e000000|49444c3a436f756e743a312e3000|.0000"
             "|06000000|436f756e7400|.0000|05000000")


def test_objref_and_friends():
    check_tc(tc.objref("IDL:Foo:1.0", "Foo"),
             "0000000e|0000001c|00|.000000|0000000c|49444c3a466f6f3a312e3000|00000004|466f6f00",
             "0e000000|1c000000|01|.000000|0c000000|49444c3a466f6f3a312e3000|04000000|466f6f00")
    check_tc(tc.abstract_interface("IDL:Foo:1.0", "Foo"),
             "00000020|0000001c|00|.000000|0000000c|49444c3a466f6f3a312e3000|00000004|466f6f00",
             "20000000|1c000000|01|.000000|0c000000|49444c3a466f6f3a312e3000|04000000|466f6f00")


def test_value_and_value_box():
    V = tc.value("IDL:V:1.0", "V", tc.VM_NONE, None, [("a", tc.long)])
    # id, name, short modifier (2-aligned: no padding after the name here),
    # concrete base (tk_null for none), members with visibility
    check_tc(V,
             "0000001d|00000032|00|.000000|0000000a|49444c3a563a312e3000|.0000|00000002|5600"
             "|0000|00000000|00000001|00000002|6100|.0000|00000003|0001",
             "1d000000|32000000|01|.000000|0a000000|49444c3a563a312e3000|.0000|02000000|5600"
             "|0000|00000000|01000000|02000000|6100|.0000|03000000|0100")
    B = tc.value_box("IDL:B:1.0", "B", tc.string)
    check_tc(B,
             "0000001e|00000024|00|.000000|0000000a|49444c3a423a312e3000|.0000|00000002|4200|.0000"
             "|00000012|00000000",
             "1e000000|24000000|01|.000000|0a000000|49444c3a423a312e3000|.0000|02000000|4200|.0000"
             "|12000000|00000000")


# struct Node { long value; sequence<Node> children; }: the inner Node is an
# indirection from offset 96 (its offset field) back to offset 0: -96 = 0xffffffa0.
Node = tc.struct("IDL:Node:1.0", "Node", [
    ("value", tc.long), ("children", tc.sequence(tc.recursive("IDL:Node:1.0")))])
NODE_BE = ("0000000f|00000060|00|.000000|0000000d|49444c3a4e6f64653a312e3000|.000000"
           "|00000005|4e6f646500|.000000|00000002"
           "|00000006|76616c756500|.0000|00000003"
           "|00000009|6368696c6472656e00|.000000"
           "|00000013|00000010|00|.000000|ffffffff|ffffffa0|00000000")
NODE_LE = ("0f000000|60000000|01|.000000|0d000000|49444c3a4e6f64653a312e3000|.000000"
           "|05000000|4e6f646500|.000000|02000000"
           "|06000000|76616c756500|.0000|03000000"
           "|09000000|6368696c6472656e00|.000000"
           "|13000000|10000000|01|.000000|ffffffff|a0ffffff|00000000")


def test_recursive_struct_uses_indirection_with_the_right_offset():
    assert len(h(NODE_BE)) == 104
    check_tc(Node, NODE_BE, NODE_LE)


def test_decoded_recursive_typecode_points_back_at_itself():
    decoded = pycdr.decode(tc.TypeCode, h(NODE_BE))
    inner = decoded.member_type(1).content_type()
    assert inner.kind() == TCKind.tk_struct
    assert inner.id() == "IDL:Node:1.0"
    assert inner.member_type(1).content_type().member_name(0) == "value"
    # and it encodes back to the same bytes, indirection included
    assert pycdr.encode(tc.TypeCode, decoded) == h(NODE_BE)
    # values of the decoded type decode
    value = pycdr.decode(decoded, h("00000001|00000001|00000002|00000000"))
    assert value.children[0].value == 2


@pytest.mark.parametrize("k", range(8))
def test_typecode_in_a_stream_at_every_offset(k):
    # the kind is aligned on 4 in the stream; inside the encapsulation alignment
    # restarts at the byte-order octet, so the rest is identical at every offset
    pad = (4 - k % 4) % 4
    data = pycdr.encode(tc.TypeCode, Node, offset=k)
    assert data == bytes(pad) + h(NODE_BE)
    assert pycdr.decode(tc.TypeCode, data, offset=k).equal(Node)


def test_recursion_through_a_union():
    # union Tree switch (boolean) { case TRUE: sequence<Tree> kids; };
    Tree = tc.union("IDL:T:1.0", "T", tc.boolean, [(True, "k", tc.sequence(tc.recursive("IDL:T:1.0")))])
    data = pycdr.encode(tc.TypeCode, Tree)
    # kind(4) length(4) byte order+pad(4) id(4+10+2 pad) name(4+2+2 pad) disc(4) default(4)
    # count(4) label(1+3 pad) name "k"(4+2+2 pad) = 60 -> sequence kind at 60, its
    # encapsulation's byte order at 68, the indirection kind at 72, offset field at 76.
    assert data[60:64] == h("00000013")
    assert data[72:80] == h("ffffffff|ffffffb4")     # 0 - 76 = -76
    decoded = pycdr.decode(tc.TypeCode, data)
    assert decoded.equal(Tree)


def test_repeated_typecode_may_be_an_indirection():
    # struct P2 { Pt a; Pt b; } with b written as an indirection to a's TypeCode
    # at offset 48: from the offset field at 124, 48 - 124 = -76 = 0xffffffb4.
    P2 = tc.struct("IDL:P2:1.0", "P2", [("a", Pt), ("b", Pt)])
    w = CDRWriter()
    write_typecode(w, P2, repeated_indirection=True)
    expected = h("0000000f|00000078|00|.000000|0000000b|49444c3a50323a312e3000|.00"
                 "|00000003|503200|.00|00000002|00000002|6100|.0000|" + PT_BE +
                 "|00000002|6200|.0000|ffffffff|ffffffb4")
    assert w.getvalue().hex() == expected.hex()
    decoded = read_typecode(CDRReader(expected))
    assert decoded.equal(P2)
    # without the option the TypeCode is written out again
    plain = pycdr.encode(tc.TypeCode, P2)
    assert plain.count(h(PT_BE)) == 2


def test_nested_encapsulation_in_the_other_byte_order():
    # struct Q { sequence<long> s; }: the outer parameters big-endian, the
    # sequence's parameters in a little-endian encapsulation (9.3.3).
    data = h("0000000f|0000003c|00|.000000|0000000a|49444c3a513a312e3000|.0000"
             "|00000002|5100|.0000|00000001|00000002|7300|.0000"
             "|00000013|0000000c|01|.000000|03000000|00000000")
    decoded = pycdr.decode(tc.TypeCode, data)
    expected = tc.struct("IDL:Q:1.0", "Q", [("s", tc.sequence(tc.long))])
    assert decoded.equal(expected)


def test_typecode_encapsulation_helpers():
    assert encode_typecode_encapsulation(tc.long) == h("00|.000000|00000003")
    assert encode_typecode_encapsulation(tc.long, little=True) == h("01|.000000|03000000")
    assert decode_typecode_encapsulation(h("01|.000000|03000000")).kind() == TCKind.tk_long
    assert decode_typecode_encapsulation(encode_typecode_encapsulation(Node, True)).equal(Node)


def test_any_holding_a_struct_value():
    # any: TypeCode, then the value aligned in the stream (not in the encapsulation)
    data = pycdr.encode(tc.any, pycdr.Any(Pt, {"c": "z", "x": 7}))
    assert data == h(PT_BE + "|7a|.000000|00000007")
    value = pycdr.decode(tc.any, data)
    assert value.tc.equal(Pt) and value.value.c == "z" and value.value.x == 7
