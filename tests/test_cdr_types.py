"""Hand-written CDR bytes for every IDL type, in both byte orders.

Every expected byte string below was written out by hand from CORBA 3.x
Part 2, chapter 9 "CDR Transfer Syntax" (9.3.1 primitive types and the
alignment table 9-1 -- called 15.3.1 / table 15-1 in CORBA 2.x --, 9.3.2
constructed types, 9.3.3 encapsulation, 9.3.5 TypeCodes) and the notes in
/work/shared/research/GIOP-NOTES.md section 3.  The hex strings are written
with ``|`` between items and ``.`` in front of padding so the layout can be
read off the test: ``h("0001|.00|00000002")`` is a short, one pad octet, a long.
Nothing here is computed by pycdr: the tests compare pycdr against the bytes.
"""

from decimal import Decimal

import pytest

from pycdr.errors import InvalidValueError

import pycdr
from pycdr.codec import tc
from pycdr.errors import CodeSetError, EncodeError
from pycdr.codec.ior import IOR, TaggedProfile
from pycdr.codec.values import Any, LongDouble, class_for


def h(text: str) -> bytes:
    """Bytes from readable hex: ``|`` separates items, ``.`` marks padding, spaces ignored."""
    return bytes.fromhex(text.replace("|", "").replace(".", "").replace(" ", ""))


def check(typecode, value, be_hex, le_hex, **kw):
    """Encode in both byte orders to exactly the hand-written bytes, and decode them back."""
    be, le = h(be_hex), h(le_hex)
    assert pycdr.encode(typecode, value, **kw).hex() == be.hex()
    assert pycdr.encode(typecode, value, little=True, **kw).hex() == le.hex()
    assert pycdr.decode(typecode, be, **kw) == value
    assert pycdr.decode(typecode, le, little=True, **kw) == value


# --------------------------------------------------------------------------
# Primitive types (CORBA 3.x 9.3.1.1 integers, 9.3.1.2 floating point,
# 9.3.1.3 octet, 9.3.1.4 boolean, 9.3.1.5 char).
# --------------------------------------------------------------------------
PRIMITIVES = [
    ("short", tc.short, -2, "fffe", "feff"),
    ("short_max", tc.short, 0x7FFF, "7fff", "ff7f"),
    ("short_min", tc.short, -0x8000, "8000", "0080"),
    ("ushort", tc.ushort, 0x1234, "1234", "3412"),
    ("ushort_max", tc.ushort, 0xFFFF, "ffff", "ffff"),
    ("long", tc.long, -2, "fffffffe", "feffffff"),
    ("long_min", tc.long, -2**31, "80000000", "00000080"),
    ("ulong", tc.ulong, 0xDEADBEEF, "deadbeef", "efbeadde"),
    ("longlong", tc.longlong, -2, "fffffffffffffffe", "feffffffffffffff"),
    ("longlong_min", tc.longlong, -2**63, "8000000000000000", "0000000000000080"),
    ("ulonglong", tc.ulonglong, 0x0102030405060708, "0102030405060708", "0807060504030201"),
    ("ulonglong_max", tc.ulonglong, 2**64 - 1, "ffffffffffffffff", "ffffffffffffffff"),
    # IEEE 754 binary32 1.5 = sign 0, exponent 127, fraction .1
    ("float", tc.float, 1.5, "3fc00000", "0000c03f"),
    ("float_neg", tc.float, -2.0, "c0000000", "000000c0"),
    # IEEE 754 binary64 1.5 = 0x3ff8...
    ("double", tc.double, 1.5, "3ff8000000000000", "000000000000f83f"),
    ("double_neg", tc.double, -0.25, "bfd0000000000000", "000000000000d0bf"),
    ("boolean_true", tc.boolean, True, "01", "01"),
    ("boolean_false", tc.boolean, False, "00", "00"),
    ("char", tc.char, "A", "41", "41"),
    ("char_latin1", tc.char, "\u00e9", "e9", "e9"),   # ISO-8859-1 default TCS-C
    ("octet", tc.octet, 0xFF, "ff", "ff"),
    ("octet_zero", tc.octet, 0, "00", "00"),
]


@pytest.mark.parametrize("typecode,value,be,le", [p[1:] for p in PRIMITIVES],
                         ids=[p[0] for p in PRIMITIVES])
def test_primitive(typecode, value, be, le):
    check(typecode, value, be, le)


def test_float_value_rounds_through_binary32():
    # 0.1 is not a binary32 number: the decoded value is the nearest float32.
    data = pycdr.encode(tc.float, 0.1)
    assert data == h("3dcccccd")
    assert pycdr.decode(tc.float, data) == pytest.approx(0.1, rel=1e-7)


