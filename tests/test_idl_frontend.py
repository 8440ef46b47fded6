"""pycdr.idl without an oracle: CORBA 3 constructs omniidl lacks, the
preprocessor step, diagnostics, constants, the loaded Python classes and
interface descriptions."""

from __future__ import annotations

import os
from decimal import Decimal

import pytest

import pycdr
from pycdr import idl
from pycdr.codec import tc, values
from pycdr.errors import PycdrError
from pycdr.codec.typecode import TCKind

HERE = os.path.dirname(os.path.abspath(__file__))
UNIT = os.path.join(HERE, "idl", "unit")
ORACLE = os.path.join(HERE, "idl", "oracle")


def test_typeprefix_and_typeid_give_the_spec_ids():
    m = idl.load(os.path.join(UNIT, "corba3.idl"), register=False)
    # typeprefix M "p" acts as #pragma prefix "p" at the start of M's body.
    assert m.repo_ids["Shop"] == "IDL:Shop:1.0"
    assert m.repo_ids["Shop::Price"] == "IDL:shop.example/Price:1.0"
    assert m.repo_ids["Shop::Till::Drawer"] == "IDL:shop.example/Till/Drawer:1.0"
    assert m.types["Shop::Item"].id() == "IDL:legacy/Item:2.0"


def test_wchar_discriminator_and_long_double():
    m = idl.load(os.path.join(UNIT, "corba3.idl"), register=False)
    u = m.types["Shop::ByWChar"]
    assert u.discriminator_type().kind() == TCKind.tk_wchar
    assert u.member_label(0) == "x" and u.default_index() == 1
    assert m.types["Shop::Item"].member_type(1).kind() == TCKind.tk_longdouble


def test_complement_follows_the_spec_for_signed_types():
    # CORBA 3.0 3.10.2: ~v is -(v+1) for long (omniidl rejects this constant).
    m = idl.load(os.path.join(UNIT, "corba3.idl"), register=False)
    assert m.constants["Shop::COMPLEMENT"] == -35


def test_attributes_become_get_and_set_operations():
    m = idl.load(os.path.join(UNIT, "corba3.idl"), register=False)
    cart = m.interfaces["Shop::Cart"]
    ops = {op.name: op for op in cart.operations}
    assert set(ops) == {"_get_total", "_set_total", "_get_count"}
    assert [e.name() for e in ops["_get_total"].raises] == ["Oops"]
    assert [e.name() for e in ops["_set_total"].raises] == ["Oops", "Denied"]
    assert ops["_set_total"].params[0].mode == "in"
    assert ops["_set_total"].result.kind() == TCKind.tk_void
    assert ops["_get_total"].result.kind() == TCKind.tk_alias
    assert [e.name() for e in ops["_get_count"].raises] == ["Oops"]


def test_preprocessor_include_define_if():
    m = idl.load(os.path.join(UNIT, "main.idl"), register=False)
    pieces = m.types["App::Pieces"]
    assert pieces.content_type().length() == 4
    # the included file's prefix does not leak into the including file
    assert m.repo_ids["Part::Piece"] == "IDL:parts.example/Part/Piece:1.0"
    assert m.repo_ids["App::Box"] == "IDL:App/Box:1.0"
    assert m.types["App::Box"].member_type(1).length() == 4


def test_include_dirs_are_searched(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "lib.idl").write_text("module Lib { typedef long L; };\n")
    main = tmp_path / "m.idl"
    main.write_text("#include <lib.idl>\nmodule M { typedef Lib::L X; };\n")
    with pytest.raises(idl.IdlError):
        idl.load(main, register=False)
    m = idl.load(main, include_dirs=[tmp_path / "inc"], register=False)
    assert m.types["M::X"].content_type().id() == "IDL:Lib/L:1.0"


def test_several_errors_with_positions_and_caret():
    path = os.path.join(UNIT, "errors.idl")
    with pytest.raises(idl.IdlError) as info:
        idl.load(path, register=False)
    err = info.value
    assert isinstance(err, PycdrError)
    places = [(d.position.line, d.position.column) for d in err.diagnostics]
    assert places == [(2, 11), (3, 22), (4, 25)]
    text = str(err)
    assert f"{path}:2:11: error: 'Unknown1' is not declared" in text
    assert "  typedef Unknown1 A;\n          ^" in text
    assert "out of range for short" in text


def test_syntax_errors_are_reported_and_parsing_goes_on():
    with pytest.raises(idl.IdlError) as info:
        idl.load_string("module M {\n typedef long A\n struct S { long x; };\n"
                        " typedef long B\n};\n", register=False)
    lines = [d.position.line for d in info.value.diagnostics]
    assert lines == [3, 5]


def test_constant_values():
    m = idl.load(os.path.join(ORACLE, "constants.idl"), register=False)
    c = m.constants
    assert c["Consts::L1"] == 34
    assert c["Consts::L2"] == 6
    assert c["Consts::L3"] == -3 and c["Consts::L4"] == -1
    assert c["Consts::L5"] == 34
    assert c["Consts::L6"] == 1024 | 9
    assert c["Consts::UL5"] == 0xFFFFFFFF and c["Consts::ULL5"] == 2**64 - 2
    assert c["Consts::ULL2"] == 15
    assert c["Consts::D1"] == 2.5e10 * 2.0 - 1.5
    assert c["Consts::C2"] == "A" and c["Consts::C3"] == "B"
    assert c["Consts::STR1"] == "hello, world"
    assert c["Consts::FX2"] == Decimal("246.90")
    assert c["Consts::B1"] is True
    assert str(c["Consts::LV"]) == "medium" and int(c["Consts::LV"]) == 1
    assert c["Consts::Inner::FROM_OUTER"] == 50
    assert m.types["Consts::Inner::Seq50"].content_type().length() == 50
    assert m.types["Consts::Block"].content_type().length() == 4
    assert m.types["Consts::Block"].content_type().content_type().length() == 6


