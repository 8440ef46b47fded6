"""Bad CDR: truncation, lengths that lie, invalid values, bad TypeCodes, deep
nesting -- strict mode raises the specific error class with the byte offset and
the value path; lenient mode records DecodeWarnings and returns a value.

Byte strings are hand-written (see test_cdr_types.h for the notation).
Spec references: CORBA 3.x Part 2 ch. 9 (9.3.1.4 boolean is 0 or 1, 9.3.2.6
enum ordinals, 9.3.2.7 strings end with NUL, 9.3.5 TypeCode indirection);
GIOP-NOTES.md 3.6, 3.8, 3.9.
"""

import time

import pytest

import pycdr
from pycdr.codec import tc
from pycdr.codec.cdr import DecodeWarning
from pycdr.errors import (BoundExceededError, CDRError, DecodeError, EncodeError,
                          InvalidTypeCodeError, InvalidValueError, PycdrError,
                          RecursionLimitError, TruncatedError)
from pycdr.codec.values import Any, class_for
from test_cdr_types import BINSTRUCT_AT, BIN_VALUE, BinStruct, Color, h


# --------------------------------------------------------------------------
# Truncation
# --------------------------------------------------------------------------
# BinStruct at offset 0: (start, end, member) of each member; padding between.
BIN_FIELDS = [(0, 2, "s"), (2, 3, "c"), (4, 8, "l"), (8, 9, "o"), (16, 24, "d"), (24, 32, "pad")]


@pytest.mark.parametrize("little", [False, True])
@pytest.mark.parametrize("cut", range(32))
def test_binstruct_truncated_at_every_cut(cut, little):
    data = pycdr.encode(BinStruct, BIN_VALUE, little=little)[:cut]
    # The error is at the (aligned) start of the first member that does not fit.
    start, _end, member = next(f for f in BIN_FIELDS if f[1] > cut)
    with pytest.raises(TruncatedError) as info:
        pycdr.decode(BinStruct, data, little=little)
    assert info.value.offset == start
    assert info.value.path.lstrip(".") == member


# BinStruct starting at offset 4 (after a sequence length): its members' extents.
BIN_FIELDS_AT_4 = [(4, 6, "s"), (6, 7, "c"), (8, 12, "l"), (12, 13, "o"), (16, 24, "d"),
                   (24, 32, "pad")]


@pytest.mark.parametrize("cut", range(32))
def test_sequence_of_binstruct_truncated_at_every_cut(cut):
    # length 1, then a BinStruct starting at offset 4: 32 octets in all
    data = h("00000001|" + BINSTRUCT_AT[4])
    assert len(data) == 32
    assert pycdr.decode(tc.sequence(BinStruct), data) == [BIN_VALUE]
    with pytest.raises(TruncatedError) as info:
        pycdr.decode(tc.sequence(BinStruct), data[:cut])
    error = info.value
    if cut < 4 or (error.offset == 0 and not error.path):
        # the length itself, or a count refused up front because the element
        # cannot fit in what is left
        assert error.offset == 0 and not error.path
    else:
        start, _end, member = next(f for f in BIN_FIELDS_AT_4 if f[1] > cut)
        assert (error.offset, error.path.lstrip(".")) == (start, f"[0].{member}")


TRUNCATION_CASES = [
    ("string", tc.string, "00000006|48656c6c6f|00"),
    ("wstring_1_2", tc.wstring, "00000004|0048|0069"),
    ("seq_long", tc.sequence(tc.long), "00000002|00000001|00000002"),
    ("seq_double", tc.sequence(tc.double), "00000001|.00000000|3ff8000000000000"),
    ("seq_string", tc.sequence(tc.string), "00000002|00000002|61|00|.0000|00000002|62|00"),
    ("any_struct", tc.any,
     "00000011|0000002e|00|.000000|0000000a|49444c3a453a312e3000|.0000"
     "|00000002|4500|.0000|00000002|00000002|6100|.0000|00000002|6200|.0000|00000001"),
    ("longdouble", tc.longdouble, "3fff8000000000000000000000000000"),
    ("fixed", tc.fixed(5, 2), "12|34|5c"),
    ("array", tc.array(tc.long, 2, 2), "00000001|00000002|00000003|00000004"),
]