# long double (9.3.1.2): IEEE binary128, 16 octets, aligned on 8.
# 1.5 = sign 0, exponent 0x3fff, fraction .1 -> 3fff 8000 0000 ...
def test_long_double_1_5():
    check(tc.longdouble, LongDouble.from_float(1.5),
          "3fff8000000000000000000000000000", "00000000000000000000000000|80ff3f")


def test_long_double_exact_beyond_double_precision():
    # 1 + 2**-112: the last fraction bit; no double can hold it.
    bits = 0x3FFF0000000000000000000000000001
    value = LongDouble(bits)
    check(tc.longdouble, value, "3fff0000000000000000000000000001",
          "01|00000000000000000000000000|ff3f")
    decoded = pycdr.decode(tc.longdouble, h("3fff0000000000000000000000000001"))
    assert isinstance(decoded, LongDouble)
    assert decoded.bits == bits
    assert decoded != LongDouble.from_float(1.0)
    assert float(decoded) == 1.0


def test_long_double_aligned_on_8():
    # struct { octet o; long double ld; }: 7 padding octets, then 16 octets.
    s = tc.struct("IDL:LD:1.0", "LD", [("o", tc.octet), ("ld", tc.longdouble)])
    value = class_for(s)(1, LongDouble.from_float(-2.0))
    check(s, value,
          "01|.00000000000000|c0000000000000000000000000000000",
          "01|.00000000000000|000000000000000000000000000000c0")


def test_long_double_decodes_negative_zero_and_infinity():
    assert pycdr.decode(tc.longdouble, h("80000000000000000000000000000000")).bits == 1 << 127
    inf = pycdr.decode(tc.longdouble, h("7fff0000000000000000000000000000"))
    assert float(inf) == float("inf")


# --------------------------------------------------------------------------
# wchar (9.3.1.6; GIOP-NOTES 3.7)
# --------------------------------------------------------------------------
def test_wchar_giop_1_1_is_an_aligned_code_unit_in_stream_order():
    # GIOP 1.1, UTF-16: one 2-octet code unit aligned on 2, in the stream's byte order.
    s = tc.struct("IDL:W:1.0", "W", [("o", tc.octet), ("w", tc.wchar)])
    value = class_for(s)(7, "A")
    check(s, value, "07|.00|0041", "07|.00|4100", version=(1, 1))
    check(tc.wchar, "\u20ac", "20ac", "ac20", version=(1, 1))


def test_wchar_giop_1_2_is_octet_length_and_big_endian_utf16():
    # GIOP 1.2: octet length 2, then UTF-16 without BOM = big-endian in BOTH byte orders;
    # no alignment (alignment 1 in table 9-1 for GIOP 1.2).
    check(tc.wchar, "A", "02|0041", "02|0041")
    check(tc.wchar, "\u20ac", "02|20ac", "02|20ac")
    s = tc.struct("IDL:W:1.0", "W", [("o", tc.octet), ("w", tc.wchar), ("l", tc.long)])
    value = class_for(s)(7, "A", 1)
    check(s, value, "07|02|0041|00000001",
          "07|02|0041|01000000")


@pytest.mark.parametrize("little", [False, True])
def test_wchar_giop_1_2_decodes_bom_both_ways(little):
    # 4 octets: BOM + one code unit; FEFF = big-endian, FFFE = little-endian.
    assert pycdr.decode(tc.wchar, h("04|feff|0041"), little=little) == "A"
    assert pycdr.decode(tc.wchar, h("04|fffe|4100"), little=little) == "A"


def test_wchar_giop_1_0_is_refused():
    with pytest.raises(CodeSetError):
        pycdr.encode(tc.wchar, "A", version=(1, 0))
    with pytest.raises(CodeSetError):
        pycdr.decode(tc.wchar, h("0041"), version=(1, 0))
    with pytest.raises(CodeSetError):
        pycdr.encode(tc.wstring, "A", version=(1, 0))
    with pytest.raises(CodeSetError):
        pycdr.decode(tc.wstring, h("00000002|0041|0000"), version=(1, 0))


# --------------------------------------------------------------------------
# strings (9.3.2.7) and wstrings
# --------------------------------------------------------------------------
def test_string():
    # ulong length including the NUL, the octets, the NUL.
    check(tc.string, "Hi", "00000003|4869|00", "03000000|4869|00")
    check(tc.string, "", "00000001|00", "01000000|00")
    check(tc.string, "caf\u00e9", "00000005|636166e9|00", "05000000|636166e9|00")


def test_bounded_string():
    s5 = tc.bounded_string(5)
    check(s5, "Hello", "00000006|48656c6c6f|00", "06000000|48656c6c6f|00")
    with pytest.raises(EncodeError):
        pycdr.encode(s5, "Hello!")