def test_recursive_struct_uses_a_placeholder_bound_to_itself():
    m = idl.load(os.path.join(ORACLE, "recursive.idl"), register=False)
    node = m.types["Rec::Node"]
    inner = node.member_type(1).content_type()
    assert inner.kind() == TCKind.tk_struct and inner.id() == node.id()
    assert inner.member_type(1).content_type().id() == node.id()
    lst = m.types["Rec::List"]
    assert lst.member_type(1).id() == lst.id()


def test_loaded_classes_are_registered_and_used_by_the_marshaler():
    m = idl.load(os.path.join(ORACLE, "basic.idl"))
    Failure = m["Basic::Failure"]
    Color = m["Basic::Color"]
    assert issubclass(Failure, values.UserException)
    assert values.registered("IDL:Basic/Failure:1.0") is Failure
    value = Failure(7, "broken", Color.blue)
    data = pycdr.encode(m.types["Basic::Failure"], value)
    back = pycdr.decode(m.types["Basic::Failure"], data)
    assert type(back) is Failure and back == value
    Inner = m["Basic::Inline::Inner"]
    assert Inner(x=3).x == 3


def test_union_and_value_classes():
    m = idl.load(os.path.join(ORACLE, "unions.idl"))
    ByEnum = m["Unions::ByEnum"]
    u = ByEnum(cd="hi")
    assert u._d == 2 and u.cd == "hi"
    data = pycdr.encode(m.types["Unions::ByEnum"], u)
    assert pycdr.decode(m.types["Unions::ByEnum"], data) == u
    v = idl.load(os.path.join(ORACLE, "values.idl"))
    Point3D = v["Vals::Point3D"]
    assert issubclass(Point3D, v["Vals::Point"])
    assert Point3D._fields == ("x", "y", "label", "z")


def test_interfaces_operations_and_inheritance():
    m = idl.load(os.path.join(ORACLE, "interfaces.idl"), register=False)
    store = m.interfaces["Ifaces::Store"]
    assert store.repo_id == "IDL:Ifaces/Store:1.0"
    assert store.bases == ("Ifaces::Named",)
    swap = store.operation("swap")
    assert [(p.name, p.mode) for p in swap.params] == [
        ("value", "inout"), ("previous", "out"), ("slot", "in")]
    assert [p.name for p in swap.in_params] == ["value", "slot"]
    assert [p.name for p in swap.out_params] == ["value", "previous"]
    assert store.operation("forget").oneway
    assert store.operation("query").contexts == ("user", "lang*")
    assert [e.id() for e in store.operation("put").raises] == [
        "IDL:Ifaces/Denied:1.0", "IDL:Ifaces/NotFound:1.0"]
    assert "_set_capacity" in store.all_operations()
    assert "_set_keys" not in store.all_operations()
    backup = m.interfaces["Ifaces::Backup"]
    assert "get" in backup.all_operations() and "name" in backup.all_operations()
    assert backup.is_a("IDL:Ifaces/Named:1.0")
    assert m.types["Ifaces::Named"].kind() == TCKind.tk_abstract_interface
    assert m.types["Ifaces::Helper"].kind() == TCKind.tk_local_interface


def test_scoping_resolves_through_inheritance_and_reopened_modules():
    m = idl.load(os.path.join(ORACLE, "scoping.idl"), register=False)
    uses_inner = m.types["Outer::Inner::UsesInner"]
    assert uses_inner.member_type(0).content_type().kind() == TCKind.tk_string
    again = m.types["Outer::Inner::Again"]
    assert again.member_type(0).id() == "IDL:Outer/Inner/T:1.0"
    left = m.interfaces["Outer::Left"].operation("go_left")
    assert left.result.id() == "IDL:Outer/Base/TSeq:1.0"


def test_ambiguous_inherited_name_is_an_error():
    with pytest.raises(idl.IdlError, match="ambiguous"):
        idl.load_string("interface A { typedef long T; };\ninterface B { typedef short T; };\n"
                        "interface C : A, B { T get(); };\n", register=False)


def test_tc_builders_agree_with_the_front_end():
    m = idl.load_string("struct BinStruct { short s; char c; long l; octet o; double d;"
                        " octet pad[8]; };\n", register=False)
    built = tc.struct("IDL:BinStruct:1.0", "BinStruct", [
        ("s", tc.short), ("c", tc.char), ("l", tc.long), ("o", tc.octet),
        ("d", tc.double), ("pad", tc.array(tc.octet, 8))])
    assert m.types["BinStruct"].equal(built)


def test_absurd_nesting_is_an_error_not_a_crash():
    with pytest.raises(idl.IdlError, match="nested too deeply"):
        idl.load_string("const long X = " + "(" * 5000 + "1" + ")" * 5000 + ";", register=False)
