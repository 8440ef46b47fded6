"""The pure-Python plan's column writer for long sequences of fixed-size structs
(pycdr.codec.plan.SequenceNode._write_columns, issue 7): the same octets as the
element-by-element path, and where that path rejects a value, the same error
(type, message, offset, path) with the writer left as it leaves it.

The element path is what the column writer must agree with; it is run by raising
the column writer's length threshold and switching the element packer off for the
call (``element_path``).  A sequence
shorter than the threshold never reaches the column writer, so every sequence
here is at least that long, and ``column_calls`` checks the column writer really
wrote.  Where pycdr.codec._speedups is built the C path is checked against it too.
"""

from __future__ import annotations

import array
import random
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pycdr.codec import marshal, plan, tc
from pycdr.codec.plan import columns
from pycdr.codec.cdr import CDRWriter, FragmentingWriter
from pycdr.errors import CDRError
from pycdr.codec.values import class_for

from flat_structs import (ALL_KINDS, BIN_STRUCT, CHAR_LONG_LONG, NESTED, SHORT_OCTET,
                          all_kinds, bin_struct, char_long_long)

MIN = columns._COLUMNS_MIN

# An enum member has no column packer: element path.
COLOR = tc.enum("IDL:test/Color:1.0", "Color", ["red", "green"])
WITH_ENUM = tc.struct("IDL:test/WithEnum:1.0", "WithEnum", [("e", COLOR), ("l", tc.long)])


@pytest.fixture(autouse=True)
def columns_for_every_width(monkeypatch):
    """The column writer for structs of any number of members (pycdr.codec.plan uses it
    only for narrow ones, where it is the faster path)."""
    monkeypatch.setattr(columns, "_COLUMNS_MAX_MEMBERS", 1 << 62)


@contextmanager
def element_path():
    """The general path: no column writer, no element packer
    (tests/test_plan_short_structs.py)."""
    saved = columns._COLUMNS_MIN, columns._PACK_ELEMENTS
    columns._COLUMNS_MIN, columns._PACK_ELEMENTS = 1 << 62, False
    try:
        yield
    finally:
        columns._COLUMNS_MIN, columns._PACK_ELEMENTS = saved


@contextmanager
def column_calls():
    """Counts the column writer's successful block writes (the real function runs)."""
    calls = []
    real = columns._scatter

    def counting(*args):
        calls.append(args[2])
        return real(*args)
    columns._scatter = counting
    try:
        yield calls
    finally:
        columns._scatter = real


def outcome(write, t, value, **writer_options):
    """(octets written, error details or None) of one plan write into a fresh writer
    that already holds `prefix` octets (so the sequence starts at every phase)."""
    prefix = writer_options.pop("prefix", 0)
    w = (writer_options.pop("writer", None) or CDRWriter)(**writer_options)
    w.buf += bytes(prefix)
    try:
        write(w, t, value)
    except CDRError as e:
        return w.getvalue(), (type(e), str(e), e.message, e.offset, e.path)
    except (ValueError, TypeError, OverflowError) as e:
        return w.getvalue(), (type(e), str(e))
    # The buffer must not be left locked by a memoryview.
    w.write_ulong(7)
    return w.getvalue(), None


def plan_write(w, t, value):
    plan.plan_for(t).write(w, value)


def both_paths(t, value, counter=None, **writer_options):
    """The outcomes of the fast path (its writer's calls recorded by ``counter``,
    column_calls by default) and of the element path, and those calls."""
    with (counter or column_calls)() as calls:
        columns = outcome(plan_write, t, value, **dict(writer_options))
    with element_path():
        elements = outcome(plan_write, t, value, **dict(writer_options))
    return columns, elements, calls


@pytest.mark.parametrize("little", [False, True])
@pytest.mark.parametrize("t, make", [(ALL_KINDS, all_kinds), (BIN_STRUCT, bin_struct),
                                     (CHAR_LONG_LONG, char_long_long)],
                         ids=["all-kinds", "BinStruct", "CharLongLong"])
@pytest.mark.parametrize("count", [MIN, MIN + 1, 2 * MIN + 3, 1000])
def test_same_octets_every_phase(t, make, count, little):
    """Every writer offset and buffer prefix (so the sequence and its first element
    start at every phase), both byte orders, GIOP 1.0 and 1.2 writers."""
    value = [make(i) for i in range(count)]
    for version in ((1, 0), (1, 2)):
        for offset in range(8):
            for prefix in (0, 1, 3):
                columns, elements, calls = both_paths(tc.sequence(t), value, little=little,
                                                      offset=offset, prefix=prefix,
                                                      version=version)
                assert columns == elements
                assert elements[1] is None
                assert len(calls) == 1


