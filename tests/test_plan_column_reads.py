"""The pure-Python plan's column reader for sequences of fixed-size structs
(pycdr.codec.plan.SequenceNode._read_columns, issue 7): the same values, of the same
types, as the row path (iter_unpack and the struct's converter) and the member
path; where those refuse the input, the same error (type, message, offset, path).

The row path (``FlatCodec.convert_all``) is run by raising the column reader's
threshold (``row_path``), the member path by also switching the fixed-size struct
paths off (``member_path``).
``column_reads`` counts the sequences the column reader really decoded, so a test
cannot pass by never reaching it.
"""

from __future__ import annotations

from contextlib import contextmanager
from unittest import mock

import pytest

from pycdr.codec import plan, tc, values
from pycdr.codec.plan import columns
from pycdr.codec.cdr import CDRReader, CDRWriter
from pycdr.errors import CDRError
from pycdr.codec.values import class_for

from flat_structs import (ALL_KINDS, BIN_STRUCT, CHAR_LONG_LONG, NESTED, SHORT_OCTET,
                          all_kinds, bin_struct, char_long_long)

MIN = columns._COLUMNS_READ_MIN

# One member, a boolean: the generated loop's one-name form.
FLAG = tc.struct("IDL:test/ColumnReadsFlag:1.0", "Flag", [("on", tc.boolean)])


def short_octet(i: int):
    return class_for(SHORT_OCTET)(i - 300, i % 256)


def flag(i: int):
    return class_for(FLAG)(i % 5 == 1)


def nested(i: int):
    return class_for(NESTED)(short_octet(i), i)


@pytest.fixture(autouse=True)
def columns_for_every_width(monkeypatch):
    """The column reader for structs of any number of members (pycdr.codec.plan uses it
    only for narrow ones, where it is the faster path)."""
    monkeypatch.setattr(columns, "_COLUMNS_READ_MAX_MEMBERS", 1 << 62)


def row_path():
    return mock.patch.object(columns, "_COLUMNS_READ_MIN", 1 << 62)


@contextmanager
def member_path(monkeypatch):
    with monkeypatch.context() as patch, row_path():
        patch.setattr(plan.SequenceNode, "_read_flat", lambda *args: None)
        patch.setattr(plan.StructNode, "read", plan.StructNode.read_members)
        yield


@contextmanager
def column_reads():
    """The number of sequences the column reader decoded (the real method runs)."""
    decoded = []
    real = plan.SequenceNode._read_columns

    def counting(self, *args):
        out = real(self, *args)
        if out is not None:
            decoded.append(len(out))
        return out
    plan.SequenceNode._read_columns = counting
    try:
        yield decoded
    finally:
        plan.SequenceNode._read_columns = real


def encoded(t, value, *, little: bool, prefix: int) -> bytes:
    """The octets of ``value`` written after ``prefix`` octets (so the sequence and
    its first element start at every phase)."""
    w = CDRWriter(little=little)
    w.buf += bytes(prefix)
    plan.plan_for(t).write(w, value)
    return w.getvalue()


def outcome(t, data, *, little: bool, prefix: int):
    """(repr of the value, position after it) or the error's details."""
    r = CDRReader(data, start=prefix, origin=0, little=little)
    try:
        value = plan.plan_for(t).read(r)
    except CDRError as e:
        return type(e), str(e), e.message, e.offset, e.path
    # repr, not ==: True == 1 and 1.0 == 1, and the types must agree too.
    return repr(value), r.pos


def three_paths(t, data, monkeypatch, **options):
    with column_reads() as decoded:
        columns = outcome(t, data, **options)
    with row_path():
        rows = outcome(t, data, **options)
    with member_path(monkeypatch):
        members = outcome(t, data, **options)
    return columns, rows, members, decoded


@pytest.mark.parametrize("little", [False, True])
@pytest.mark.parametrize("t, make", [(ALL_KINDS, all_kinds), (BIN_STRUCT, bin_struct),
                                     (CHAR_LONG_LONG, char_long_long),
                                     (SHORT_OCTET, short_octet), (FLAG, flag)],
                         ids=["all-kinds", "BinStruct", "CharLongLong", "ShortOctet", "Flag"])
@pytest.mark.parametrize("count", [MIN + 1, MIN + 2, 300])
def test_same_values_every_phase(t, make, count, little, monkeypatch):
    value = [make(i) for i in range(count)]
    for prefix in range(8):
        data = encoded(tc.sequence(t), value, little=little, prefix=prefix)
        columns, rows, members, decoded = three_paths(tc.sequence(t), data, monkeypatch,
                                                      little=little, prefix=prefix)
        assert columns == rows == members
        assert columns == (repr(value), len(data))
        assert decoded == [count - 1]       # every element after the first


