"""Valuetypes on the wire (CORBA 3.x Part 2, 9.3.4 "Value Types"), by hand.

value tag 0x7fffff00 | flags (0x02: one repository id, 0x06: a list of ids,
0x08: chunked); null is 0; an indirection is 0xffffffff then a long offset
measured from the offset field (9.3.4.3, the same convention as TypeCode
indirection); repository ids may themselves be indirections (9.3.4.3);
chunks are a positive long length, and a chunked value ends with the end tag
-(nesting level) (9.3.4.4 and 9.3.4.5).
"""

import pytest

import pycdr
from pycdr.codec import tc
from pycdr.errors import DecodeError, NotSupportedError, TruncatedError
from pycdr.codec.values import ValueBase, class_for
from test_cdr_types import h

V = tc.value("IDL:V:1.0", "V", tc.VM_NONE, None, [("a", tc.long)])
VAL_V5_BE = "7fffff02|0000000a|49444c3a563a312e3000|.0000|00000005"
VAL_V5_LE = "02ffff7f|0a000000|49444c3a563a312e3000|.0000|05000000"


def test_null_value():
    assert pycdr.encode(V, None) == h("00000000")
    assert pycdr.decode(V, h("00000000")) is None
    assert pycdr.decode(V, h("00000000"), little=True) is None


def test_plain_value_both_byte_orders():
    value = class_for(V)(5)
    assert isinstance(value, ValueBase)
    assert pycdr.encode(V, value).hex() == h(VAL_V5_BE).hex()
    assert pycdr.encode(V, value, little=True).hex() == h(VAL_V5_LE).hex()
    for data, little in ((VAL_V5_BE, False), (VAL_V5_LE, True)):
        decoded = pycdr.decode(V, h(data), little=little)
        assert type(decoded).__name__ == "V" and decoded.a == 5


def test_value_tag_is_aligned_on_4():
    s = tc.struct("IDL:OV:1.0", "OV", [("o", tc.octet), ("v", V)])
    data = h("01|.000000|" + VAL_V5_BE)
    assert pycdr.encode(s, class_for(s)(1, class_for(V)(5))) == data
    assert pycdr.decode(s, data).v.a == 5


Pair = tc.struct("IDL:Pair:1.0", "Pair", [("x", V), ("y", V)])


def test_shared_value_is_an_indirection():
    # the second reference to the same value: 0xffffffff, then 0 - 28 = -28
    shared = class_for(V)(5)
    data = h(VAL_V5_BE + "|ffffffff|ffffffe4")
    assert pycdr.encode(Pair, class_for(Pair)(shared, shared)).hex() == data.hex()
    decoded = pycdr.decode(Pair, data)
    assert decoded.x is decoded.y
    assert decoded.x.a == 5


def test_distinct_equal_values_are_not_shared():
    data = pycdr.encode(Pair, class_for(Pair)(class_for(V)(5), class_for(V)(5)))
    assert data == h(VAL_V5_BE + "|" + VAL_V5_BE)


def test_value_indirection_pointing_nowhere():
    with pytest.raises(DecodeError):
        pycdr.decode(Pair, h(VAL_V5_BE + "|ffffffff|fffffff0"))


def test_repository_id_indirection_on_decode():
    # y's repository id is an indirection to x's (the string's length at offset 4):
    # 4 - 32 = -28
    data = h(VAL_V5_BE + "|7fffff02|ffffffff|ffffffe4|00000006")
    decoded = pycdr.decode(Pair, data)
    assert decoded.x.a == 5 and decoded.y.a == 6 and decoded.x is not decoded.y
    assert type(decoded.y) is type(decoded.x)


def test_repository_id_indirection_to_nothing():
    with pytest.raises(DecodeError):
        pycdr.decode(Pair, h(VAL_V5_BE + "|7fffff02|ffffffff|fffffff0|00000006"))


Base = tc.value("IDL:Base:1.0", "Base", tc.VM_NONE, None, [("a", tc.long)])
Derived = tc.value("IDL:Derived:1.0", "Derived", tc.VM_TRUNCATABLE, Base, [("b", tc.long)])
# tag 0x7fffff0e: chunked (0x08) + list of ids (0x06); 2 ids; one chunk of 8
# octets holding a (base state first) and b; end tag -1.  CORBA 3.x 9.3.4.5
# (15.3.4.6 in 2.x): "The end tag is a negative long whose value is the
# negation of the absolute nesting depth of the value type ending ... The
# outermost value type will always be terminated by an end tag with a value
# of -1" -- the same four octets as an indirection marker; where a chunk has
# ended, they are the end tag.
DERIVED_BE = ("7fffff0e|00000002|00000010|49444c3a446572697665643a312e3000"
              "|0000000d|49444c3a426173653a312e3000|.000000"
              "|00000008|00000001|00000002|ffffffff")
DERIVED_LE = ("0effff7f|02000000|10000000|49444c3a446572697665643a312e3000"
              "|0d000000|49444c3a426173653a312e3000|.000000"
              "|08000000|01000000|02000000|ffffffff")