@pytest.mark.parametrize("little", [False, True])
def test_arrays_and_bounded_sequences(little):
    value = [bin_struct(i) for i in range(MIN + 5)]
    for t in (tc.array(BIN_STRUCT, MIN + 5), tc.sequence(BIN_STRUCT, MIN + 5)):
        for offset in range(8):
            columns, elements, calls = both_paths(t, value, little=little, offset=offset)
            assert columns == elements and elements[1] is None and len(calls) == 1
    # over the bound: the same error, before any element is written
    columns, elements, _ = both_paths(tc.sequence(BIN_STRUCT, MIN), value, little=little)
    assert columns == elements and elements[1] is not None


def test_stride_differing_from_first_element():
    """sequence<ShortOctet>: 3 octets for an element at an even phase, 4 (one pad)
    at an odd one; the first is written alone, the rest at stride 4."""
    value = [class_for(SHORT_OCTET)(i, i % 256) for i in range(200)]
    for offset in range(8):
        for little in (False, True):
            columns, elements, calls = both_paths(tc.sequence(SHORT_OCTET), value,
                                                  offset=offset, little=little)
            assert columns == elements and elements[1] is None
            assert calls == [4 * 199]


@pytest.mark.parametrize("t, value", [
    (NESTED, [class_for(NESTED)(class_for(SHORT_OCTET)(i, 1), i) for i in range(200)]),
    (WITH_ENUM, [class_for(WITH_ENUM)(i % 2, i) for i in range(200)]),
    (BIN_STRUCT, [bin_struct(i) for i in range(MIN - 1)]),
], ids=["nested-struct", "enum-member", "short-sequence"])
def test_element_path_where_columns_do_not_apply(t, value):
    columns, elements, calls = both_paths(tc.sequence(t), value, offset=1)
    assert columns == elements and elements[1] is None
    assert calls == []


@pytest.mark.parametrize("count", [40, 300])
def test_fragmenting_writer_writes_element_by_element(count, monkeypatch):
    """A GIOP 1.1 fragmenting writer may cut between any two primitives: no block,
    and no element packed whole (tests/test_plan_short_structs.py)."""
    value = [bin_struct(i) for i in range(count)]
    t = tc.sequence(BIN_STRUCT)
    packed = []
    with monkeypatch.context() as patch, column_calls() as calls:
        patch.setattr(plan.SequenceNode, "_write_packed", lambda *args: packed.append(args))
        fragmented = outcome(plan_write, t, value, writer=FragmentingWriter, limit=256,
                             version=(1, 1))
    assert calls == [] and packed == [] and fragmented[1] is None
    with element_path():
        assert outcome(plan_write, t, value, writer=FragmentingWriter, limit=256,
                       version=(1, 1)) == fragmented


class IndexOnly:
    """An integer-like object with no __float__: NumberNode refuses it for double."""

    def __init__(self, n):
        self.n = n

    def __index__(self):
        return self.n


# A member changed in one element: octets the element path writes too, or its error.
ODD_MEMBERS = [
    dict(s="1"), dict(s=2**15), dict(s=1.0), dict(s=True), dict(s=IndexOnly(5)),
    dict(l=-2**31 - 1), dict(l=None), dict(o=256), dict(o=-1), dict(o=True), dict(o=IndexOnly(3)),
    dict(o=1.0), dict(d="1.5"), dict(d=1), dict(d=True), dict(d=IndexOnly(2)), dict(d=10**400),
    dict(d=None), dict(c="ab"), dict(c=""), dict(c=b"a"), dict(c="\u0100"), dict(c=None),
    dict(pad=b"1234567"), dict(pad=b"123456789"), dict(pad=bytearray(b"12345678")),
    dict(pad=memoryview(b"12345678")), dict(pad=array.array("B", range(8))),
    dict(pad=list(range(8))), dict(pad="12345678"), dict(pad=None),
]