def test_string_after_octet_is_aligned():
    s = tc.struct("IDL:SO:1.0", "SO", [("o", tc.octet), ("s", tc.string)])
    check(s, class_for(s)(1, "ab"), "01|.000000|00000003|6162|00", "01|.000000|03000000|6162|00")


def test_wstring_giop_1_1_length_in_chars_with_wide_nul():
    # GIOP 1.1: ulong length = code units including the terminating wide NUL,
    # units in the stream's byte order.
    check(tc.wstring, "Hi", "00000003|0048|0069|0000", "03000000|4800|6900|0000",
          version=(1, 1))
    check(tc.wstring, "", "00000001|0000", "01000000|0000", version=(1, 1))
    # a surrogate pair is two code units
    check(tc.wstring, "\U0001F600", "00000003|d83d|de00|0000", "03000000|3dd8|00de|0000",
          version=(1, 1))


def test_wstring_giop_1_2_length_in_octets_no_nul_big_endian():
    # GIOP 1.2: ulong length in octets, no terminator, UTF-16 without BOM is big-endian.
    check(tc.wstring, "Hi", "00000004|0048|0069", "04000000|0048|0069")
    check(tc.wstring, "", "00000000", "00000000")
    check(tc.wstring, "\U0001F600", "00000004|d83dde00", "04000000|d83dde00")
    check(tc.bounded_wstring(2), "Hi", "00000004|0048|0069", "04000000|0048|0069")
    with pytest.raises(EncodeError):
        pycdr.encode(tc.bounded_wstring(1), "Hi")


@pytest.mark.parametrize("little", [False, True])
def test_wstring_giop_1_2_decodes_bom_both_ways(little):
    length = "06000000" if little else "00000006"
    # FEFF: big-endian units; FFFE: little-endian units -- whatever the stream's order.
    assert pycdr.decode(tc.wstring, h(f"{length}|feff|0048|0069"), little=little) == "Hi"
    assert pycdr.decode(tc.wstring, h(f"{length}|fffe|4800|6900"), little=little) == "Hi"


def test_wstring_giop_1_2_with_bom_on_encode_uses_stream_order():
    # wstring_bom=True: a BOM in the stream's byte order, then the units in that order.
    assert pycdr.encode(tc.wstring, "Hi", little=True, wstring_bom=True) == \
        h("06000000|fffe|4800|6900")
    assert pycdr.encode(tc.wstring, "Hi", wstring_bom=True) == h("00000006|feff|0048|0069")
    # an empty wstring gets no BOM
    assert pycdr.encode(tc.wstring, "", wstring_bom=True) == h("00000000")


# --------------------------------------------------------------------------
# fixed (9.3.2.8): packed BCD, sign in the last half-octet (C +, D -);
# an even digit count puts a zero half-octet first. No alignment.
# --------------------------------------------------------------------------
FIXED = [
    ("odd_digits", (5, 2), Decimal("123.45"), "12|34|5c"),
    ("even_digits", (4, 2), Decimal("12.34"), "01|23|4c"),
    ("negative_odd", (3, 1), Decimal("-1.5"), "01|5d"),
    ("negative_even", (2, 0), Decimal("-7"), "00|7d"),
    ("zero", (3, 1), Decimal("0.0"), "00|0c"),
    ("leading_zeros", (5, 0), Decimal("42"), "00|04|2c"),
    ("fraction_only", (3, 3), Decimal("0.125"), "12|5c"),
    # IDL fixed holds up to 31 significant digits (CORBA 3.x Part 1, 7.4.1.4.4
    # "Fixed-Point Decimal Type"); Python's default Decimal context has only 28.
    ("max_digits", (31, 0), Decimal("9" * 31), "99" * 15 + "9c"),
    ("max_digits_scaled", (31, 10), Decimal("-" + "1" * 21 + "." + "2" * 10),
     "11" * 10 + "12" + "22" * 4 + "2d"),
]


@pytest.mark.parametrize("digits_scale,value,hexed", [f[1:] for f in FIXED],
                         ids=[f[0] for f in FIXED])
def test_fixed(digits_scale, value, hexed):
    check(tc.fixed(*digits_scale), value, hexed, hexed)


def test_fixed_has_no_alignment():
    s = tc.struct("IDL:F:1.0", "F", [("o", tc.octet), ("f", tc.fixed(3, 1)), ("p", tc.octet)])
    check(s, class_for(s)(1, Decimal("12.3"), 2), "01|12|3c|02", "01|12|3c|02")


def test_fixed_too_many_digits_is_an_encode_error():
    with pytest.raises(EncodeError):
        pycdr.encode(tc.fixed(3, 1), Decimal("123.4"))