def test_truncatable_value_is_chunked_with_id_list():
    value = class_for(Derived)(1, 2)
    assert (value.a, value.b) == (1, 2)
    assert pycdr.encode(Base, value).hex() == h(DERIVED_BE).hex()
    assert pycdr.encode(Base, value, little=True).hex() == h(DERIVED_LE).hex()
    decoded = pycdr.decode(Derived, h(DERIVED_BE))
    assert (decoded.a, decoded.b) == (1, 2)


@pytest.mark.parametrize("data,little", [(DERIVED_BE, False), (DERIVED_LE, True)])
def test_unknown_derived_type_is_truncated_to_its_base(data, little):
    # The decoder knows only Base (the formal type): it truncates, skipping b.
    decoded = pycdr.decode(Base, h(data), little=little)
    assert decoded.a == 1
    assert decoded._tc.id() == "IDL:Base:1.0"
    assert not hasattr(decoded, "b")


def test_truncated_value_followed_by_more_data():
    s = tc.struct("IDL:BT:1.0", "BT", [("v", Base), ("z", tc.long)])
    decoded = pycdr.decode(s, h(DERIVED_BE + "|00000009"))
    assert decoded.v.a == 1 and decoded.z == 9


def test_truncated_value_split_over_two_chunks():
    # the same Derived state in two chunks (4 + 4 octets): a chunk may end
    # between two members (9.3.4.4)
    data = h("7fffff0e|00000002|00000010|49444c3a446572697665643a312e3000"
             "|0000000d|49444c3a426173653a312e3000|.000000"
             "|00000004|00000001|00000004|00000002|ffffffff")
    assert pycdr.decode(Base, data).a == 1
    decoded = pycdr.decode(Derived, data)
    assert (decoded.a, decoded.b) == (1, 2)


def test_unknown_type_without_truncatable_base_is_an_error():
    data = h("7fffff02|0000000a|49444c3a583a312e3000|.0000|00000005")     # IDL:X:1.0
    with pytest.raises(DecodeError) as info:
        pycdr.decode(V, data)
    assert info.value.offset == 0


def test_chunk_longer_than_the_data():
    data = h("7fffff0e|00000002|00000010|49444c3a446572697665643a312e3000"
             "|0000000d|49444c3a426173653a312e3000|.000000"
             "|00000100|00000001|00000002|ffffffff")
    with pytest.raises(TruncatedError):
        pycdr.decode(Base, data)


def test_truncated_value_stream():
    data = h(VAL_V5_BE)
    for cut in range(len(data)):
        with pytest.raises(DecodeError):
            pycdr.decode(V, data[:cut])


Box = tc.value_box("IDL:B:1.0", "B", tc.string)


def test_boxed_value():
    # a value box: value tag with its id, then the boxed type's encoding
    data = h("7fffff02|0000000a|49444c3a423a312e3000|.0000|00000003|6869|00")
    assert pycdr.encode(Box, "hi").hex() == data.hex()
    assert pycdr.decode(Box, data) == "hi"
    assert pycdr.encode(Box, None) == h("00000000")
    assert pycdr.decode(Box, h("00000000")) is None
    le = h("02ffff7f|0a000000|49444c3a423a312e3000|.0000|03000000|6869|00")
    assert pycdr.encode(Box, "hi", little=True) == le
    assert pycdr.decode(Box, le, little=True) == "hi"


def test_value_with_nested_value_member():
    Outer = tc.value("IDL:O:1.0", "O", tc.VM_NONE, None, [("inner", V), ("z", tc.short)])
    value = class_for(Outer)(class_for(V)(5), 3)
    data = h("7fffff02|0000000a|49444c3a4f3a312e3000|.0000|" + VAL_V5_BE + "|0003")
    assert pycdr.encode(Outer, value).hex() == data.hex()
    decoded = pycdr.decode(Outer, data)
    assert decoded.inner.a == 5 and decoded.z == 3


def test_custom_value_is_not_supported():
    Custom = tc.value("IDL:C:1.0", "C", tc.VM_CUSTOM, None, [("a", tc.long)])
    with pytest.raises(NotSupportedError):
        pycdr.encode(Custom, class_for(Custom)(1))
    with pytest.raises(NotSupportedError):
        pycdr.decode(Custom, h("7fffff0a|0000000a|49444c3a433a312e3000|.0000"
                               "|00000004|00000001|ffffffff"))


def test_cyclic_value_points_back_at_its_own_tag():
    # valuetype L { long n; L next; } whose next is itself: the indirection's
    # offset field is at 28, the value tag at 0 -> -28
    L = tc.value("IDL:L:1.0", "L", tc.VM_NONE, None,
                 [("n", tc.long), ("next", tc.recursive("IDL:L:1.0"))])
    node = class_for(L)(1, None)
    node.next = node
    data = h("7fffff02|0000000a|49444c3a4c3a312e3000|.0000|00000001|ffffffff|ffffffe4")
    assert pycdr.encode(L, node).hex() == data.hex()
    decoded = pycdr.decode(L, data)
    assert decoded.n == 1 and decoded.next is decoded
