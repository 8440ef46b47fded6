"""The pure-Python plan's element packer for sequences of fixed-size structs
(pycdr.codec.plan.columns._element_packer and SequenceNode._write_packed, issue 7): the same
octets as the general path (FlatCodec.flatten, then member by member), and where
that path rejects a value, the same error (type, message, offset, path) with the
writer left as it leaves it.

The general path is run with the packer and the column writer switched off
(``element_path`` of tests/test_plan_columns.py); ``packer_calls`` checks the
packer really wrote (or really declined).  Sequences here are shorter than the
column writer's threshold, or of structs too wide for it, so that between the
two paths only the packer differs.
"""

from __future__ import annotations

import random
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pycdr import codesets
from pycdr.codec import marshal, plan, tc
from pycdr.codec.plan import columns
from pycdr.codec.values import class_for
import test_plan_columns as columns_test
from test_plan_columns import (ALL_KINDS, BIN_STRUCT, CHAR_LONG_LONG, NESTED, ODD_MEMBERS,
                               SHORT_OCTET, WITH_ENUM, all_kinds, bin_struct,
                               c_and_python_octets, char_long_long, member_values, vars_of)

SHORT = columns._COLUMNS_MIN - 1        # the longest sequence the column writer leaves alone
LONG_OCTET = tc.struct("IDL:test/LongOctet:1.0", "LongOctet", [("o", tc.octet), ("l", tc.long),
                                                                ("o2", tc.octet)])
SHAPES = [(BIN_STRUCT, bin_struct), (ALL_KINDS, all_kinds), (CHAR_LONG_LONG, char_long_long),
          (SHORT_OCTET, lambda i: class_for(SHORT_OCTET)(i - 300, i % 256))]
SHAPE_IDS = ["BinStruct", "all-kinds", "CharLongLong", "ShortOctet"]


@contextmanager
def packer_calls():
    """Records what each SequenceNode._write_packed call returned (True: it wrote)."""
    calls = []
    real = plan.SequenceNode._write_packed

    def recording(self, *args):
        wrote = real(self, *args)
        calls.append(wrote)
        return wrote
    plan.SequenceNode._write_packed = recording
    try:
        yield calls
    finally:
        plan.SequenceNode._write_packed = real


def both_paths(t, value, **writer_options):
    return columns_test.both_paths(t, value, packer_calls, **writer_options)


@pytest.mark.parametrize("little", [False, True])
@pytest.mark.parametrize("t, make", SHAPES, ids=SHAPE_IDS)
def test_same_octets_every_length_and_phase(t, make, little):
    """Lengths 1 to the column threshold, every writer offset, two buffer prefixes,
    both byte orders: the packer writes, and what the general path writes."""
    seq = tc.sequence(t)
    for count in range(1, SHORT + 1):
        value = [make(i) for i in range(count)]
        for offset in range(8):
            for prefix in (0, 3):
                packed, general, calls = both_paths(seq, value, little=little, offset=offset,
                                                    prefix=prefix)
                assert packed == general
                assert general[1] is None
                assert calls == [True]


@pytest.mark.parametrize("little", [False, True])
def test_wide_structs_of_any_length(little):
    """Structs with more members than the column writer takes: the packer at
    every length, the column threshold and beyond included."""
    for count in (SHORT + 1, 3 * SHORT, 2000):
        value = [bin_struct(i) for i in range(count)]
        for offset in (0, 1, 6):
            packed, general, calls = both_paths(tc.sequence(BIN_STRUCT), value, little=little,
                                                offset=offset)
            assert packed == general and general[1] is None and calls == [True]


@pytest.mark.parametrize("little", [False, True])
def test_arrays_and_bounded_sequences(little):
    value = [bin_struct(i) for i in range(5)]
    for t in (tc.array(BIN_STRUCT, 5), tc.sequence(BIN_STRUCT, 5)):
        for offset in range(8):
            packed, general, calls = both_paths(t, value, little=little, offset=offset)
            assert packed == general and general[1] is None and calls == [True]
    for t in (tc.array(BIN_STRUCT, 4), tc.sequence(BIN_STRUCT, 4)):
        packed, general, calls = both_paths(t, value, little=little)
        assert packed == general and general[1] is not None and calls == []