@pytest.mark.parametrize("little", [False, True])
def test_arrays_and_trailing_data(little, monkeypatch):
    value = [bin_struct(i) for i in range(MIN + 5)]
    t = tc.array(BIN_STRUCT, MIN + 5)
    for prefix in (0, 3):
        data = encoded(t, value, little=little, prefix=prefix) + b"\x7f" * 9
        columns, rows, members, decoded = three_paths(t, data, monkeypatch, little=little,
                                                      prefix=prefix)
        assert columns == rows == members
        assert columns[1] == len(data) - 9 and decoded == [MIN + 4]


def test_short_sequences_and_other_shapes_take_the_row_path(monkeypatch):
    for t, value in ((BIN_STRUCT, [bin_struct(i) for i in range(MIN)]),
                     (NESTED, [nested(i) for i in range(300)])):
        data = encoded(tc.sequence(t), value, little=False, prefix=0)
        columns, rows, members, decoded = three_paths(tc.sequence(t), data, monkeypatch,
                                                      little=False, prefix=0)
        assert columns == rows == members == (repr(value), len(data))
        assert decoded == []


def boolean_offsets(count: int, little: bool, prefix: int):
    """The offset of each element's boolean in a sequence<ColumnReads>."""
    t = tc.sequence(ALL_KINDS)
    base = encoded(t, [all_kinds(i, b=False) for i in range(count)], little=little,
                   prefix=prefix)
    offsets = []
    for i in range(count):
        value = [all_kinds(j, b=j == i) for j in range(count)]
        changed = encoded(t, value, little=little, prefix=prefix)
        (offset,) = [k for k, (a, b) in enumerate(zip(base, changed)) if a != b]
        offsets.append(offset)
    return base, offsets


@pytest.mark.parametrize("little", [False, True])
@pytest.mark.parametrize("where", [0, 1, MIN, "last"])
@pytest.mark.parametrize("octet", [2, 255])
def test_bad_boolean_same_error(where, octet, little, monkeypatch):
    count = 2 * MIN
    index = count - 1 if where == "last" else where
    base, offsets = boolean_offsets(count, little, prefix=1)
    data = bytearray(base)
    data[offsets[index]] = octet
    columns, rows, members, _ = three_paths(tc.sequence(ALL_KINDS), bytes(data), monkeypatch,
                                            little=little, prefix=1)
    assert columns == rows == members
    assert isinstance(columns[0], type) and columns[3] == offsets[index]
    assert columns[4].startswith(f"[{index}]")


@pytest.mark.parametrize("little", [False, True])
def test_truncated_same_error(little, monkeypatch):
    value = [char_long_long(i) for i in range(MIN * 3)]
    data = encoded(tc.sequence(CHAR_LONG_LONG), value, little=little, prefix=0)
    for cut in (1, 8, 9, 16 * MIN):
        columns, rows, members, decoded = three_paths(tc.sequence(CHAR_LONG_LONG),
                                                      data[:-cut], monkeypatch, little=little,
                                                      prefix=0)
        assert columns == rows == members
        assert isinstance(columns[0], type) and decoded == []


def test_registered_class_with_its_own_init(monkeypatch):
    """A class whose instances are not made directly is called, as the row
    converter calls it."""
    made = []

    class Point(values.Struct):
        __slots__ = ("c1", "ll")
        _tc = CHAR_LONG_LONG
        _fields = ("c1", "ll")

        def __init__(self, c1, ll):
            made.append(ll)
            self.c1, self.ll = c1, ll

    t = tc.struct("IDL:test/ColumnReadsPoint:1.0", "CharLongLong",
                  [("c1", tc.char), ("ll", tc.longlong)])
    Point._tc = t
    monkeypatch.setitem(values._registry, t.id(), Point)
    value = [Point(chr(65 + i % 26), i - 50) for i in range(100)]
    made.clear()
    data = encoded(tc.sequence(t), value, little=True, prefix=0)
    with column_reads() as decoded:
        got = outcome(tc.sequence(t), data, little=True, prefix=0)
    assert got == (repr(value), len(data)) and decoded == [99]
    assert made == [i - 50 for i in range(100)]


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_input_buffers_are_not_left_locked(kind):
    value = [bin_struct(i) for i in range(100)]
    data = kind(encoded(tc.sequence(BIN_STRUCT), value, little=True, prefix=0))
    with column_reads() as decoded:
        got = outcome(tc.sequence(BIN_STRUCT), data, little=True, prefix=0)
    assert got[0] == repr(value) and decoded == [99]
    if kind is bytearray:
        data.extend(b"more")              # BufferError if a view were still held
    else:
        data.release()
