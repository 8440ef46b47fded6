"""The padding analysis (third seed paper) checked against the paper's own
example and against real CDR encodings of the same structs."""

from __future__ import annotations

import os

import pycdr
from pycdr import idl
from pycdr.codec import tc
from pycdr.codec.typecode import TCKind
from pycdr.idl.padding import analyze_module, analyze_struct, layout

UNIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "idl", "unit")


def reports():
    m = idl.load(os.path.join(UNIT, "benchmark.idl"), register=False)
    return m, {r.name: r for r in analyze_module(m)}


def test_the_papers_worst_case_struct():
    _, by_name = reports()
    r = by_name["benchmark::Struct"]      # _Struct: the escaped identifier
    assert r.data_bytes == 9
    assert r.size_by_alignment[0] == 16 and r.padding_by_alignment[0] == 7
    assert r.padding_by_alignment[7] == 0
    assert r.overhead_percent == 7 / 16 * 100
    assert r.best_order == ["ll", "c1"] and r.best_padding == 0 and r.saved_bytes == 7


def test_sequence_of_the_struct_pads_every_element():
    _, by_name = reports()
    r = by_name["benchmark::structs"]
    assert r.kind == "sequence"
    assert r.data_bytes == 9 and r.padding_by_alignment[4] == 7
    # in a sequence the next element's long long needs aligning either way
    assert r.saved_bytes == 0
    assert "benchmark::longs" not in by_name     # no struct inside


ZERO = {TCKind.tk_char: "\0", TCKind.tk_double: 0.0}


def zero_value(t):
    return pycdr.codec.values.class_for(t)(*[ZERO.get(t.member_type(i).kind(), 0)
                                       for i in range(t.member_count())])


def test_sizes_match_the_marshaler_for_every_start_offset():
    m, by_name = reports()
    for name in ("benchmark::Struct", "benchmark::Mixed"):
        t = m.types[name]
        value = zero_value(t)
        for start in range(8):
            encoded = pycdr.encode(t, value, offset=start)
            assert len(encoded) == by_name[name].size_by_alignment[start], (name, start)


def test_best_order_really_minimises():
    m, by_name = reports()
    r = by_name["benchmark::Mixed"]
    assert r.best_order_exhaustive
    assert r.best_padding == 0 and r.saved_bytes == r.padding_by_alignment[0] > 0
    # The struct in that order encodes without a single padding byte.
    t = m.types["benchmark::Mixed"]
    members = {t.member_name(i): t.member_type(i) for i in range(t.member_count())}
    reordered = tc.struct("IDL:Reordered:1.0", "Reordered",
                          [(n, members[n]) for n in r.best_order])
    assert len(pycdr.encode(reordered, zero_value(reordered))) == r.data_bytes


def test_variable_sized_exception_is_flagged():
    m, by_name = reports()
    r = by_name["benchmark::Failed"]
    assert r.kind == "exception" and r.variable
    assert layout(m.types["benchmark::Failed"]).data == 1 + 8 + 4 + 1


def test_analyze_struct_direct():
    m = idl.load_string("struct P { octet a; unsigned short b; };", register=False)
    r = analyze_struct(m.types["P"], "P")
    assert r.padding_by_alignment == {0: 1, 1: 0, 2: 1, 3: 0, 4: 1, 5: 0, 6: 1, 7: 0}
