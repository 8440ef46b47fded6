"""Hypothesis strategies: random TypeCodes and random values of a TypeCode."""

from __future__ import annotations

import itertools
from decimal import Decimal

from hypothesis import strategies as st

from pycdr.codec import tc
from pycdr.codec.typecode import DEFAULT, INTEGER_RANGES, TCKind, resolve
from pycdr.codec.values import Any, LongDouble, class_for

K = TCKind
_ids = itertools.count()


def _rid(prefix):
    return f"IDL:gen/{prefix}{next(_ids)}:1.0"


NUMERIC = [tc.short, tc.ushort, tc.long, tc.ulong, tc.longlong, tc.ulonglong,
           tc.float, tc.double]
SIMPLE = NUMERIC + [tc.boolean, tc.char, tc.octet, tc.string, tc.longdouble,
                    tc.wchar, tc.wstring]
DISCRIMINATORS = [tc.short, tc.ushort, tc.long, tc.ulong, tc.longlong, tc.ulonglong,
                  tc.boolean, tc.char]

names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)


@st.composite
def enum_tcs(draw):
    labels = draw(st.lists(names, min_size=1, max_size=5, unique_by=str.lower))
    return tc.enum(_rid("E"), "E", labels)


@st.composite
def fixed_tcs(draw):
    digits = draw(st.integers(1, 31))
    return tc.fixed(digits, draw(st.integers(0, digits)))


leaf_tcs = st.one_of(st.sampled_from(SIMPLE), enum_tcs(), fixed_tcs(),
                     st.integers(1, 8).map(tc.bounded_string))


@st.composite
def struct_tcs(draw, children):
    mnames = draw(st.lists(names, min_size=1, max_size=5, unique_by=str.lower))
    return tc.struct(_rid("S"), "S", [(n, draw(children)) for n in mnames])


@st.composite
def union_tcs(draw, children):
    disc = draw(st.sampled_from(DISCRIMINATORS + [None]))
    if disc is None:
        disc = draw(enum_tcs())
    d = disc.unalias()
    if d.kind() == K.tk_boolean:
        pool = [False, True]
    elif d.kind() == K.tk_enum:
        pool = list(range(d.member_count()))
    elif d.kind() == K.tk_char:
        pool = [chr(i) for i in range(256)]
    else:
        lo, hi = INTEGER_RANGES[d.kind()]
        pool = None
    if pool is None:
        labels = draw(st.lists(st.integers(lo, hi), min_size=1, max_size=4, unique=True))
    else:
        labels = draw(st.lists(st.sampled_from(pool), min_size=1,
                               max_size=min(4, len(pool)), unique=True))
    members = [(lbl, f"m{i}", draw(children)) for i, lbl in enumerate(labels)]
    if draw(st.booleans()) and (pool is None or len(labels) < len(pool)):
        members.append((DEFAULT, "dflt", draw(children)))
    return tc.union(_rid("U"), "U", disc, members)


def typecodes(max_leaves=12, with_any=True):
    def extend(children):
        options = [
            struct_tcs(children),
            union_tcs(children),
            st.tuples(children, st.integers(0, 4)).map(lambda a: tc.sequence(*a)),
            st.tuples(children, st.integers(1, 3)).map(lambda a: tc.array(*a)),
            st.tuples(children, st.integers(1, 3), st.integers(1, 2)).map(
                lambda a: tc.array(a[0], a[1], a[2])),
            children.map(lambda c: tc.alias(_rid("A"), "A", c)),
        ]
        return st.one_of(*options)
    base = leaf_tcs | st.just(tc.any) if with_any else leaf_tcs
    return st.recursive(base, extend, max_leaves=max_leaves)


def values_for(t, depth=0):
    """A strategy for values of TypeCode t (in pycdr's mapping)."""
    t = resolve(t).unalias()
    k = t.kind()
    if k in INTEGER_RANGES:
        lo, hi = INTEGER_RANGES[k]
        return st.integers(lo, hi)
    if k == K.tk_float:
        return st.floats(width=32, allow_nan=False)
    if k == K.tk_double:
        return st.floats(allow_nan=False)
    if k == K.tk_longdouble:
        return st.floats(allow_nan=False).map(LongDouble.from_float)
    if k == K.tk_boolean:
        return st.booleans()
    if k == K.tk_char:
        return st.characters(min_codepoint=1, max_codepoint=255)
    if k == K.tk_wchar:
        return st.characters(min_codepoint=1, max_codepoint=0xFFFF,
                             blacklist_categories=("Cs",))
    if k == K.tk_string:
        chars = st.characters(min_codepoint=1, max_codepoint=255)
        return st.text(chars, max_size=t.length() or 12)
    if k == K.tk_wstring:
        chars = st.characters(min_codepoint=1, blacklist_categories=("Cs",))
        return st.text(chars, max_size=t.length() or 8)
    if k == K.tk_fixed:
        d, s = t.fixed_digits(), t.fixed_scale()
        # From a string: exact (scaleb would round to the 28-digit default context).
        return st.integers(-(10 ** d - 1), 10 ** d - 1).map(lambda i: Decimal(f"{i}E-{s}"))
    if k == K.tk_enum:
        cls = class_for(t)
        return st.sampled_from(cls._items)
    if k == K.tk_struct:
        cls = class_for(t)
        return st.tuples(*[values_for(m, depth + 1) for m in t._member_types]).map(
            lambda vals: cls(*vals))
    if k == K.tk_union:
        cls = class_for(t)
        choices = []
        for label, mtype in zip(t._labels, t._member_types):
            if label is DEFAULT:
                d = cls._default_d
                if d is None:
                    continue
                choices.append(values_for(mtype, depth + 1).map(lambda v, d=d: cls(d, v)))
            else:
                choices.append(values_for(mtype, depth + 1).map(lambda v, d=label: cls(d, v)))
        if t.default_index() < 0 and cls._default_d is not None:
            choices.append(st.just(cls(cls._default_d, None)))   # implicit default, no member
        return st.one_of(*choices)
    if k in (K.tk_sequence, K.tk_array):
        content = resolve(t.content_type()).unalias()
        n = t.length()
        if k == K.tk_array:
            lo = hi = n
        else:
            lo, hi = 0, (n or 5)
        if content.kind() == K.tk_octet:
            return st.binary(min_size=lo, max_size=hi)
        if content.kind() == K.tk_char:
            return st.text(st.characters(min_codepoint=0, max_codepoint=255), min_size=lo,
                           max_size=hi)
        return st.lists(values_for(content, depth + 1), min_size=lo, max_size=hi)
    if k == K.tk_any:
        if depth > 3:
            return st.just(Any(tc.long, 1))
        return typecodes(max_leaves=4, with_any=False).flatmap(
            lambda inner: values_for(inner, depth + 1).map(lambda v: Any(inner, v)))
    raise AssertionError(f"no value strategy for {t!r}")


@st.composite
def typecodes_and_values(draw, max_leaves=12):
    t = draw(typecodes(max_leaves))
    return t, draw(values_for(t))