# --------------------------------------------------------------------------
# enum (9.3.2.6), struct (9.3.2.2), union (9.3.2.3)
# --------------------------------------------------------------------------
Color = tc.enum("IDL:Color:1.0", "Color", ["red", "green", "blue"])


def test_enum():
    green = class_for(Color).green
    check(Color, green, "00000001", "01000000")
    assert pycdr.encode(Color, "blue") == h("00000002")
    assert pycdr.encode(Color, 0) == h("00000000")
    assert pycdr.decode(Color, h("00000002")).name == "blue"


def test_enum_after_octet_is_aligned_on_4():
    s = tc.struct("IDL:E:1.0", "E", [("o", tc.octet), ("c", Color)])
    check(s, class_for(s)(9, class_for(Color).blue), "09|.000000|00000002", "09|.000000|02000000")


Mixed = tc.struct("IDL:Mixed:1.0", "Mixed", [
    ("o", tc.octet), ("s", tc.short), ("b", tc.boolean), ("l", tc.long),
    ("c", tc.char), ("ll", tc.longlong), ("name", tc.string)])


def test_struct_padding():
    value = class_for(Mixed)(1, 2, True, 3, "x", 4, "ab")
    check(Mixed, value,
          "01|.00|0002|01|.000000|00000003|78|.000000|0000000000000004|00000003|6162|00",
          "01|.00|0200|01|.000000|03000000|78|.000000|0400000000000000|03000000|6162|00")


def test_struct_accepts_a_mapping():
    assert pycdr.encode(Mixed, dict(o=1, s=2, b=True, l=3, c="x", ll=4, name="ab")) == \
        pycdr.encode(Mixed, class_for(Mixed)(1, 2, True, 3, "x", 4, "ab"))


def test_nested_struct_adds_no_alignment():
    # 9.3.2.2: constructed types add no alignment of their own.
    inner = tc.struct("IDL:In:1.0", "In", [("a", tc.octet), ("b", tc.octet)])
    outer = tc.struct("IDL:Out:1.0", "Out", [("x", tc.octet), ("i", inner), ("y", tc.short)])
    value = class_for(outer)(1, class_for(inner)(2, 3), 4)
    check(outer, value, "01|02|03|.00|0004", "01|02|03|.00|0400")


# union: discriminator, then the selected member aligned as usual.
# One union per legal discriminator type (9.3.2.3, and the IDL grammar's switch_type_spec).
UNION_CASES = [
    # (name, discriminator tc, label, version, BE bytes, LE bytes)
    ("short", tc.short, 7, (1, 2), "0007|.0000|00000005", "0700|.0000|05000000"),
    ("ushort", tc.ushort, 7, (1, 2), "0007|.0000|00000005", "0700|.0000|05000000"),
    ("long", tc.long, -7, (1, 2), "fffffff9|00000005", "f9ffffff|05000000"),
    ("ulong", tc.ulong, 7, (1, 2), "00000007|00000005", "07000000|05000000"),
    ("longlong", tc.longlong, 7, (1, 2), "0000000000000007|00000005",
     "0700000000000000|05000000"),
    ("ulonglong", tc.ulonglong, 7, (1, 2), "0000000000000007|00000005",
     "0700000000000000|05000000"),
    ("boolean", tc.boolean, True, (1, 2), "01|.000000|00000005", "01|.000000|05000000"),
    ("char", tc.char, "x", (1, 2), "78|.000000|00000005", "78|.000000|05000000"),
    ("wchar_1_2", tc.wchar, "x", (1, 2), "02|0078|.00|00000005", "02|0078|.00|05000000"),
    ("wchar_1_1", tc.wchar, "x", (1, 1), "0078|.0000|00000005", "7800|.0000|05000000"),
    ("enum", Color, 1, (1, 2), "00000001|00000005", "01000000|05000000"),
]


@pytest.mark.parametrize("disc,label,version,be,le", [u[1:] for u in UNION_CASES],
                         ids=[u[0] for u in UNION_CASES])
def test_union_discriminator_types(disc, label, version, be, le):
    other = {"short": 8, "ushort": 8, "long": 8, "ulong": 8, "longlong": 8, "ulonglong": 8,
             "boolean": False, "char": "y", "wchar": "y", "enum": 2}
    kind = disc.kind().name[3:]
    u = tc.union(f"IDL:U_{kind}:1.0", f"U_{kind}", disc,
                 [(label, "a", tc.long), (other[kind], "b", tc.octet)])
    cls = class_for(u)
    if kind == "enum":
        label = class_for(Color).green
    check(u, cls(label, 5), be, le, version=version)
    decoded = pycdr.decode(u, h(be), version=version)
    assert decoded._d == label and decoded._v == 5 and decoded.a == 5