@pytest.mark.parametrize("typecode,hexed", [c[1:] for c in TRUNCATION_CASES],
                         ids=[c[0] for c in TRUNCATION_CASES])
def test_truncated_at_every_cut_raises_truncated_error(typecode, hexed):
    data = h(hexed)
    pycdr.decode(typecode, data)        # whole: fine
    for cut in range(len(data)):
        with pytest.raises(TruncatedError) as info:
            pycdr.decode(typecode, data[:cut])
        assert info.value.offset is not None and 0 <= info.value.offset <= len(data)


def test_truncated_offsets_of_a_string():
    data = h("00000006|48656c6c6f|00")
    for cut in range(4):
        with pytest.raises(TruncatedError) as info:
            pycdr.decode(tc.string, data[:cut])
        assert info.value.offset == 0
    for cut in range(4, 10):
        # the length claims 6 octets but fewer remain: reported at the length field
        with pytest.raises(TruncatedError) as info:
            pycdr.decode(tc.string, data[:cut])
        assert info.value.offset == 0


@pytest.mark.parametrize("typecode", [
    tc.sequence(tc.long), tc.sequence(tc.octet), tc.sequence(tc.string), tc.sequence(tc.double),
    tc.sequence(BinStruct), tc.sequence(tc.sequence(tc.long)), tc.sequence(tc.any),
    tc.sequence(tc.boolean), tc.sequence(tc.char), tc.string, tc.wstring,
    tc.sequence(tc.struct("IDL:Emptyish:1.0", "Emptyish", [("n", tc.null)])),
], ids=lambda t: repr(t))
def test_huge_length_fails_fast_without_allocating(typecode):
    # A length of 0xffffffff followed by 8 octets: the count is checked against
    # the bytes left before anything is allocated (GIOP-NOTES 3.8).
    data = h("ffffffff|0000000000000000")
    started = time.perf_counter()
    with pytest.raises(TruncatedError) as info:
        pycdr.decode(typecode, data)
    assert info.value.offset == 0
    assert time.perf_counter() - started < 1.0


def test_huge_length_inside_a_struct_reports_offset_and_path():
    s = tc.struct("IDL:H:1.0", "H", [("o", tc.octet), ("items", tc.sequence(tc.long))])
    with pytest.raises(TruncatedError) as info:
        pycdr.decode(s, h("01|.000000|ffffffff|0000000000000000"))
    assert info.value.offset == 4
    assert info.value.path.lstrip(".") == "items"


# --------------------------------------------------------------------------
# Invalid values: strict raises, lenient warns
# --------------------------------------------------------------------------
def _lenient(typecode, data, **kw):
    warnings = []
    value = pycdr.decode(typecode, data, lenient=True, warnings=warnings, **kw)
    assert all(isinstance(w, DecodeWarning) for w in warnings)
    return value, warnings


# (name, type, bytes, strict error class, its offset, lenient value, warning code)
INVALID_VALUES = [
    # 9.3.1.4: TRUE is 1, FALSE is 0; nothing else.
    ("boolean_2", tc.boolean, "02", InvalidValueError, 0, True, "bad-boolean"),
    ("boolean_255", tc.boolean, "ff", InvalidValueError, 0, True, "bad-boolean"),
    # 9.3.2.6: an enum's ordinal must name one of its enumerators
    ("enum_range", Color, "00000003", InvalidValueError, 0, 3, "enum-range"),
    # 9.3.2.7: the length includes the terminating NUL, which must be there
    ("string_no_nul", tc.string, "00000003|616263", InvalidValueError, 6, "abc", "string-no-nul"),
    # a string holds at least its NUL, so length 0 is invalid (GIOP-NOTES 3.6)
    ("string_zero_length", tc.string, "00000000", InvalidValueError, 0, "", "string-zero-length"),
    ("string_bound", tc.bounded_string(2), "00000004|616263|00", BoundExceededError, 0, "abc",
     "bound-exceeded"),
    ("sequence_bound", tc.sequence(tc.long, 1), "00000002|00000001|00000002",
     BoundExceededError, 0, [1, 2], "bound-exceeded"),
]


@pytest.mark.parametrize("typecode,hexed,error,offset,lenient_value,code",
                         [v[1:] for v in INVALID_VALUES], ids=[v[0] for v in INVALID_VALUES])
