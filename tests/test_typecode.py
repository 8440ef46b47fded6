"""The TypeCode interface (CORBA 3.x Part 1, 8.11 "TypeCodes"):
accessors that raise BadKind / Bounds, equal() and equivalent(),
get_compact_typecode(), recursive placeholders, and construction checks."""

import pytest

from pycdr.codec import tc
from pycdr.errors import BadTypeCodeError
from pycdr.codec.typecode import BadKind, Bounds, TCKind

Pt = tc.struct("IDL:Pt:1.0", "Pt", [("c", tc.char), ("x", tc.long)])
Color = tc.enum("IDL:Color:1.0", "Color", ["red", "green", "blue"])
Shape = tc.union("IDL:Shape:1.0", "Shape", tc.long, [
    (1, "radius", tc.double), (2, "side", tc.short), (tc.DEFAULT, "name", tc.string)])
Node = tc.struct("IDL:Node:1.0", "Node", [
    ("value", tc.long), ("children", tc.sequence(tc.recursive("IDL:Node:1.0")))])


def test_accessors_of_a_struct():
    assert Pt.kind() == TCKind.tk_struct
    assert Pt.id() == "IDL:Pt:1.0" and Pt.name() == "Pt"
    assert Pt.member_count() == 2
    assert [Pt.member_name(i) for i in range(2)] == ["c", "x"]
    assert Pt.member_type(1) is tc.long


def test_accessors_of_union_enum_sequence_array_fixed_alias():
    assert Shape.discriminator_type() is tc.long
    assert Shape.default_index() == 2
    assert [Shape.member_label(i) for i in range(3)] == [1, 2, tc.DEFAULT]
    no_default = tc.union("IDL:U:1.0", "U", tc.short, [(1, "a", tc.long)])
    assert no_default.default_index() == -1
    assert Color.member_count() == 3 and Color.member_name(2) == "blue"
    seq = tc.sequence(tc.long, 7)
    assert seq.kind() == TCKind.tk_sequence and seq.length() == 7 and seq.content_type() is tc.long
    arr = tc.array(tc.short, 2, 3)
    assert arr.length() == 2 and arr.content_type().length() == 3
    assert arr.content_type().content_type() is tc.short
    assert tc.bounded_string(9).length() == 9 and tc.string.length() == 0
    f = tc.fixed(5, 2)
    assert (f.fixed_digits(), f.fixed_scale()) == (5, 2)
    a = tc.alias("IDL:A:1.0", "A", tc.long)
    assert a.content_type() is tc.long and a.id() == "IDL:A:1.0"


def test_accessors_of_value_types():
    Base = tc.value("IDL:Base:1.0", "Base", tc.VM_NONE, None, [("a", tc.long)])
    D = tc.value("IDL:D:1.0", "D", tc.VM_TRUNCATABLE, Base,
                 [("b", tc.long, tc.PRIVATE_MEMBER)])
    assert D.type_modifier() == tc.VM_TRUNCATABLE
    assert D.concrete_base_type() is Base
    assert Base.concrete_base_type() is None
    assert D.member_visibility(0) == tc.PRIVATE_MEMBER
    assert Base.member_visibility(0) == tc.PUBLIC_MEMBER
    box = tc.value_box("IDL:B:1.0", "B", tc.string)
    assert box.content_type() is tc.string


@pytest.mark.parametrize("call", [
    lambda: tc.long.id(), lambda: tc.long.name(), lambda: tc.long.member_count(),
    lambda: tc.long.member_name(0), lambda: tc.long.length(), lambda: tc.long.content_type(),
    lambda: Pt.length(), lambda: Pt.content_type(), lambda: Pt.discriminator_type(),
    lambda: Pt.default_index(), lambda: Pt.member_label(0), lambda: Color.member_type(0),
    lambda: tc.sequence(tc.long).member_name(0), lambda: tc.sequence(tc.long).id(),
    lambda: tc.string.fixed_digits(), lambda: Pt.fixed_scale(), lambda: Pt.type_modifier(),
    lambda: Pt.member_visibility(0), lambda: Shape.concrete_base_type(),
])
def test_bad_kind(call):
    with pytest.raises(BadKind):
        call()


@pytest.mark.parametrize("call", [
    lambda: Pt.member_name(2), lambda: Pt.member_type(-1), lambda: Pt.member_type(2),
    lambda: Shape.member_label(3), lambda: Color.member_name(3),
])
def test_bounds(call):
    with pytest.raises(Bounds):
        call()


def test_equal_and_equivalent():
    Long2 = tc.alias("IDL:L2:1.0", "L2", tc.long)
    assert not Long2.equal(tc.long)
    assert Long2.equivalent(tc.long) and tc.long.equivalent(Long2)
    # same repository id, different names: not equal, equivalent
    renamed = tc.struct("IDL:Pt:1.0", "Point", [("cc", tc.char), ("xx", tc.long)])
    assert not renamed.equal(Pt)
    assert renamed.equivalent(Pt)
    # the same structure built twice is equal (and ==, and hashes alike)
    again = tc.struct("IDL:Pt:1.0", "Pt", [("c", tc.char), ("x", tc.long)])
    assert again.equal(Pt) and again == Pt and hash(again) == hash(Pt)
    # a different repository id decides
    other = tc.struct("IDL:Other:1.0", "Pt", [("c", tc.char), ("x", tc.long)])
    assert not other.equal(Pt) and not other.equivalent(Pt)
    # member types through aliases
    aliased = tc.struct("", "", [("c", tc.char), ("x", Long2)])
    plain = tc.struct("", "", [("c", tc.char), ("x", tc.long)])
    assert not aliased.equal(plain) and aliased.equivalent(plain)
    assert not tc.sequence(tc.long).equal(tc.sequence(tc.long, 3))
    assert not tc.sequence(tc.long).equivalent(tc.sequence(tc.short))
    assert not tc.fixed(5, 2).equal(tc.fixed(5, 1))
    assert not tc.long.equal(tc.ulong)