Shape = tc.union("IDL:Shape:1.0", "Shape", tc.long, [
    (1, "radius", tc.double), (2, "side", tc.short), (tc.DEFAULT, "name", tc.string)])


def test_union_explicit_default():
    cls = class_for(Shape)
    check(Shape, cls(1, 2.5), "00000001|.00000000|4004000000000000",
          "01000000|.00000000|0000000000000440")
    check(Shape, cls(2, -1), "00000002|ffff", "02000000|ffff")
    # any other discriminator selects the default member
    check(Shape, cls(99, "ab"), "00000063|00000003|6162|00", "63000000|03000000|6162|00")
    assert pycdr.decode(Shape, h("00000063|00000003|6162|00")).name == "ab"


def test_union_implicit_default_with_no_member():
    # 9.3.2.3: a discriminator no label selects, in a union without default, has no member.
    u = tc.union("IDL:Opt:1.0", "Opt", tc.short, [(1, "a", tc.long)])
    cls = class_for(u)
    check(u, cls(1, 9), "0001|.0000|00000009", "0100|.0000|09000000")
    check(u, cls(3, None), "0003", "0300")


def test_union_boolean_implicit_default():
    u = tc.union("IDL:OptB:1.0", "OptB", tc.boolean, [(True, "v", tc.short)])
    cls = class_for(u)
    check(u, cls(True, 3), "01|.00|0003", "01|.00|0300")
    check(u, cls(False, None), "00", "00")


def test_union_member_with_several_labels():
    u = tc.union("IDL:Multi:1.0", "Multi", tc.short,
                 [(1, "x", tc.octet), (2, "x", tc.octet), (3, "y", tc.long)])
    cls = class_for(u)
    check(u, cls(2, 9), "0002|09", "0200|09")


# --------------------------------------------------------------------------
# sequences (9.3.2.5) and arrays (9.3.2.4)
# --------------------------------------------------------------------------
SEQUENCES = [
    ("long", tc.sequence(tc.long), [1, -1], "00000002|00000001|ffffffff",
     "02000000|01000000|ffffffff"),
    ("short", tc.sequence(tc.short), [1, 2, 3], "00000003|0001|0002|0003",
     "03000000|0100|0200|0300"),
    ("empty_long", tc.sequence(tc.long), [], "00000000", "00000000"),
    # the first double sits on an 8 boundary: 4 padding octets after the length
    ("double", tc.sequence(tc.double), [1.5, -2.0],
     "00000002|.00000000|3ff8000000000000|c000000000000000",
     "02000000|.00000000|000000000000f83f|00000000000000c0"),
    ("ulonglong", tc.sequence(tc.ulonglong), [1],
     "00000001|.00000000|0000000000000001", "01000000|.00000000|0100000000000000"),
    ("float", tc.sequence(tc.float), [1.5], "00000001|3fc00000", "01000000|0000c03f"),
    ("octet", tc.sequence(tc.octet), b"\x01\x02\x03", "00000003|010203", "03000000|010203"),
    ("char", tc.sequence(tc.char), "ab", "00000002|6162", "02000000|6162"),
    ("boolean", tc.sequence(tc.boolean), [True, False], "00000002|01|00", "02000000|01|00"),
    ("string", tc.sequence(tc.string), ["a", "bc"],
     "00000002|00000002|61|00|.0000|00000003|6263|00",
     "02000000|02000000|61|00|.0000|03000000|6263|00"),
    ("seq_of_seq", tc.sequence(tc.sequence(tc.short)), [[1], [2, 3]],
     "00000002|00000001|0001|.0000|00000002|0002|0003",
     "02000000|01000000|0100|.0000|02000000|0200|0300"),
    ("enum", tc.sequence(Color), [2, 0], "00000002|00000002|00000000",
     "02000000|02000000|00000000"),
    ("bounded", tc.sequence(tc.long, 2), [7, 8], "00000002|00000007|00000008",
     "02000000|07000000|08000000"),
    ("wstring_1_2", tc.sequence(tc.wstring), ["A"], "00000001|00000002|0041",
     "01000000|02000000|0041"),
]


@pytest.mark.parametrize("typecode,value,be,le", [s[1:] for s in SEQUENCES],
                         ids=[s[0] for s in SEQUENCES])
def test_sequence(typecode, value, be, le):
    # enums decode to their items, which compare equal to the ordinals
    check(typecode, value, be, le)


def test_sequence_of_struct():
    pt = tc.struct("IDL:Pt:1.0", "Pt", [("c", tc.char), ("x", tc.long)])
    cls = class_for(pt)
    check(tc.sequence(pt), [cls("a", 1), cls("b", 2)],
          "00000002|61|.000000|00000001|62|.000000|00000002",
          "02000000|61|.000000|01000000|62|.000000|02000000")