@pytest.mark.parametrize("t, value", [
    (NESTED, [class_for(NESTED)(class_for(SHORT_OCTET)(i, 1), i) for i in range(20)]),
    (WITH_ENUM, [class_for(WITH_ENUM)(i % 2, i) for i in range(20)]),
], ids=["nested-struct", "enum-member"])
def test_members_the_packer_does_not_take(t, value):
    assert plan.plan_for(tc.sequence(t)).pack_elements is None
    packed, general, calls = both_paths(tc.sequence(t), value, offset=1)
    assert packed == general and general[1] is None and calls == []


def test_elements_after_the_first_at_another_phase():
    """LongOctet's first element may start at any phase; the later ones start one
    past a multiple of 4 (after its trailing octet): each Struct at its phase."""
    make = class_for(LONG_OCTET)
    seq = tc.sequence(LONG_OCTET)
    for count in range(1, 6):
        value = [make(i, -i, i % 7) for i in range(count)]
        for offset in range(8):
            packed, general, calls = both_paths(seq, value, offset=offset)
            assert packed == general and general[1] is None and calls == [True]


class IndexedInt(int):
    """An int whose __index__ disagrees with its value: NumberNode writes __index__."""

    def __index__(self):
        return 7


class FloatSub(float):
    """A float whose __float__ disagrees with its value: NumberNode writes __float__."""

    def __float__(self):
        return 2.5


class StrSub(str):
    pass


# Values the exact type checks must send to the general path although struct
# would take them (and write them differently or not at all).
SUBCLASS_MEMBERS = [dict(s=IndexedInt(3)), dict(l=IndexedInt(-3)), dict(o=IndexedInt(3)),
                    dict(d=FloatSub(1.5)), dict(c=StrSub("a")), dict(d=IndexedInt(4)),
                    dict(pad=bytearray(range(8))), dict(pad=type("B", (bytes,), {})(bytes(8)))]


INT_FOR_DOUBLE = next(change for change in ODD_MEMBERS
                      if list(change.items()) == [("d", 1)] and type(change["d"]) is int)