def test_invalid_value_strict_and_lenient(typecode, hexed, error, offset, lenient_value, code):
    with pytest.raises(error) as info:
        pycdr.decode(typecode, h(hexed))
    assert info.value.offset == offset
    value, warnings = _lenient(typecode, h(hexed))
    assert value == lenient_value
    assert [(w.code, w.offset) for w in warnings] == [(code, offset)]


def test_bad_boolean_inside_a_fixed_size_struct():
    # the struct's one-unpack fast path must still give the precise error
    s = tc.struct("IDL:BB:1.0", "BB", [("l", tc.long), ("b", tc.boolean), ("o", tc.octet)])
    with pytest.raises(InvalidValueError) as info:
        pycdr.decode(s, h("00000001|02|03"))
    assert info.value.offset == 4
    assert info.value.path.lstrip(".") == "b"
    value, warnings = _lenient(s, h("00000001|02|03"))
    assert value.l == 1 and value.b is True and value.o == 3
    assert [(w.code, w.offset) for w in warnings] == [("bad-boolean", 4)]


def test_bad_boolean_in_sequence():
    with pytest.raises(InvalidValueError) as info:
        pycdr.decode(tc.sequence(tc.boolean), h("00000003|01|00|07"))
    assert info.value.offset == 6
    value, warnings = _lenient(tc.sequence(tc.boolean), h("00000003|01|00|07"))
    assert value == [True, False, True]
    assert [(w.code, w.offset) for w in warnings] == [("bad-boolean", 6)]


def test_enum_out_of_range_after_padding_reports_the_enum_offset():
    s = tc.struct("IDL:EO:1.0", "EO", [("o", tc.octet), ("c", Color)])
    with pytest.raises(InvalidValueError) as info:
        pycdr.decode(s, h("01|.000000|00000009"))
    assert info.value.offset == 4
    assert info.value.path.lstrip(".") == "c"


def test_union_with_enum_discriminator_out_of_range():
    u = tc.union("IDL:UE:1.0", "UE", Color, [("red", "a", tc.long)])
    with pytest.raises(InvalidValueError) as info:
        pycdr.decode(u, h("00000007"))
    assert info.value.offset == 0
    value, warnings = _lenient(u, h("00000007"))
    assert value._d == 7 and value._v is None
    assert warnings and warnings[0].offset == 0


def test_wstring_bound_exceeded():
    with pytest.raises(BoundExceededError):
        pycdr.decode(tc.bounded_wstring(1), h("00000004|0048|0069"))


def test_wstring_giop_1_2_odd_length():
    with pytest.raises(InvalidValueError) as info:
        pycdr.decode(tc.wstring, h("00000003|004800"))
    assert info.value.offset == 0


def test_trailing_bytes_are_an_error_unless_allowed():
    with pytest.raises(DecodeError) as info:
        pycdr.decode(tc.long, h("00000001|ff"))
    assert info.value.offset == 4
    assert pycdr.decode(tc.long, h("00000001|ff"), allow_trailing=True) == 1


# The value path: Catalog { sequence<Item> items; }, Item { long id; string name; }
Item = tc.struct("IDL:Item:1.0", "Item", [("id", tc.long), ("name", tc.string)])
Catalog = tc.struct("IDL:Catalog:1.0", "Catalog", [("items", tc.sequence(Item))])
# items[i]: id, name length 3, "n<i>" NUL, one pad octet (12 octets each, from offset 4)
CATALOG = ("00000005"
           "|00000000|00000003|6e30|00|.00"
           "|00000001|00000003|6e31|00|.00"
           "|00000002|00000003|6e32|00|.00"
           "|00000003|00000003|6e33|78|.00"     # items[3].name: 'x' where the NUL belongs
           "|00000004|00000003|6e34|00")


def test_error_carries_value_path():
    with pytest.raises(InvalidValueError) as info:
        pycdr.decode(Catalog, h(CATALOG))
    assert info.value.offset == 4 + 3 * 12 + 8 + 2
    assert info.value.path.lstrip(".") == "items[3].name"
    assert "items[3].name" in str(info.value)
    assert "offset 50" in str(info.value)