def test_bounded_sequence_over_bound_is_an_encode_error():
    with pytest.raises(EncodeError):
        pycdr.encode(tc.sequence(tc.long, 2), [1, 2, 3])
    with pytest.raises(EncodeError):
        pycdr.encode(tc.sequence(tc.octet, 2), b"abc")


def test_multidimensional_arrays():
    # long x[2][3]: no length, elements row by row.
    check(tc.array(tc.long, 2, 3), [[1, 2, 3], [4, 5, 6]],
          "00000001|00000002|00000003|00000004|00000005|00000006",
          "01000000|02000000|03000000|04000000|05000000|06000000")
    check(tc.array(tc.short, 2, 2, 2), [[[1, 2], [3, 4]], [[5, 6], [7, 8]]],
          "0001|0002|0003|0004|0005|0006|0007|0008",
          "0100|0200|0300|0400|0500|0600|0700|0800")
    check(tc.array(tc.octet, 2, 3), [b"\x01\x02\x03", b"\x04\x05\x06"],
          "010203|040506", "010203|040506")
    check(tc.array(tc.string, 2), ["a", "b"], "00000002|61|00|.0000|00000002|62|00",
          "02000000|61|00|.0000|02000000|62|00")


def test_array_of_double_aligned_in_struct():
    s = tc.struct("IDL:AD:1.0", "AD", [("o", tc.octet), ("d", tc.array(tc.double, 2))])
    check(s, class_for(s)(1, [1.5, -2.0]),
          "01|.00000000000000|3ff8000000000000|c000000000000000",
          "01|.00000000000000|000000000000f83f|00000000000000c0")


def test_array_wrong_length_is_an_encode_error():
    with pytest.raises(EncodeError):
        pycdr.encode(tc.array(tc.long, 3), [1, 2])


# --------------------------------------------------------------------------
# alias and exception
# --------------------------------------------------------------------------
def test_alias_encodes_as_its_type():
    Count = tc.alias("IDL:Count:1.0", "Count", tc.ulong)
    Names = tc.alias("IDL:Names:1.0", "Names", tc.sequence(tc.string))
    check(Count, 5, "00000005", "05000000")
    check(Names, ["a"], "00000001|00000002|61|00", "01000000|02000000|61|00")
    check(tc.alias("IDL:C2:1.0", "C2", Count), 6, "00000006", "06000000")


def test_exception_is_its_repository_id_then_its_members():
    # 9.3.2.7: "Exceptions are encoded as a string followed by exception members,
    # if any. The string contains the RepositoryId for the exception."
    E = tc.exception("IDL:Oops:1.0", "Oops", [("code", tc.short), ("why", tc.string)])
    cls = class_for(E)
    value = cls(3, "no")
    assert isinstance(value, Exception)
    check(E, value, "0000000d|49444c3a4f6f70733a312e3000|.00|0003|00000003|6e6f|00",
          "0d000000|49444c3a4f6f70733a312e3000|.00|0300|03000000|6e6f|00")
    empty = tc.exception("IDL:Empty:1.0", "Empty")
    check(empty, class_for(empty)(), "0000000e|49444c3a456d7074793a312e3000",
          "0e000000|49444c3a456d7074793a312e3000")
    # Another exception's id where this one was expected is a violation.
    other = bytes.fromhex("0000000e") + b"IDL:Other:1.0\0"
    with pytest.raises(InvalidValueError):
        pycdr.decode(empty, other)
    warnings = []
    assert pycdr.decode(empty, other, lenient=True, warnings=warnings) == class_for(empty)()
    assert [w.code for w in warnings] == ["exception-id"]


# --------------------------------------------------------------------------
# any (9.3.2.? "any": TypeCode then value) and TypeCode values (9.3.5)
# --------------------------------------------------------------------------
def test_any_of_simple_types():
    check(tc.any, Any(tc.long, 5), "00000003|00000005", "03000000|05000000")
    check(tc.any, Any(tc.string, "Hi"), "00000012|00000000|00000003|4869|00",
          "12000000|00000000|03000000|4869|00")
    check(tc.any, Any(tc.double, 1.5), "00000007|.00000000|3ff8000000000000",
          "07000000|.00000000|000000000000f83f")
    check(tc.any, Any(tc.null), "00000000", "00000000")


def test_any_holding_a_typecode():
    # the value of a tk_TypeCode any is itself a TypeCode: kind 12, then kind 3 (long)
    check(tc.any, Any(tc.TypeCode, tc.long), "0000000c|00000003", "0c000000|03000000")


