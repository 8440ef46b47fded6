"""Differential tests of the C marshal path (pycdr.codec._speedups, issue 7) against the
pure-Python path: identical bytes, equal values, identical errors.

Two layers are checked:
- the public functions (pycdr.codec.marshal.*) with the C path on, against the same
  functions' pure-Python originals (``fn.__wrapped__``): outcomes must match
  exactly, success or error (type, message, offset, path);
- the C runner itself (``_speedups.read``/``write`` with no Python fallback
  reader): whenever it succeeds, on any input, it must agree with Python, and on
  well-formed input of types it fully supports it must succeed (so the first
  layer is not passing merely because everything fell back).
"""

from __future__ import annotations

import array
import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pycdr.codec import marshal, tc
from pycdr.codec.cdr import CDRReader, CDRWriter
from pycdr.errors import CDRError, EncodeError, PycdrError
from pycdr.codec.plan import plan_for
from pycdr.codec.typecode import TCKind, resolve
from pycdr.codec.values import class_for
from strategies import typecodes, typecodes_and_values, values_for

pytestmark = pytest.mark.skipif(marshal.IMPLEMENTATION != "c",
                                reason="pycdr.codec._speedups not built or PYCDR_PURE=1")

if marshal.IMPLEMENTATION == "c":
    from pycdr.codec import _speedups

K = TCKind


def pure(function):
    """``function`` run with the C path switched off throughout: the pure-Python
    entry points call marshal's (C-backed) read_value/write_value inside, so
    __wrapped__ alone would still encode in C."""
    from pycdr.codec import _cmarshal

    def run(*args, **kwargs):
        _cmarshal.enabled = False
        try:
            return function(*args, **kwargs)
        finally:
            _cmarshal.enabled = True
    return run


ENTRY_NAMES = ("decode", "encode", "decode_encapsulation", "encode_encapsulation",
               "read_value", "write_value")
# The functions the C entry points stand for, as they are (what the entry
# points forward calls they do not take to), and run purely in Python.
WRAPPED = {name: getattr(marshal, name).__wrapped__ for name in ENTRY_NAMES} \
    if marshal.IMPLEMENTATION == "c" else {}
PY = {name: pure(function) for name, function in WRAPPED.items()}

# Kinds the C code hands back to Python node by node.
PYTHON_KINDS = {K.tk_wchar, K.tk_wstring, K.tk_fixed, K.tk_longdouble, K.tk_any,
                K.tk_TypeCode, K.tk_objref, K.tk_value, K.tk_value_box, K.tk_native,
                K.tk_abstract_interface}

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def outcome(fn, *args, **kwargs):
    """What a call did, in comparable form: ("ok", value) or ("error", details)."""
    try:
        return ("ok", fn(*args, **kwargs))
    except CDRError as e:
        return ("error", type(e), str(e), e.message, e.offset, e.path)
    except (PycdrError, ValueError, TypeError, OverflowError, RecursionError) as e:
        return ("error", type(e), str(e))