def test_equal_recursive_typecodes():
    again = tc.struct("IDL:Node:1.0", "Node", [
        ("value", tc.long), ("children", tc.sequence(tc.recursive("IDL:Node:1.0")))])
    assert again.equal(Node) and Node.equivalent(again)


def test_get_compact_typecode():
    compact = Pt.get_compact_typecode()
    assert compact.id() == "IDL:Pt:1.0"
    assert compact.name() == ""
    assert [compact.member_name(i) for i in range(2)] == ["", ""]
    assert compact.member_type(1).kind() == TCKind.tk_long
    assert compact.equivalent(Pt) and not compact.equal(Pt)
    union = Shape.get_compact_typecode()
    assert union.name() == "" and union.member_name(0) == ""
    assert union.member_label(0) == 1 and union.default_index() == 2
    rec = Node.get_compact_typecode()
    assert rec.name() == "" and rec.member_type(1).content_type().kind() == TCKind.tk_struct
    assert rec.equivalent(Node)
    assert Pt.name() == "Pt"            # the original is untouched


def test_recursive_placeholder_resolves_to_the_enclosing_type():
    inner = Node.member_type(1).content_type()
    assert inner.kind() == TCKind.tk_struct
    assert inner.id() == "IDL:Node:1.0"
    assert inner.member_name(1) == "children"
    assert inner.equal(Node)


def test_unresolved_recursive_placeholder():
    ph = tc.recursive("IDL:Nowhere:1.0")
    with pytest.raises(BadTypeCodeError):
        ph.kind()


def test_typecodes_are_immutable():
    with pytest.raises(AttributeError):
        Pt._name = "Other"
    assert Pt.name() == "Pt"


@pytest.mark.parametrize("build", [
    lambda: tc.struct("IDL:D:1.0", "D", [("a", tc.long), ("a", tc.short)]),
    lambda: tc.struct("IDL:D:1.0", "D", [("a", tc.long), ("A", tc.short)]),
    lambda: tc.enum("IDL:E:1.0", "E", []),
    lambda: tc.enum("IDL:E:1.0", "E", ["a", "a"]),
    lambda: tc.union("IDL:U:1.0", "U", tc.double, [(1, "a", tc.long)]),
    lambda: tc.union("IDL:U:1.0", "U", tc.string, [("x", "a", tc.long)]),
    lambda: tc.union("IDL:U:1.0", "U", tc.short, [(1, "a", tc.long), (1, "b", tc.long)]),
    lambda: tc.union("IDL:U:1.0", "U", tc.short,
                     [(tc.DEFAULT, "a", tc.long), (tc.DEFAULT, "b", tc.long)]),
    lambda: tc.union("IDL:U:1.0", "U", tc.short, [(70000, "a", tc.long)]),
    lambda: tc.union("IDL:U:1.0", "U", Color, [("purple", "a", tc.long)]),
    lambda: tc.fixed(32, 0), lambda: tc.fixed(3, 4),
    lambda: tc.array(tc.long, 0), lambda: tc.sequence(tc.long, -1),
    lambda: tc.sequence("long"),
    lambda: tc.value("IDL:V:1.0", "V", 7),
    lambda: tc.value("IDL:V:1.0", "V", tc.VM_NONE, Pt),
])
def test_bad_construction(build):
    with pytest.raises(BadTypeCodeError):
        build()


def test_union_with_every_discriminator_kind_builds():
    for disc, label in ((tc.short, 1), (tc.long, 1), (tc.ushort, 1), (tc.ulong, 1),
                        (tc.longlong, 1), (tc.ulonglong, 1), (tc.boolean, True),
                        (tc.char, "a"), (tc.wchar, "a"), (Color, "green"),
                        (tc.alias("IDL:S:1.0", "S", tc.short), 1)):
        u = tc.union("IDL:U:1.0", "U", disc, [(label, "a", tc.long)])
        assert u.discriminator_type() is disc
    assert tc.union("IDL:U:1.0", "U", Color, [("green", "a", tc.long)]).member_label(0) == 1


def test_a_union_member_with_several_labels_reads_back():
    """``case 2: case 3: string text;`` repeats the member per label: read off the
    wire each repeat is a TypeCode of its own, equal to the first (not a clash of
    two members named alike)."""
    from pycdr.codec.cdr import CDRReader, CDRWriter
    from pycdr.codec.tcmarshal import read_typecode, write_typecode
    choice = tc.union("IDL:Choice:1.0", "Choice", tc.long, [
        (1, "number", tc.long), (2, "text", tc.string), (3, "text", tc.string)])
    w = CDRWriter()
    write_typecode(w, choice)
    assert read_typecode(CDRReader(w.getvalue())).equal(choice)
    with pytest.raises(BadTypeCodeError):
        tc.union("IDL:Clash:1.0", "Clash", tc.long, [(1, "text", tc.long), (2, "text", tc.string)])