def test_lenient_catalog_returns_a_value_with_warnings():
    value, warnings = _lenient(Catalog, h(CATALOG))
    assert [item.name for item in value.items] == ["n0", "n1", "n2", "n3x", "n4"]
    assert [(w.code, w.offset) for w in warnings] == [("string-no-nul", 50)]


def test_lenient_collects_several_warnings_in_order():
    s = tc.struct("IDL:Many:1.0", "Many", [("b", tc.boolean), ("c", Color), ("s", tc.string)])
    value, warnings = _lenient(s, h("05|.000000|00000009|00000002|61|62"))
    assert value.b is True and value.c == 9 and value.s == "ab"
    assert [(w.code, w.offset) for w in warnings] == [
        ("bad-boolean", 0), ("enum-range", 4), ("string-no-nul", 13)]


def test_lenient_still_raises_truncated():
    # there is no value to return when the bytes end
    with pytest.raises(TruncatedError):
        pycdr.decode(tc.long, h("0000"), lenient=True, warnings=[])


# --------------------------------------------------------------------------
# Invalid TypeCodes (9.3.5)
# --------------------------------------------------------------------------
def test_bad_typecode_kind():
    with pytest.raises(InvalidTypeCodeError) as info:
        pycdr.decode(tc.TypeCode, h("00000063"))
    assert info.value.offset == 0
    # inside an any, after a long
    s = tc.struct("IDL:A:1.0", "A", [("l", tc.long), ("a", tc.any)])
    with pytest.raises(InvalidTypeCodeError) as info:
        pycdr.decode(s, h("00000001|00000025"))
    assert info.value.offset == 4
    assert info.value.path.lstrip(".") == "a"


def test_forward_indirection_is_invalid():
    with pytest.raises(InvalidTypeCodeError) as info:
        pycdr.decode(tc.TypeCode, h("ffffffff|00000004|00000003"), allow_trailing=True)
    assert info.value.offset == 4


def test_top_level_indirection_has_nothing_to_point_at():
    with pytest.raises(InvalidTypeCodeError):
        pycdr.decode(tc.TypeCode, h("ffffffff|fffffff8"))


def test_indirection_not_pointing_at_a_typecode():
    # struct S { <indirection> a; } whose member TypeCode points at the repository
    # id's length field (offset 12), not at the kind of a TypeCode.
    data = h("0000000f|00000030|00|.000000|0000000a|49444c3a533a312e3000|.0000"
             "|00000002|5300|.0000|00000001|00000002|6100|.0000|ffffffff|ffffffd8")
    with pytest.raises(InvalidTypeCodeError) as info:
        pycdr.decode(tc.TypeCode, data)
    assert info.value.offset == 52


def test_union_typecode_with_bad_discriminator_kind():
    # union U switch (double): kind 16, id "", name "", disc tk_double ...
    data = h("00000010|00000020|00|.000000|00000001|00|.000000|00000001|00|.000000"
             "|00000007|ffffffff|00000000")
    with pytest.raises(InvalidTypeCodeError):
        pycdr.decode(tc.TypeCode, data)


def test_typecode_encapsulation_length_beyond_data():
    with pytest.raises(TruncatedError):
        pycdr.decode(tc.TypeCode, h("00000011|00001000|00"))


# --------------------------------------------------------------------------
# Nesting too deep
# --------------------------------------------------------------------------
def test_anys_nested_too_deep():
    # any holding an any holding an any ... 1000 deep, then a long
    data = h("0000000b" * 1000 + "00000003|00000005")
    with pytest.raises(RecursionLimitError):
        pycdr.decode(tc.any, data)


def test_anys_nested_a_little_are_fine():
    value = pycdr.decode(tc.any, h("0000000b" * 5 + "00000003|00000005"))
    for _ in range(5):
        assert value.tc.kind() == tc.any.kind()
        value = value.value
    assert value == Any(tc.long, 5)


Node = tc.struct("IDL:Node:1.0", "Node", [
    ("value", tc.long), ("children", tc.sequence(tc.recursive("IDL:Node:1.0")))])


def test_recursive_struct_nested_too_deep():
    # each level: value, then a child count of 1; the innermost has no children
    data = h("00000000|00000001" * 5000 + "00000000|00000000")
    with pytest.raises(RecursionLimitError):
        pycdr.decode(Node, data)


