"""Fixed-size struct types, and values for them, shared by the tests of the
Python plan's column writer (test_plan_columns.py) and column reader
(test_plan_column_reads.py)."""

from __future__ import annotations

from pycdr.codec import tc
from pycdr.codec.values import class_for

# Every member kind the column writer and reader take (one flat slot each).
ALL_KINDS = tc.struct("IDL:test/Columns:1.0", "Columns", [
    ("o", tc.octet), ("d", tc.double), ("b", tc.boolean), ("s", tc.short), ("c", tc.char),
    ("ul", tc.ulong), ("f", tc.float), ("us", tc.ushort), ("ll", tc.longlong),
    ("ull", tc.ulonglong), ("l", tc.long), ("pad", tc.array(tc.octet, 3)),
    ("name", tc.array(tc.char, 2))])
# The marshal benchmark's struct, and seed 000's other one.
BIN_STRUCT = tc.struct("IDL:BinStruct:1.0", "BinStruct", [
    ("s", tc.short), ("c", tc.char), ("l", tc.long), ("o", tc.octet), ("d", tc.double),
    ("pad", tc.array(tc.octet, 8))])
CHAR_LONG_LONG = tc.struct("IDL:CharLongLong:1.0", "CharLongLong", [
    ("c1", tc.char), ("ll", tc.longlong)])
# Its elements after the first are 4 octets from an odd phase (the first may be 3).
SHORT_OCTET = tc.struct("IDL:test/ShortOctet:1.0", "ShortOctet", [("s", tc.short), ("o", tc.octet)])
# A nested struct member has no column packer or reader.
NESTED = tc.struct("IDL:test/Nested:1.0", "Nested", [("inner", SHORT_OCTET), ("l", tc.long)])


def all_kinds(i: int, **changes):
    fields = dict(o=i % 256, d=i / 7 - 3, b=i % 2 == 0, s=i - 2**15,
                  c=chr(32 + i % 224), ul=(i * 7919) % 2**32, f=i * 0.5, us=65535 - i % 65536,
                  ll=-2**63 + i, ull=2**64 - 1 - i, l=-i, pad=bytes([i % 256, 1, 2]),
                  name=chr(97 + i % 26) + "\xe9")
    fields.update(changes)
    return class_for(ALL_KINDS)(**fields)


def bin_struct(i: int, **changes):
    fields = dict(s=i - 1000, c=chr(33 + i % 90), l=i * 65537 - 2**31, o=i % 256, d=i * 1.5 - 0.25,
                  pad=bytes(range(i % 8, i % 8 + 8)))
    fields.update(changes)
    return class_for(BIN_STRUCT)(**fields)


def char_long_long(i: int):
    return class_for(CHAR_LONG_LONG)(chr(i % 256), i * 3 - 2**40)