@pytest.mark.parametrize("little", [False, True])
@pytest.mark.parametrize("change", ODD_MEMBERS + SUBCLASS_MEMBERS, ids=repr)
@pytest.mark.parametrize("count", [1, 2, 17, SHORT])
def test_odd_member_same_outcome(change, count, little):
    """A wrong-typed, wrong-length or out-of-range member in the first, a middle
    or the last element: the same error type, message, offset and path as the
    general path, with the writer holding what that path leaves; an odd value
    the general path takes: the same octets."""
    for index in sorted({0, count // 2, count - 1}):
        value = [bin_struct(i) for i in range(count)]
        value[index] = bin_struct(index, **change)
        for offset in (0, 3, 7):
            packed, general, calls = both_paths(tc.sequence(BIN_STRUCT), value, little=little,
                                                offset=offset)
            assert packed == general
            # Only an int for a double is packed (as float(int), like _float); every
            # other odd value is left to the general path to write or refuse.
            assert calls == [change is INT_FOR_DOUBLE]
            if general[1] is not None and len(general[1]) == 5:    # a CDRError
                assert general[1][4].startswith(f"[{index}]")


@pytest.mark.parametrize("change", [
    dict(b=2), dict(b=1), dict(b=0), dict(b=None), dict(us=-1), dict(ull=-1), dict(ull=True),
    dict(f=1e300), dict(f=1), dict(ll=2**63), dict(name="a"), dict(name="abc"),
    dict(name="\u20acb"), dict(name=b"ab"), dict(pad=b"ab"), dict(pad=bytearray(b"xyz")),
    dict(name=StrSub("ab")), dict(c="\xff"), dict(c="\u0100")], ids=repr)
def test_odd_member_all_kinds(change):
    for where in (0, 5, 9):
        value = [all_kinds(i) for i in range(10)]
        value[where] = all_kinds(where, **change)
        for little in (False, True):
            packed, general, _ = both_paths(tc.sequence(ALL_KINDS), value, little=little)
            assert packed == general


def test_latin1_chars_and_char_arrays_packed():
    """Non-ASCII Latin-1 in char and char[] members: packed, as the general path writes."""
    value = [all_kinds(i, c="\xe9", name="\xff\xe0") for i in range(5)]
    packed, general, calls = both_paths(tc.sequence(ALL_KINDS), value)
    assert packed == general and general[1] is None and calls == [True]


def test_other_char_code_set_not_packed():
    """A char code set other than Latin-1: not even tried (the general path encodes)."""
    value = [bin_struct(i) for i in range(5)]
    for tcs_c in (codesets.UTF_8, codesets.ASCII):
        packed, general, calls = both_paths(tc.sequence(BIN_STRUCT), value, tcs_c=tcs_c)
        assert packed == general and calls == []


def test_elements_of_other_shapes():
    """Dicts, subclass instances and tuples among the elements: whatever the
    general path does with them."""
    Sub = type("Sub", (class_for(BIN_STRUCT),), {})
    value = [bin_struct(i) for i in range(12)]
    value[5] = vars_of(bin_struct(5))
    value[7] = Sub(**vars_of(bin_struct(7)))
    value[9] = (1, "a", 2, 3, 4.0, bytes(8))
    packed, general, _ = both_paths(tc.sequence(BIN_STRUCT), value)
    assert packed == general and general[1] is not None     # the tuple is refused
    del value[9]
    packed, general, calls = both_paths(tc.sequence(BIN_STRUCT), value)
    assert packed == general and general[1] is None and calls == [False]
    del value[5]
    packed, general, calls = both_paths(tc.sequence(BIN_STRUCT), value)
    assert packed == general and calls == [True]     # a subclass instance is packed


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(member_values, min_size=1, max_size=SHORT), st.booleans(),
       st.integers(0, 7), st.randoms(use_true_random=False))
def test_generated_values_same_octets(members, little, offset, rng):
    value = [class_for(BIN_STRUCT)(**m) for m in members]
    if rng.random() < 0.3:     # now and then one member of one element out of range
        setattr(value[rng.randrange(len(value))], rng.choice("slo"), 2**40)
    packed, general, _ = both_paths(tc.sequence(BIN_STRUCT), value, little=little,
                                    offset=offset)
    assert packed == general


@pytest.mark.skipif(marshal.IMPLEMENTATION != "c", reason="pycdr.codec._speedups not in use")
@pytest.mark.parametrize("little", [False, True])
def test_same_octets_as_the_c_path(little):
    rng = random.Random(7)
    for t, make in SHAPES:
        for count in (1, 2, 31, SHORT):
            value = [make(rng.randrange(30000)) for _ in range(count)]
            for offset in range(8):
                c_octets, py_octets, calls = c_and_python_octets(
                    tc.sequence(t), value, packer_calls, little=little, offset=offset)
                assert calls == [True] and py_octets == c_octets


def test_flat_decoder_makes_plain_instances_directly_and_calls_other_classes():
    # The pure decoder makes instances of pycdr's own struct classes without calling
    # them (as the C path does), but a registered class with an __init__ of its own
    # is called for every element, as before.
    from pycdr.codec import tc as tcs
    from pycdr.codec.plan import FlatCodec
    from pycdr.codec.values import Struct, class_for, register

    plain_tc = tcs.struct("IDL:test/FlatPlain:1.0", "FlatPlain",
                          [("a", tcs.long), ("c", tcs.char)])
    plain = FlatCodec(plain_tc).convert((7, 0xE9))
    assert type(plain) is class_for(plain_tc) and (plain.a, plain.c) == (7, "\u00e9")

    calls = []

    class Custom(Struct):
        __slots__ = ("a", "c")
        _fields = ("a", "c")

        def __init__(self, a, c):
            calls.append((a, c))
            self.a, self.c = a, c

    custom_tc = tcs.struct("IDL:test/FlatCustom:1.0", "FlatCustom",
                           [("a", tcs.long), ("c", tcs.char)])
    Custom._tc = custom_tc
    register("IDL:test/FlatCustom:1.0", Custom)
    value = FlatCodec(custom_tc).convert((8, 0x41))
    assert type(value) is Custom and calls == [(8, "A")]