@pytest.mark.parametrize("little", [False, True])
@pytest.mark.parametrize("change", ODD_MEMBERS, ids=repr)
@pytest.mark.parametrize("where", [0, 1, MIN // 2, "last"])
def test_odd_member_same_outcome(change, where, little):
    """A wrong-typed or out-of-range member anywhere in a long sequence: the same
    error type, message, offset and path as before, and the writer holds what the
    element path leaves in it; an odd value the element path takes: same octets."""
    value = [bin_struct(i) for i in range(3 * MIN)]
    index = len(value) - 1 if where == "last" else where
    value[index] = bin_struct(index, **change)
    for offset in (0, 3):
        columns, elements, _ = both_paths(tc.sequence(BIN_STRUCT), value, little=little,
                                          offset=offset)
        assert columns == elements
        if elements[1] is not None and isinstance(elements[1][0], type) and \
                issubclass(elements[1][0], CDRError):
            assert elements[1][4].startswith(f"[{index}]")


@pytest.mark.parametrize("short, long", [(dict(c=""), dict(c="ab")),
                                         (dict(pad=b"1234567"), dict(pad=b"123456789")),
                                         (dict(pad=b""), dict(pad=bytes(16)))], ids=repr)
def test_lengths_that_add_up_still_refused(short, long):
    """Two wrong-length members whose lengths sum to the right total."""
    value = [bin_struct(i) for i in range(2 * MIN)]
    value[3] = bin_struct(3, **short)
    value[MIN] = bin_struct(MIN, **long)
    columns, elements, _ = both_paths(tc.sequence(BIN_STRUCT), value)
    assert columns == elements and elements[1] is not None
    assert elements[1][4].startswith("[3]")


@pytest.mark.parametrize("change", [
    dict(b=2), dict(b=1), dict(b=0), dict(b=None), dict(us=-1), dict(ull=-1), dict(ull=True),
    dict(f=1e300), dict(f=1), dict(ll=2**63), dict(name="a"), dict(name="abc"),
    dict(name="\u20acb"), dict(name=b"ab"), dict(pad=b"ab"), dict(pad=bytearray(b"xyz"))],
    ids=repr)
def test_odd_member_all_kinds(change):
    value = [all_kinds(i) for i in range(MIN + 10)]
    value[MIN] = all_kinds(MIN, **change)
    for little in (False, True):
        columns, elements, _ = both_paths(tc.sequence(ALL_KINDS), value, little=little)
        assert columns == elements


def test_elements_of_other_shapes():
    """Dicts and subclass instances among the elements: whatever the element path
    does with them."""
    Sub = type("Sub", (class_for(BIN_STRUCT),), {})
    value = [bin_struct(i) for i in range(2 * MIN)]
    value[5] = vars_of(bin_struct(5))
    value[7] = Sub(**vars_of(bin_struct(7)))
    value[9] = (1, "a", 2, 3, 4.0, bytes(8))
    columns, elements, _ = both_paths(tc.sequence(BIN_STRUCT), value)
    assert columns == elements and elements[1] is not None     # the tuple is refused
    del value[9]
    columns, elements, _ = both_paths(tc.sequence(BIN_STRUCT), value)
    assert columns == elements and elements[1] is None


def vars_of(v):
    return {f: getattr(v, f) for f in type(v)._fields}


member_values = st.fixed_dictionaries({
    "s": st.integers(-2**15, 2**15 - 1), "c": st.characters(max_codepoint=255),
    "l": st.integers(-2**31, 2**31 - 1), "o": st.integers(0, 255),
    "d": st.floats(allow_nan=False) | st.integers(-2**53, 2**53),
    "pad": st.binary(min_size=8, max_size=8)})


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example])
@given(st.lists(member_values, min_size=MIN, max_size=2 * MIN), st.booleans(),
       st.integers(0, 7), st.randoms(use_true_random=False))
def test_generated_values_same_octets(members, little, offset, rng):
    value = [class_for(BIN_STRUCT)(**m) for m in members]
    if rng.random() < 0.3:     # now and then one member of one element out of range
        value[rng.randrange(len(value))].s = 2**15
    columns, elements, _ = both_paths(tc.sequence(BIN_STRUCT), value, little=little,
                                      offset=offset)
    assert columns == elements


def c_and_python_octets(t, value, counter, **options):
    """marshal.encode's octets from the C path, then from the Python path with
    ``counter`` (column_calls or a similar context) recording its writer's calls."""
    from pycdr.codec import _cmarshal
    c_octets = marshal.encode(t, value, **options)
    _cmarshal.enabled = False
    try:
        with counter() as calls:
            py_octets = marshal.encode(t, value, **options)
    finally:
        _cmarshal.enabled = True
    return c_octets, py_octets, calls


@pytest.mark.skipif(marshal.IMPLEMENTATION != "c", reason="pycdr.codec._speedups not in use")
@pytest.mark.parametrize("little", [False, True])
def test_same_octets_as_the_c_path(little):
    rng = random.Random(7)
    for t, make in ((ALL_KINDS, all_kinds), (BIN_STRUCT, bin_struct),
                    (CHAR_LONG_LONG, char_long_long)):
        value = [make(rng.randrange(30000)) for _ in range(2 * MIN + 1)]
        for offset in range(8):
            c_octets, py_octets, calls = c_and_python_octets(tc.sequence(t), value, column_calls,
                                                             little=little, offset=offset)
            assert calls and py_octets == c_octets