def same_value(a, b) -> bool:
    """Equal and of the same shape (so True vs 1 or list vs array differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if hasattr(a, "_fields"):
        return all(same_value(getattr(a, f), getattr(b, f)) for f in a._fields)
    if hasattr(a, "_d") and hasattr(a, "_v"):
        return same_value(a._d, b._d) and same_value(a._v, b._v)
    return a == b and repr(a) == repr(b)


def assert_same(c, py):
    assert c[0] == py[0], (c, py)
    if c[0] == "ok":
        assert same_value(c[1], py[1]), (c[1], py[1])
    else:
        assert c == py


def kinds_in(t, seen=None) -> set:
    """Every TCKind reachable from TypeCode t."""
    seen = set() if seen is None else seen
    t = resolve(t)
    if id(t) in seen:
        return set()
    seen.add(id(t))
    t = t.unalias()
    out = {t._kind}
    if t._kind in (K.tk_struct, K.tk_except, K.tk_union):
        for m in t._member_types:
            out |= kinds_in(m, seen)
        if t._kind == K.tk_union:
            out |= kinds_in(t._disc, seen)
    elif t._kind in (K.tk_sequence, K.tk_array):
        out |= kinds_in(t._content, seen)
    return out


def c_only_read(t, data, *, little, offset=0, numeric_arrays=False):
    """The C runner alone (no Python node may run): (value, end) or raises."""
    return _speedups.read(plan_for(t), data, 0, len(data), -offset, little, numeric_arrays,
                          None)


# --------------------------------------------------------------------------
# Well-formed values: same bytes, same values, both byte orders, every offset
# --------------------------------------------------------------------------
@SETTINGS
@given(typecodes_and_values(), st.booleans(), st.integers(0, 7))
def test_encode_decode_match(impl_pair, little, offset):
    t, value = impl_pair
    c_bytes = outcome(marshal.encode, t, value, little=little, offset=offset)
    py_bytes = outcome(PY["encode"], t, value, little=little, offset=offset)
    assert_same(c_bytes, py_bytes)
    assert c_bytes[0] == "ok", c_bytes
    data = c_bytes[1]
    for numeric_arrays in (False, True):
        c_val = outcome(marshal.decode, t, data, little=little, offset=offset,
                        numeric_arrays=numeric_arrays)
        py_val = outcome(PY["decode"], t, data, little=little, offset=offset,
                         numeric_arrays=numeric_arrays)
        assert_same(c_val, py_val)
        assert c_val[0] == "ok"
        if not numeric_arrays:
            py_value = py_val[1]
    if not kinds_in(t) & PYTHON_KINDS:
        # Fully supported: the C runner must take it without handing anything back.
        value_c, end = c_only_read(t, data, little=little, offset=offset)
        assert end == len(data)
        assert same_value(value_c, py_value)
        w = CDRWriter(little=little, offset=offset)
        _speedups.write(plan_for(t), w, value)
        assert w.getvalue() == data
        assert _speedups.encode(plan_for(t), value, -offset, little) == data


@SETTINGS
@given(typecodes_and_values(), st.booleans())
def test_encapsulations_match(impl_pair, little):
    t, value = impl_pair
    c_bytes = outcome(marshal.encode_encapsulation, t, value, little=little)
    py_bytes = outcome(PY["encode_encapsulation"], t, value, little=little)
    assert_same(c_bytes, py_bytes)
    data = c_bytes[1]
    assert_same(outcome(marshal.decode_encapsulation, t, data),
                outcome(PY["decode_encapsulation"], t, data))


@SETTINGS
@given(typecodes_and_values(), st.booleans(), st.integers(0, 7), st.binary(max_size=9))
def test_stream_forms_match(impl_pair, little, offset, prefix):
    """read_value/write_value inside a stream that already holds bytes."""
    t, value = impl_pair
    outs = []
    for write_value in (marshal.write_value, PY["write_value"]):
        w = CDRWriter(little=little, offset=offset)
        w.buf += prefix
        write_value(w, t, value)
        w.write_octet(7)
        outs.append(w.getvalue())
    assert outs[0] == outs[1]
    data = outs[0]
    got = []
    for read_value in (marshal.read_value, PY["read_value"]):
        r = CDRReader(data, start=len(prefix), origin=-offset, little=little)
        got.append((outcome(read_value, r, t), r.pos, r.read_octet()))
    assert_same(got[0][0], got[1][0])
    assert got[0][1:] == got[1][1:]


# --------------------------------------------------------------------------
# Malformed input: the same error (or the same value) from both
# --------------------------------------------------------------------------
def check_decode_everywhere(t, data, little, offset):
    c = outcome(marshal.decode, t, data, little=little, offset=offset)
    py = outcome(PY["decode"], t, data, little=little, offset=offset)
    assert_same(c, py)
    # Whatever the C runner accepts on its own, Python accepts with the same value.
    try:
        value, end = c_only_read(t, data, little=little, offset=offset)
    except (_speedups.Fallback, CDRError):
        return
    r = CDRReader(data, origin=-offset, little=little)
    r.context = {"numeric_arrays": False}
    assert same_value(value, plan_for(t).read(r))
    assert r.pos == end


@SETTINGS
@given(typecodes_and_values(), st.booleans(), st.integers(0, 7), st.data())
def test_mutated_input_same_outcome(impl_pair, little, offset, data):
    t, value = impl_pair
    raw = bytearray(PY["encode"](t, value, little=little, offset=offset))
    for _ in range(data.draw(st.integers(1, 4))):
        if not raw:
            break
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.sampled_from([0, 1, 2, 0x7F, 0x80, 0xFF, raw[i] ^ 1]))
    cut = data.draw(st.integers(0, len(raw)))
    check_decode_everywhere(t, bytes(raw), little, offset)
    check_decode_everywhere(t, bytes(raw[:cut]), little, offset)
    check_decode_everywhere(t, bytes(raw) + b"\0", little, offset)


@SETTINGS
@given(typecodes(), st.binary(max_size=64), st.booleans(), st.integers(0, 7))
def test_random_input_same_outcome(t, data, little, offset):
    check_decode_everywhere(t, data, little, offset)


@SETTINGS
@given(typecodes(), typecodes_and_values(), st.booleans())
def test_wrong_values_same_outcome(t, other, little):
    """A value made for another type: same bytes or the same EncodeError."""
    _other_tc, value = other
    assert_same(outcome(marshal.encode, t, value, little=little),
                outcome(PY["encode"], t, value, little=little))


# --------------------------------------------------------------------------
# Chosen cases
# --------------------------------------------------------------------------
BIN_STRUCT = tc.struct("IDL:test/BinStruct:1.0", "BinStruct", [
    ("s", tc.short), ("c", tc.char), ("l", tc.long), ("o", tc.octet), ("d", tc.double),
    ("pad", tc.array(tc.octet, 8))])
NODE = tc.struct("IDL:test/Node:1.0", "Node", [
    ("value", tc.long), ("children", tc.sequence(tc.recursive("IDL:test/Node:1.0")))])
EXC = tc.exception("IDL:test/Oops:1.0", "Oops", [("why", tc.string), ("code", tc.long)])
COLOR = tc.enum("IDL:test/Color:1.0", "Color", ["red", "green", "blue"])
UNION = tc.union("IDL:test/U:1.0", "U", COLOR, [
    (0, "r", tc.long), (1, "g", tc.string), (tc.DEFAULT, "other", tc.sequence(tc.short))])

CASES = [
    (tc.sequence(tc.double), [1.5, -2.25, 1e300]),
    (tc.sequence(tc.float), [1.5, -2.25]),
    (tc.sequence(tc.short), [1, -2, 32767, -32768]),
    (tc.sequence(tc.ushort), [0, 65535]),
    (tc.sequence(tc.long), [1, -2, 2**31 - 1]),
    (tc.sequence(tc.ulong), [0, 2**32 - 1]),
    (tc.sequence(tc.longlong), [-2**63, 2**63 - 1]),
    (tc.sequence(tc.ulonglong), [0, 2**64 - 1]),
    (tc.sequence(tc.boolean), [True, False, True]),
    (tc.sequence(tc.octet), b"\x00\x01\xff"),
    (tc.sequence(tc.char), "abc\xe9\xff"),
    (tc.sequence(tc.string), ["", "a", "h\xe9llo"]),
    (tc.sequence(BIN_STRUCT), [class_for(BIN_STRUCT)(1, "x", 2, 3, 4.5, b"12345678")] * 3),
    (NODE, class_for(NODE)(1, [class_for(NODE)(2, []), class_for(NODE)(3, [])])),
    (EXC, class_for(EXC)("bad", 7)),
    (UNION, class_for(UNION)(class_for(COLOR)._items[1], "green")),
    (UNION, class_for(UNION)(class_for(COLOR)._items[2], [1, 2])),
    (tc.sequence(UNION), [class_for(UNION)(class_for(COLOR)._items[0], 5)]),
    (tc.array(tc.long, 3), [1, 2, 3]),
    (tc.sequence(tc.wstring), ["wide", "\u20ac"]),        # handed back per node
    (tc.struct("IDL:test/Mixed:1.0", "Mixed", [("a", tc.long), ("w", tc.wchar),
                                               ("b", tc.fixed(5, 2)), ("c", tc.string)]),
     None),
]


@pytest.mark.parametrize("t,value", CASES, ids=lambda x: repr(x)[:40])
@pytest.mark.parametrize("little", [False, True])
def test_chosen_cases(t, value, little):
    if value is None:
        from decimal import Decimal
        value = class_for(t)(5, "\u20ac", Decimal("123.45"), "s")
    data = PY["encode"](t, value, little=little)
    assert marshal.encode(t, value, little=little) == data
    for offset in range(8):
        assert_same(outcome(marshal.encode, t, value, little=little, offset=offset),
                    outcome(PY["encode"], t, value, little=little, offset=offset))
    assert same_value(marshal.decode(t, data, little=little),
                      PY["decode"](t, data, little=little))
    for cut in range(len(data)):
        check_decode_everywhere(t, data[:cut], little, 0)


def test_numeric_arrays_mapping():
    t = tc.sequence(tc.double)
    data = marshal.encode(t, [1.0, 2.0, 3.0], little=False)
    got = marshal.decode(t, data, numeric_arrays=True)
    assert got == array.array("d", [1.0, 2.0, 3.0]) and type(got) is array.array
    # an array.array of the element's typecode encodes as is, both byte orders
    for little in (False, True):
        a = array.array("h", [1, -2, 300])
        assert marshal.encode(tc.sequence(tc.short), a, little=little) == \
            PY["encode"](tc.sequence(tc.short), a, little=little)


@pytest.mark.parametrize("little", [False, True])
@pytest.mark.parametrize("kind,code", [(tc.short, "h"), (tc.ushort, "H")])
def test_every_16_bit_value_decodes_alike(kind, code, little):
    """The C path shares one int per 16-bit value (its cache): every value, in
    both byte orders, decodes as the Python path decodes it, again and again."""
    t = tc.sequence(kind)
    values = array.array(code, range(-32768, 32768) if code == "h" else range(65536))
    data = marshal.encode(t, values, little=little)
    expected = PY["decode"](t, data, little=little)
    assert expected == values.tolist()
    for _ in range(2):         # the first run fills the cache, the second reads it
        got = marshal.decode(t, data, little=little)
        assert same_value(got, expected)
    del got
    assert marshal.decode(t, data, little=little) == expected   # (nothing freed under it)


# Edges of the shared ints (-32768..65535), of the types, and of the ints the C
# encoder reads from their digits (up to two 30-bit digits: |v| < 2**60).
EDGES = [-2**63, -2**60 - 1, -2**60, -2**60 + 1, -2**31, -2**30 - 1, -2**30, -2**30 + 1,
         -32769, -32768, -32767, -6, -5, -1, 0, 1, 255, 256, 257, 32767, 32768, 65534, 65535,
         65536, 2**30 - 1, 2**30, 2**31 - 1, 2**31, 2**32 - 1, 2**60 - 1, 2**60, 2**63 - 1,
         2**64 - 1]
RANGES = {"short": (-2**15, 2**15), "ushort": (0, 2**16), "long": (-2**31, 2**31),
          "ulong": (0, 2**32), "longlong": (-2**63, 2**63), "ulonglong": (0, 2**64)}


@pytest.mark.parametrize("little", [False, True])
@pytest.mark.parametrize("kind", list(RANGES))
def test_int_edges_encode_and_decode_alike(kind, little):
    """Around the edges of the shared ints, of the digit reading and of each
    type: sequences, arrays, single values and struct members encode and decode
    as in Python."""
    low, high = RANGES[kind]
    values = [v for v in EDGES if low <= v < high]
    member = getattr(tc, kind)
    holder = tc.struct("IDL:test/Holder:1.0", "Holder", [("a", member), ("b", tc.octet)])
    for t, value in [(tc.sequence(member), values), (tc.array(member, len(values)), values)] \
            + [(member, v) for v in values] + [(holder, class_for(holder)(v, 7))
                                               for v in values]:
        data = marshal.encode(t, value, little=little)
        assert data == PY["encode"](t, value, little=little)
        for _ in range(2):
            assert_same(outcome(marshal.decode, t, data, little=little),
                        outcome(PY["decode"], t, data, little=little))
    for v in EDGES:               # every edge, in range or not, for every form
        for t, value in [(tc.sequence(member), [v, 1]), (member, v),
                         (holder, class_for(holder)(v, 7))]:
            assert_same(outcome(marshal.encode, t, value, little=little),
                        outcome(PY["encode"], t, value, little=little))


@pytest.mark.parametrize("t,value", [
    (tc.short, 2**15), (tc.ushort, -1), (tc.ulonglong, -1), (tc.long, True), (tc.double, "x"),
    (tc.octet, 256), (tc.char, "ab"), (tc.char, "\u20ac"), (tc.string, "a\0b"),
    (tc.string, "\u20ac"), (tc.bounded_string(2), "abc"), (tc.sequence(tc.short, 1), [1, 2]),
    (tc.sequence(tc.long), [1, True]), (tc.sequence(tc.long), [1, 2**40]),
    (tc.sequence(tc.boolean), [True, 2]), (tc.array(tc.long, 2), [1]), (COLOR, "purple"),
    (COLOR, 7), (UNION, 5), (BIN_STRUCT, object()), (tc.sequence(tc.char), "\u20ac"),
    (tc.sequence(tc.octet), [1, 300]), (tc.null, 0), (tc.float, 1e300),
    (tc.sequence(BIN_STRUCT), [1]), (tc.sequence(tc.float), [1.0, 1e300]),
    (tc.sequence(tc.short), [True, 2]), (tc.sequence(tc.double), array.array('f', [1.5])),
])
def test_odd_values_identical(t, value):
    # (most of these are errors; which ones is the Python path's business)
    assert_same(outcome(marshal.encode, t, value), outcome(PY["encode"], t, value))


def test_unusual_values_accepted_like_python():
    """Values the C code does not take itself go to the Python node: same bytes."""
    from decimal import Decimal
    S = tc.struct("IDL:test/Loose:1.0", "Loose", [("a", tc.long), ("b", tc.double),
                                                  ("c", tc.boolean), ("o", tc.octet)])
    for value in ({"a": 1, "b": 2, "c": 1, "o": 3}, class_for(S)(True is False, Decimal(2), 0, 3)):
        assert_same(outcome(marshal.encode, S, value), outcome(PY["encode"], S, value))
    assert marshal.encode(tc.sequence(tc.double), [1, True, 2.5]) == \
        PY["encode"](tc.sequence(tc.double), [1, True, 2.5])


# Every member kind the one-pass (precomputed offsets) struct code takes.
FLAT = tc.struct("IDL:test/Flat:1.0", "Flat", [
    ("o", tc.octet), ("d", tc.double), ("b", tc.boolean), ("s", tc.short), ("c", tc.char),
    ("ul", tc.ulong), ("f", tc.float), ("us", tc.ushort), ("ll", tc.longlong),
    ("ull", tc.ulonglong), ("l", tc.long), ("pad", tc.array(tc.octet, 3)),
    ("name", tc.array(tc.char, 2))])


def flat_value(**changes):
    fields = dict(o=255, d=-0.5, b=True, s=-32768, c="\xe9", ul=2**32 - 1, f=1.5, us=65535,
                  ll=-2**63, ull=2**64 - 1, l=-7, pad=b"xyz", name="ab")
    fields.update(changes)
    return class_for(FLAT)(**fields)


@pytest.mark.parametrize("little", [False, True])
def test_flat_struct_every_phase(little):
    """One struct and sequences of it, starting at each alignment phase: the same
    bytes and values as the Python path; cut anywhere, the same error."""
    for t, value in ((FLAT, flat_value()), (tc.sequence(FLAT), [flat_value(l=i) for i in range(3)]),
                     (tc.sequence(BIN_STRUCT),
                      [class_for(BIN_STRUCT)(i, "x", -i, i, i / 3, b"12345678") for i in range(3)])):
        for offset in range(8):
            data = PY["encode"](t, value, little=little, offset=offset)
            assert marshal.encode(t, value, little=little, offset=offset) == data
            for prefix in range(4):     # a stream write after `prefix` octets
                ws = []
                for write_value in (marshal.write_value, PY["write_value"]):
                    w = CDRWriter(little=little, offset=offset)
                    w.buf += bytes(prefix)
                    write_value(w, t, value)
                    ws.append(w.getvalue())
                assert ws[0] == ws[1]
            for cut in range(0, len(data) + 1, 3):
                check_decode_everywhere(t, data[:cut], little, offset)
            # the C runner alone, no fallback: (a fallback would hide a wrong offset)
            assert _speedups.encode(plan_for(t), value, -offset, little) == data
            got, end = c_only_read(t, data, little=little, offset=offset)
            assert same_value(got, value) and end == len(data)


@pytest.mark.parametrize("change", [
    dict(b=2), dict(b=1), dict(s=2**15), dict(us=-1), dict(ull=-1), dict(l=True),
    dict(d=1), dict(d="x"), dict(f=1e300), dict(o=256), dict(c="ab"), dict(c="\u20ac"),
    dict(pad=b"ab"), dict(pad=bytearray(b"xyz")), dict(pad=[1, 2, 3]), dict(name="a"),
    dict(name="\u20acb"), dict(ll=2**63)])
def test_flat_struct_odd_members_identical(change):
    """A member that is not the plain value of its type leaves the one-pass code
    to the member-by-member path: same bytes or same error as Python."""
    for t, value in ((FLAT, flat_value(**change)), (tc.sequence(FLAT), [flat_value(), flat_value(**change)])):
        assert_same(outcome(marshal.encode, t, value), outcome(PY["encode"], t, value))


def test_flat_struct_bad_octets_and_unset_members():
    data = bytearray(PY["encode"](FLAT, flat_value()))
    data[8] = 2                                  # the boolean (after o and d)
    check_decode_everywhere(FLAT, bytes(data), False, 0)
    unset = class_for(FLAT).__new__(class_for(FLAT))
    assert_same(outcome(marshal.encode, FLAT, unset), outcome(PY["encode"], FLAT, unset))

    class Sub(class_for(FLAT)):
        pass
    sub = Sub(**{f: getattr(flat_value(), f) for f in class_for(FLAT)._fields})
    assert marshal.encode(FLAT, sub) == PY["encode"](FLAT, sub)


def test_deep_recursion_same_error():
    Node = class_for(NODE)
    v = Node(0, [])
    for i in range(120):      # two depth steps a level (sequence, recursion): past MAX_DEPTH
        v = Node(i, [v])
    data = PY["encode"](NODE, v)
    c = outcome(marshal.decode, NODE, data)
    assert c[0] == "error" and "deep" in c[2]
    assert_same(c, outcome(PY["decode"], NODE, data))
    shallow = Node(1, [Node(2, [Node(3, [])])])
    assert same_value(marshal.decode(NODE, PY["encode"](NODE, shallow)), shallow)


def test_fallback_error_keeps_stream_state():
    """A stream read that fails in C leaves the reader as the Python path left it."""
    data = marshal.encode(tc.sequence(tc.long), [1, 2, 3])[:-1]
    states = []
    for read_value in (marshal.read_value, PY["read_value"]):
        r = CDRReader(data)
        states.append((outcome(read_value, r, tc.sequence(tc.long)), r.pos, r.depth))
    assert states[0] == states[1]


def test_write_failure_leaves_writer_as_python_does():
    """A failed stream write leaves the writer as the Python path leaves it (the C
    attempt's bytes are cut back before the Python re-run)."""
    states = []
    for write_value in (marshal.write_value, PY["write_value"]):
        w = CDRWriter()
        w.write_long(5)
        states.append((outcome(write_value, w, tc.sequence(tc.short), [1, 2, 10**6]),
                       w.getvalue()))
    assert states[0] == states[1]
    assert states[0][0][0] == "error"


def test_gc_paused_while_a_long_sequence_of_structs_is_built_then_restored():
    """read_sequence pauses the cyclic GC while it builds many containers and puts it
    back as it was: on, off, and after an error halfway."""
    import gc
    point = tc.struct("IDL:GcPoint:1.0", "GcPoint", [("x", tc.long), ("tag", tc.string)])
    seq = tc.sequence(point)
    Point = class_for(point)
    data = marshal.encode(seq, [Point(i, "p") for i in range(5000)])
    seen = []
    gc.callbacks.append(lambda phase, info: seen.append(phase))
    try:
        was = gc.isenabled()
        try:
            for enabled in (True, False):
                (gc.enable if enabled else gc.disable)()
                seen.clear()
                thresholds = gc.get_threshold()
                gc.set_threshold(10)           # would collect hundreds of times meanwhile
                try:
                    value, _ = c_only_read(seq, data, little=False)
                finally:
                    gc.set_threshold(*thresholds)
                assert len(value) == 5000 and value[4999].x == 4999
                # Unpaused, threshold 10 means hundreds of collections; paused, at
                # most one before the elements and one after (the result is due).
                assert seen.count("start") <= 2
                assert gc.isenabled() == enabled
                with pytest.raises((CDRError, _speedups.Fallback)):   # truncated
                    c_only_read(seq, data[:-3], little=False)
                assert gc.isenabled() == enabled
        finally:
            (gc.enable if was else gc.disable)()
    finally:
        gc.callbacks.pop()


def test_no_reference_leak():
    """Repeated C encodes/decodes (successes, fallbacks and errors) hold on to
    nothing: no growth in allocated blocks or in the shared objects' refcounts."""
    import gc
    import sys
    Color = class_for(COLOR)
    U = class_for(UNION)
    cases = [(tc.sequence(BIN_STRUCT), [class_for(BIN_STRUCT)(1, "x", 2, 3, 4.5, b"12345678")]),
             (UNION, U(Color._items[2], [1, 2])), (tc.sequence(COLOR), list(Color._items)),
             (EXC, class_for(EXC)("bad", 7)), (tc.sequence(tc.double), [1.5] * 10),
             (tc.sequence(tc.wstring), ["x"]), (tc.sequence(tc.boolean), [True, False]),
             (WIDE, entry_value(WIDE, None))]
    watched = [True, False, None, Color._items[2], Color, U, class_for(BIN_STRUCT)]
    for t, v in cases:
        data = marshal.encode(t, v)
        calls = [lambda: marshal.encode(t, v, little=True),
                 lambda: marshal.decode(t, data),
                 lambda: marshal.decode(t, data, numeric_arrays=True),
                 lambda: outcome(marshal.decode, t, data[:-1]),     # error: C, then Python
                 lambda: outcome(marshal.encode, t, [object()]),    # a wrong value
                 # the entry points' keywords, hand-backs and pure-Python calls
                 lambda: marshal.decode(t, data + b"\0", allow_trailing=True, version=(1, 2)),
                 lambda: marshal.decode_encapsulation(
                     t, marshal.encode_encapsulation(t, v, little=True), numeric_arrays=True),
                 lambda: outcome(marshal.decode, t, data, lenient=True, warnings=[]),
                 lambda: any_outcome(marshal.decode, t, data, bogus=1)]
        for call in calls:
            for _ in range(100):
                call()
            gc.collect()       # garbage cycles from earlier tests would blur the count
            refs = [sys.getrefcount(o) for o in watched]
            blocks = sys.getallocatedblocks()
            for _ in range(1000):
                call()
            gc.collect()
            # a leak would grow by >= 1000; allow unrelated noise
            growth = [sys.getrefcount(o) - n for o, n in zip(watched, refs)]
            assert all(g < 500 for g in growth), (t, growth)
            assert sys.getallocatedblocks() - blocks < 500, t


def test_impl_fixture_switches_paths(impl):
    from pycdr.codec import _cmarshal
    assert _cmarshal.enabled == (impl == "c")
    assert marshal.decode(tc.long, b"\0\0\0\x05") == 5


# --------------------------------------------------------------------------
# The C entry points (pycdr.codec.marshal.encode/decode/..._encapsulation are
# _speedups.entry callables): every keyword combination, odd arguments and
# hand-backs give exactly what the pure-Python function gives.
# --------------------------------------------------------------------------
import inspect  # noqa: E402
import itertools  # noqa: E402

from pycdr import codesets  # noqa: E402

WIDE = tc.struct("IDL:test/Wide:1.0", "Wide", [
    ("n", tc.long), ("w", tc.wstring), ("c", tc.wchar), ("s", tc.string),
    ("d", tc.sequence(tc.double))])
ENTRY_CASES = [
    (tc.sequence(tc.double), [1.5, -2.0]),
    (tc.sequence(tc.octet), b"\x01\x02\x03"),
    (tc.sequence(tc.long), [7, -8, 9]),
    (tc.string, "h\xe9"),
    (WIDE, None),                 # wstring/wchar: nodes handed back to Python
]
DECODE_OPTIONS = dict(little=[False, True, 1], version=[(1, 0), (1, 2)], offset=[0, 5],
                      tcs_c=[codesets.ISO_8859_1, codesets.UTF_8], tcs_w=[codesets.UTF_16],
                      lenient=[False, True], numeric_arrays=[False, True],
                      allow_trailing=[False, True])
ENCODE_OPTIONS = dict(little=[False, True, 0], version=[(1, 0), (1, 2)], offset=[0, 3],
                      tcs_c=[codesets.ISO_8859_1, codesets.UTF_8], tcs_w=[codesets.UTF_16],
                      wstring_bom=[False, True])


def entry_value(t, value):
    return class_for(WIDE)(5, "w\u20ac", "\u20ac", "s\xe9", [0.5]) if value is None else value


def combinations(options):
    names = list(options)
    for values in itertools.product(*(options[n] for n in names)):
        yield dict(zip(names, values))


def same_outcome_with_warnings(fn_c, fn_py, *args, **kwargs):
    """Same result/error, and the same warnings recorded in a list passed in."""
    outs = []
    for fn in (fn_c, fn_py):
        warnings = [] if "warnings" in kwargs else None
        if warnings is not None:
            kwargs["warnings"] = warnings
        outs.append((outcome(fn, *args, **kwargs), [repr(w) for w in warnings or ()]))
    assert_same(outs[0][0], outs[1][0])
    assert outs[0][1] == outs[1][1]


@pytest.mark.parametrize("t,value", ENTRY_CASES, ids=lambda x: repr(x)[:30])
def test_entry_decode_every_keyword_combination(t, value):
    value = entry_value(t, value)
    for little, offset in itertools.product((False, True), (0, 5)):
        good = PY["encode"](t, value, little=little, offset=offset)
        for data in (good, good + b"\0", good[:-1], bytearray(good)):
            for opts in combinations(DECODE_OPTIONS):
                if opts["little"] != little or opts["offset"] != offset:
                    continue
                same_outcome_with_warnings(marshal.decode, PY["decode"], t, data, **opts)
                same_outcome_with_warnings(marshal.decode, PY["decode"], t, data,
                                           warnings=[], **opts)
            # keywords left out, and keyword names that are equal but not interned
            assert_same(outcome(marshal.decode, t, data), outcome(PY["decode"], t, data))
            odd_names = {"".join(["lit", "tle"]): little, "".join(["off", "set"]): offset}
            assert_same(outcome(marshal.decode, t, data, **odd_names),
                        outcome(PY["decode"], t, data, **odd_names))


@pytest.mark.parametrize("t,value", ENTRY_CASES, ids=lambda x: repr(x)[:30])
def test_entry_encode_every_keyword_combination(t, value):
    value = entry_value(t, value)
    for opts in combinations(ENCODE_OPTIONS):
        assert_same(outcome(marshal.encode, t, value, **opts),
                    outcome(PY["encode"], t, value, **opts))
    assert_same(outcome(marshal.encode, t, value), outcome(PY["encode"], t, value))


@pytest.mark.parametrize("t,value", ENTRY_CASES, ids=lambda x: repr(x)[:30])
def test_entry_encapsulations_every_keyword_combination(t, value):
    value = entry_value(t, value)
    enc_options = {k: v for k, v in ENCODE_OPTIONS.items() if k not in ("offset", "wstring_bom")}
    dec_options = {k: v for k, v in DECODE_OPTIONS.items() if k not in ("offset", "little")}
    for opts in combinations(enc_options):
        c = outcome(marshal.encode_encapsulation, t, value, **opts)
        assert_same(c, outcome(PY["encode_encapsulation"], t, value, **opts))
        if c[0] != "ok":
            continue
        good = c[1]
        for data in (good, good + b"\0", good[:-1], b"\x02" + good[1:], b"", bytearray(good)):
            for dopts in combinations(dec_options):
                same_outcome_with_warnings(marshal.decode_encapsulation,
                                           PY["decode_encapsulation"], t, data, **dopts)


def test_entry_odd_arguments_same_error():
    """Calls the entry points do not take themselves go to the pure-Python
    function unchanged: the same TypeError for unknown keywords and wrong
    positionals, the same result or error for data of other types."""
    t = tc.sequence(tc.long)
    data = PY["encode"](t, [1, 2])
    calls = [
        ("decode", (t, data), dict(bogus=1)),
        ("decode", (t, data), dict(wstring_bom=True)),       # encode's keyword, not decode's
        ("decode", (t, data, True), {}),
        ("decode", (t,), {}),
        ("decode", (), dict(tc=t, data=data)),
        ("decode", (t, memoryview(data)), {}),
        ("decode", (t, array.array("b", data)), {}),
        ("decode", (t, type("B", (bytes,), {})(data)), {}),
        ("decode", (t, data), dict(offset=True)),
        ("decode", (t, data), dict(offset=2**70)),
        ("decode", (t, data), dict(offset=-(2**63))),
        ("decode", (t, data), dict(little=None, lenient=0, numeric_arrays=1)),
        ("decode", (t, data), dict(tcs_c=float(codesets.ISO_8859_1))),
        ("decode", (t, data), dict(tcs_c=2**80)),
        ("decode", ("not a typecode", data), {}),
        ("decode", (t, "a str"), {}),
        ("decode", (t, None), {}),
        ("encode", (t, [1, 2]), dict(lenient=True)),         # decode's keyword, not encode's
        ("encode", (t, [1, 2], False), {}),
        ("encode", (t, [1, 2]), dict(offset=1.0)),
        ("encode", (t, [1, 2]), dict(offset=-1)),
        ("encode", (t, [1, 2]), dict(little="yes")),
        ("encode", ("not a typecode", [1]), {}),
        ("encode_encapsulation", (t, [1, 2]), dict(offset=4)),
        ("decode_encapsulation", (t, b"\0" + data), dict(little=True)),
        ("decode_encapsulation", (t, memoryview(b"\0" + data)), {}),
    ]
    for name, args, kwargs in calls:
        assert_same(any_outcome(getattr(marshal, name), *args, **kwargs),
                    any_outcome(WRAPPED[name], *args, **kwargs))


def any_outcome(fn, *args, **kwargs):
    """outcome() for calls whose error may be of any type (wrong arguments)."""
    try:
        return outcome(fn, *args, **kwargs)
    except Exception as e:     # noqa: BLE001 - compared, not hidden
        return ("error", type(e), str(e))


def test_entry_errors_from_python_nodes_and_flags():
    """An error raised while asking a flag's truth, or by a node handed back to
    Python, ends as the pure-Python function's own error."""
    class Unasked:
        def __bool__(self):
            raise ValueError("no truth here")
    t = WIDE
    data = PY["encode"](t, entry_value(t, None))
    for kwargs in (dict(little=Unasked()), dict(numeric_arrays=Unasked()),
                   dict(allow_trailing=Unasked())):
        assert_same(outcome(marshal.decode, t, data, **kwargs),
                    outcome(PY["decode"], t, data, **kwargs))
    bad = class_for(WIDE)(5, 7, "\u20ac", "s", [0.5])     # a wstring that is not a str
    assert_same(outcome(marshal.encode, t, bad), outcome(PY["encode"], t, bad))
    assert outcome(marshal.encode, t, bad)[0] == "error"


def test_entry_points_look_like_the_functions():
    for name in ("encode", "decode", "encode_encapsulation", "decode_encapsulation"):
        fn = getattr(marshal, name)
        assert type(fn) is _speedups.Entry
        assert fn.__wrapped__ is WRAPPED[name]
        assert fn.__name__ == name and fn.__doc__ == WRAPPED[name].__doc__
        assert inspect.signature(fn) == inspect.signature(WRAPPED[name])
        assert name in repr(fn)

    class Holder:             # not bound as a method, as a builtin function
        decode = marshal.decode
    assert Holder().decode(tc.long, b"\0\0\0\x05") == 5


def test_entry_points_follow_enabled_flag():
    """With _cmarshal.enabled off every call runs the pure-Python function
    (observed through a node that counts its Python reads)."""
    from pycdr.codec import _cmarshal
    t = tc.sequence(tc.long)
    data = PY["encode"](t, [1, 2])
    node = plan_for(t)
    calls = []
    original = type(node).read

    def counting_read(self, r):
        calls.append(1)
        return original(self, r)
    type(node).read = counting_read
    try:
        assert marshal.decode(t, data) == [1, 2]
        assert not calls                      # the C path ran the plan
        _cmarshal.enabled = False
        try:
            assert marshal.decode(t, data) == [1, 2]
        finally:
            _cmarshal.enabled = True
        assert calls
    finally:
        type(node).read = original