def test_recursive_struct_nested_a_little():
    value = pycdr.decode(Node, h("00000001|00000001|00000002|00000000"))
    assert value.value == 1 and value.children[0].value == 2 and value.children[0].children == []


def test_typecode_nested_too_deep():
    # sequence<sequence<...<long>...>> 500 deep, written by hand as nested encapsulations
    inner = "00000003"
    for _ in range(500):
        body = "00000000" + inner + "00000000"     # byte order + 3 pad, content, bound 0
        inner = "00000013" + f"{len(body) // 2:08x}" + body
    with pytest.raises(RecursionLimitError):
        pycdr.decode(tc.TypeCode, h(inner))


def test_errors_are_one_hierarchy():
    for cls in (TruncatedError, InvalidValueError, BoundExceededError, InvalidTypeCodeError,
                RecursionLimitError):
        assert issubclass(cls, DecodeError) and issubclass(cls, CDRError)
        assert issubclass(cls, PycdrError)
    assert issubclass(EncodeError, CDRError)


# --------------------------------------------------------------------------
# Encode errors
# --------------------------------------------------------------------------
@pytest.mark.parametrize("typecode,value", [
    (tc.short, 2**15), (tc.short, "1"), (tc.ushort, -1), (tc.long, 2**31), (tc.ulong, -1),
    (tc.longlong, 2**63), (tc.ulonglong, 2**64), (tc.octet, 256), (tc.octet, -1),
    (tc.boolean, 2), (tc.boolean, "yes"), (tc.char, "ab"), (tc.char, "\u20ac"),
    (tc.string, "a\0b"), (tc.string, b"bytes"), (tc.double, "x"), (tc.double, "1.5"),
    (Color, "purple"), (Color, 3), (tc.sequence(tc.long), 5), (tc.any, 5),
    (tc.TypeCode, "long"), (tc.fixed(3, 1), "abc"), (tc.fixed(3, 1), 1.5),
])
def test_encode_errors(typecode, value):
    with pytest.raises(EncodeError):
        pycdr.encode(typecode, value)


def test_bool_is_accepted_where_an_integer_is_expected():
    # bool is an int in Python; the struct-based fast paths accept it, so all paths do.
    assert pycdr.encode(tc.long, True) == bytes.fromhex("00000001")
    assert pycdr.encode(tc.sequence(tc.short), [True, 2]) == bytes.fromhex("0000000200010002")


def test_encode_error_carries_path():
    with pytest.raises(EncodeError) as info:
        pycdr.encode(Catalog, {"items": [{"id": 1, "name": "a"}, {"id": 2, "name": 5}]})
    assert info.value.path.lstrip(".") == "items[1].name"


def test_union_value_for_a_branchless_discriminator_must_be_none():
    u = tc.union("IDL:Opt:1.0", "Opt", tc.short, [(1, "a", tc.long)])
    with pytest.raises(EncodeError):
        pycdr.encode(u, class_for(u)(3, 5))


def test_any_with_a_known_id_but_other_members_decodes_to_its_own_class():
    # Found by `pycdr fuzz`: a TypeCode from the wire may reuse a registered
    # repository id with other member names; its values must not be put in
    # the registered class (whose slots differ).
    from pycdr.codec.values import make_struct_class, register
    known = tc.struct("IDL:test/Known:1.0", "Known", [("value", tc.long)])
    register("IDL:test/Known:1.0", make_struct_class(known))
    other = tc.struct("IDL:test/Known:1.0", "Known", [("falue", tc.long)])
    data = pycdr.encode(tc.any, pycdr.Any(other, class_for(other)(7)))
    value = pycdr.decode(tc.any, data).value
    assert value.falue == 7


def test_struct_typecode_without_members_decodes():
    # Found by `pycdr fuzz`: IDL forbids an empty struct, the wire does not.
    from pycdr.codec.tcmarshal import read_typecode
    from pycdr.codec.cdr import CDRReader
    empty = bytes.fromhex("0000000f" "00000018" "00" "000000" "00000001" "00" "000000"
                          "00000001" "00" "000000" "00000000")
    t = read_typecode(CDRReader(empty))
    assert t.member_count() == 0
    assert pycdr.decode(t, b"") == class_for(t)()