def test_any_of_enum_has_encapsulated_typecode():
    E = tc.enum("IDL:E:1.0", "E", ["a", "b"])
    # tk_enum = 17 (0x11); parameters in an encapsulation: byte order, id, name, count, names
    be = ("00000011|0000002e|00|.000000|0000000a|49444c3a453a312e3000|.0000"
          "|00000002|4500|.0000|00000002|00000002|6100|.0000|00000002|6200"
          "|.0000|00000001")
    le = ("11000000|2e000000|01|.000000|0a000000|49444c3a453a312e3000|.0000"
          "|02000000|4500|.0000|02000000|02000000|6100|.0000|02000000|6200"
          "|.0000|01000000")
    check(tc.any, Any(E, 1), be, le)


def test_any_with_typecode_encapsulation_in_the_other_byte_order():
    # 9.3.3: an encapsulation carries its own byte order. A little-endian stream
    # whose TypeCode parameters were written big-endian (0x00 byte-order octet).
    E = tc.enum("IDL:E:1.0", "E", ["a", "b"])
    data = h("11000000|2e000000|00|.000000|0000000a|49444c3a453a312e3000|.0000"
             "|00000002|4500|.0000|00000002|00000002|6100|.0000|00000002|6200"
             "|.0000|01000000")
    value = pycdr.decode(tc.any, data, little=True)
    assert value.tc.equal(E)
    assert value.value == 1 and value.value.name == "b"


def test_object_reference_nil():
    # nil: empty type id (length 1, NUL) and no profiles
    obj = tc.objref("IDL:Foo:1.0", "Foo")
    check(obj, None, "00000001|00|.000000|00000000", "01000000|00|.000000|00000000")


def test_object_reference_with_profiles():
    obj = tc.objref("IDL:Foo:1.0", "Foo")
    ior = IOR("IDL:X:1.0", (TaggedProfile(0, b"\x00\x01\x02"), TaggedProfile(1, b"\x07")))
    check(obj, ior,
          "0000000a|49444c3a583a312e3000|.0000|00000002"
          "|00000000|00000003|000102|.00|00000001|00000001|07",
          "0a000000|49444c3a583a312e3000|.0000|02000000"
          "|00000000|03000000|000102|.00|01000000|01000000|07")


# --------------------------------------------------------------------------
# Alignment relative to an origin (9.3.1: "aligned on their natural boundaries
# ... relative to the beginning of the octet stream")
# --------------------------------------------------------------------------
@pytest.mark.parametrize("k", range(8))
def test_long_at_every_offset(k):
    pad = "00" * ((4 - k % 4) % 4)
    assert pycdr.encode(tc.long, 1, offset=k) == h(pad + "00000001")
    assert pycdr.decode(tc.long, h(pad + "00000001"), offset=k) == 1
    pad8 = "00" * ((8 - k) % 8)
    assert pycdr.encode(tc.double, 1.5, offset=k, little=True) == h(pad8 + "000000000000f83f")
    assert pycdr.decode(tc.double, h(pad8 + "000000000000f83f"), offset=k, little=True) == 1.5


BinStruct = tc.struct("IDL:BinStruct:1.0", "BinStruct", [
    ("s", tc.short), ("c", tc.char), ("l", tc.long), ("o", tc.octet),
    ("d", tc.double), ("pad", tc.array(tc.octet, 8))])
BIN_VALUE = class_for(BinStruct)(0x0102, "a", 0x03040506, 7, 1.5, bytes(range(8, 16)))
S, C, L, O, D, P = ("0102", "61", "03040506", "07", "3ff8000000000000", "08090a0b0c0d0e0f")
SL, LL, DL = "0201", "06050403", "000000000000f83f"

# BinStruct laid out from each start offset k (mod 8); padding written out.
BINSTRUCT_AT = {
    0: f"{S}|{C}|.00|{L}|{O}|.00000000000000|{D}|{P}",
    1: f".00|{S}|{C}|.000000|{L}|{O}|.000000|{D}|{P}",
    2: f"{S}|{C}|.000000|{L}|{O}|.000000|{D}|{P}",
    3: f".00|{S}|{C}|.00|{L}|{O}|.000000|{D}|{P}",
    4: f"{S}|{C}|.00|{L}|{O}|.000000|{D}|{P}",
    5: f".00|{S}|{C}|.000000|{L}|{O}|.00000000000000|{D}|{P}",
    6: f"{S}|{C}|.000000|{L}|{O}|.00000000000000|{D}|{P}",
    7: f".00|{S}|{C}|.00|{L}|{O}|.00000000000000|{D}|{P}",
}


def test_binstruct_is_32_bytes_at_offset_0():
    assert len(h(BINSTRUCT_AT[0])) == 32
    check(BinStruct, BIN_VALUE, BINSTRUCT_AT[0],
          f"{SL}|{C}|.00|{LL}|{O}|.00000000000000|{DL}|{P}")


