"""The padding analysis of Sáenz and d'Auriol, "A Communication Model for
CORBA Systems" (the third seed paper): how many bytes CDR alignment adds to
a struct or exception, for each starting alignment, and which member order
would minimise it.

Sizes come from simulating the CDR layout (GIOP 1.2 rules) of the TypeCode:
each primitive is aligned to its size (8 for long long, double, long double),
relative to the start of the stream.  Variable-length parts are taken at
their smallest: empty strings and sequences, nil object references, null
values, a union with its first member -- so for such types the figures are a
lower bound, and the report says the type is variable-sized.

A sequence of a struct is analysed per element in the steady state: the
element's starting offsets cycle with period 8, so after a first element
(which starts right after the 4-byte length) 8 more are laid out and their
padding is divided by 8 (the paper's sequence<{char, long long}> case: 9
data bytes and 7 padding bytes per element).  Note that in a sequence,
reordering members does not always help as it does for a single struct: the
paper's reversed {long long, char} still pads 7 bytes before each next
element's long long.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ..codec.typecode import TCKind, TypeCode, resolve

K = TCKind
_PRIMITIVE_SIZES = {
    K.tk_short: 2, K.tk_ushort: 2, K.tk_long: 4, K.tk_ulong: 4, K.tk_float: 4,
    K.tk_double: 8, K.tk_longlong: 8, K.tk_ulonglong: 8, K.tk_longdouble: 16,
    K.tk_boolean: 1, K.tk_char: 1, K.tk_octet: 1, K.tk_enum: 4,
}
MAX_PERMUTED_MEMBERS = 7   # beyond that, members are sorted by alignment instead


class _Layout:
    """Walks a TypeCode, counting data and padding bytes from a start offset."""

    def __init__(self, offset: int):
        self.offset = offset
        self.data = 0
        self.padding = 0
        self.variable = False

    def put(self, size: int, align: int) -> None:
        pad = (-self.offset) % align
        self.padding += pad
        self.offset += pad + size
        self.data += size

    def walk(self, tc: TypeCode, depth: int = 0) -> None:
        tc = resolve(tc)
        k = tc._kind
        if k == K.tk_alias:
            return self.walk(tc._content, depth)
        if k in _PRIMITIVE_SIZES:
            size = _PRIMITIVE_SIZES[k]
            return self.put(size, min(size, 8))
        if k == K.tk_wchar:            # GIOP 1.2: length octet, then UTF-16
            return self.put(3, 1)
        if k == K.tk_fixed:
            return self.put((tc._digits + 2) // 2, 1)
        if k in (K.tk_struct, K.tk_except):
            for member in tc._member_types:
                self.walk(member, depth + 1)
            return
        if k == K.tk_array:
            for _ in range(tc._length):
                self.walk(tc._content, depth + 1)
            return
        self.variable = True
        if k in (K.tk_string,):
            self.put(4, 4)             # length 1
            self.put(1, 1)             # the NUL
        elif k in (K.tk_wstring, K.tk_sequence, K.tk_value, K.tk_value_box, K.tk_event,
                   K.tk_any, K.tk_TypeCode):
            self.put(4, 4)             # length 0 / null value tag 0 / tk_null
        elif k == K.tk_union:
            self.walk(tc._disc, depth + 1)
            if tc._member_types and depth < 20:
                self.walk(tc._member_types[0], depth + 1)
        elif k in (K.tk_objref, K.tk_abstract_interface, K.tk_local_interface):
            self.put(4, 4)             # nil IOR: empty type id...
            self.put(1, 1)
            self.put(4, 4)             # ...and no profiles
        else:
            self.put(4, 4)


def layout(tc: TypeCode, start: int = 0) -> _Layout:
    lay = _Layout(start)
    lay.walk(tc)
    return lay


def _first_alignment(tc: TypeCode) -> int:
    """The alignment of the first thing a type writes (how it wants to start)."""
    tc = resolve(tc)
    k = tc._kind
    if k == K.tk_alias or k == K.tk_array:
        return _first_alignment(tc._content)
    if k in _PRIMITIVE_SIZES:
        return min(_PRIMITIVE_SIZES[k], 8)
    if k in (K.tk_struct, K.tk_except):
        return max((_first_alignment(m) for m in tc._member_types), default=1)
    if k in (K.tk_wchar, K.tk_fixed, K.tk_boolean, K.tk_char, K.tk_octet):
        return 1
    return 4


def _members_padding(members: list, start: int = 0) -> int:
    lay = _Layout(start)
    for _, mtype in members:
        lay.walk(mtype)
    return lay.padding


@dataclass
class PaddingReport:
    name: str
    repo_id: str
    kind: str                   # "struct", "exception" or "sequence"
    variable: bool              # holds strings/sequences/...: sizes are minimums
    data_bytes: int
    size_by_alignment: dict     # start offset (0..7) -> CDR size in bytes
    padding_by_alignment: dict  # start offset (0..7) -> padding bytes
    overhead_percent: float     # padding / size at start offset 0
    best_order: list            # member names, minimising padding at offset 0
    best_padding: int
    saved_bytes: int
    best_order_exhaustive: bool  # every order was tried (else: sorted by alignment)

    def to_json(self) -> dict:
        return {
            "name": self.name, "repository_id": self.repo_id, "kind": self.kind,
            "variable_size": self.variable, "data_bytes": self.data_bytes,
            "size_by_start_alignment": self.size_by_alignment,
            "padding_by_start_alignment": self.padding_by_alignment,
            "padding_overhead_percent": round(self.overhead_percent, 2),
            "best_member_order": self.best_order, "best_order_padding": self.best_padding,
            "bytes_saved": self.saved_bytes,
            "best_order_exhaustive": self.best_order_exhaustive,
        }


def analyze_struct(tc: TypeCode, name: str) -> PaddingReport:
    tc = resolve(tc)
    members = list(zip(tc._member_names, tc._member_types))
    sizes, pads = {}, {}
    data = 0
    variable = False
    for start in range(8):
        lay = layout(tc, start)
        sizes[start] = lay.data + lay.padding
        pads[start] = lay.padding
        data = lay.data
        variable = lay.variable
    exhaustive = len(members) <= MAX_PERMUTED_MEMBERS
    if exhaustive:
        best = min(itertools.permutations(members), key=_members_padding) if members else ()
    else:
        best = sorted(members, key=lambda m: -_first_alignment(m[1]))
    best_padding = _members_padding(list(best))
    overhead = 100.0 * pads[0] / sizes[0] if sizes[0] else 0.0
    kind = "exception" if tc._kind == K.tk_except else "struct"
    return PaddingReport(name, tc._id, kind, variable, data, sizes, pads, overhead,
                         [m[0] for m in best], best_padding, pads[0] - best_padding,
                         exhaustive)


SEQUENCE_CYCLE = 8


def analyze_sequence(element: TypeCode, name: str, repo_id: str = "") -> PaddingReport:
    """Per element of a sequence<element>, in the steady state."""
    element = resolve(element)
    members = list(zip(element._member_names, element._member_types)) \
        if element._kind in (K.tk_struct, K.tk_except) else [("", element)]

    def steady(order):
        """(data, padding) per element after the first, for a member order."""
        lay = _Layout(4)           # elements start after the 4-byte length
        for _, mtype in order:
            lay.walk(mtype)
        first_data, first_pad = lay.data, lay.padding
        for _ in range(SEQUENCE_CYCLE):
            for _, mtype in order:
                lay.walk(mtype)
        return ((lay.data - first_data) // SEQUENCE_CYCLE,
                (lay.padding - first_pad) / SEQUENCE_CYCLE, lay.variable)

    per_data, per_pad, variable = steady(members)
    size = per_data + per_pad
    exhaustive = len(members) <= MAX_PERMUTED_MEMBERS
    if exhaustive:
        best = list(min(itertools.permutations(members), key=lambda o: steady(o)[1]))
    else:
        best = sorted(members, key=lambda m: -_first_alignment(m[1]))
    best_pad = steady(best)[1]
    return PaddingReport(name, repo_id, "sequence", variable, per_data,
                         {4: size}, {4: per_pad}, 100.0 * per_pad / size if size else 0.0,
                         [m[0] for m in best], best_pad, per_pad - best_pad, exhaustive)


def analyze_module(module) -> list:
    """Reports for every struct and exception of an IdlModule, and for every
    sequence (named by a typedef) whose elements are structs or exceptions."""
    reports = []
    for scoped, tc in module.types.items():
        base = resolve(tc)
        if base._kind in (K.tk_struct, K.tk_except) and tc._kind != K.tk_alias:
            reports.append(analyze_struct(tc, scoped))
        elif tc._kind == K.tk_alias:
            target = tc.unalias()
            if target._kind == K.tk_sequence:
                element = resolve(target._content).unalias()
                if element._kind in (K.tk_struct, K.tk_except):
                    reports.append(analyze_sequence(element, scoped, tc._id))
    return reports