@pytest.mark.parametrize("k", range(8))
@pytest.mark.parametrize("little", [False, True])
def test_binstruct_at_every_offset(k, little):
    text = BINSTRUCT_AT[k]
    if little:
        text = text.replace(S, SL).replace(L, LL).replace(D, DL)
    data = h(text)
    assert pycdr.encode(BinStruct, BIN_VALUE, offset=k, little=little).hex() == data.hex()
    assert pycdr.decode(BinStruct, data, offset=k, little=little) == BIN_VALUE
    # the same holds at k + 8 (alignment is mod 8)
    assert pycdr.encode(BinStruct, BIN_VALUE, offset=k + 8, little=little) == data


@pytest.mark.parametrize("k", range(8))
def test_sequence_of_binstruct_at_every_offset(k):
    # the length is aligned on 4, then each element from wherever it starts
    value = [BIN_VALUE, BIN_VALUE]
    data = pycdr.encode(tc.sequence(BinStruct), value, offset=k)
    lead = (4 - k % 4) % 4
    assert data[:lead + 4] == bytes(lead) + h("00000002")
    first_at = k + lead + 4
    first = h(BINSTRUCT_AT[first_at % 8])
    assert data[lead + 4:lead + 4 + len(first)] == first
    second_at = first_at + len(first)
    assert data[lead + 4 + len(first):] == h(BINSTRUCT_AT[second_at % 8])
    assert pycdr.decode(tc.sequence(BinStruct), data, offset=k) == value


CharLongLong = tc.struct("IDL:CLL:1.0", "CLL", [("c1", tc.char), ("ll", tc.longlong)])
CLL_PADS = {0: 7, 1: 6, 2: 5, 3: 4, 4: 3, 5: 2, 6: 1, 7: 0}   # octets between c1 and ll


@pytest.mark.parametrize("k", range(8))
@pytest.mark.parametrize("little", [False, True])
def test_char_longlong_struct_at_every_offset(k, little):
    ll = "fffffffffffffffe" if not little else "feffffffffffffff"
    data = h("78|." + "00" * CLL_PADS[k] + "|" + ll)
    value = class_for(CharLongLong)("x", -2)
    assert pycdr.encode(CharLongLong, value, offset=k, little=little).hex() == data.hex()
    assert pycdr.decode(CharLongLong, data, offset=k, little=little) == value


# --------------------------------------------------------------------------
# Encapsulations (9.3.3): first octet is the byte order, alignment from it.
# --------------------------------------------------------------------------
def test_encapsulation_aligns_from_the_byte_order_octet():
    assert pycdr.encode_encapsulation(tc.long, 5) == h("00|.000000|00000005")
    assert pycdr.encode_encapsulation(tc.long, 5, little=True) == h("01|.000000|05000000")
    assert pycdr.encode_encapsulation(tc.double, 1.5) == h("00|.00000000000000|3ff8000000000000")
    assert pycdr.encode_encapsulation(tc.octet, 9) == h("00|09")
    assert pycdr.decode_encapsulation(tc.long, h("01|.000000|05000000")) == 5
    assert pycdr.decode_encapsulation(tc.long, h("00|.000000|00000005")) == 5


def test_encapsulation_of_binstruct_is_laid_out_from_offset_1():
    assert pycdr.encode_encapsulation(BinStruct, BIN_VALUE) == h("00|" + BINSTRUCT_AT[1])
    assert pycdr.decode_encapsulation(BinStruct, h("00|" + BINSTRUCT_AT[1])) == BIN_VALUE


def test_nested_encapsulation_with_other_byte_order():
    # struct { octet o; sequence<octet> encap; } where encap is itself an
    # encapsulation of a long in the other byte order: the inner bytes keep
    # their own order, whatever the outer one is.
    from pycdr.codec.cdr import CDRReader
    inner_le = h("01|.000000|05000000")
    outer = tc.struct("IDL:Enc:1.0", "Enc", [("o", tc.octet), ("encap", tc.sequence(tc.octet))])
    value = class_for(outer)(1, inner_le)
    data = h("01|.000000|00000008|01000000|05000000")
    assert pycdr.encode(outer, value) == data
    r = CDRReader(data)
    assert r.read_octet() == 1
    sub = r.read_encapsulation()
    assert sub.little is True
    assert sub.read_long() == 5
    assert r.remaining == 0
    # and the reader's alignment inside restarts at the byte-order octet (offset 8 here)
    r = CDRReader(h("00000009|00|.000000|00000007|ff"))
    sub = r.read_encapsulation()
    assert sub.read_long() == 7
    assert sub.read_octet() == 0xFF
